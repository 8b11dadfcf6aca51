//! A small CART-style decision tree that turns "which units failed" into a few readable rules.
//!
//! Written by hand because the data is tiny (a sweep has tens to thousands of units) and the
//! output must be explainable: each split is `param <= a` / `param >= b` with `a` and `b`
//! neighbouring observed values (so a rule never names a value the sweep did not test), or
//! `param = v` / `param != v` for words (dtype, layout, solver, a zip group's rows). Samples
//! carry a class (0 = safe, one class per failing status), so a leaf that mixes hangs and
//! crashes is as impure as one that mixes hangs and oks. Splits minimise the weighted Gini
//! impurity; ties go to the earlier feature (CSV column order) and the lower threshold, so the
//! same data always gives the same rules. [`grow_pure`] deepens the tree until every leaf is
//! pure, as long as that keeps the leaves under a cap.

use std::fmt::Write as _;

/// One feature column over all samples.
#[derive(Clone, Debug)]
pub enum Column {
    Num(Vec<f64>),
    Cat(Vec<String>),
}

#[derive(Clone, Debug)]
pub struct Data {
    pub names: Vec<String>,
    pub columns: Vec<Column>,
    /// The sample's class: 0 = safe, anything else a kind of failure (a status).
    pub labels: Vec<usize>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Cond {
    Le(usize, f64),
    Ge(usize, f64),
    Eq(usize, String),
    Ne(usize, String),
}

impl Cond {
    fn feature(&self) -> usize {
        match self {
            Cond::Le(f, _) | Cond::Ge(f, _) | Cond::Eq(f, _) | Cond::Ne(f, _) => *f,
        }
    }
}

/// A leaf: the conditions on its path, the samples in it, and what it predicts.
#[derive(Clone, Debug)]
pub struct Leaf {
    pub conds: Vec<Cond>,
    pub members: Vec<usize>,
    /// The class the leaf predicts: its most common one (ties to a failure, the higher class).
    pub class: usize,
    pub predicts_failure: bool,
}

impl Leaf {
    /// Members whose class is not the one the leaf predicts.
    pub fn exception_members(&self, data: &Data) -> Vec<usize> {
        self.members
            .iter()
            .copied()
            .filter(|&i| data.labels[i] != self.class)
            .collect()
    }

    /// How many members disagree with the prediction.
    pub fn exceptions(&self, data: &Data) -> usize {
        self.exception_members(data).len()
    }
}

/// The depth the tree starts at; [`grow_pure`] goes deeper while that makes leaves pure.
pub const MAX_DEPTH: usize = 3;
/// The deepest tree [`grow_pure`] tries.
pub const MAX_PURE_DEPTH: usize = 8;
/// At most this many leaves: past it a rule list is no longer an answer, and impure leaves are
/// written as "mostly" with their exceptions.
pub const MAX_LEAVES: usize = 16;
/// One unit may form a leaf: a single crash in a corner of the sweep is worth its own rule.
pub const MIN_LEAF: usize = 1;

/// Grows the tree and returns its leaves, left (`<=`, `=`) before right.
pub fn grow(data: &Data, max_depth: usize, min_leaf: usize) -> Vec<Leaf> {
    let mut leaves = Vec::new();
    let all: Vec<usize> = (0..data.labels.len()).collect();
    split(data, all, Vec::new(), max_depth, min_leaf, &mut leaves);
    leaves
}

/// The shallowest tree (from `MAX_DEPTH` to `MAX_PURE_DEPTH`) whose leaves are all pure,
/// unless that takes more than `max_leaves` leaves: then the deepest one within the cap (at
/// least the `MAX_DEPTH` tree), whose impure leaves the caller writes with their exceptions.
pub fn grow_pure(data: &Data, min_leaf: usize, max_leaves: usize) -> Vec<Leaf> {
    let mut best = grow(data, MAX_DEPTH, min_leaf);
    for depth in MAX_DEPTH..=MAX_PURE_DEPTH {
        let leaves = grow(data, depth, min_leaf);
        if depth > MAX_DEPTH && leaves.len() > max_leaves {
            break;
        }
        let pure = leaves.iter().all(|l| l.exceptions(data) == 0);
        let same = leaves.len() == best.len() && depth > MAX_DEPTH;
        best = leaves;
        if pure || same {
            break;
        }
    }
    best
}

/// Counts of each class among `idx`.
fn class_counts(data: &Data, idx: &[usize]) -> Vec<usize> {
    let mut counts = Vec::new();
    for &i in idx {
        let c = data.labels[i];
        if counts.len() <= c {
            counts.resize(c + 1, 0);
        }
        counts[c] += 1;
    }
    counts
}

fn gini(data: &Data, idx: &[usize]) -> f64 {
    if idx.is_empty() {
        return 0.0;
    }
    let n = idx.len() as f64;
    1.0 - class_counts(data, idx)
        .iter()
        .map(|&c| (c as f64 / n).powi(2))
        .sum::<f64>()
}

struct Split {
    impurity: f64,
    left: (Cond, Vec<usize>),
    right: (Cond, Vec<usize>),
}

fn best_split(data: &Data, idx: &[usize], min_leaf: usize) -> Option<Split> {
    let n = idx.len() as f64;
    let mut best: Option<Split> = None;
    let mut consider = |left: Vec<usize>, right: Vec<usize>, lc: Cond, rc: Cond| {
        if left.len() < min_leaf || right.len() < min_leaf {
            return;
        }
        let imp =
            (left.len() as f64 * gini(data, &left) + right.len() as f64 * gini(data, &right)) / n;
        // Strictly better only, so earlier features and lower thresholds win ties.
        if best.as_ref().is_none_or(|b| imp < b.impurity - 1e-12) {
            best = Some(Split {
                impurity: imp,
                left: (lc, left),
                right: (rc, right),
            });
        }
    };
    for (f, col) in data.columns.iter().enumerate() {
        match col {
            Column::Num(v) => {
                let mut vals: Vec<f64> = idx.iter().map(|&i| v[i]).collect();
                vals.sort_by(f64::total_cmp);
                vals.dedup();
                for w in vals.windows(2) {
                    let (lo, hi) = (w[0], w[1]);
                    let (l, r): (Vec<usize>, Vec<usize>) = idx.iter().partition(|&&i| v[i] <= lo);
                    consider(l, r, Cond::Le(f, lo), Cond::Ge(f, hi));
                }
            }
            Column::Cat(v) => {
                let mut vals: Vec<&String> = idx.iter().map(|&i| &v[i]).collect();
                vals.sort();
                vals.dedup();
                if vals.len() < 2 {
                    continue;
                }
                for word in vals {
                    let (l, r): (Vec<usize>, Vec<usize>) =
                        idx.iter().partition(|&&i| &v[i] == word);
                    consider(l, r, Cond::Eq(f, word.clone()), Cond::Ne(f, word.clone()));
                }
            }
        }
    }
    best
}

fn split(
    data: &Data,
    idx: Vec<usize>,
    conds: Vec<Cond>,
    depth_left: usize,
    min_leaf: usize,
    out: &mut Vec<Leaf>,
) {
    let here = gini(data, &idx);
    let found = if depth_left > 0 && here > 0.0 {
        best_split(data, &idx, min_leaf).filter(|s| s.impurity < here - 1e-12)
    } else {
        None
    };
    match found {
        Some(s) => {
            for (cond, members) in [s.left, s.right] {
                let mut c = conds.clone();
                c.push(cond);
                split(data, members, c, depth_left - 1, min_leaf, out);
            }
        }
        None => {
            let counts = class_counts(data, &idx);
            let fails: usize = counts.iter().skip(1).sum();
            // A leaf that fails half the time is not safe: ties predict failure.
            let predicts_failure = fails * 2 >= idx.len() && fails > 0;
            // The most common failure class (ties to the higher one), or safe.
            let class = if predicts_failure {
                (1..counts.len())
                    .max_by_key(|&c| (counts[c], c))
                    .unwrap_or(0)
            } else {
                0
            };
            out.push(Leaf {
                conds,
                class,
                predicts_failure,
                members: idx,
            });
        }
    }
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// The conditions of a path as text, tightest bounds merged and in feature (column) order:
/// `c_in >= 16 and h >= 48`, `32 <= h <= 48`, `dtype = bf16`. Empty for the root.
pub fn describe(data: &Data, conds: &[Cond]) -> String {
    let mut features: Vec<usize> = conds.iter().map(Cond::feature).collect();
    features.sort_unstable();
    features.dedup();
    let mut parts = Vec::new();
    for f in features {
        let name = &data.names[f];
        let lower = conds
            .iter()
            .filter_map(|c| match c {
                Cond::Ge(g, v) if *g == f => Some(*v),
                _ => None,
            })
            .reduce(f64::max);
        let upper = conds
            .iter()
            .filter_map(|c| match c {
                Cond::Le(g, v) if *g == f => Some(*v),
                _ => None,
            })
            .reduce(f64::min);
        match (lower, upper) {
            (Some(lo), Some(hi)) if lo == hi => parts.push(format!("{name} = {}", num(lo))),
            (Some(lo), Some(hi)) => parts.push(format!("{} <= {name} <= {}", num(lo), num(hi))),
            (Some(lo), None) => parts.push(format!("{name} >= {}", num(lo))),
            (None, Some(hi)) => parts.push(format!("{name} <= {}", num(hi))),
            (None, None) => {}
        }
        let eq = conds.iter().find_map(|c| match c {
            Cond::Eq(g, w) if *g == f => Some(w),
            _ => None,
        });
        if let Some(w) = eq {
            // An equality makes any inequality on the same feature redundant.
            parts.push(format!("{name} = {w}"));
        } else {
            let ne: Vec<&String> = conds
                .iter()
                .filter_map(|c| match c {
                    Cond::Ne(g, w) if *g == f => Some(w),
                    _ => None,
                })
                .collect();
            // Say what is left when that is shorter: `c_in→c_out in {16→32, 32→64}` rather
            // than two exclusions.
            let left: Vec<&String> = match &data.columns[f] {
                Column::Cat(v) => {
                    let mut all: Vec<&String> = v.iter().filter(|w| !ne.contains(w)).collect();
                    all.sort_by(|a, b| super::boundary::cmp_group_values(a, b));
                    all.dedup();
                    all
                }
                Column::Num(_) => Vec::new(),
            };
            if ne.len() > 1 && !left.is_empty() && left.len() <= ne.len() {
                let set: Vec<&str> = left.iter().map(|w| w.as_str()).collect();
                if set.len() == 1 {
                    parts.push(format!("{name} = {}", set[0]));
                } else {
                    parts.push(format!("{name} in {{{}}}", set.join(", ")));
                }
            } else if !ne.is_empty() {
                let mut text = String::new();
                for w in ne {
                    if !text.is_empty() {
                        text.push_str(" and ");
                    }
                    let _ = write!(text, "{name} != {w}");
                }
                parts.push(text);
            }
        }
    }
    parts.join(" and ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The RDNA1 shape: failures where both c and h are large, one odd failure in a corner.
    #[test]
    fn finds_the_corner() {
        let mut c = Vec::new();
        let mut h = Vec::new();
        let mut labels = Vec::new();
        for ci in [3.0, 16.0, 32.0, 64.0] {
            for hi in [16.0, 32.0, 48.0, 64.0] {
                c.push(ci);
                h.push(hi);
                labels.push(usize::from(
                    (ci >= 16.0 && hi >= 48.0) || (ci == 3.0 && hi == 64.0),
                ));
            }
        }
        let data = Data {
            names: vec!["c".into(), "h".into()],
            columns: vec![Column::Num(c), Column::Num(h)],
            labels,
        };
        let leaves = grow(&data, MAX_DEPTH, MIN_LEAF);
        let fail: Vec<String> = leaves
            .iter()
            .filter(|l| l.predicts_failure)
            .map(|l| describe(&data, &l.conds))
            .collect();
        assert_eq!(fail, vec!["c <= 3 and h >= 64", "c >= 16 and h >= 48"]);
        assert!(leaves.iter().all(|l| l.exceptions(&data) == 0));
    }

    /// Seed 004 with the channel pair as one category: 16->32 hangs from 40, 32->64 from 56,
    /// 64->128 from 80, and 64->128 crashes (another class) at 128. The depth-3 tree mixes
    /// them; `grow_pure` goes deeper until every leaf is pure, and no rule names a pair that
    /// did not fail there.
    #[test]
    fn grow_pure_splits_a_staircase_until_every_leaf_is_pure() {
        let (mut pair, mut h, mut labels) = (Vec::new(), Vec::new(), Vec::new());
        let from = [
            ("3→16", 1000.0),
            ("16→32", 40.0),
            ("32→64", 56.0),
            ("64→128", 80.0),
        ];
        for (p, start) in from {
            for hi in [
                16.0, 24.0, 32.0, 40.0, 48.0, 56.0, 64.0, 80.0, 96.0, 112.0, 128.0,
            ] {
                pair.push(p.to_string());
                h.push(hi);
                let class = if p == "64→128" && hi == 128.0 {
                    2
                } else {
                    usize::from(hi >= start)
                };
                labels.push(class);
            }
        }
        let data = Data {
            names: vec!["c_in→c_out".into(), "h".into()],
            columns: vec![Column::Cat(pair), Column::Num(h)],
            labels,
        };
        let leaves = grow_pure(&data, MIN_LEAF, MAX_LEAVES);
        assert!(leaves.len() <= MAX_LEAVES);
        for l in &leaves {
            assert_eq!(l.exceptions(&data), 0, "{}", describe(&data, &l.conds));
        }
        let crash: Vec<String> = leaves
            .iter()
            .filter(|l| l.class == 2)
            .map(|l| describe(&data, &l.conds))
            .collect();
        assert_eq!(crash, vec!["c_in→c_out = 64→128 and h >= 128"]);
        // Every failing leaf's members are failures of its own pair beyond that pair's start.
        for l in leaves.iter().filter(|l| l.predicts_failure) {
            for &i in &l.members {
                assert!(data.labels[i] > 0);
            }
        }
    }

    /// Past the cap the tree stops deepening: its leaves keep their exceptions (which the rules
    /// then write as "mostly").
    #[test]
    fn grow_pure_keeps_to_the_cap_and_leaves_exceptions() {
        let h: Vec<f64> = (0..16).map(f64::from).collect();
        // Alternating outcomes: only one leaf per value would be pure.
        let labels: Vec<usize> = (0..16).map(|i| i % 2).collect();
        let data = Data {
            names: vec!["h".into()],
            columns: vec![Column::Num(h)],
            labels,
        };
        let leaves = grow_pure(&data, MIN_LEAF, 4);
        assert!(leaves.len() <= 2usize.pow(MAX_DEPTH as u32));
        assert!(leaves.iter().any(|l| l.exceptions(&data) > 0));
    }

    #[test]
    fn exclusions_of_most_words_read_as_the_words_left() {
        let data = Data {
            names: vec!["pair".into()],
            columns: vec![Column::Cat(
                ["3→16", "16→32", "32→64", "64→128"]
                    .map(String::from)
                    .to_vec(),
            )],
            labels: vec![0, 1, 1, 0],
        };
        let conds = vec![Cond::Ne(0, "3→16".into()), Cond::Ne(0, "64→128".into())];
        assert_eq!(describe(&data, &conds), "pair in {16→32, 32→64}");
        let one = vec![Cond::Ne(0, "3→16".into())];
        assert_eq!(describe(&data, &one), "pair != 3→16");
    }

    #[test]
    fn words_split_too() {
        let data = Data {
            names: vec!["dtype".into()],
            columns: vec![Column::Cat(vec!["f32".into(), "bf16".into(), "f32".into()])],
            labels: vec![0, 1, 0],
        };
        let leaves = grow(&data, MAX_DEPTH, MIN_LEAF);
        let fail: Vec<String> = leaves
            .iter()
            .filter(|l| l.predicts_failure)
            .map(|l| describe(&data, &l.conds))
            .collect();
        assert_eq!(fail, vec!["dtype = bf16"]);
    }
}

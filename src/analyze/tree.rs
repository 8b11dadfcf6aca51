//! A small CART-style decision tree that turns "which units failed" into a few readable rules.
//!
//! Written by hand because the data is tiny (a sweep has tens to thousands of units) and the
//! output must be explainable: each split is `param <= a` / `param >= b` with `a` and `b`
//! neighbouring observed values (so a rule never names a value the sweep did not test), or
//! `param = v` / `param != v` for words (dtype, layout, solver). Splits minimise the weighted
//! Gini impurity; ties go to the earlier feature (CSV column order) and the lower threshold, so
//! the same data always gives the same rules.

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
    /// true = the sample failed.
    pub labels: Vec<bool>,
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
    pub predicts_failure: bool,
}

impl Leaf {
    /// Members whose label disagrees with the prediction.
    pub fn exceptions(&self, data: &Data) -> usize {
        self.members
            .iter()
            .filter(|&&i| data.labels[i] != self.predicts_failure)
            .count()
    }
}

pub const MAX_DEPTH: usize = 3;
/// One unit may form a leaf: a single crash in a corner of the sweep is worth its own rule.
pub const MIN_LEAF: usize = 1;

/// Grows the tree and returns its leaves, left (`<=`, `=`) before right.
pub fn grow(data: &Data, max_depth: usize, min_leaf: usize) -> Vec<Leaf> {
    let mut leaves = Vec::new();
    let all: Vec<usize> = (0..data.labels.len()).collect();
    split(data, all, Vec::new(), max_depth, min_leaf, &mut leaves);
    leaves
}

fn gini(data: &Data, idx: &[usize]) -> f64 {
    if idx.is_empty() {
        return 0.0;
    }
    let p = idx.iter().filter(|&&i| data.labels[i]).count() as f64 / idx.len() as f64;
    2.0 * p * (1.0 - p)
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
            let fails = idx.iter().filter(|&&i| data.labels[i]).count();
            out.push(Leaf {
                conds,
                // A leaf that fails half the time is not safe: ties predict failure.
                predicts_failure: fails * 2 >= idx.len() && fails > 0,
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
            let mut text = String::new();
            for c in conds {
                if let Cond::Ne(g, w) = c
                    && *g == f
                {
                    if !text.is_empty() {
                        text.push_str(" and ");
                    }
                    let _ = write!(text, "{name} != {w}");
                }
            }
            if !text.is_empty() {
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
                labels.push((ci >= 16.0 && hi >= 48.0) || (ci == 3.0 && hi == 64.0));
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

    #[test]
    fn words_split_too() {
        let data = Data {
            names: vec!["dtype".into()],
            columns: vec![Column::Cat(vec!["f32".into(), "bf16".into(), "f32".into()])],
            labels: vec![false, true, false],
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

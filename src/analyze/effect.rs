//! Did an env variable do anything? For each variable that takes more than one value in a run,
//! units are paired that differ only in that variable (same case, solver and other variables),
//! and each pair of its values is compared: statuses, the library's choice (`chosen`), the
//! workspace, and the time, judged against run-to-run noise (noise.rs).
//!
//! A speed difference counts as the variable's effect only when more pairs are called faster
//! (or slower) than the noise rule's false calls explain: with `n` pairs timed, `k` called
//! one way is an effect when P(Binomial(n, 1 %) >= k) < 1 %. A variable with no status change
//! and no such speed effect has **no measurable effect** and is never exported.

use super::noise::{self, Timing, Verdict};
use crate::results::rundata::Row;
use std::collections::HashMap;

/// The false-call rate the speed test allows per pair, and its significance level.
pub const FALSE_CALL_RATE: f64 = 0.01;
pub const SIGNIFICANCE: f64 = 0.01;

/// Which way a variable moved the time between two of its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Speed {
    /// No more calls either way than noise explains.
    None,
    /// The second value is faster.
    Faster,
    /// The second value is slower.
    Slower,
    /// Faster for some units and slower for others, both beyond chance.
    Mixed,
}

/// Two values of one variable, compared over the units that differ only in it.
#[derive(Clone, Debug, PartialEq)]
pub struct PairEffect {
    pub a: String,
    pub b: String,
    /// Units present with both values.
    pub paired: usize,
    pub status_changed: usize,
    /// Failures among the paired units with each value.
    pub failures_a: usize,
    pub failures_b: usize,
    /// Pairs where both rows name the library's choice, and where it differs.
    pub chosen_known: usize,
    pub chosen_changed: usize,
    pub workspace_changed: usize,
    /// Pairs timed on both sides, and how many were called faster / slower with `b`.
    pub timed: usize,
    pub faster: usize,
    pub slower: usize,
    /// Geometric mean, smallest and largest of B's throughput over A's over the timed pairs.
    pub geomean: Option<f64>,
    pub min_ratio: Option<f64>,
    pub max_ratio: Option<f64>,
    /// Unit ids of A's side of called pairs (first few), as evidence.
    pub faster_units: Vec<String>,
    pub slower_units: Vec<String>,
    pub speed: Speed,
}

impl PairEffect {
    /// The same comparison seen from the other side: `a` and `b` swapped.
    pub fn flipped(&self) -> PairEffect {
        let inv = |r: Option<f64>| r.map(|r| 1.0 / r);
        PairEffect {
            a: self.b.clone(),
            b: self.a.clone(),
            failures_a: self.failures_b,
            failures_b: self.failures_a,
            faster: self.slower,
            slower: self.faster,
            geomean: inv(self.geomean),
            min_ratio: inv(self.max_ratio),
            max_ratio: inv(self.min_ratio),
            faster_units: self.slower_units.clone(),
            slower_units: self.faster_units.clone(),
            speed: match self.speed {
                Speed::Faster => Speed::Slower,
                Speed::Slower => Speed::Faster,
                other => other,
            },
            ..self.clone()
        }
    }

    pub fn any(&self) -> bool {
        self.status_changed > 0 || self.speed != Speed::None
    }

    /// One line: what changed from `a` to `b`.
    pub fn text(&self, var: &str) -> String {
        let ratio = match (self.geomean, self.min_ratio, self.max_ratio) {
            (Some(g), Some(lo), Some(hi)) => {
                format!("throughput ratio geomean {g:.3} (per unit {lo:.3} to {hi:.3})")
            }
            _ => "no unit timed with both".into(),
        };
        format!(
            "{var}={} -> {var}={}: {} paired units; status changed in {} ({} vs {} failures); \
             library choice changed in {} of {} that name it; workspace changed in {}; \
             {} timed: {} faster, {} slower beyond noise, {ratio}",
            self.a,
            self.b,
            self.paired,
            self.status_changed,
            self.failures_a,
            self.failures_b,
            self.chosen_changed,
            self.chosen_known,
            self.workspace_changed,
            self.timed,
            self.faster,
            self.slower
        )
    }
}

/// One variable's effect over all pairs of its values.
#[derive(Clone, Debug, PartialEq)]
pub struct VarEffect {
    pub name: String,
    /// Its values, in the run's order.
    pub values: Vec<String>,
    /// Every pair of values (i < j in `values`).
    pub pairs: Vec<PairEffect>,
}

impl VarEffect {
    pub fn any(&self) -> bool {
        self.pairs.iter().any(PairEffect::any)
    }

    pub fn status_effect(&self) -> bool {
        self.pairs.iter().any(|p| p.status_changed > 0)
    }

    pub fn mixed(&self) -> bool {
        self.pairs.iter().any(|p| p.speed == Speed::Mixed)
    }

    /// The comparison `from` -> `to` (`to` as `b`), whichever way round it was computed.
    pub fn pair(&self, from: &str, to: &str) -> Option<PairEffect> {
        self.pairs.iter().find_map(|p| {
            if p.a == from && p.b == to {
                Some(p.clone())
            } else if p.a == to && p.b == from {
                Some(p.flipped())
            } else {
                None
            }
        })
    }

    /// The fastest value when the variable changes speed and nothing else: the value that no
    /// other value beats, and that beats at least one. None when the effects are mixed or there
    /// is no speed effect. With it, the values it does not measurably beat (ties).
    pub fn fastest(&self) -> Option<(String, Vec<String>)> {
        if self.mixed() {
            return None;
        }
        // For value v against w: Some(true) v faster, Some(false) v slower, None no difference.
        let beats = |v: &str, w: &str| match self.pair(w, v)?.speed {
            Speed::Faster => Some(true),
            Speed::Slower => Some(false),
            _ => None,
        };
        self.values.iter().find_map(|v| {
            let others: Vec<&String> = self.values.iter().filter(|w| *w != v).collect();
            let lost = others.iter().any(|w| beats(v, w) == Some(false));
            let won = others.iter().any(|w| beats(v, w) == Some(true));
            (!lost && won).then(|| {
                let ties = others
                    .iter()
                    .filter(|w| beats(v, w).is_none())
                    .map(|w| w.to_string())
                    .collect();
                (v.clone(), ties)
            })
        })
    }
}

/// P(Binomial(n, p) >= k).
pub fn binomial_tail(n: usize, k: usize, p: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > n {
        return 0.0;
    }
    // Sum the lower part in log space and take the complement (n can be large).
    let (lp, lq) = (p.ln(), (1.0 - p).ln());
    let mut log_c = 0.0; // ln C(n, 0)
    let mut below = 0.0;
    for i in 0..k {
        if i > 0 {
            log_c += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        below += (log_c + i as f64 * lp + (n - i) as f64 * lq).exp();
    }
    (1.0 - below).max(0.0)
}

/// More calls one way than the false-call rate explains.
pub fn beyond_chance(n: usize, k: usize) -> bool {
    k > 0 && binomial_tail(n, k, FALSE_CALL_RATE) < SIGNIFICANCE
}

/// Effects of every variable in `varied`; `vars_of` maps a row's env key to its variables.
pub fn effects(
    rows: &[Row],
    varied: &[String],
    vars_of: &HashMap<String, Vec<(String, String)>>,
) -> Vec<VarEffect> {
    let floor = noise::floor(rows).unwrap_or(0.0);
    varied
        .iter()
        .map(|name| var_effect(rows, name, vars_of, floor))
        .collect()
}

fn var_effect(
    rows: &[Row],
    name: &str,
    vars_of: &HashMap<String, Vec<(String, String)>>,
    floor: f64,
) -> VarEffect {
    // value -> context (case, solver, the other variables) -> row
    let mut by_value: Vec<(String, HashMap<String, &Row>)> = Vec::new();
    for r in rows {
        let Some(vars) = vars_of.get(r.env.as_str()) else {
            continue;
        };
        let Some((_, value)) = vars.iter().find(|(n, _)| n == name) else {
            continue;
        };
        let others: Vec<String> = vars
            .iter()
            .filter(|(n, _)| n != name)
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        let context = format!(
            "{}\u{1f}{}\u{1f}{}",
            r.case_id,
            r.solver,
            others.join("\u{1e}")
        );
        let slot = match by_value.iter().position(|(v, _)| v == value) {
            Some(i) => i,
            None => {
                by_value.push((value.clone(), HashMap::new()));
                by_value.len() - 1
            }
        };
        by_value[slot].1.insert(context, r);
    }
    let mut pairs = Vec::new();
    for i in 0..by_value.len() {
        for j in i + 1..by_value.len() {
            pairs.push(pair_effect(&by_value[i], &by_value[j], floor));
        }
    }
    VarEffect {
        name: name.to_string(),
        values: by_value.into_iter().map(|(v, _)| v).collect(),
        pairs,
    }
}

type Side<'a> = (String, HashMap<String, &'a Row>);

fn pair_effect(a: &Side, b: &Side, floor: f64) -> PairEffect {
    let mut e = PairEffect {
        a: a.0.clone(),
        b: b.0.clone(),
        paired: 0,
        status_changed: 0,
        failures_a: 0,
        failures_b: 0,
        chosen_known: 0,
        chosen_changed: 0,
        workspace_changed: 0,
        timed: 0,
        faster: 0,
        slower: 0,
        geomean: None,
        min_ratio: None,
        max_ratio: None,
        faster_units: Vec::new(),
        slower_units: Vec::new(),
        speed: Speed::None,
    };
    let mut contexts: Vec<(&String, &&Row)> = a.1.iter().collect();
    contexts.sort_by(|x, y| x.0.cmp(y.0));
    let mut logs = Vec::new();
    for (ctx, ra) in contexts {
        let Some(rb) = b.1.get(ctx) else { continue };
        e.paired += 1;
        if ra.status != rb.status {
            e.status_changed += 1;
        }
        e.failures_a += usize::from(ra.status.predicts_failure());
        e.failures_b += usize::from(rb.status.predicts_failure());
        if !ra.chosen.is_empty() && !rb.chosen.is_empty() {
            e.chosen_known += 1;
            e.chosen_changed += usize::from(ra.chosen != rb.chosen);
        }
        if ra.workspace_bytes.is_some()
            && rb.workspace_bytes.is_some()
            && ra.workspace_bytes != rb.workspace_bytes
        {
            e.workspace_changed += 1;
        }
        if let (Some(ta), Some(tb)) = (Timing::of(ra), Timing::of(rb)) {
            let (r, v) = noise::verdict(ta, tb, floor);
            e.timed += 1;
            logs.push(r.ln());
            match v {
                Verdict::Faster => {
                    e.faster += 1;
                    e.faster_units.push(ra.unit_id.to_string());
                }
                Verdict::Slower => {
                    e.slower += 1;
                    e.slower_units.push(ra.unit_id.to_string());
                }
                _ => {}
            }
        }
    }
    if !logs.is_empty() {
        let n = logs.len() as f64;
        e.geomean = Some((logs.iter().sum::<f64>() / n).exp());
        e.min_ratio = logs.iter().copied().reduce(f64::min).map(f64::exp);
        e.max_ratio = logs.iter().copied().reduce(f64::max).map(f64::exp);
    }
    e.speed = match (
        beyond_chance(e.timed, e.faster),
        beyond_chance(e.timed, e.slower),
    ) {
        (true, true) => Speed::Mixed,
        (true, false) => Speed::Faster,
        (false, true) => Speed::Slower,
        (false, false) => Speed::None,
    };
    e.faster_units.truncate(5);
    e.slower_units.truncate(5);
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_reads_the_same_from_either_side() {
        let p = PairEffect {
            a: "1".into(),
            b: "2".into(),
            paired: 4,
            status_changed: 0,
            failures_a: 0,
            failures_b: 0,
            chosen_known: 4,
            chosen_changed: 4,
            workspace_changed: 0,
            timed: 4,
            faster: 0,
            slower: 4,
            geomean: Some(0.5),
            min_ratio: Some(0.25),
            max_ratio: Some(0.8),
            faster_units: Vec::new(),
            slower_units: vec!["u".into()],
            speed: Speed::Slower,
        };
        let e = VarEffect {
            name: "V".into(),
            values: vec!["1".into(), "2".into()],
            pairs: vec![p.clone()],
        };
        let back = e.pair("2", "1").unwrap();
        assert_eq!(
            (back.speed, back.faster, back.slower),
            (Speed::Faster, 4, 0)
        );
        assert_eq!(
            (back.geomean, back.min_ratio, back.max_ratio),
            (Some(2.0), Some(1.25), Some(4.0))
        );
        assert_eq!(back.faster_units, vec!["u".to_string()]);
        assert_eq!(back.flipped(), p);
        // "2" is slower than "1": the fastest value is "1", with no ties.
        assert_eq!(e.fastest(), Some(("1".to_string(), Vec::new())));
    }

    #[test]
    fn binomial_tail_matches_hand_figures() {
        assert_eq!(binomial_tail(10, 0, 0.01), 1.0);
        // P(X >= 1) = 1 - 0.99^10
        assert!((binomial_tail(10, 1, 0.01) - (1.0 - 0.99f64.powi(10))).abs() < 1e-12);
        assert_eq!(binomial_tail(3, 4, 0.5), 0.0);
        // One false call in 72 pairs is chance; four is not.
        assert!(!beyond_chance(72, 1));
        assert!(!beyond_chance(72, 2));
        assert!(beyond_chance(72, 4));
        // Two of eight is beyond chance; everything called in a 3-unit sweep too.
        assert!(beyond_chance(8, 2));
        assert!(beyond_chance(3, 3));
    }
}

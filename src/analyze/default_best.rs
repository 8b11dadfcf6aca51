//! The library's default against the best of its solutions, shape by shape (issue 44,
//! rocm-libraries#9985: "rocBLAS's default is more than 10 % slower than its best on 61-79 % of
//! 239 shapes"). A run that measured `solver = "default"` (what the library picks, its pick in
//! `chosen`) beside the named solutions of the same case (`solver = "all"`) holds both: for each
//! case, env combination, tree and device, the default's time against the fastest named
//! solution's, and whether the best beats the default beyond the run-to-run noise (the rule
//! `compare` uses, `noise::verdict`). Read by the report and by `rocsweep tune`.

use super::noise::{self, Timing, Verdict};
use crate::results::rundata::Row;
use std::collections::BTreeMap;

/// The figure of rocm-libraries#9985: a default more than 10 % slower than the best.
pub const SLOWER_BY: f64 = 1.10;

/// One case's default against its best named solution.
#[derive(Clone, Debug)]
pub struct Pair<'a> {
    pub default: &'a Row,
    /// The fastest `ok` row of the case's named solutions (not `default`) in the same env
    /// combination, tree, backend and device.
    pub best: &'a Row,
    /// Named solutions timed beside the default.
    pub timed: usize,
    /// The default's time over the best's (above 1: the default is slower).
    pub ratio: f64,
    /// The best against the default by the noise rule: `Faster` when it beats the default
    /// beyond noise.
    pub verdict: Verdict,
}

impl Pair<'_> {
    /// The best beats the default beyond noise.
    pub fn beats_default(&self) -> bool {
        self.verdict == Verdict::Faster
    }

    /// The default is more than 10 % slower than the best (the figure of #9985, whatever the
    /// noise).
    pub fn default_much_slower(&self) -> bool {
        self.ratio > SLOWER_BY
    }
}

/// Every case of `rows` with an `ok` timed `default` row and at least one `ok` timed named
/// solution beside it; in the order the default rows come.
pub fn pairs(rows: &[Row]) -> Vec<Pair<'_>> {
    let floor = noise::floor(rows).unwrap_or(0.0);
    let key = |r: &Row| {
        (
            r.case_id.to_string(),
            r.env.to_string(),
            r.rocm.to_string(),
            r.backend.to_string(),
            r.device.to_string(),
        )
    };
    let mut best: BTreeMap<_, (&Row, usize)> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.solver.as_str() != "default") {
        let Some(t) = Timing::of(r) else { continue };
        best.entry(key(r))
            .and_modify(|(b, n)| {
                *n += 1;
                if Timing::of(b).is_none_or(|bt| t.median_ms < bt.median_ms) {
                    *b = r;
                }
            })
            .or_insert((r, 1));
    }
    rows.iter()
        .filter(|r| r.solver.as_str() == "default")
        .filter_map(|d| {
            let td = Timing::of(d)?;
            let (b, timed) = *best.get(&key(d))?;
            let tb = Timing::of(b)?;
            let (ratio, verdict) = noise::verdict(td, tb, floor);
            Some(Pair {
                default: d,
                best: b,
                timed,
                ratio,
                verdict,
            })
        })
        .collect()
}

/// The counts the report leads with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tally {
    pub shapes: usize,
    /// The default more than 10 % slower than the best.
    pub much_slower: usize,
    /// The best beats the default beyond noise.
    pub beaten: usize,
}

pub fn tally(pairs: &[Pair]) -> Tally {
    Tally {
        shapes: pairs.len(),
        much_slower: pairs.iter().filter(|p| p.default_much_slower()).count(),
        beaten: pairs.iter().filter(|p| p.beats_default()).count(),
    }
}

impl Tally {
    /// One sentence: "the default is more than 10 % slower than the best on 3 of 8 shapes
    /// (38 %); the best beats it beyond noise on 2".
    pub fn line(&self) -> String {
        let share = if self.shapes == 0 {
            0.0
        } else {
            100.0 * self.much_slower as f64 / self.shapes as f64
        };
        format!(
            "the default is more than 10 % slower than the best solution on {} of {} shapes ({share:.0} %); the best beats the default beyond noise on {}",
            self.much_slower, self.shapes, self.beaten
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::status::Status;

    fn row(case: &str, solver: &str, trials: &[f64]) -> Row {
        let mut r = Row::for_tests();
        r.case_id = case.into();
        r.solver = solver.into();
        r.status = Status::Ok;
        r.trial_ms = trials.to_vec();
        r.median_ms = Some(trials[trials.len() / 2]);
        r
    }

    #[test]
    fn each_default_meets_the_fastest_named_solution_of_its_case() {
        let rows = vec![
            row("a", "default", &[2.0, 2.01, 2.02]),
            row("a", "sol1", &[2.0, 2.01, 2.02]),
            row("a", "sol2", &[1.0, 1.01, 1.02]),
            row("b", "default", &[1.0, 1.01, 1.02]),
            row("b", "sol1", &[1.04, 1.05, 1.06]),
            // A case without a default, and a default without a named solution: no pair.
            row("c", "sol1", &[1.0, 1.0, 1.0]),
            row("d", "default", &[1.0, 1.0, 1.0]),
        ];
        let p = pairs(&rows);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].best.solver.as_str(), "sol2");
        assert_eq!(p[0].timed, 2);
        assert!((p[0].ratio - 2.01 / 1.01).abs() < 1e-9);
        assert!(p[0].beats_default() && p[0].default_much_slower());
        assert_eq!(p[1].best.solver.as_str(), "sol1");
        assert!(!p[1].beats_default() && !p[1].default_much_slower());
        let t = tally(&p);
        assert_eq!(
            t,
            Tally {
                shapes: 2,
                much_slower: 1,
                beaten: 1
            }
        );
        assert!(t.line().contains("on 1 of 2 shapes (50 %)"), "{}", t.line());
    }

    #[test]
    fn a_best_within_noise_does_not_beat_the_default() {
        // 12 % faster, but the trials spread 30 %.
        let rows = vec![
            row("a", "default", &[1.0, 1.12, 1.3]),
            row("a", "sol1", &[0.8, 1.0, 1.3]),
        ];
        let p = pairs(&rows);
        assert!(p[0].default_much_slower());
        assert!(!p[0].beats_default(), "{:?}", p[0].verdict);
    }
}

//! Run strategies that spend fewer hangs than the full grid (`run --strategy`). Pure logic: it
//! sees unit positions, numbers and statuses, never processes or devices; `strategy_run.rs`
//! feeds it real measurements.
//!
//! - `grid`: every unit runs (the default).
//! - `prune`: each line (all parameters, solver and env combination equal except the `--along`
//!   axis) runs from small to large; once a unit on it fails, every larger unit on it is
//!   recorded `skipped` with `predicted-hang` (or `predicted-crash`) and never runs.
//! - `bisect`: on each line, a binary search for the boundary between the safe and the failing
//!   side, assuming monotonicity (small is safe, large fails); the units it did not measure are
//!   recorded `inferred-ok` / `inferred-fail`, naming the measured units they follow from.
//!
//! What counts as failing: `hang`, `crash` and `interrupted` (started and never finished: on an
//! RDNA1 box the mark of a machine hang), i.e. the outcomes that take a worker or the machine
//! down. Every other measured status (ok, mismatch, zeros, nonfinite, error, unsupported) is the
//! safe side: the unit came back within its limits. `skipped` (the device turned unhealthy)
//! says nothing, and the line's search stops there.

use crate::op;
use crate::results::status::Status;
use serde::{Deserialize, Serialize};

mod along;
pub use along::{Along, lines};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Kind {
    #[default]
    Grid,
    Prune,
    Bisect,
}

impl Kind {
    pub const NAMES: [&'static str; 3] = ["grid", "prune", "bisect"];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Grid => "grid",
            Kind::Prune => "prune",
            Kind::Bisect => "bisect",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        match s {
            "grid" => Some(Kind::Grid),
            "prune" => Some(Kind::Prune),
            "bisect" => Some(Kind::Bisect),
            _ => None,
        }
    }
}

/// What manifest.json records about the strategy, so that `--resume` replays the same one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StrategyInfo {
    /// grid | prune | bisect
    pub name: String,
    /// The axis that defines "larger" (empty for grid).
    #[serde(default)]
    pub along: String,
    /// Inferred units run for real after the search (bisect).
    #[serde(default)]
    pub confirm: u64,
    /// Picks which inferred units are confirmed; the same seed picks the same units.
    #[serde(default)]
    pub seed: u64,
}

/// How a boundary search reads a measured status (see the module comment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Safe,
    Fail,
    Unknown,
}

pub fn class(s: Status) -> Class {
    match s {
        Status::Hang | Status::Crash | Status::Interrupted => Class::Fail,
        Status::Skipped | Status::InferredOk | Status::InferredFail => Class::Unknown,
        Status::Ok
        | Status::Mismatch
        | Status::Zeros
        | Status::Nonfinite
        | Status::Error
        | Status::Unsupported => Class::Safe,
    }
}

pub use crate::exec::record::events::Measured;

/// What a search decided about a position of a line that it did not measure.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// prune: never run, because the unit at position `after` (smaller) failed.
    Predicted { after: usize, failure: Measured },
    /// bisect: `status` is `inferred-ok` or `inferred-fail`; `safe` is the largest measured safe
    /// position and `fail` the smallest measured failing one (the boundary lies between them).
    Inferred {
        status: Status,
        safe: Option<usize>,
        fail: Option<usize>,
    },
}

/// The search over one line, one measurement at a time: `next` names the position to measure,
/// `observe` takes its outcome. Stepwise, so a runner can measure the next position of many
/// lines at once (one batch per round, spread over devices).
#[derive(Clone, Debug)]
pub struct Search {
    kind: Kind,
    /// The line's values on the axis, sorted.
    values: Vec<f64>,
    measured: Vec<(usize, Measured)>,
    /// bisect: every position <= lo is safe and every position >= hi fails (-1 and len are
    /// virtual ends), under the monotonicity the strategy assumes.
    lo: isize,
    hi: isize,
    /// prune: the next position to run, and the first that failed.
    cursor: usize,
    failed: Option<usize>,
    /// A measurement said nothing (`skipped`): the search cannot go on.
    stopped: bool,
}

impl Search {
    /// `kind` is prune or bisect (grid needs no search and is treated as prune).
    pub fn new(kind: Kind, values: Vec<f64>) -> Search {
        let len = values.len() as isize;
        Search {
            kind,
            values,
            measured: Vec::new(),
            lo: -1,
            hi: len,
            cursor: 0,
            failed: None,
            stopped: false,
        }
    }

    /// The position to measure next; `None` when the search is over (or stopped).
    pub fn next(&self) -> Option<usize> {
        if self.stopped {
            return None;
        }
        match self.kind {
            Kind::Bisect => {
                (self.hi - self.lo > 1).then(|| (self.lo + (self.hi - self.lo) / 2) as usize)
            }
            Kind::Prune | Kind::Grid => {
                let p = self.cursor;
                if p >= self.values.len() {
                    return None;
                }
                // Values are sorted: once one is larger than the failure's, all after it are.
                match self.failed {
                    Some(f) if self.values[p] > self.values[f] => None,
                    _ => Some(p),
                }
            }
        }
    }

    /// Takes the outcome of the position `next` named.
    pub fn observe(&mut self, pos: usize, m: Measured) {
        let c = class(m.status);
        self.measured.push((pos, m));
        if c == Class::Unknown {
            self.stopped = true;
            return;
        }
        match self.kind {
            Kind::Bisect => match c {
                Class::Safe => self.lo = self.lo.max(pos as isize),
                _ => self.hi = self.hi.min(pos as isize),
            },
            Kind::Prune | Kind::Grid => {
                self.cursor = pos + 1;
                if c == Class::Fail && self.failed.is_none() {
                    self.failed = Some(pos);
                }
            }
        }
    }

    /// Over, with every position either measured or decided.
    pub fn is_done(&self) -> bool {
        !self.stopped && self.next().is_none()
    }

    /// Positions measured, with their outcomes, in the order measured.
    pub fn measured(&self) -> &[(usize, Measured)] {
        &self.measured
    }

    pub fn is_measured(&self, pos: usize) -> bool {
        self.measured.iter().any(|(p, _)| *p == pos)
    }

    /// What the search decided for every position it did not measure (empty until it is done).
    pub fn verdicts(&self) -> Vec<(usize, Verdict)> {
        if !self.is_done() {
            return Vec::new();
        }
        let mut out = Vec::new();
        match self.kind {
            Kind::Bisect => {
                let safe = (self.lo >= 0).then_some(self.lo as usize);
                let fail = ((self.hi as usize) < self.values.len()).then_some(self.hi as usize);
                for pos in (0..self.values.len()).filter(|p| !self.is_measured(*p)) {
                    let status = if (pos as isize) <= self.lo {
                        Status::InferredOk
                    } else {
                        Status::InferredFail
                    };
                    out.push((pos, Verdict::Inferred { status, safe, fail }));
                }
            }
            Kind::Prune | Kind::Grid => {
                if let Some(f) = self.failed {
                    let failure = self
                        .measured
                        .iter()
                        .find(|(p, _)| *p == f)
                        .map(|(_, m)| m.clone());
                    if let Some(failure) = failure {
                        for pos in (0..self.values.len()).filter(|p| !self.is_measured(*p)) {
                            out.push((
                                pos,
                                Verdict::Predicted {
                                    after: f,
                                    failure: failure.clone(),
                                },
                            ));
                        }
                    }
                }
            }
        }
        out
    }
}

/// Runs a search to its end with `measure` (`None` stops it): for tests and simulations.
pub fn run_line(
    kind: Kind,
    values: Vec<f64>,
    mut measure: impl FnMut(usize) -> Option<Measured>,
) -> Search {
    let mut s = Search::new(kind, values);
    while let Some(pos) = s.next() {
        match measure(pos) {
            Some(m) => s.observe(pos, m),
            None => break,
        }
    }
    s
}

/// A measured unit as an inference names it: `h=32 ok [unit 1a2b...]`.
pub struct Evidence<'a> {
    pub value: &'a str,
    pub status: Status,
    pub unit_id: &'a str,
}

/// The `error` column of an inferred row: which measured units it follows from.
pub fn inferred_detail(axis: &str, safe: Option<&Evidence>, fail: Option<&Evidence>) -> String {
    let show = |e: &Evidence| format!("{axis}={} {} [unit {}]", e.value, e.status, e.unit_id);
    let from = match (safe, fail) {
        (Some(s), Some(f)) => format!("{} and {}", show(s), show(f)),
        (Some(s), None) => format!("{} (the largest on this line; none failed)", show(s)),
        (None, Some(f)) => format!("{} (the smallest on this line; all fail)", show(f)),
        (None, None) => "nothing (empty line)".to_string(),
    };
    format!("inferred from {from}; bisect along {axis} assumes small is safe and large fails")
}

/// The `error` column of a unit prune skipped: `predicted-hang` (or `predicted-crash`) and why.
pub fn predicted_detail(axis: &str, failure: &Evidence, phase: &str) -> String {
    let word = if failure.status == Status::Crash {
        "predicted-crash"
    } else {
        "predicted-hang"
    };
    let phase = if phase.is_empty() {
        String::new()
    } else {
        format!(" in {phase}")
    };
    format!(
        "{word}: not run, because the smaller {axis}={} on this line ended {}{phase} [unit {}] (prune along {axis})",
        failure.value, failure.status, failure.unit_id
    )
}

/// The first `n` unit ids by a hash of (seed, unit id): a choice that depends only on the seed
/// and the set of candidates, not on their order or on any random number generator's version.
pub fn pick(candidates: &[String], n: u64, seed: u64) -> Vec<String> {
    let mut keyed: Vec<(String, &String)> = candidates
        .iter()
        .map(|id| (op::short_hash(format!("{seed}|{id}").as_bytes()), id))
        .collect();
    keyed.sort();
    keyed
        .into_iter()
        .take(usize::try_from(n).unwrap_or(usize::MAX))
        .map(|(_, id)| id.clone())
        .collect()
}

/// Whether a measurement agrees with an inference: both safe or both failing. `None` when the
/// measurement says nothing (`skipped`).
pub fn agrees(inferred: Status, measured: Status) -> Option<bool> {
    let want = if inferred == Status::InferredFail {
        Class::Fail
    } else {
        Class::Safe
    };
    match class(measured) {
        Class::Unknown => None,
        c => Some(c == want),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(boundary: usize) -> impl FnMut(usize) -> Option<Measured> {
        move |pos| {
            let hang = pos >= boundary;
            Some(Measured {
                status: if hang { Status::Hang } else { Status::Ok },
                phase: if hang { "run" } else { "" }.into(),
            })
        }
    }

    fn values(len: usize) -> Vec<f64> {
        (0..len).map(|i| 8.0 * (i + 1) as f64).collect()
    }

    #[test]
    fn bisect_finds_every_boundary_and_infers_the_rest() {
        for len in 0..20 {
            for boundary in 0..=len {
                let mut runs = 0;
                let mut m = model(boundary);
                let s = run_line(Kind::Bisect, values(len), |p| {
                    runs += 1;
                    m(p)
                });
                assert!(s.is_done());
                let verdicts = s.verdicts();
                assert_eq!(s.measured().len() + verdicts.len(), len);
                for (p, v) in &verdicts {
                    let Verdict::Inferred { status, safe, fail } = v else {
                        panic!("bisect infers");
                    };
                    let want = if *p >= boundary {
                        Status::InferredFail
                    } else {
                        Status::InferredOk
                    };
                    assert_eq!(*status, want, "len {len} boundary {boundary} pos {p}");
                    assert_eq!(*safe, boundary.checked_sub(1));
                    assert_eq!(*fail, (boundary < len).then_some(boundary));
                }
                // A binary search over the len + 1 places the boundary can be.
                let bound = (usize::BITS - len.leading_zeros()) as usize;
                assert!(runs <= bound, "len {len}: {runs} runs");
            }
        }
    }

    #[test]
    fn a_search_stops_on_a_skipped_unit_or_when_told_to() {
        let skipped = |_| {
            Some(Measured {
                status: Status::Skipped,
                phase: String::new(),
            })
        };
        for kind in [Kind::Bisect, Kind::Prune] {
            let s = run_line(kind, values(8), skipped);
            assert!(!s.is_done() && s.verdicts().is_empty());
            let s = run_line(kind, values(8), |_| None);
            assert!(!s.is_done() && s.measured().is_empty());
        }
    }

    #[test]
    fn prune_runs_up_to_the_first_failure_and_predicts_the_larger_ones() {
        let mut ran = Vec::new();
        let s = run_line(Kind::Prune, vec![8.0, 16.0, 16.0, 32.0, 64.0], |p| {
            ran.push(p);
            Some(Measured {
                status: if p == 1 { Status::Hang } else { Status::Ok },
                phase: "run".into(),
            })
        });
        // Position 2 has the same value as the hang, so it is not larger: it runs.
        assert_eq!(ran, vec![0, 1, 2]);
        assert!(s.is_done());
        let v = s.verdicts();
        assert_eq!(v.iter().map(|v| v.0).collect::<Vec<_>>(), vec![3, 4]);
        assert!(
            matches!(&v[0].1, Verdict::Predicted { after: 1, failure } if failure.status == Status::Hang)
        );
        // No failure: everything runs, nothing is predicted.
        let s = run_line(Kind::Prune, values(5), model(9));
        assert_eq!((s.measured().len(), s.verdicts().len()), (5, 0));
    }

    #[test]
    fn pick_is_a_function_of_the_seed_and_the_set() {
        let ids: Vec<String> = (0..50).map(|i| format!("unit{i}")).collect();
        let a = pick(&ids, 7, 42);
        let mut reversed = ids.clone();
        reversed.reverse();
        assert_eq!(a, pick(&reversed, 7, 42));
        assert_eq!(a.len(), 7);
        assert_ne!(a, pick(&ids, 7, 43));
        assert_eq!(pick(&ids, 500, 1).len(), 50);
    }

    #[test]
    fn failing_means_hang_crash_or_interrupted() {
        for s in Status::ALL {
            let fail = matches!(s, Status::Hang | Status::Crash | Status::Interrupted);
            assert_eq!(class(s) == Class::Fail, fail, "{s}");
        }
        assert_eq!(agrees(Status::InferredOk, Status::Ok), Some(true));
        assert_eq!(agrees(Status::InferredOk, Status::Hang), Some(false));
        assert_eq!(agrees(Status::InferredFail, Status::Crash), Some(true));
        assert_eq!(agrees(Status::InferredFail, Status::Skipped), None);
    }
}

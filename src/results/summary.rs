//! The end-of-run summary: units per status and the failures, one line each.

use super::status::Status;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// A failure worth listing at the end of a run.
pub struct FailureLine {
    pub unit_id: String,
    pub status: Status,
    pub what: String,
    pub detail: String,
}

#[derive(Default)]
pub struct Summary {
    pub counts: BTreeMap<Status, u64>,
    pub failures: Vec<FailureLine>,
    pub failures_total: u64,
    /// Ok trials of units that have no row yet, kept in the journal this session (a resume
    /// goes on from them).
    pub trials_kept: std::collections::HashMap<String, u64>,
}

/// Failures beyond this many are counted but not listed.
const LISTED: usize = 25;

impl Summary {
    pub fn add(
        &mut self,
        status: Status,
        unit_id: &str,
        what: impl FnOnce() -> String,
        detail: &str,
    ) {
        *self.counts.entry(status).or_default() += 1;
        if status.is_failure() {
            self.failures_total += 1;
            if self.failures.len() < LISTED {
                self.failures.push(FailureLine {
                    unit_id: unit_id.to_string(),
                    status,
                    what: what(),
                    detail: detail.chars().take(200).collect(),
                });
            }
        }
    }

    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    pub fn counts_by_name(&self) -> BTreeMap<String, u64> {
        self.counts
            .iter()
            .map(|(s, n)| (s.name().to_string(), *n))
            .collect()
    }

    /// `12 ok, 1 mismatch` in the order of `Status::ALL`.
    pub fn counts_line(&self) -> String {
        let parts: Vec<String> = Status::ALL
            .iter()
            .filter_map(|s| self.counts.get(s).map(|n| format!("{n} {}", s.name())))
            .collect();
        if parts.is_empty() {
            "no units".into()
        } else {
            parts.join(", ")
        }
    }

    /// The end-of-run summary. `planned`: the units the run planned, when it stopped before
    /// its last one (the count then says how far it got).
    pub fn render(&self, planned: Option<u64>) -> String {
        let mut s = String::new();
        match planned {
            Some(p) => {
                let _ = writeln!(
                    s,
                    "units: {} of {p} planned done ({})",
                    self.total(),
                    self.counts_line()
                );
                let kept: u64 = self.trials_kept.values().sum();
                if kept > 0 {
                    let _ = writeln!(
                        s,
                        "trials: {kept} kept for {} units not yet done (a resume goes on from them)",
                        self.trials_kept.len()
                    );
                }
            }
            None => {
                let _ = writeln!(s, "units: {} ({})", self.total(), self.counts_line());
            }
        }
        if self.failures_total > 0 {
            let _ = writeln!(s, "failures:");
            for f in &self.failures {
                let _ = writeln!(
                    s,
                    "  {} {:<10} {}  {}",
                    f.unit_id,
                    f.status.name(),
                    f.what,
                    f.detail
                );
            }
            let more = self.failures_total as usize - self.failures.len();
            if more > 0 {
                let _ = writeln!(s, "  ... and {more} more (see results.csv)");
            }
        }
        s
    }
}

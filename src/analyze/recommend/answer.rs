//! What `recommend` answers: each env combination's report ([`ComboReport`], with its
//! failure rules), the ranking ([`Recommendation`]), and for each variable of the winner
//! whether to export it and why ([`Decision`]).

use crate::analyze::boundary::{Axes, Boundary};
use crate::analyze::effect::{Speed, VarEffect};
use crate::results::status::Status;
use std::collections::BTreeMap;

pub const PROFILE_NAME: &str = "rocsweep-env.sh";

/// A leaf of the failure tree as a sentence.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// What the leaf predicts: a failure status or `None` for ok.
    pub status: Option<Status>,
    /// The most common phase of that status in the leaf.
    pub phase: String,
    /// `c_in→c_out = 16→32 and h >= 40`; empty when the rule covers the whole sweep.
    pub when: String,
    pub units: usize,
    /// Units in the leaf whose outcome is not the rule's (another failure counts too).
    pub exceptions: usize,
    /// The exceptions, named (`ok at h=40`), the rest counted (`3 more`).
    pub exception_list: Vec<String>,
    /// Units of the rule's status that a boundary search inferred instead of running.
    pub inferred: usize,
}

impl Rule {
    /// `hangs in compile when ... (6 units; exceptions: 0)` for a pure leaf; a leaf with
    /// exceptions is never written as if it held everywhere: `mostly hangs ... (exceptions: 2:
    /// ok at h=40, ok at h=48)`.
    pub fn text(&self) -> String {
        let what = match self.status {
            None => "ok".to_string(),
            Some(s) => {
                let verb = match s {
                    Status::Hang => "hangs",
                    Status::Crash => "crashes",
                    Status::Mismatch => "returns wrong results (mismatch)",
                    Status::Zeros => "returns all zeros",
                    Status::Nonfinite => "returns NaN/Inf",
                    Status::Error => "fails with an error",
                    Status::InferredFail => "is inferred to hang or crash (bisect; not run)",
                    other => other.name(),
                };
                if self.phase.is_empty() {
                    verb.to_string()
                } else {
                    format!("{verb} in {}", self.phase)
                }
            }
        };
        let what = if self.exceptions > 0 {
            format!("mostly {what}")
        } else {
            what
        };
        let when = if self.when.is_empty() {
            "everywhere in the sweep".to_string()
        } else {
            format!("when {}", self.when)
        };
        let inferred = if self.inferred > 0 {
            format!(
                ", {} of them inferred by the boundary search",
                self.inferred
            )
        } else {
            String::new()
        };
        let exceptions = if self.exception_list.is_empty() {
            self.exceptions.to_string()
        } else {
            format!("{}: {}", self.exceptions, self.exception_list.join(", "))
        };
        format!(
            "{what} {when} ({} unit{}{inferred}; exceptions: {exceptions})",
            self.units,
            if self.units == 1 { "" } else { "s" },
        )
    }
}

/// One env combination with its counts, throughput and learned rules.
#[derive(Clone, Debug)]
pub struct ComboReport {
    /// The `env` column's text (`A=1;B=2`).
    pub key: String,
    pub vars: Vec<(String, String)>,
    pub units: usize,
    pub counts: BTreeMap<Status, usize>,
    pub failures: usize,
    pub ok: usize,
    /// Geometric mean of the throughput metric over the units ok in every combination.
    pub throughput: Option<f64>,
    pub fail_rules: Vec<Rule>,
    pub ok_rules: Vec<Rule>,
    /// The device its units ran on (rows' `device`), when known.
    pub device: String,
    /// Where each of the combination's lines starts failing along `Recommendation::axes.along`.
    pub boundaries: Vec<Boundary>,
    /// For a sweep weighted by a model's calls: the share of the calls in each status.
    pub model: Option<String>,
}

impl ComboReport {
    pub fn count(&self, s: Status) -> usize {
        self.counts.get(&s).copied().unwrap_or(0)
    }

    /// Hangs and crashes first: they cost a machine (or a reboot), not just a wrong number.
    pub fn failure_summary(&self) -> String {
        let parts: Vec<String> = Status::ALL
            .iter()
            .filter(|s| s.predicts_failure() && self.count(**s) > 0)
            .map(|s| format!("{} {s}", self.count(*s)))
            .collect();
        if parts.is_empty() {
            "0 failures".into()
        } else {
            format!(
                "{} failure{} ({})",
                self.failures,
                if self.failures == 1 { "" } else { "s" },
                parts.join(", ")
            )
        }
    }
}

#[derive(Clone, Debug)]
pub struct Recommendation {
    pub run_label: String,
    pub sweep: String,
    pub sha256: String,
    pub backend: String,
    pub devices: Vec<String>,
    pub host: String,
    pub started_at: String,
    /// Ranked best first.
    pub combos: Vec<ComboReport>,
    /// Env variables whose value differs between combinations.
    pub varied_vars: Vec<String>,
    /// `GFLOP/s` or `GB/s`, when any throughput could be compared.
    pub metric: Option<&'static str>,
    /// Units (case and solver) ok in every combination: what the throughput is taken over.
    pub common_units: usize,
    /// Parameters the rules may split on (those that vary in the run; a zip group as one).
    pub features: Vec<String>,
    /// The axis the boundary tables go along, and the groups that make their lines.
    pub axes: Axes,
    /// What each varied variable changed (effect.rs).
    pub effects: Vec<VarEffect>,
    /// What the profile exports, with why, in the best combination's variable order.
    pub decisions: Vec<Decision>,
}

/// What the profile does with one variable of the best combination.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub name: String,
    pub value: String,
    /// Exported (`export NAME=value`) or only commented.
    pub export: bool,
    /// The evidence: units, ratio, interval; or why nothing is exported.
    pub why: String,
}

impl Recommendation {
    /// For each variable of the best combination: export it or not, and why. Correctness
    /// first: a variable that changes statuses keeps the best combination's value. Then speed:
    /// a variable that changes only the time exports its fastest value when that is beyond
    /// noise. A variable with no measurable effect, or with mixed effects, is not exported.
    pub(super) fn decide(&self) -> Vec<Decision> {
        let Some(best) = self.combos.first() else {
            return Vec::new();
        };
        best.vars
            .iter()
            .map(|(name, value)| {
                let decision = |export: bool, value: &str, why: String| Decision {
                    name: name.clone(),
                    value: value.to_string(),
                    export,
                    why,
                };
                if crate::spec::expand::PSEUDO_VARS.contains(&name.as_str()) {
                    // The backend or ROCm tree of a run over several: chosen on the command
                    // line, never an environment variable.
                    let why = self.evidence(name, value);
                    return decision(
                        false,
                        value,
                        format!("{why} (not an environment variable: run with --{name} {value})"),
                    );
                }
                let Some(e) = self.effects.iter().find(|e| e.name == *name) else {
                    return decision(true, value, self.evidence(name, value));
                };
                if e.status_effect() {
                    return decision(true, value, self.evidence(name, value));
                }
                if let Some((fastest, ties)) = e.fastest() {
                    return decision(true, &fastest, speed_evidence(e, &fastest, &ties));
                }
                let chosen: usize = e.pairs.iter().map(|p| p.chosen_changed).sum();
                let what = if e.mixed() {
                    "mixed effect: faster for some units and slower for others, both beyond noise; not exported (choose by your shapes)"
                } else if chosen > 0 {
                    "no measurable effect: it took effect (the library's choice changed) but changed no status and no speed beyond noise; not exported"
                } else {
                    "no measurable effect: no status changed and no speed difference beyond noise; not exported"
                };
                let timed: usize = e.pairs.iter().map(|p| p.timed).sum();
                let called: usize = e.pairs.iter().map(|p| p.faster + p.slower).sum();
                decision(
                    false,
                    value,
                    format!(
                        "{name}: {what} (values {}; {} pairs of units timed, {called} called faster or slower, library choice changed in {chosen})",
                        e.values.join(", "),
                        timed
                    ),
                )
            })
            .collect()
    }

    /// The combination's name in tables: only the variables that differ between combinations.
    pub fn label(&self, c: &ComboReport) -> String {
        let v: Vec<String> = c
            .vars
            .iter()
            .filter(|(n, _)| self.varied_vars.contains(n))
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        if !v.is_empty() {
            v.join(" ")
        } else if c.key.is_empty() {
            "(no env variables)".into()
        } else {
            c.key.replace(';', " ")
        }
    }

    /// Why each of the winner's variables has its value, one comment line per variable.
    pub fn evidence(&self, name: &str, value: &str) -> String {
        if !self.varied_vars.iter().any(|v| v == name) {
            return format!(
                "{name}={value}: set in every combination of this sweep, so the run has no evidence for or against it"
            );
        }
        // Aggregate over every combination with each value of this variable.
        let mut by_value: Vec<(String, usize, usize, BTreeMap<Status, usize>)> = Vec::new();
        for c in &self.combos {
            let Some((_, v)) = c.vars.iter().find(|(n, _)| n == name) else {
                continue;
            };
            let pos = match by_value.iter().position(|e| e.0 == *v) {
                Some(p) => p,
                None => {
                    by_value.push((v.clone(), 0, 0, BTreeMap::new()));
                    by_value.len() - 1
                }
            };
            let e = &mut by_value[pos];
            e.1 += c.failures;
            e.2 += c.units;
            for (s, n) in &c.counts {
                if s.predicts_failure() {
                    *e.3.entry(*s).or_default() += n;
                }
            }
        }
        let describe = |e: &(String, usize, usize, BTreeMap<Status, usize>)| {
            let detail: Vec<String> = e.3.iter().map(|(s, n)| format!("{n} {s}")).collect();
            let detail = if detail.is_empty() {
                String::new()
            } else {
                format!(" ({})", detail.join(", "))
            };
            format!("{} failures{detail} / {} units", e.1, e.2)
        };
        let mine = by_value.iter().find(|e| e.0 == value);
        let others: Vec<String> = by_value
            .iter()
            .filter(|e| e.0 != value)
            .map(|e| format!("{} with ={}", describe(e), e.0))
            .collect();
        format!(
            "{name}={value}: {}{}{}",
            mine.map(describe).unwrap_or_default(),
            if others.is_empty() { "" } else { " vs " },
            others.join("; ")
        )
    }
}

/// Why `fastest` is exported: each value it beats, with units, ratio and interval.
fn speed_evidence(e: &VarEffect, fastest: &str, ties: &[String]) -> String {
    let mut parts = Vec::new();
    for other in e.values.iter().filter(|v| *v != fastest) {
        let Some(p) = e.pair(other, fastest).filter(|p| p.speed == Speed::Faster) else {
            continue;
        };
        let ratio = |r: Option<f64>| r.unwrap_or(f64::NAN);
        parts.push(format!(
            "faster than ={other} in {} of {} units timed with both, beyond noise; throughput ratio geomean {:.3} (per unit {:.3} to {:.3}); e.g. units {}",
            p.faster,
            p.timed,
            ratio(p.geomean),
            ratio(p.min_ratio),
            ratio(p.max_ratio),
            p.faster_units.join(", ")
        ));
    }
    let ties = if ties.is_empty() {
        String::new()
    } else {
        format!(
            "; no measurable difference from ={} (a tie)",
            ties.join(", =")
        )
    };
    format!("{}={fastest}: {}{ties}", e.name, parts.join("; "))
}

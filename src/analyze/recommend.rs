//! `rocsweep recommend RUN_DIR`: which env combination to use, where each one is safe, and a
//! shell profile with the winner. [`recommend`] and the renderers are pure; [`command`] writes.
//!
//! Ranking, in order: fewest failures (hang, crash, mismatch, zeros, nonfinite, error, and
//! inferred-fail from a boundary search), then the most `ok` units (measured or inferred), then the geometric mean throughput over the units that are ok in every
//! combination (so no combination is rewarded for skipping the slow cases). Ties keep the
//! manifest's order.

use super::effect::{self, Speed, VarEffect};
use super::tree::{self, Column, Data};
use crate::error::CmdError;
use crate::results::rundata::{Row, RunData};
use crate::results::status::Status;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;

pub use super::recommend_render::{markdown, profile};

pub const PROFILE_NAME: &str = "rocsweep-env.sh";

/// A leaf of the failure tree as a sentence.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// What the leaf predicts: a failure status (the most common one in it) or `None` for ok.
    pub status: Option<Status>,
    /// The most common phase of that status in the leaf.
    pub phase: String,
    /// `c_in >= 16 and h >= 48`; empty when the rule covers the whole sweep.
    pub when: String,
    pub units: usize,
    /// Units in the leaf that disagree with it.
    pub exceptions: usize,
    /// Failures in the leaf with another status, e.g. one crash among hangs.
    pub also: Vec<(Status, usize)>,
}

impl Rule {
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
        let when = if self.when.is_empty() {
            "everywhere in the sweep".to_string()
        } else {
            format!("when {}", self.when)
        };
        let also = if self.also.is_empty() {
            String::new()
        } else {
            let v: Vec<String> = self.also.iter().map(|(s, n)| format!("{n} {s}")).collect();
            format!("; also {}", v.join(", "))
        };
        format!(
            "{what} {when} ({} unit{}; exceptions: {}{also})",
            self.units,
            if self.units == 1 { "" } else { "s" },
            self.exceptions
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
    /// Parameters the rules may split on (those that vary in the run).
    pub features: Vec<String>,
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

/// The features of the failure tree: parameters (and the solver) that take more than one value
/// in the run, numeric when every value parses as a number.
fn features(rows: &[Row], param_names: &[String]) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut names: Vec<&str> = param_names.iter().map(String::as_str).collect();
    names.push("solver");
    for name in names {
        let vals: Vec<&str> = rows
            .iter()
            .map(|r| {
                if name == "solver" {
                    r.solver.as_str()
                } else {
                    r.param(name).unwrap_or("")
                }
            })
            .collect();
        let distinct: BTreeSet<&str> = vals.iter().copied().collect();
        if distinct.len() < 2 {
            continue;
        }
        let numeric = vals
            .iter()
            .all(|v| v.parse::<f64>().is_ok_and(f64::is_finite));
        out.push((name.to_string(), numeric));
    }
    out
}

fn learn(rows: &[&Row], feats: &[(String, bool)]) -> (Vec<Rule>, Vec<Rule>) {
    // Skipped and interrupted units never got an answer, so they say nothing about safety.
    let rows: Vec<&Row> = rows
        .iter()
        .copied()
        .filter(|r| !matches!(r.status, Status::Skipped | Status::Interrupted))
        .collect();
    if rows.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let value = |r: &Row, name: &str| -> String {
        if name == "solver" {
            r.solver.clone()
        } else {
            r.param(name).unwrap_or("").to_string()
        }
    };
    let data = Data {
        names: feats.iter().map(|f| f.0.clone()).collect(),
        columns: feats
            .iter()
            .map(|(name, numeric)| {
                if *numeric {
                    Column::Num(
                        rows.iter()
                            .map(|r| value(r, name).parse().unwrap_or(f64::NAN))
                            .collect(),
                    )
                } else {
                    Column::Cat(rows.iter().map(|r| value(r, name)).collect())
                }
            })
            .collect(),
        labels: rows.iter().map(|r| r.status.predicts_failure()).collect(),
    };
    let mut fails = Vec::new();
    let mut oks = Vec::new();
    for leaf in tree::grow(&data, tree::MAX_DEPTH, tree::MIN_LEAF) {
        let when = tree::describe(&data, &leaf.conds);
        let exceptions = leaf.exceptions(&data);
        if !leaf.predicts_failure {
            oks.push(Rule {
                status: None,
                phase: String::new(),
                when,
                units: leaf.members.len(),
                exceptions,
                also: Vec::new(),
            });
            continue;
        }
        let mut by_status: BTreeMap<Status, usize> = BTreeMap::new();
        for &i in &leaf.members {
            if rows[i].status.predicts_failure() {
                *by_status.entry(rows[i].status).or_default() += 1;
            }
        }
        // Most common measured status; ties go to the earlier (more severe-listed) status. An
        // inferred failure names the rule only when nothing in the leaf was measured failing.
        let top = by_status
            .iter()
            .filter(|(s, _)| s.is_failure())
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(s, _)| *s)
            .or_else(|| by_status.keys().next().copied());
        let mut phases: BTreeMap<&str, usize> = BTreeMap::new();
        for &i in &leaf.members {
            if Some(rows[i].status) == top {
                *phases.entry(rows[i].phase.as_str()).or_default() += 1;
            }
        }
        let phase = phases
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(p, _)| p.to_string())
            .unwrap_or_default();
        fails.push(Rule {
            status: top,
            phase,
            when,
            units: leaf.members.len(),
            exceptions,
            also: by_status
                .into_iter()
                .filter(|(s, _)| Some(*s) != top)
                .collect(),
        });
    }
    let order = |a: &Rule, b: &Rule| b.units.cmp(&a.units).then_with(|| a.when.cmp(&b.when));
    fails.sort_by(order);
    oks.sort_by(order);
    (fails, oks)
}

pub fn recommend(run: &RunData) -> Recommendation {
    let m = &run.manifest;
    // Combinations in manifest order, then any the CSV has that the manifest does not list.
    let mut combos: Vec<(String, Vec<(String, String)>)> = m
        .env_combos
        .iter()
        .map(|c| (c.key(), c.vars.clone()))
        .collect();
    for r in &run.rows {
        if !combos.iter().any(|(k, _)| *k == r.env) {
            let vars = r
                .env
                .split(';')
                .filter(|s| !s.is_empty())
                .map(|kv| match kv.split_once('=') {
                    Some((k, v)) => (k.to_string(), v.to_string()),
                    None => (kv.to_string(), String::new()),
                })
                .collect();
            combos.push((r.env.clone(), vars));
        }
    }
    let mut varied_vars: Vec<String> = Vec::new();
    for (_, vars) in &combos {
        for (name, value) in vars {
            let differs = combos.iter().any(|(_, other)| {
                other.iter().find(|(n, _)| n == name).map(|(_, v)| v) != Some(value)
            });
            if differs && !varied_vars.contains(name) {
                varied_vars.push(name.clone());
            }
        }
    }

    // Throughput only over units ok everywhere; one metric for all of them.
    let unit_key = |r: &Row| (r.case_id.clone(), r.solver.clone());
    let mut ok_everywhere: Option<HashSet<(String, String)>> = None;
    for (key, _) in &combos {
        let oks: HashSet<(String, String)> = run
            .rows
            .iter()
            .filter(|r| r.env == *key && r.status == Status::Ok)
            .map(unit_key)
            .collect();
        ok_everywhere = Some(match ok_everywhere {
            None => oks,
            Some(prev) => prev.intersection(&oks).cloned().collect(),
        });
    }
    let common = ok_everywhere.unwrap_or_default();
    let common_rows: Vec<&Row> = run
        .rows
        .iter()
        .filter(|r| r.status == Status::Ok && common.contains(&unit_key(r)))
        .collect();
    let positive = |v: Option<f64>| v.is_some_and(|x| x > 0.0 && x.is_finite());
    type Metric = (&'static str, fn(&Row) -> Option<f64>);
    let metric: Option<Metric> = if common_rows.is_empty() {
        None
    } else if common_rows.iter().all(|r| positive(r.gflops)) {
        Some(("GFLOP/s", |r| r.gflops))
    } else if common_rows.iter().all(|r| positive(r.gbps)) {
        Some(("GB/s", |r| r.gbps))
    } else {
        None
    };

    let feats = features(&run.rows, &run.param_names);
    let keys: Vec<String> = combos.iter().map(|(k, _)| k.clone()).collect();
    let label = |r: &Row| r.params_text().replace(';', " ");
    let mut model: Vec<Option<String>> = crate::results::weights::shares(run, &keys)
        .map(|v| v.iter().map(|s| Some(s.sentence(&label))).collect())
        .unwrap_or_default();
    model.resize(keys.len(), None);
    let mut reports: Vec<ComboReport> = combos
        .iter()
        .zip(model)
        .map(|((key, vars), model)| {
            let rows: Vec<&Row> = run.rows.iter().filter(|r| r.env == *key).collect();
            let mut counts = BTreeMap::new();
            for r in &rows {
                *counts.entry(r.status).or_default() += 1;
            }
            let throughput = metric.and_then(|(_, get)| {
                let logs: Vec<f64> = rows
                    .iter()
                    .filter(|r| r.status == Status::Ok && common.contains(&unit_key(r)))
                    .filter_map(|r| get(r))
                    .map(f64::ln)
                    .collect();
                (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
            });
            let (fail_rules, ok_rules) = learn(&rows, &feats);
            ComboReport {
                key: key.clone(),
                vars: vars.clone(),
                units: rows.len(),
                failures: rows.iter().filter(|r| r.status.predicts_failure()).count(),
                ok: rows.iter().filter(|r| r.status.predicts_ok()).count(),
                counts,
                throughput,
                fail_rules,
                ok_rules,
                model,
            }
        })
        .collect();
    reports.sort_by(|a, b| {
        a.failures
            .cmp(&b.failures)
            .then(b.ok.cmp(&a.ok))
            .then_with(|| {
                let t = |c: &ComboReport| c.throughput.unwrap_or(0.0);
                t(b).total_cmp(&t(a))
            })
    });
    let vars_of: HashMap<String, Vec<(String, String)>> = combos.iter().cloned().collect();
    let effects = effect::effects(&run.rows, &varied_vars, &vars_of);
    let mut rec = Recommendation {
        run_label: super::compare::dir_label(&run.dir),
        sweep: m.sweep.name.clone(),
        sha256: m.sweep.sha256.clone(),
        backend: m.backend.backend.clone(),
        devices: m.backend.devices.clone(),
        host: format!(
            "{} ({}, kernel {})",
            m.host.hostname, m.host.os, m.host.kernel
        ),
        started_at: m.started_at.clone(),
        combos: reports,
        varied_vars,
        metric: metric.map(|m| m.0),
        common_units: common.len(),
        features: feats.into_iter().map(|f| f.0).collect(),
        effects,
        decisions: Vec::new(),
    };
    rec.decisions = rec.decide();
    rec
}

impl Recommendation {
    /// For each variable of the best combination: export it or not, and why. Correctness
    /// first: a variable that changes statuses keeps the best combination's value. Then speed:
    /// a variable that changes only the time exports its fastest value when that is beyond
    /// noise. A variable with no measurable effect, or with mixed effects, is not exported.
    fn decide(&self) -> Vec<Decision> {
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

pub fn command(run_dir: &Path, out: Option<&Path>) -> Result<(), CmdError> {
    let run = RunData::load(run_dir)?;
    let rec = recommend(&run);
    let dir = out.unwrap_or(run_dir);
    std::fs::create_dir_all(dir)
        .map_err(|e| CmdError::Failure(format!("{}: {e}", dir.display())))?;
    let md = markdown(&rec);
    for (name, text) in [
        ("recommend.md", md.as_str()),
        (PROFILE_NAME, &profile(&rec)),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(|e| CmdError::Failure(format!("{}: {e}", p.display())))?;
    }
    print!("{md}");
    Ok(())
}

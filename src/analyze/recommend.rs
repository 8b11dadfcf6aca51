//! `rocsweep recommend RUN_DIR`: which env combination to use, where each one is safe, and a
//! shell profile with the winner. [`recommend`] and the renderers are pure; [`command`] writes.
//!
//! Ranking, in order: fewest failures (hang, crash, mismatch, zeros, nonfinite, error, and
//! inferred-fail from a boundary search), then the most `ok` units (measured or inferred), then the geometric mean throughput over the units that are ok in every
//! combination (so no combination is rewarded for skipping the slow cases). Ties keep the
//! manifest's order.

use super::boundary::{self, Axes, Boundary};
use super::effect::{self, Speed, VarEffect};
use super::recommend_rules::{Feature, features, learn};
use crate::error::CmdError;
use crate::results::rundata::{Row, RunData, Text};
use crate::results::status::Status;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

pub use super::recommend_render::{markdown, profile};

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

/// The throughput metric: its unit and how to read it from a row.
type Metric = (&'static str, fn(&Row) -> Option<f64>);

/// A unit, the same in every combination: its case and solver.
fn unit_key(r: &Row) -> (Text, Text) {
    (r.case_id.clone(), r.solver.clone())
}

pub fn recommend(run: &RunData) -> Recommendation {
    let m = &run.manifest;
    let combos = combos(run);
    let varied_vars = varied_vars(&combos);

    // Throughput only over units ok everywhere; one metric for all of them.
    let common = ok_everywhere(run, &combos);
    let metric = common_metric(run, &common);

    let axes = Axes::of(run);
    let feats = features(&run.rows, &run.param_names, &axes);
    let mut reports = combo_reports(run, &combos, &common, metric, &feats, &axes);
    rank(&mut reports);
    let vars_of: HashMap<String, Vec<(String, String)>> = combos.iter().cloned().collect();
    let effects = effect::effects(&run.rows, &varied_vars, &vars_of);
    let mut rec = Recommendation {
        run_label: super::compare::dir_label(&run.dir),
        sweep: m.sweep.name.clone(),
        sha256: m.sweep.sha256.clone(),
        backend: m.backend.backend.clone(),
        devices: devices(run),
        host: format!(
            "{} ({}, kernel {})",
            m.host.hostname, m.host.os, m.host.kernel
        ),
        started_at: m.started_at.clone(),
        combos: reports,
        varied_vars,
        metric: metric.map(|m| m.0),
        common_units: common.len(),
        features: feats.into_iter().map(|f| f.name).collect(),
        axes,
        effects,
        decisions: Vec::new(),
    };
    rec.decisions = rec.decide();
    rec
}

/// The devices the units ran on (each row's is what its own worker reported: an env variable
/// can change it), else what the manifest recorded.
fn devices(run: &RunData) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in &run.rows {
        if !r.device.is_empty() && !out.iter().any(|d| *d == r.device) {
            out.push(r.device.to_string());
        }
    }
    if out.is_empty() {
        run.manifest.backend.devices.clone()
    } else {
        out
    }
}

/// The device one env combination's units ran on (their rows' `device`, else what the manifest
/// recorded for the combination): an env variable can change it (RAYON_NUM_THREADS,
/// HIP_VISIBLE_DEVICES), so one device for the whole run can be untrue of some combinations.
pub fn env_device(run: &RunData, key: &str) -> String {
    let from_rows: std::collections::BTreeSet<&str> = run
        .rows
        .iter()
        .filter(|r| r.env == key && !r.device.is_empty())
        .map(|r| r.device.as_str())
        .collect();
    if from_rows.is_empty() {
        run.manifest
            .env_devices
            .get(key)
            .cloned()
            .unwrap_or_default()
    } else {
        from_rows.into_iter().collect::<Vec<_>>().join(", ")
    }
}

/// The env combinations with their variables: (key, vars).
fn combos(run: &RunData) -> Vec<(String, Vec<(String, String)>)> {
    // Combinations in manifest order, then any the CSV has that the manifest does not list.
    let mut combos: Vec<(String, Vec<(String, String)>)> = run
        .manifest
        .env_combos
        .iter()
        .map(|c| (c.context_key(), c.context_vars()))
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
            combos.push((r.env.to_string(), vars));
        }
    }
    combos
}

/// The variables whose value differs between combinations (or that some combination lacks),
/// in the order the combinations first name them.
fn varied_vars(combos: &[(String, Vec<(String, String)>)]) -> Vec<String> {
    let mut varied_vars: Vec<String> = Vec::new();
    for (_, vars) in combos {
        for (name, value) in vars {
            let differs = combos.iter().any(|(_, other)| {
                other.iter().find(|(n, _)| n == name).map(|(_, v)| v) != Some(value)
            });
            if differs && !varied_vars.contains(name) {
                varied_vars.push(name.clone());
            }
        }
    }
    varied_vars
}

/// The units ok in every combination.
fn ok_everywhere(
    run: &RunData,
    combos: &[(String, Vec<(String, String)>)],
) -> HashSet<(Text, Text)> {
    let mut ok_everywhere: Option<HashSet<(Text, Text)>> = None;
    for (key, _) in combos {
        let oks: HashSet<(Text, Text)> = run
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
    ok_everywhere.unwrap_or_default()
}

/// GFLOP/s when every ok row of a common unit has it, else GB/s when every one has that, else
/// none (nor when there is no common unit).
fn common_metric(run: &RunData, common: &HashSet<(Text, Text)>) -> Option<Metric> {
    let common_rows: Vec<&Row> = run
        .rows
        .iter()
        .filter(|r| r.status == Status::Ok && common.contains(&unit_key(r)))
        .collect();
    let positive = |v: Option<f64>| v.is_some_and(|x| x > 0.0 && x.is_finite());
    if common_rows.is_empty() {
        None
    } else if common_rows.iter().all(|r| positive(r.gflops)) {
        Some(("GFLOP/s", |r| r.gflops))
    } else if common_rows.iter().all(|r| positive(r.gbps)) {
        Some(("GB/s", |r| r.gbps))
    } else {
        None
    }
}

/// One report per combination, in the combinations' order: counts, throughput over the common
/// units, the learned rules and the model's shares.
fn combo_reports(
    run: &RunData,
    combos: &[(String, Vec<(String, String)>)],
    common: &HashSet<(Text, Text)>,
    metric: Option<Metric>,
    feats: &[Feature],
    axes: &Axes,
) -> Vec<ComboReport> {
    let keys: Vec<String> = combos.iter().map(|(k, _)| k.clone()).collect();
    let label = |r: &Row| r.params_text().replace(';', " ");
    let mut model: Vec<Option<String>> = crate::results::weights::shares(run, &keys)
        .map(|v| v.iter().map(|s| Some(s.sentence(&label))).collect())
        .unwrap_or_default();
    model.resize(keys.len(), None);
    combos
        .iter()
        .zip(model)
        .map(|((key, vars), model)| {
            let rows: Vec<&Row> = run.rows.iter().filter(|r| r.env == *key).collect();
            let mut counts = BTreeMap::new();
            for r in &rows {
                *counts.entry(r.status).or_default() += 1;
            }
            let throughput = metric.and_then(|(_, get)| geomean(&rows, common, get));
            let (fail_rules, ok_rules) = learn(&rows, feats);
            let boundaries = boundary::boundaries(rows.iter().copied(), axes, &keys);
            let device = env_device(run, key);
            ComboReport {
                device,
                key: key.clone(),
                vars: vars.clone(),
                units: rows.len(),
                failures: rows.iter().filter(|r| r.status.predicts_failure()).count(),
                ok: rows.iter().filter(|r| r.status.predicts_ok()).count(),
                counts,
                throughput,
                fail_rules,
                ok_rules,
                boundaries,
                model,
            }
        })
        .collect()
}

/// The geometric mean of `get` over the rows that are ok and of a common unit.
fn geomean(
    rows: &[&Row],
    common: &HashSet<(Text, Text)>,
    get: fn(&Row) -> Option<f64>,
) -> Option<f64> {
    let logs: Vec<f64> = rows
        .iter()
        .filter(|r| r.status == Status::Ok && common.contains(&unit_key(r)))
        .filter_map(|r| get(r))
        .map(f64::ln)
        .collect();
    (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
}

/// Best first: fewest failures, then most ok, then highest throughput; the sort is stable, so
/// ties keep the manifest's order.
fn rank(reports: &mut [ComboReport]) {
    reports.sort_by(|a, b| {
        a.failures
            .cmp(&b.failures)
            .then(b.ok.cmp(&a.ok))
            .then_with(|| {
                let t = |c: &ComboReport| c.throughput.unwrap_or(0.0);
                t(b).total_cmp(&t(a))
            })
    });
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
        crate::results::atomic::write(&p, text)
            .map_err(|e| CmdError::Failure(format!("{}: {e}", p.display())))?;
    }
    crate::console::say(&md);
    Ok(())
}

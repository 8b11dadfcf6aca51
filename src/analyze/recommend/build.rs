//! [`recommend`]: a run's env combinations ranked, each with where it is safe (its boundaries
//! and failure rules) and what its variables do to correctness and speed. Pure: it reads a
//! loaded run and returns the answer.

use super::answer::{ComboReport, Recommendation};
use super::rules::{Feature, features, learn};
use crate::analyze::boundary::{self, Axes};
use crate::analyze::effect;
use crate::results::rundata::{Row, RunData, Text};
use crate::results::status::Status;
use std::collections::{BTreeMap, HashMap, HashSet};

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
        run_label: crate::results::rundir::dir_label(&run.dir),
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

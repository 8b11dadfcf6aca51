//! What a sequence run leaves: results.csv (a row per step and iteration, with its place),
//! summary.md (the steps, and what each failing step needs in words) and minimal.toml (a
//! runnable sequence of the smallest prefix found and the failing step).

use super::model::{ComboResult, Finding, StepResult};
use crate::error::CmdError;
use crate::exec::record::row::{UnitKey, record};
use crate::markup::shell;
use crate::markup::toml::{policies_toml, toml_key, toml_string, toml_value};
use crate::op::canonical_text;
use crate::results::csv::FIXED_COLUMNS;
use crate::spec::policy::Policies;
use crate::spec::sequence::{At, Sequence, Step};
use std::fmt::Write as _;
use std::path::Path;

/// The columns after the fixed ones.
pub const SEQUENCE_COLUMNS: &[&str] =
    &["order", "position", "iteration", "params", "alone", "needs"];

/// One step's results.csv row: the fixed columns, then its place, its parameters as text, and,
/// for a step whose failure was looked into, whether it fails alone and the steps it needs
/// (their numbers in run order, `;`-separated).
pub fn row(
    r: &StepResult,
    step: &Step,
    backend: &str,
    device: &str,
    env: &str,
    finding: Option<&Finding>,
) -> Vec<String> {
    let key = UnitKey {
        unit_id: &r.unit_id,
        case: &step.case,
        solver: &step.solver,
        backend,
        device,
        device_index: "",
        env,
        rocm: "",
    };
    let mut out = record(&key, &r.outcome);
    out.truncate(FIXED_COLUMNS.len());
    let mine = finding.filter(|f| f.index == r.at.index);
    out.extend([
        (r.at.index + 1).to_string(),
        r.at.position.to_string(),
        r.at.iteration.to_string(),
        canonical_text(step.case.problem.kind(), &step.case.values),
        mine.map(|f| if f.fails_alone { "fails" } else { "passes" })
            .unwrap_or_default()
            .to_string(),
        mine.and_then(|f| f.needs.as_ref())
            .map(|m| {
                m.steps
                    .iter()
                    .map(|i| (i + 1).to_string())
                    .collect::<Vec<_>>()
                    .join(";")
            })
            .unwrap_or_default(),
    ]);
    out
}

fn io(dir: &Path, what: &str) -> impl Fn(std::io::Error) -> CmdError {
    let at = dir.join(what);
    move |e| CmdError::Failure(format!("{}: {e}", at.display()))
}

/// results.csv, summary.md and, where a search found a prefix, minimal.toml (rewritten after
/// each env combination, each through a temporary file and a rename).
pub fn all(
    dir: &Path,
    seq: &Sequence,
    order: &[(At, &Step)],
    results: &[ComboResult],
    policies: &Policies,
) -> Result<(), CmdError> {
    let mut csv = csv::Writer::from_writer(Vec::new());
    let header: Vec<&str> = FIXED_COLUMNS
        .iter()
        .chain(SEQUENCE_COLUMNS)
        .copied()
        .collect();
    csv.write_record(&header)
        .map_err(|e| CmdError::Failure(e.to_string()))?;
    for c in results {
        for r in &c.steps {
            let step = order[r.at.index].1;
            csv.write_record(row(
                r,
                step,
                &c.backend,
                &c.device,
                &c.env,
                c.finding.as_ref(),
            ))
            .map_err(|e| CmdError::Failure(e.to_string()))?;
        }
    }
    let bytes = csv
        .into_inner()
        .map_err(|e| CmdError::Failure(e.to_string()))?;
    crate::results::atomic::write(&dir.join("results.csv"), bytes)
        .map_err(io(dir, "results.csv"))?;
    crate::results::atomic::write(
        &dir.join("summary.md"),
        super::summary::markdown(seq, order, results),
    )
    .map_err(io(dir, "summary.md"))?;
    crate::results::atomic::write(
        &dir.join("report.html"),
        super::summary::html(seq, order, results),
    )
    .map_err(io(dir, "report.html"))?;
    if let Some((c, text)) = results
        .iter()
        .find_map(|c| minimal_toml(seq, order, c, policies).map(|t| (c, t)))
    {
        crate::results::atomic::write(&dir.join("minimal.toml"), text)
            .map_err(io(dir, "minimal.toml"))?;
        if let Some(py) = minimal_py(seq, order, c) {
            crate::results::atomic::write(&dir.join("minimal.py"), py)
                .map_err(io(dir, "minimal.py"))?;
        }
    }
    Ok(())
}

/// The torch layer's minimal sequence as a stand-alone script (plain torch, one process): the
/// steps it needs, then the failing step, judged against the CPU. None for other backends.
pub fn minimal_py(seq: &Sequence, order: &[(At, &Step)], c: &ComboResult) -> Option<String> {
    if c.backend != "torch" {
        return None;
    }
    let f = c.finding.as_ref()?;
    let m = f.needs.as_ref().filter(|m| !m.steps.is_empty())?;
    let steps: Vec<(String, crate::results::rundata::Params, String, String)> = m
        .steps
        .iter()
        .chain([&f.index])
        .map(|&i| {
            let (at, step) = order[i];
            let op = step.case.problem.kind();
            let params = crate::results::rundata::Params::from_pairs(
                op.params()
                    .iter()
                    .zip(&step.case.values)
                    .map(|(d, v)| (d.name, v.to_string())),
            );
            let solver = if step.solver == "default" {
                crate::backend::torch::solver_names(op)[0].to_string()
            } else {
                step.solver.clone()
            };
            (
                op.name().to_string(),
                params,
                solver,
                super::summary::name(&at, step, seq.repeat > 1),
            )
        })
        .collect();
    crate::markup::torch_script::torch_sequence_script(&steps)
}

/// A runnable sequence of the steps a failure needs and the failing step, in the env
/// combination it failed in (as `[env]`), with the run's policies. None without a prefix found.
pub fn minimal_toml(
    seq: &Sequence,
    order: &[(At, &Step)],
    c: &ComboResult,
    policies: &Policies,
) -> Option<String> {
    let f = c.finding.as_ref()?;
    let m = f.needs.as_ref().filter(|m| !m.steps.is_empty())?;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# The smallest prefix found ({} fresh processes searched{}) and the failing step of sequence {}.",
        m.candidates,
        if m.cut { ", budget reached" } else { "" },
        shell::comment(&seq.sweep.name)
    );
    let _ = writeln!(
        s,
        "name = {}",
        toml_string(&format!("{}-minimal", seq.sweep.name))
    );
    let _ = writeln!(s, "backend = {}", toml_string(&c.backend));
    if !c.vars.is_empty() {
        s.push_str("\n[env]\n");
        for (k, v) in &c.vars {
            let _ = writeln!(s, "{} = {}", toml_key(k), toml_string(v));
        }
    }
    s.push_str(&policies_toml(policies));
    for &i in m.steps.iter().chain([&f.index]) {
        let (at, step) = order[i];
        let _ = writeln!(s, "\n# {}", super::summary::name(&at, step, seq.repeat > 1));
        s.push_str("[[step]]\n");
        let op = step.case.problem.kind();
        let _ = writeln!(s, "op = {}", toml_string(op.name()));
        for (def, v) in op.params().iter().zip(&step.case.values) {
            let _ = writeln!(s, "{} = {}", def.name, toml_value(def.kind, &v.to_string()));
        }
        let _ = writeln!(s, "solver = {}", toml_string(&step.solver));
    }
    Some(s)
}

/// `run --dry-run` of a sequence: its steps in run order, one line each; nothing written.
pub fn dry_run(seq: &Sequence) -> Result<crate::exec::plan::options::RunReport, CmdError> {
    let order = seq.order();
    for (at, step) in &order {
        crate::sayln!(
            "{:>5}  {}",
            at.index + 1,
            super::summary::name(at, step, seq.repeat > 1)
        );
    }
    crate::sayln!(
        "{} steps x {} iteration(s) = {} steps in run order, in one worker per env combination ({})",
        seq.steps.len(),
        seq.repeat,
        order.len(),
        seq.sweep.env_combo_count()
    );
    Ok(crate::exec::plan::options::RunReport::nothing(None))
}

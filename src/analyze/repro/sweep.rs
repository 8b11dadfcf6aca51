//! The page's rocsweep commands: a one-unit sweep file written out in full, and the original
//! sweep file with `--axis` overrides that pin the unit; both are checked by expanding them.

use crate::markup::shell;
use crate::markup::toml::{policies_toml, toml_key, toml_string, toml_value};
use crate::op::OpKind;
use crate::results::rundata::{Row, RunData};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The rocsweep section's start: a stand-alone sweep file for exactly this unit and the command
/// that runs it into `out_dir`.
pub(super) fn standalone_section(
    s: &mut String,
    run: &RunData,
    row: &Row,
    op: Option<OpKind>,
    out_dir: &str,
) {
    s.push_str("\n## rocsweep\n\n");
    let file = shell::quote(&format!("{out_dir}.toml"));
    let out_q = shell::quote(out_dir);
    let python = python_flag(run, row);
    match op {
        Some(op) => {
            let text = standalone_sweep(run, row, op);
            s.push_str("Exactly this unit (every parameter fixed, its env combination as `[env]`, the run's limits):\n\n");
            let _ = writeln!(
                s,
                "```sh\ncat > {file} <<'ROCSWEEP_SWEEP'\n{text}ROCSWEEP_SWEEP\nrocsweep run{python} {file} --out {out_q}\n```"
            );
            if let Err(why) = selects_exactly(&format!("{out_dir}.toml"), &text, &[], row) {
                let _ = writeln!(
                    s,
                    "\nWarning: this sweep does not reproduce the unit exactly: {why}."
                );
            }
        }
        None => {
            let _ = writeln!(
                s,
                "The op `{}` is unknown to this rocsweep version, so no stand-alone sweep can be written.",
                row.op
            );
        }
    }
}

/// ` --python PATH` for a torch unit: the Python whose torch ran it (without it, a pasted
/// command takes whatever python3 is on PATH, which may have no torch).
fn python_flag(run: &RunData, row: &Row) -> String {
    run.manifest
        .torch_python(&row.backend)
        .map(|p| format!(" --python {}", shell::quote(&p)))
        .unwrap_or_default()
}

/// The original sweep file with every varied parameter pinned by `--axis`, run into `out_dir`,
/// or why that cannot select the unit.
pub(super) fn original_section(s: &mut String, run: &RunData, row: &Row, out_dir: &str) {
    let m = &run.manifest;
    let overrides = pinning_overrides(run, row);
    let mut args: String = overrides
        .iter()
        .map(|o| {
            let (flag, value) = crate::spec::sets::flag_and_value(o);
            format!(" {flag} {}", shell::quote(value))
        })
        .collect();
    if crate::spec::expand::several_backends(&m.env_combos) {
        let _ = write!(args, " --backend {}", shell::quote(&row.backend));
    }
    if crate::spec::expand::several_trees(&m.env_combos) {
        let _ = write!(args, " --rocm {}", shell::quote(&row.rocm));
    }
    args.push_str(&python_flag(run, row));
    let _ = writeln!(
        s,
        "\nFrom the original sweep file (`{}`, run from the directory the run was started in):\n",
        m.sweep.path
    );
    match selects_exactly(&m.sweep.path, &m.sweep.text, &overrides, row) {
        Ok(combos) => {
            let _ = writeln!(
                s,
                "```sh\nrocsweep run {}{args} --out {}\n```",
                shell::quote(&m.sweep.path),
                shell::quote(out_dir)
            );
            if combos > 1 {
                let _ = writeln!(
                    s,
                    "\nThe sweep's env axes still run this case under all {combos} env combinations; the unit is the one with `{}`.",
                    row.env
                );
            }
        }
        Err(why) => {
            let _ = writeln!(
                s,
                "Not possible with `--axis` overrides alone: {why}. Use the stand-alone sweep above."
            );
        }
    }
}

/// The run's own overrides (less those this replaces), then one per varied parameter with the
/// unit's value, then the unit's solver.
fn pinning_overrides(run: &RunData, row: &Row) -> Vec<String> {
    let ours = varied_params(run);
    let mut overrides: Vec<String> = run
        .manifest
        .sweep
        .overrides
        .iter()
        .filter(|o| {
            let name = o.split_once('=').map_or(o.as_str(), |(n, _)| n).trim();
            name != "solver" && !ours.iter().any(|p| p == name)
        })
        .cloned()
        .collect();
    for name in &ours {
        if let Some(v) = row.param(name) {
            overrides.push(format!("{name}={v}"));
        }
    }
    overrides.push(format!("solver={}", row.solver));
    overrides
}

/// Parameters that take more than one value in the run: what an `--axis` override must pin.
fn varied_params(run: &RunData) -> Vec<String> {
    run.param_names
        .iter()
        .filter(|name| {
            let vals: BTreeSet<&str> = run.rows.iter().filter_map(|r| r.param(name)).collect();
            vals.len() > 1
        })
        .cloned()
        .collect()
}

/// A sweep file that expands to exactly this unit: every parameter fixed, the solver named, the
/// env combination as `[env]`, and the run's limits, timing and verification policies.
fn standalone_sweep(run: &RunData, row: &Row, op: OpKind) -> String {
    let m = &run.manifest;
    let mut s = String::new();
    let title = format!(
        "Unit {} of run {} ({} in {}), as a sweep of its own.",
        row.unit_id,
        crate::analyze::compare::dir_label(&run.dir),
        row.status,
        if row.phase.is_empty() {
            "-"
        } else {
            &row.phase
        }
    );
    let _ = writeln!(s, "# {}", shell::comment(&title));
    let _ = writeln!(
        s,
        "name = {}",
        toml_string(&format!("repro-{}", row.unit_id))
    );
    let _ = writeln!(s, "op = {}", toml_string(op.name()));
    // A run over several backends: the unit's own (the CSV names it as the sweep did).
    let backend = if crate::spec::expand::several_backends(&m.env_combos) {
        row.backend.as_str()
    } else {
        m.backend.backend.as_str()
    };
    let _ = writeln!(s, "backend = {}", toml_string(backend));
    // A run over several ROCm trees: the unit's own tree (a one-tree run's is the environment's).
    if crate::spec::expand::several_trees(&m.env_combos) {
        let _ = writeln!(s, "rocm = {}", toml_string(&row.rocm));
    }
    s.push_str("\n[axes]\n");
    for def in op.params() {
        if let Some(v) = row.param(def.name) {
            let _ = writeln!(s, "{} = {}", def.name, toml_value(def.kind, v));
        }
    }
    let _ = writeln!(s, "solver = {}", toml_string(&row.solver));
    let vars = env_vars(run, row);
    if !vars.is_empty() {
        s.push_str("\n[env]\n");
        for (k, v) in &vars {
            let _ = writeln!(s, "{} = {}", toml_key(k), toml_string(v));
        }
    }
    s.push_str(&policies_toml(&m.policies));
    s
}

/// Checks that a sweep text with overrides expands to exactly one case with this id; `Err` says
/// why not (a spec error, or what it expanded to).
fn selects_exactly(
    path: &str,
    text: &str,
    overrides: &[String],
    row: &Row,
) -> Result<usize, String> {
    let sweep = crate::spec::load_str(path, text, overrides).map_err(|e| e.message.clone())?;
    let cases: Vec<(String, String)> = sweep
        .cases()
        .filter_map(Result::ok)
        .map(|c| (c.id, c.solver))
        .take(3)
        .collect();
    match cases.as_slice() {
        [(id, solver)] if *id == row.case_id && *solver == row.solver => {
            Ok(sweep.env_combos().len())
        }
        [(id, solver)] => Err(format!(
            "it expands to case {id} solver={solver}, not {} solver={}",
            row.case_id, row.solver
        )),
        other => Err(format!("it expands to {} cases, not one", other.len())),
    }
}

/// The unit's env combination: from the manifest when it lists it, else parsed from the CSV.
pub fn env_vars(run: &RunData, row: &Row) -> Vec<(String, String)> {
    run.manifest
        .env_combos
        .iter()
        .find(|c| c.context_key() == row.env)
        .map(|c| c.vars.clone())
        .unwrap_or_else(|| {
            row.env
                .split(';')
                .filter(|s| !s.is_empty())
                .map(|kv| {
                    let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                    (k.to_string(), v.to_string())
                })
                .collect()
        })
}

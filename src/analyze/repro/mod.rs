//! `rocsweep repro RUN_DIR UNIT_ID`: everything a bug report about one unit needs, as Markdown
//! with paste-able shell blocks: what ran where and what happened, the environment, the vendor
//! tool's command line (MIOpenDriver, hipblaslt-bench), and rocsweep commands that run exactly
//! that case again. [`repro`] is pure (it expands sweeps in memory to check its own commands).
//! The page is built section by section; the vendor tools' command lines are in `tools`, the
//! rocsweep commands and the one-unit sweep file in `sweep`.

mod sweep;
pub use sweep::env_vars;
mod tools;

use crate::error::CmdError;
use crate::markup::markdown::{self, escape as md};
use crate::markup::shell;
use crate::markup::table::{Cell, Span, Table};
use crate::op::OpKind;
use crate::results::manifest;
use crate::results::rundata::{Row, RunData};
use crate::results::status::Status;
use std::fmt::Write as _;
use std::path::Path;

/// Variables of the run's environment that change how the GPU stack behaves; a report without
/// them often cannot be reproduced.
const RELEVANT_PREFIXES: &[&str] = &[
    "HSA_",
    "HIP_",
    "HCC_",
    "ROCR_",
    "ROCM_",
    "AMD_",
    "GPU_",
    "MIOPEN_",
    "ROCBLAS_",
    "HIPBLAS_",
    "HIPBLASLT_",
    "TENSILE_",
    "CUDA_",
    "NVIDIA_",
    "CUBLAS_",
    "CUBLASLT_",
    "CUDNN_",
];
const RELEVANT_NAMES: &[&str] = &["LD_LIBRARY_PATH", "PYTORCH_ROCM_ARCH"];

fn relevant(name: &str) -> bool {
    RELEVANT_NAMES.contains(&name) || RELEVANT_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Ids that look like what was meant: those starting with the text given, else those sharing
/// its longest common prefix of at least 4 characters (a typo near the end).
fn suggestions(run: &RunData, id: &str) -> Vec<String> {
    let mut by_prefix: Vec<String> = run
        .rows
        .iter()
        .filter(|r| !id.is_empty() && r.unit_id.starts_with(id))
        .map(|r| r.unit_id.to_string())
        .collect();
    if by_prefix.is_empty() {
        let common = |u: &str| {
            u.bytes()
                .zip(id.bytes())
                .take_while(|(a, b)| a == b)
                .count()
        };
        let best = run
            .rows
            .iter()
            .map(|r| common(&r.unit_id))
            .max()
            .unwrap_or(0);
        if best >= 4 {
            by_prefix = run
                .rows
                .iter()
                .filter(|r| common(&r.unit_id) == best)
                .map(|r| r.unit_id.to_string())
                .collect();
        }
    }
    by_prefix.truncate(5);
    by_prefix
}

fn find<'a>(run: &'a RunData, id: &str) -> Result<&'a Row, CmdError> {
    run.rows.iter().find(|r| r.unit_id == id).ok_or_else(|| {
        let near = suggestions(run, id);
        let hint = if near.is_empty() {
            String::new()
        } else {
            format!("; did you mean {}?", near.join(", "))
        };
        CmdError::BadInput(format!(
            "unit `{id}` is not in run {} ({} units in its results.csv){hint}",
            run.dir.display(),
            run.rows.len()
        ))
    })
}

fn opt(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:e}"))
}

/// The reproduction text for one unit.
pub fn repro(run: &RunData, unit_id: &str) -> Result<String, CmdError> {
    let row = find(run, unit_id)?;
    let op = OpKind::parse(&row.op);
    let outcome = if row.phase.is_empty() {
        row.status.name().to_string()
    } else {
        format!("{} in {}", row.status, row.phase)
    };
    let mut s = format!("# Reproduction of unit {}: {outcome}\n\n", md(&row.unit_id));
    let mut facts = Table::facts(&["", ""]);
    unit_facts(&mut facts, run, row);
    run_facts(&mut facts, run, row);
    s.push_str(&markdown::table(&facts, usize::MAX));
    environment(&mut s, run, row);
    tools::section(&mut s, run, row, op);
    let out_dir = format!("repro-{}", row.unit_id);
    sweep::standalone_section(&mut s, run, row, op, &out_dir);
    sweep::original_section(&mut s, run, row, &out_dir);
    Ok(s)
}

/// One fact; an empty value shows as `-`.
fn fact(t: &mut Table, k: &str, v: String) {
    t.fact(k, vec![Cell::or_dash(v)]);
}

/// The facts about the unit: what it is and what happened.
fn unit_facts(t: &mut Table, run: &RunData, row: &Row) {
    let m = &run.manifest;
    fact(t, "op", row.op.to_string());
    t.fact("parameters", vec![Cell::Code(row.params_text())]);
    fact(t, "solver", row.solver.to_string());
    fact(t, "case id", row.case_id.to_string());
    fact(t, "env", row.env.to_string());
    t.fact("status", vec![Cell::Strong(row.status.name().to_string())]);
    fact(t, "phase", row.phase.to_string());
    if row.status == Status::Hang {
        let l = m.policies.limits.for_phase(&row.phase);
        fact(
            t,
            "watchdog",
            format!(
                "{} limit {l} s, then SIGTERM and {} s grace",
                row.phase, m.policies.limits.grace
            ),
        );
    }
    // The whole error, log tail included: this page is where it is read.
    fact(t, "error", row.error.to_string());
    if row.reference.len() + row.max_abs_err.iter().len() > 0 {
        fact(
            t,
            "verification",
            format!(
                "reference {}, max abs err {}, max rel err {}",
                if row.reference.is_empty() {
                    "-"
                } else {
                    &row.reference
                },
                opt(row.max_abs_err),
                opt(row.max_rel_err)
            ),
        );
    }
}

/// The facts about where it ran: backend, host, run directory and sweep.
fn run_facts(t: &mut Table, run: &RunData, row: &Row) {
    let m = &run.manifest;
    let versions: Vec<String> = m
        .backend_info(&row.backend)
        .versions
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    fact(
        t,
        "backend",
        format!("{} on {}; {}", row.backend, row.device, versions.join(", ")),
    );
    fact(
        t,
        "host",
        format!(
            "{}: {}, kernel {}, {}, {}",
            m.host.hostname, m.host.os, m.host.kernel, m.host.arch, m.host.cpu
        ),
    );
    let run_cell = vec![
        Span::Code(run.dir.display().to_string()),
        Span::Text(format!(
            ", started {}, rocsweep {} (git {})",
            m.started_at, m.rocsweep_version, m.git_commit
        )),
    ];
    t.fact("run", vec![Cell::Spans(run_cell)]);
    let sweep_cell = vec![
        Span::Text(format!("{} (", m.sweep.name)),
        Span::Code(m.sweep.path.clone()),
        Span::Text(format!(
            ", sha256 {})",
            m.sweep.sha256.get(..12).unwrap_or(&m.sweep.sha256)
        )),
    ];
    t.fact("sweep", vec![Cell::Spans(sweep_cell)]);
}

/// The Environment section: the unit's env combination, then other relevant variables the
/// run's environment set.
fn environment(s: &mut String, run: &RunData, row: &Row) {
    s.push_str("\n## Environment\n\n```sh\n");
    let vars = sweep::env_vars(run, row);
    if vars.is_empty() {
        s.push_str("# the unit's env combination sets nothing\n");
    }
    for (k, v) in &vars {
        let _ = writeln!(s, "{}", shell::export_line(k, manifest::shown(k, v)));
    }
    let extra: Vec<(&String, &String)> = run
        .manifest
        .environment
        .iter()
        .filter(|(k, _)| relevant(k) && !vars.iter().any(|(n, _)| n == *k))
        .collect();
    if !extra.is_empty() {
        s.push_str("# also set in the environment of the run:\n");
        for (k, v) in extra {
            let _ = writeln!(s, "{}", shell::export_line(k, manifest::shown(k, v)));
        }
    }
    s.push_str("```\n");
}

pub fn command(run_dir: &Path, unit_id: &str) -> Result<String, CmdError> {
    let run = RunData::load(run_dir)?;
    repro(&run, unit_id)
}

#[cfg(test)]
mod tests {
    use super::tools::{hipblaslt_bench, rocblas_bench};
    use super::*;
    use crate::results::status::Status;

    fn gemm_row(params: &[(&str, &str)]) -> Row {
        Row {
            unit_id: "u".into(),
            case_id: "c".into(),
            backend: "rocm".into(),
            solver: "hipblaslt#0-sol56073".into(),
            status: Status::Ok,
            params: crate::results::rundata::Params::from_pairs(params.iter().copied()),
            ..Row::for_tests()
        }
    }

    #[test]
    fn bench_commands_make_the_backends_column_major_call() {
        let row = gemm_row(&[
            ("m", "8"),
            ("n", "4096"),
            ("k", "512"),
            ("trans_a", "true"),
            ("trans_b", "false"),
            ("batch", "1"),
            ("dtype", "bf16"),
            ("out_dtype", "bf16"),
            ("compute", "f32"),
        ]);
        let lt = hipblaslt_bench(&row, "rocm").unwrap_or_default();
        assert!(
            lt.starts_with("hipblaslt-bench -m 4096 -n 8 -k 512 --transA N --transB T "),
            "{lt}"
        );
        assert!(lt.ends_with("--solution_index 56073"), "{lt}");
        let blas = rocblas_bench(&row);
        assert!(
            blas.contains("--transposeA N --transposeB T -m 4096 -n 8 -k 512"),
            "{blas}"
        );
    }
}

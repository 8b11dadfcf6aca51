//! `rocsweep repro RUN_DIR UNIT_ID`: everything a bug report about one unit needs, as Markdown
//! with paste-able shell blocks: what ran where and what happened, the environment, the vendor
//! tool's command line (MIOpenDriver, hipblaslt-bench), and rocsweep commands that run exactly
//! that case again. [`repro`] is pure (it expands sweeps in memory to check its own commands).

use crate::error::CmdError;
use crate::markup::shell;
use crate::op::{OpKind, ParamKind};
use crate::results::manifest;
use crate::results::rundata::{Row, RunData};
use crate::results::status::Status;
use std::collections::{BTreeMap, BTreeSet};
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
        .map(|r| r.unit_id.clone())
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
                .map(|r| r.unit_id.clone())
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

/// The unit's env combination: from the manifest when it lists it, else parsed from the CSV.
fn env_vars(run: &RunData, row: &Row) -> Vec<(String, String)> {
    run.manifest
        .env_combos
        .iter()
        .find(|c| c.key() == row.env)
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

fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A parameter's CSV text as a TOML value of the kind the op expects (words quoted).
fn toml_value(kind: ParamKind, text: &str) -> String {
    let literal = match kind {
        ParamKind::Int { .. } => text.parse::<i64>().is_ok(),
        ParamKind::Float { .. } => text.parse::<f64>().is_ok(),
        ParamKind::Bool => text == "true" || text == "false",
        ParamKind::Choice(_) | ParamKind::DType(_) => false,
    };
    if literal {
        text.to_string()
    } else {
        toml_string(text)
    }
}

/// A sweep file that expands to exactly this unit: every parameter fixed, the solver named, the
/// env combination as `[env]`, and the run's limits, timing and verification policies.
fn standalone_sweep(run: &RunData, row: &Row, op: OpKind) -> String {
    let m = &run.manifest;
    let mut s = String::new();
    let title = format!(
        "Unit {} of run {} ({} in {}), as a sweep of its own.",
        row.unit_id,
        super::compare::dir_label(&run.dir),
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
    let _ = writeln!(s, "backend = {}", toml_string(&m.backend.backend));
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
            let _ = writeln!(s, "{k} = {}", toml_string(v));
        }
    }
    if let Ok(serde_json::Value::Object(sections)) = serde_json::to_value(&m.policies) {
        for (section, body) in sections {
            let serde_json::Value::Object(keys) = body else {
                continue;
            };
            let _ = writeln!(s, "\n[{section}]");
            for (k, v) in keys {
                let text = match v {
                    serde_json::Value::String(t) => toml_string(&t),
                    other => other.to_string(),
                };
                let _ = writeln!(s, "{k} = {text}");
            }
        }
    }
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

fn miopen_driver(row: &Row, backend: &str, ids: &BTreeMap<String, u64>) -> Option<String> {
    let p = |n: &str| row.param(n).unwrap_or("");
    let base = match p("dtype") {
        "f16" => "convfp16",
        "bf16" => "convbfp16",
        _ => "conv",
    };
    let dir = match p("direction") {
        "bwd_data" => 2,
        "bwd_weights" => 4,
        _ => 1,
    };
    let mut cmd = format!(
        "MIOpenDriver {base} -n {} -c {} -H {} -W {} -k {} -y {k} -x {k} -p {pad} -q {pad} -u {s} -v {s} -l {d} -j {d} -g {} -F {dir} -t 1 -V 1",
        p("n"),
        p("c_in"),
        p("h"),
        p("w"),
        p("c_out"),
        p("groups"),
        k = p("kernel"),
        pad = p("pad"),
        s = p("stride"),
        d = p("dilation"),
    );
    if p("layout") == "nhwc" {
        cmd.push_str(" --in_layout NHWC --out_layout NHWC --fil_layout NHWC");
    }
    // -S N runs solution N in immediate mode; without -S MIOpenDriver takes the Find path,
    // which is what rocsweep's `find` solver does.
    let id = ids.get(&row.solver).copied().or_else(|| {
        row.solver
            .strip_prefix("solver#")
            .and_then(|n| n.parse::<u64>().ok())
    });
    if backend == "rocm"
        && let Some(id) = id
    {
        let _ = write!(cmd, " -S {id}");
    }
    Some(cmd)
}

fn rocblas_bench(row: &Row) -> String {
    let p = |n: &str| row.param(n).unwrap_or("");
    let ty = |d: &str| match d {
        "f16" => "f16_r",
        "bf16" => "bf16_r",
        _ => "f32_r",
    };
    let compute = if p("compute") == "f16" {
        "f16_r"
    } else {
        "f32_r"
    };
    let t = |b: &str| if b == "true" { "T" } else { "N" };
    let (io, out) = (ty(p("dtype")), ty(p("out_dtype")));
    format!(
        "rocblas-bench -f gemm_strided_batched_ex --transposeA {} --transposeB {} -m {} -n {} -k {} \
         --a_type {io} --b_type {io} --c_type {out} --d_type {out} --compute_type {compute} \
         --batch_count {} -i 10 -j 2 -v 1",
        t(p("trans_b")),
        t(p("trans_a")),
        p("n"),
        p("m"),
        p("k"),
        p("batch"),
    )
}

/// The column-major call the ROCm backend makes for row-major C = op(A) op(B):
/// C^T = op(B)^T op(A)^T, so m and n swap and so do the transposes (as in `rocblas_bench`).
fn hipblaslt_bench(row: &Row, backend: &str) -> Option<String> {
    let p = |n: &str| row.param(n).unwrap_or("");
    let ty = |d: &str| match d {
        "f16" => "f16_r",
        "bf16" => "bf16_r",
        _ => "f32_r",
    };
    let compute = match p("compute") {
        "tf32" => "xf32_r",
        "f16" => "f16_r",
        _ => "f32_r",
    };
    let t = |b: &str| if b == "true" { "T" } else { "N" };
    let (io, out) = (ty(p("dtype")), ty(p("out_dtype")));
    let mut cmd = format!(
        "hipblaslt-bench -m {} -n {} -k {} --transA {} --transB {} --batch_count {} \
         --a_type {io} --b_type {io} --c_type {out} --d_type {out} --compute_type {compute} -i 10 -j 2 -v 1",
        p("n"),
        p("m"),
        p("k"),
        t(p("trans_b")),
        t(p("trans_a")),
        p("batch"),
    );
    if backend == "rocm"
        && let Some(idx) = row
            .solver
            .strip_prefix("hipblaslt#")
            .and_then(|r| r.split("-sol").nth(1))
    {
        let _ = write!(
            cmd,
            " --algo_method index --solution_index {}",
            shell::quote(idx)
        );
    }
    Some(cmd)
}

fn opt(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:e}"))
}

/// The reproduction text for one unit.
pub fn repro(run: &RunData, unit_id: &str) -> Result<String, CmdError> {
    let row = find(run, unit_id)?;
    let m = &run.manifest;
    let op = OpKind::parse(&row.op);
    let mut s = String::new();
    let outcome = if row.phase.is_empty() {
        row.status.name().to_string()
    } else {
        format!("{} in {}", row.status, row.phase)
    };
    let _ = writeln!(s, "# Reproduction of unit {}: {outcome}\n", row.unit_id);
    s.push_str("| | |\n|---|---|\n");
    // Values are Markdown made from escaped parts (`markup::md`, `markup::md_code`).
    let mut fact = |k: &str, v: String| {
        let v = if v.is_empty() { "-".to_string() } else { v };
        let _ = writeln!(s, "| {k} | {v} |");
    };
    use crate::markup::{md, md_code};
    fact("op", md(&row.op));
    fact("parameters", md_code(&row.params_text()));
    fact("solver", md(&row.solver));
    fact("case id", md(&row.case_id));
    fact("env", md(&row.env));
    fact("status", format!("**{}**", row.status));
    fact("phase", md(&row.phase));
    if row.status == Status::Hang {
        let l = m.policies.limits.for_phase(&row.phase);
        fact(
            "watchdog",
            md(&format!(
                "{} limit {l} s, then SIGTERM and {} s grace",
                row.phase, m.policies.limits.grace
            )),
        );
    }
    fact("error", md(&row.error));
    if row.reference.len() + row.max_abs_err.iter().len() > 0 {
        fact(
            "verification",
            md(&format!(
                "reference {}, max abs err {}, max rel err {}",
                if row.reference.is_empty() {
                    "-"
                } else {
                    &row.reference
                },
                opt(row.max_abs_err),
                opt(row.max_rel_err)
            )),
        );
    }
    let versions: Vec<String> = m
        .backend
        .versions
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    fact(
        "backend",
        md(&format!(
            "{} on {}; {}",
            row.backend,
            row.device,
            versions.join(", ")
        )),
    );
    fact(
        "host",
        md(&format!(
            "{}: {}, kernel {}, {}, {}",
            m.host.hostname, m.host.os, m.host.kernel, m.host.arch, m.host.cpu
        )),
    );
    fact(
        "run",
        format!(
            "{}, {}",
            md_code(&run.dir.display().to_string()),
            md(&format!(
                "started {}, rocsweep {} (git {})",
                m.started_at, m.rocsweep_version, m.git_commit
            ))
        ),
    );
    fact(
        "sweep",
        format!(
            "{} ({}, sha256 {})",
            md(&m.sweep.name),
            md_code(&m.sweep.path),
            md(m.sweep.sha256.get(..12).unwrap_or(&m.sweep.sha256))
        ),
    );

    s.push_str("\n## Environment\n\n```sh\n");
    let vars = env_vars(run, row);
    if vars.is_empty() {
        s.push_str("# the unit's env combination sets nothing\n");
    }
    for (k, v) in &vars {
        let _ = writeln!(s, "{}", shell::export_line(k, manifest::shown(k, v)));
    }
    let extra: Vec<(&String, &String)> = m
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

    let hang_note = match row.status {
        Status::Hang => {
            "\nIt hung under rocsweep; run it as `timeout -s KILL 600 <command>` so the shell comes back.\n"
        }
        Status::InferredFail => {
            "\nrocsweep inferred (did not see) that it hangs or crashes; run it as `timeout -s KILL 600 <command>` so the shell comes back.\n"
        }
        _ => "",
    };
    match op {
        Some(OpKind::Conv2d) => {
            s.push_str("\n## MIOpenDriver\n\n");
            if let Some(cmd) = miopen_driver(row, &row.backend, &run.manifest.backend.solver_ids) {
                let _ = writeln!(s, "```sh\n{cmd}\n```\n{hang_note}");
            }
            s.push_str("`-F 1` forward, `2` backward data, `4` backward weights; `-V 1` verifies on the CPU.\n");
        }
        Some(OpKind::Gemm) if row.solver == "rocblas" => {
            s.push_str("\n## rocblas-bench\n\n");
            let _ = writeln!(s, "```sh\n{}\n```\n{hang_note}", rocblas_bench(row));
            s.push_str(
                "This is the call rocsweep makes: rocBLAS is column-major, so the row-major problem \
                 C = op(A) op(B) runs as C^T = op(B)^T op(A)^T (m and n swapped, A and B swapped).\n",
            );
        }
        Some(OpKind::Gemm) => {
            s.push_str("\n## hipblaslt-bench\n\n");
            if let Some(cmd) = hipblaslt_bench(row, &row.backend) {
                let _ = writeln!(s, "```sh\n{cmd}\n```\n{hang_note}");
            }
            s.push_str(
                "rocsweep's m, n, k and transposes are passed as they are; hipBLASLt is column-major, \
                 so a row-major problem is the same with A and B swapped.\n",
            );
        }
        _ => {
            let _ = writeln!(
                s,
                "\n## Vendor tool\n\nNo vendor command-line tool runs a `{}` case like this one; the rocsweep commands below reproduce it.",
                row.op
            );
        }
    }

    s.push_str("\n## rocsweep\n\n");
    let out_dir = format!("repro-{}", row.unit_id);
    let file = format!("{out_dir}.toml");
    match op {
        Some(op) => {
            let text = standalone_sweep(run, row, op);
            s.push_str("Exactly this unit (every parameter fixed, its env combination as `[env]`, the run's limits):\n\n");
            let _ = writeln!(
                s,
                "```sh\ncat > {file} <<'ROCSWEEP_SWEEP'\n{text}ROCSWEEP_SWEEP\nrocsweep run {file} --out {out_dir}\n```"
            );
            if let Err(why) = selects_exactly(&file, &text, &[], row) {
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

    // The original sweep file with every varied parameter pinned by --axis.
    let ours = varied_params(run);
    let mut overrides: Vec<String> = m
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
    let args: String = overrides
        .iter()
        .map(|o| {
            let (flag, value) = crate::spec::sets::flag_and_value(o);
            format!(" {flag} {}", shell::quote(value))
        })
        .collect();
    let _ = writeln!(
        s,
        "\nFrom the original sweep file (`{}`, run from the directory the run was started in):\n",
        m.sweep.path
    );
    match selects_exactly(&m.sweep.path, &m.sweep.text, &overrides, row) {
        Ok(combos) => {
            let _ = writeln!(
                s,
                "```sh\nrocsweep run {}{args} --out {out_dir}\n```",
                shell::quote(&m.sweep.path)
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
    Ok(s)
}

pub fn command(run_dir: &Path, unit_id: &str) -> Result<String, CmdError> {
    let run = RunData::load(run_dir)?;
    repro(&run, unit_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::status::Status;

    fn gemm_row(params: &[(&str, &str)]) -> Row {
        Row {
            unit_id: "u".into(),
            case_id: "c".into(),
            op: "gemm".into(),
            backend: "rocm".into(),
            device: String::new(),
            device_index: String::new(),
            solver: "hipblaslt#0-sol56073".into(),
            env: String::new(),
            status: Status::Ok,
            phase: String::new(),
            error: String::new(),
            reference: String::new(),
            max_abs_err: None,
            max_rel_err: None,
            first_call_ms: None,
            median_ms: None,
            p10_ms: None,
            p90_ms: None,
            samples: None,
            trials: None,
            trial_ms: Vec::new(),
            gflops: None,
            gbps: None,
            workspace_bytes: None,
            chosen: String::new(),
            flops: None,
            bytes: None,
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
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

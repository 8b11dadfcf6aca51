//! The import's output: one sweep file per op (`conv2d.toml`, `gemm.toml`) and summary.md,
//! assembled in a staging directory and renamed into place, so DIR is whole or absent.

use super::ledger::{Case, Ledger, clip};
use crate::error::CmdError;
use crate::markup::markdown;
use crate::markup::table::{Cell, Table};
use crate::op::value::Value;
use crate::results::rundir::Staging;
use std::fmt::Write as _;
use std::path::Path;

pub fn publish(ledger: &Ledger, out: &Path) -> Result<String, CmdError> {
    let base = sweep_base(out);
    let mut staging = Staging::create(out)?;
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        CmdError::Failure(format!("cannot write {what} in {}: {e}", out.display()))
    };
    let mut written = Vec::new();
    for (op, cases) in &ledger.cases {
        let name = format!("{base}-{op}");
        let text = sweep(&name, op, cases, ledger);
        // What import writes must load as it will when run.
        crate::spec::load_str(&format!("{op}.toml"), &text, &[]).map_err(|e| {
            CmdError::Failure(format!(
                "internal: the imported {op} sweep does not load: {}",
                e.message
            ))
        })?;
        let file = format!("{op}.toml");
        std::fs::write(staging.path.join(&file), &text).map_err(|e| fail(&file, &e))?;
        written.push((
            file,
            cases.len(),
            cases.iter().map(Case::weight).sum::<f64>(),
        ));
    }
    let seq = super::sequence::text(&base, ledger);
    if let Some(w) = &seq {
        crate::spec::sequence::load_str("sequence.toml", &w.text, &[]).map_err(|e| {
            CmdError::Failure(format!(
                "internal: the imported sequence does not load: {}",
                e.message
            ))
        })?;
        std::fs::write(staging.path.join("sequence.toml"), &w.text)
            .map_err(|e| fail("sequence.toml", &e))?;
    }
    let mut summary = summary(ledger, out, &written);
    if let Some(w) = &seq {
        let _ = writeln!(
            summary,
            "
## Sequence

`sequence.toml`: the {} calls the sources recorded in order, as {} \
             steps{}{}; `rocsweep run {}` replays them in one process and shrinks any failure \
             that needs earlier calls to the calls it needs (docs/sweep-files.md, \"Sequences\").",
            w.calls,
            w.steps,
            if w.repeat > 1 {
                format!(" x repeat {} (the loop the sources show)", w.repeat)
            } else {
                String::new()
            },
            if w.left_out > 0 {
                format!(
                    "; {} calls past the limit of {} steps left out",
                    w.left_out,
                    crate::spec::sequence::MAX_STEPS
                )
            } else {
                String::new()
            },
            out.join("sequence.toml").display()
        );
    }
    std::fs::write(staging.path.join("summary.md"), &summary)
        .map_err(|e| fail("summary.md", &e))?;
    staging.publish().map_err(|e| fail("the directory", &e))?;
    Ok(summary)
}

/// A sweep name from DIR's last component: letters, digits, `-`, `_`, `.`.
fn sweep_base(out: &Path) -> String {
    let raw = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let clean: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .take(80)
        .collect();
    if clean.trim_matches(['-', '.']).is_empty() {
        "imported".into()
    } else {
        clean
    }
}

fn sweep(name: &str, op: &str, cases: &[Case], ledger: &Ledger) -> String {
    let mut s = String::new();
    let files: Vec<&str> = ledger.files.iter().map(|f| f.path.as_str()).collect();
    let _ = writeln!(
        s,
        "# Imported by `rocsweep import` from {}.",
        files.join(", ")
    );
    let _ = writeln!(
        s,
        "# One [[cases]] table per distinct problem, heaviest first; `weight` is the calls the"
    );
    let _ = writeln!(
        s,
        "# sources saw (see summary.md for what each source counts), `traced_ms` the device time"
    );
    let _ = writeln!(
        s,
        "# a profiler traced for them. Edit freely: this is an ordinary sweep file."
    );
    let _ = writeln!(s, "name = \"{name}\"");
    let _ = writeln!(
        s,
        "description = \"{} distinct {op} problems imported from {} file(s)\"",
        cases.len(),
        files.len()
    );
    let _ = writeln!(s, "op = \"{op}\"");
    let _ = writeln!(s, "backend = \"auto\"\n");
    let _ = writeln!(s, "[axes]\nsolver = \"all\"\n");
    let _ = writeln!(s, "[env_axes]");
    let _ = writeln!(
        s,
        "# Variables to try, each a list of values; every combination runs every case, e.g."
    );
    let _ = writeln!(s, "# {}\n", env_hint(op));
    // Traced time is written only where every case has some and the trace saw device time
    // at all (a CPU-only profiler trace has none: its cases would all say 0).
    let all_traced = cases.iter().all(|c| c.traced_ms.is_some())
        && cases.iter().filter_map(|c| c.traced_ms).sum::<f64>() > 0.0;
    let mut order: Vec<&Case> = cases.iter().collect();
    order.sort_by(|a, b| {
        b.weight().total_cmp(&a.weight()).then(
            b.traced_ms
                .unwrap_or(0.0)
                .total_cmp(&a.traced_ms.unwrap_or(0.0)),
        )
    });
    for c in order {
        let _ = writeln!(s, "[[cases]]");
        for q in &c.quoted {
            let _ = writeln!(s, "# {}", clip(q));
        }
        if c.sightings > c.quoted.len() {
            let _ = writeln!(s, "# ... and {} more", c.sightings - c.quoted.len());
        }
        if c.calls == 0.0 {
            let _ = writeln!(
                s,
                "# seen only in Find (prepared, not run): weighted by its Finds"
            );
        }
        let _ = writeln!(s, "weight = {}", number(c.weight()));
        if all_traced && let Some(ms) = c.traced_ms {
            let _ = writeln!(s, "traced_ms = {}", number((ms * 1000.0).round() / 1000.0));
        }
        for (k, v) in &c.problem.params {
            let _ = match v {
                Value::Str(t) => writeln!(s, "{k} = \"{t}\""),
                other => writeln!(s, "{k} = {other}"),
            };
        }
        s.push('\n');
    }
    s
}

fn env_hint(op: &str) -> &'static str {
    match op {
        "conv2d" => "MIOPEN_FIND_MODE = [\"1\", \"3\"] (ROCm), CUDNN_... (CUDA)",
        _ => "HIPBLASLT_... or ROCBLAS_... (ROCm), CUBLASLT_... (CUDA)",
    }
}

/// A weight as TOML: an integer when whole.
fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

fn summary(ledger: &Ledger, out: &Path, written: &[(String, usize, f64)]) -> String {
    let mut s = String::from("# rocsweep import\n\n");
    for (file, n, calls) in written {
        let _ = writeln!(
            s,
            "- {}: {n} distinct problems, {} calls",
            markdown::code(file),
            number(*calls)
        );
    }
    let mut files = Table::new(&[("file", false), ("what was read", false)]);
    for f in &ledger.files {
        files.push(vec![Cell::text(&f.path), Cell::Text(f.describe())]);
    }
    s.push('\n');
    s.push_str(&markdown::table(&files, usize::MAX));
    s.push_str(
        "\nCounts: a log line is one call (hipBLASLt and rocBLAS YAML lines: their call_count); \
         an MIOpen Find counts only for a problem never seen running; a cuDNN operation graph is \
         counted when it is built (frameworks build one per shape and reuse it); a TunableOp line \
         is one distinct GEMM; a profiler trace counts each op call and its kernels' device time.\n",
    );
    if !ledger.unsupported.is_empty() {
        s.push_str("\n## Not supported (counted, not imported)\n\n");
        let mut t = Table::new(&[("what", false), ("count", true), ("first seen", false)]);
        for (why, (n, at)) in &ledger.unsupported {
            t.push(vec![Cell::text(why), Cell::num(n), Cell::text(at)]);
        }
        s.push_str(&markdown::table(&t, usize::MAX));
    }
    if !ledger.malformed.is_empty() {
        s.push_str("\n## Malformed lines (skipped)\n\n");
        for (at, why) in &ledger.malformed {
            let _ = writeln!(s, "- {}: {}", markdown::escape(at), markdown::escape(why));
        }
    }
    s.push_str("\n## Next\n\n```\n");
    for (file, _, _) in written {
        let _ = writeln!(
            s,
            "rocsweep run {} --backend rocm",
            out.join(file).display()
        );
    }
    s.push_str("```\n");
    s
}

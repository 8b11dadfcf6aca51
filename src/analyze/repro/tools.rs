//! The vendor tools' command lines for one unit (MIOpenDriver for convolutions, rocblas-bench or
//! hipblaslt-bench for GEMMs), and the page's section that shows them.

use crate::markup::shell;
use crate::op::OpKind;
use crate::results::rundata::{Row, RunData};
use crate::results::status::Status;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The vendor tool's section: its command line for this unit and how to read it, or why there
/// is none.
pub(super) fn section(s: &mut String, run: &RunData, row: &Row, op: Option<OpKind>) {
    let hang_note = hang_note(row.status);
    if row.backend == "torch" {
        return torch_section(s, row, hang_note);
    }
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
}

/// A torch unit's reproduction with nothing but torch: the stand-alone script (see
/// `markup::torch_script`).
fn torch_section(s: &mut String, row: &Row, hang_note: &str) {
    s.push_str("\n## PyTorch alone\n\n");
    match crate::markup::torch_script::torch_script(&row.op, &row.params, &row.solver) {
        Some(script) => {
            let _ = writeln!(
                s,
                "The call the torch backend made, with torch's own random inputs of the same shapes and types, checked on the CPU in float64 (exit 1 and `FAIL` when wrong):\n\n```sh\ncat > {file} <<'ROCSWEEP_PY'\n{script}ROCSWEEP_PY\npython3 {file}\n```\n{hang_note}",
                file = crate::markup::shell::quote(&format!("repro-{}.py", row.unit_id)),
            );
        }
        None => {
            let _ = writeln!(
                s,
                "No stand-alone script for this `{}` case (an op the generator does not know, or a \
                 parameter or solver that is not a plain number or word).",
                crate::markup::shell::comment(&row.op)
            );
        }
    }
}

/// What to say under a command line when the unit hung or was inferred to (empty otherwise).
fn hang_note(status: Status) -> &'static str {
    match status {
        Status::Hang => {
            "\nIt hung under rocsweep; run it as `timeout -s KILL 600 <command>` so the shell comes back.\n"
        }
        Status::InferredFail => {
            "\nrocsweep inferred (did not see) that it hangs or crashes; run it as `timeout -s KILL 600 <command>` so the shell comes back.\n"
        }
        _ => "",
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
    let id = ids.get(row.solver.as_str()).copied().or_else(|| {
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

pub(super) fn rocblas_bench(row: &Row) -> String {
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
pub(super) fn hipblaslt_bench(row: &Row, backend: &str) -> Option<String> {
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

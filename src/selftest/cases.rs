//! The tiny cases `selftest` runs: one sweep per op, written as sweep files are and loaded by
//! the same loader, so a check is exactly a unit a user's sweep would run. Each library the
//! backend loads is reached by at least one case (ROCm: MIOpen, hipBLASLt, rocBLAS, hipRAND,
//! hipRTC's kernels, the HIP runtime's copies and graphs; CUDA: cuDNN, cuBLASLt, cuRAND, NVRTC,
//! copies and graphs).

use crate::op::canonical_text;
use crate::spec::policy::Policies;

const COMMON: &str = r#"
[limits]
init = 120
enumerate = 60
compile = 120
alloc = 30
run = 30
verify = 60

[timing]
warmup = 1
min_samples = 3
max_time = 0.05
"#;

/// (op, axes) per sweep; `{gemm}` is the backend's GEMM libraries.
const SWEEPS: &[(&str, &str)] = &[
    (
        "conv2d",
        "direction = \"fwd\"\nn = 1\nc_in = 8\nc_out = 8\nh = 8\ndtype = [\"f32\", \"f16\"]",
    ),
    (
        "gemm",
        "m = 64\ndtype = [\"f32\", \"bf16\"]\nsolver = {gemm}",
    ),
    ("rng", "count = 4096\ndtype = [\"f32\", \"bf16\"]"),
    (
        "copy",
        "direction = [\"h2d\", \"d2h\", \"d2d\"]\nmemory = \"pinned\"\nbytes = 1048576",
    ),
    ("cast", "count = 4096"),
    (
        "graph",
        "channels = 8\nsize = 8\nreplays = 2\nkeep_outputs = true\nsolver = \"stream-capture\"",
    ),
];

/// The casts checked: both bf16 directions (seed 002) and f32 -> f16.
const CASTS: &str =
    "\n[zip.types]\nfrom = [\"f32\", \"bf16\", \"f32\"]\nto = [\"bf16\", \"f32\", \"f16\"]\n";

fn gemm_solvers(backend: &str) -> &'static str {
    match backend {
        "rocm" => "[\"hipblaslt\", \"rocblas\"]",
        _ => "\"default\"",
    }
}

/// One check: a label for the line, the case, and the policies it runs under.
pub struct Check {
    pub(super) label: String,
    pub(super) case: crate::op::Case,
    pub(super) policies: Policies,
}

/// Every check for `backend`, in the order they run.
pub fn all(backend: &str) -> Result<Vec<Check>, String> {
    let mut v = Vec::new();
    for (op, axes) in SWEEPS {
        let axes = axes.replace("{gemm}", gemm_solvers(backend));
        let zip = if *op == "cast" { CASTS } else { "" };
        let text = format!(
            "name = \"selftest-{op}\"\nop = \"{op}\"\nbackend = \"{backend}\"\n\n[axes]\n{axes}\n{zip}{COMMON}"
        );
        let sweep = crate::spec::load_str(&format!("<selftest {op}>"), &text, &[])
            .map_err(|e| format!("the built-in selftest sweep for {op} is invalid: {e}"))?;
        let policies = Policies {
            limits: sweep.limits.clone(),
            timing: sweep.timing.clone(),
            verify: sweep.verify.clone(),
        };
        for case in sweep.cases() {
            let case = case.map_err(|e| format!("selftest case for {op}: {e}"))?;
            let label = format!(
                "{op} {} solver={}",
                canonical_text(sweep.op, &case.values),
                case.solver
            );
            v.push(Check {
                label,
                case,
                policies: policies.clone(),
            });
        }
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_has_a_check_on_both_gpu_backends() {
        for backend in ["rocm", "cuda"] {
            let checks = all(backend).unwrap();
            for op in crate::op::OpKind::ALL {
                assert!(
                    checks.iter().any(|c| c.case.problem.kind() == op),
                    "{backend}: no check for {op:?}"
                );
            }
        }
        let rocm = all("rocm").unwrap();
        for lib in ["solver=hipblaslt", "solver=rocblas"] {
            assert!(rocm.iter().any(|c| c.label.contains(lib)), "{lib}");
        }
    }
}

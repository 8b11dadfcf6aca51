//! The registry of backends this build carries: their names, the solver names they know, and
//! opening one by name (in the worker).

use super::{Backend, BackendInfo, cpu, cuda, rocm, torch};
use crate::op::OpKind;

/// Solver names every backend in this build knows for an op (for sweep validation).
pub fn solver_names(op: OpKind) -> Vec<&'static str> {
    let mut v = cpu::solver_names(op).to_vec();
    v.extend(cuda::solver_names(op));
    v.extend(rocm::solver_names(op));
    v.extend(torch::solver_names(op));
    v.sort_unstable();
    v.dedup();
    v
}

/// How many solvers `solver = "all"` expands to on `backend` for `op`, where that is known
/// without opening a device: the CPU's and torch's fixed lists (torch's graph op has a GPU-only
/// solver, so it is not). None where the library lists them as the run goes (cuDNN's engines,
/// cuBLASLt's algorithms, MIOpen's solutions) or the backend is chosen at run time (`auto`).
pub fn solver_count_up_front(backend: &str, op: OpKind) -> Option<u64> {
    match backend {
        "cpu" => Some(cpu::solver_names(op).len() as u64),
        "torch" if op != OpKind::Graph => Some(torch::solver_names(op).len() as u64),
        _ => None,
    }
}

/// Whether a sweep may ask for solver `s`: `default`, `all`, a name some backend lists, or one
/// of the patterns a backend accepts (cuBLASLt `lt#..`, cuDNN engine configurations, hipBLASLt
/// `hipblaslt#..`, MIOpen `solver#<id>`).
pub fn is_known_solver(op: OpKind, s: &str) -> bool {
    matches!(s, "default" | "all")
        || solver_names(op).contains(&s)
        || cuda::accepts_solver(op, s)
        || rocm::accepts_solver(op, s)
        || torch::accepts_solver(op, s)
}

/// Variables naming a library's on-disk caches, with the subdirectory each gets per env
/// combination (see `exec::supervise::handle::WorkerSpec::cache_root`): MIOpen's user find-db and its
/// compiled-kernel cache, so one combination's tuning never leaks into another's timings.
pub fn isolated_cache_vars(backend: &str) -> &'static [(&'static str, &'static str)] {
    match backend {
        "rocm" | "auto" => &[
            ("MIOPEN_USER_DB_PATH", "miopen-user-db"),
            ("MIOPEN_CUSTOM_CACHE_DIR", "miopen-cache"),
        ],
        _ => &[],
    }
}

/// Backend names this build carries (besides `auto`).
pub const KNOWN: &[&str] = &["cpu", "cuda", "rocm", "torch"];

/// An open backend and, for `auto`, what it picked and why.
pub type Opened = (Box<dyn Backend>, Option<String>);

/// Opens a backend by name, in the worker. Ok: the backend and, for `auto`, what it picked and
/// why. Err: what the backend reports about itself when it cannot run (ROCm: the versions and
/// paths that loaded, and why not), with `missing` set.
pub fn open_explained(name: &str) -> Result<Opened, Box<BackendInfo>> {
    let unavailable = |why: String| {
        Box::new(BackendInfo {
            backend: name.to_string(),
            missing: Some(why),
            ..BackendInfo::default()
        })
    };
    match name {
        "cpu" => Ok((Box::new(cpu::CpuBackend::new()), None)),
        "cuda" => cuda::CudaBackend::open()
            .map(|b| (Box::new(b) as Box<dyn Backend>, None))
            .map_err(unavailable),
        "rocm" => rocm::RocmBackend::open()
            .map(|b| (Box::new(b) as Box<dyn Backend>, None))
            .map_err(|why| {
                Box::new(BackendInfo {
                    missing: Some(why),
                    ..rocm::probe()
                })
            }),
        "torch" => torch::TorchBackend::open()
            .map(|b| (Box::new(b) as Box<dyn Backend>, None))
            .map_err(unavailable),
        "auto" => Ok(open_auto()),
        other => Err(unavailable(
            check_name(other).err().unwrap_or_else(|| other.to_string()),
        )),
    }
}

/// `auto`: the first GPU backend that opens (ROCm, then CUDA), else the CPU; the note says
/// which, and why each one passed over could not run.
fn open_auto() -> Opened {
    let mut passed = Vec::new();
    let gpu: Option<Box<dyn Backend>> = match rocm::RocmBackend::open() {
        Ok(b) => Some(Box::new(b)),
        Err(why) => {
            passed.push(format!("rocm cannot run: {why}"));
            match cuda::CudaBackend::open() {
                Ok(b) => Some(Box::new(b)),
                Err(why) => {
                    passed.push(format!("cuda cannot run: {why}"));
                    None
                }
            }
        }
    };
    let b = gpu.unwrap_or_else(|| Box::new(cpu::CpuBackend::new()));
    let mut note = format!("backend auto picked {}", b.name());
    for p in &passed {
        note.push_str(&format!("; {p}"));
    }
    (b, Some(note))
}

/// Checks a backend name before anything is written. Whether it can run here is the first
/// worker's to say: this process never loads a vendor library.
pub fn check_name(name: &str) -> Result<(), String> {
    if name == "auto" || KNOWN.contains(&name) {
        Ok(())
    } else {
        Err(format!(
            "unknown backend `{name}`, expected one of: auto, cpu, cuda, rocm, torch"
        ))
    }
}

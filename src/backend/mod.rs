//! The backend interface: plain data in (problem, solver, inputs), plain data out (timings,
//! output tensor, library error names). Backends know nothing of processes, files or CSV.

pub mod cpu;
pub mod cuda;
pub mod engine;
pub mod rocm;
pub mod telemetry;
pub mod torch;

use crate::op::{Inputs, OpKind, Problem};
use crate::tensor::HostData;
use crate::timing::{Batch, Sample};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Why a unit could not produce an output.
#[derive(Clone, Debug, PartialEq, thiserror::Error, Serialize, Deserialize)]
pub enum UnitError {
    /// The library (or backend) says it cannot run this case with this solver.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The library returned an error; `code` is the library's own name for it.
    #[error("{library}: {code}: {message}")]
    Library {
        library: String,
        code: String,
        message: String,
    },
}

impl UnitError {
    /// A library's error: the library, its own name for the code, and what failed.
    pub fn library(
        library: &str,
        code: impl Into<String>,
        message: impl Into<String>,
    ) -> UnitError {
        UnitError::Library {
            library: library.into(),
            code: code.into(),
            message: message.into(),
        }
    }
}

/// What `probe` and the manifest say about a backend.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BackendInfo {
    pub backend: String,
    pub available: bool,
    /// Why the backend is not available (missing library, no device, not built).
    pub missing: Option<String>,
    pub devices: Vec<String>,
    /// How many devices the backend could open (what `run --devices all` spreads over), which
    /// can be more than `devices`, the ones this worker uses; 0 where unknown.
    #[serde(default)]
    pub device_count: usize,
    /// Library name -> version string.
    pub versions: BTreeMap<String, String>,
    /// With `backend = "auto"`: what it picked and why (each GPU backend it passed over, with
    /// the reason); None when the backend was named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub picked: Option<String>,
    /// Solver names the library also knows by a number (MIOpen's solver ids), so that a
    /// result can be handed to the library's own tools (`repro`: `MIOpenDriver -S <id>`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub solver_ids: BTreeMap<String, u64>,
    /// The vendor library files mapped into the worker (ROCm: every file of the chosen tree),
    /// for the manifest's provenance.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub libraries: Vec<LibraryFile>,
}

/// One vendor library file a worker had mapped: where it is, its ELF soname and the version its
/// file name carries (from the worker), and its SHA-256 (from the supervisor, once per run).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LibraryFile {
    pub path: String,
    #[serde(default)]
    pub soname: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub sha256: String,
}

/// Phase notifications from inside a backend (compile and alloc happen there).
pub trait PhaseSink {
    fn phase(&mut self, phase: &'static str);
    /// Called by the unit runner (never by a backend) with the output read back, before it is
    /// verified; the worker's TEST-ONLY fault switch may corrupt it here. Default: nothing.
    fn before_verify(&mut self, _output: &mut HostData) {}
}

impl<F: FnMut(&'static str)> PhaseSink for F {
    fn phase(&mut self, phase: &'static str) {
        self(phase)
    }
}

pub trait Backend {
    fn name(&self) -> &'static str;
    fn info(&self) -> BackendInfo;
    /// The concrete solvers for a problem: what `solver = "all"` expands to.
    fn solvers(&self, problem: &Problem) -> Vec<String>;
    /// Allocates, uploads and compiles what the solver needs. `default` picks the backend's choice.
    fn prepare(
        &mut self,
        problem: &Problem,
        solver: &str,
        inputs: &Inputs,
        phases: &mut dyn PhaseSink,
    ) -> Result<Box<dyn Prepared>, UnitError>;

    /// A reference computed on the device, for problems too large for the CPU reference: the
    /// values and the name of what computed them. None where the backend has none for the op.
    fn device_reference(
        &mut self,
        _problem: &Problem,
        _inputs: &Inputs,
    ) -> Option<Result<(crate::verify::Reference, String), UnitError>> {
        None
    }

    /// The device's clock and temperature now (NVML, ROCm SMI); empty where the backend cannot
    /// read them.
    fn telemetry(&mut self) -> telemetry::Reading {
        telemetry::Reading::default()
    }

    /// Whether the backend's calls run in a child process of its own (torch's Python), where
    /// the worker's test faults are carried out (`exec::worker::fault::defer`) so that they hit the
    /// process a real fault would.
    fn runs_faults_in_child(&self) -> bool {
        false
    }

    /// Whether the backend can compile the project's own kernels (NVRTC, hipRTC) here: the
    /// health probe runs one of them where it can, and only copies where it cannot.
    fn compiles_kernels(&self) -> bool {
        true
    }

    /// TEST-ONLY (through ROCSWEEP_TEST_FAULT=...:gpuhang@run): launch a device kernel that
    /// never ends and wait for it. Backends without a device return Unsupported.
    fn test_never_ending_kernel(&mut self) -> Result<(), UnitError> {
        Err(UnitError::Unsupported(
            "this backend has no device kernels".into(),
        ))
    }
}

/// A problem ready to run: one `run` is one timed execution.
pub trait Prepared {
    /// One timed execution: launch-free device time per call and one call with its launch (see
    /// `crate::timing`). A GPU backend may queue several calls for the device figure
    /// (`Batch::Auto`); the output afterwards is the last call's.
    fn run(&mut self, batch: Batch) -> Result<Sample, UnitError>;
    /// The output of the most recent execution(s), in the problem's output type.
    fn output(&mut self) -> Result<HostData, UnitError>;
    fn workspace_bytes(&self) -> u64 {
        0
    }
    /// What the library chose for this problem, where it chooses (the `chosen` column): e.g.
    /// cuDNN's engine and knobs, cuBLASLt's algorithm, MIOpen's solution, the CPU's kernel for
    /// `default`. Empty where nothing was chosen or the library does not say.
    fn chosen(&self) -> String {
        String::new()
    }
    /// Evicts caches before a cold sample by writing `bytes` of device memory (0: the backend's
    /// default for the device); a no-op where the backend has nothing to flush.
    fn flush_cache(&mut self, _bytes: u64) {}
    /// gemm: makes copies of the inputs, `bytes` in all, that later calls use in turn
    /// (`[timing] rotating_mib`; the sweep loader allows it for gemm only).
    fn rotate_inputs(&mut self, _bytes: u64) -> Result<(), UnitError> {
        Ok(())
    }
    /// How much more rounding error than a direct dot product the algorithm is known to have
    /// (FFT and Winograd transforms amplify it); multiplies the op's tolerance.
    fn tolerance_factor(&self) -> f64 {
        1.0
    }
    /// Seconds spent compiling the solver before the first run: (cold cache, warm cache). The
    /// warm figure is NaN where the backend cannot compile twice (MIOpen's find path).
    fn compile_seconds(&self) -> Option<(f64, f64)> {
        None
    }
}

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

//! The backend interface: the [`Backend`] trait every backend implements, what a prepared unit
//! does ([`Prepared`]), what a backend says about itself ([`BackendInfo`]) and why a unit
//! could not produce an output ([`UnitError`]).

use super::telemetry;
use crate::op::{Inputs, Problem};
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

/// The worker's TEST-ONLY fault (`exec::worker::fault`) for a backend whose calls run in a child
/// process of its own (torch's Python): the phase sink puts the fault's name here and the
/// backend takes it with its next request to the child, which carries it out, so that a fault
/// hits the process a real one would. One mailbox per backend, shared by the two; the first
/// fault put in wins until it is taken.
#[derive(Clone, Debug, Default)]
pub struct ChildFault(std::rc::Rc<std::cell::Cell<Option<&'static str>>>);

impl ChildFault {
    /// Leaves a fault for the child; a fault already waiting stays.
    pub fn put(&self, action: &'static str) {
        if self.0.get().is_none() {
            self.0.set(Some(action));
        }
    }

    /// The fault waiting for the child, if any; the mailbox is empty afterwards.
    pub fn take(&self) -> Option<&'static str> {
        self.0.take()
    }
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

    /// For a backend whose calls run in a child process of its own (torch's Python): the
    /// mailbox through which the worker's phase sink hands it the test faults to carry out
    /// there (see `ChildFault`). None: the calls run in the worker, where faults act at once.
    fn child_fault(&self) -> Option<ChildFault> {
        None
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
    /// default for the device). Whether it did: false where the backend has nothing to flush
    /// (the CPU) or the flush failed, and the row then says its samples ran `warm`.
    fn flush_cache(&mut self, _bytes: u64) -> bool {
        false
    }
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

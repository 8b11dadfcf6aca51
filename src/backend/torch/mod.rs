//! The `torch` backend: the same cases through PyTorch, in the user's own Python (see
//! `child`). The Python side makes the calls and times them; everything else is rocsweep's own,
//! as for every backend: the inputs, the phases, the fault switch, and the verification of the
//! output against the CPU reference. On a machine without a GPU, torch runs on its CPU device.
//!
//! Each torch solver runs in a Python process of its own, started when the worker first needs
//! it and kept for the worker's life: a user's process runs one configuration, and PyTorch's
//! caches are per process and keyed without the settings that tell the solvers apart (cuDNN's
//! algorithm cache ignores `cudnn.benchmark`, so a shape that `torch-default` ran first would
//! hand `torch-benchmark` the heuristic's pick instead of benchmarking). A fresh process per
//! solver is exact where clearing the caches would not be: there is no public call that empties
//! cuDNN's algorithm cache.

mod child;

pub use child::{PYTHON_VAR, SOURCE, choose_python};

/// Set by the supervisor when the run's other backends are GPU backends (their names): torch
/// must then have a GPU of its own.
pub const NEEDS_GPU_VAR: &str = "ROCSWEEP_TORCH_NEEDS_GPU";

use crate::backend::telemetry::{Monitor, NVML_READS, Reading, SMI_READS};
use crate::backend::{Backend, BackendInfo, LibraryFile, PhaseSink, Prepared, UnitError};
use crate::op::{Inputs, OpKind, Problem};
use crate::tensor::HostData;
use crate::timing::{self, Batch, Sample};
use child::Conn;
use serde_json::{Value as Json, json};
use std::cell::RefCell;
use std::rc::Rc;

/// Every solver name the torch backend knows, per op (what `solver = "all"` expands to on a
/// GPU; on torch's CPU device the GPU-only ones are left out).
pub fn solver_names(op: OpKind) -> &'static [&'static str] {
    match op {
        OpKind::Conv2d => &["torch-default", "torch-benchmark"],
        OpKind::Gemm => &["torch-matmul", "torch-linear"],
        OpKind::Rng => &[
            "torch-randn",
            "torch-randn_like",
            "torch-rand",
            "torch-normal_",
        ],
        OpKind::Copy => &["torch-to", "torch-to-nonblocking"],
        OpKind::Cast => &["torch-to", "torch-method", "torch-cpu"],
        OpKind::Graph => &["torch-eager", "torch-cudagraph", "torch-compile"],
    }
}

/// Solvers that need torch's GPU.
const GPU_ONLY: &[&str] = &["torch-cudagraph"];

/// BLAS libraries `torch.backends.cuda.preferred_blas_library` takes: `torch-matmul+cublaslt`.
pub const BLAS_PREFERENCES: &[&str] = &["cublas", "cublaslt", "hipblaslt", "ck"];

/// Names the torch backend accepts by pattern: a GEMM solver with a BLAS preference.
pub fn accepts_solver(op: OpKind, s: &str) -> bool {
    op == OpKind::Gemm
        && s.split_once('+').is_some_and(|(base, blas)| {
            matches!(base, "torch-matmul" | "torch-linear") && BLAS_PREFERENCES.contains(&blas)
        })
}

pub struct TorchBackend {
    /// The Python that runs torch, and what said so (for a solver's own process).
    python: std::path::PathBuf,
    /// The process started by `open` (whose hello gave `info`), until a solver takes it.
    spare: Option<Conn>,
    /// Each solver's own Python process (see the module docs).
    conns: std::collections::HashMap<String, Rc<RefCell<Conn>>>,
    /// The test faults the worker hands to whichever process the next request goes to.
    fault: crate::backend::ChildFault,
    info: BackendInfo,
    gpu: bool,
    /// Clock and temperature of torch's device (none on the CPU, or where the vendor's
    /// management library did not open).
    monitor: Option<Box<dyn Monitor>>,
}

/// The vendor's management library for the device torch runs on, found by the PCI bus id the
/// Python side reports (`runtime` "cuda": NVML, "hip": ROCm SMI; the same readers as the cuda
/// and rocm backends), with what it reads for the manifest's `telemetry` line; Err says why not.
fn open_monitor(
    runtime: &str,
    pci_bus_id: Option<&str>,
) -> Result<(Box<dyn Monitor>, &'static str), String> {
    let pci = || pci_bus_id.ok_or("this torch does not report its device's PCI bus id");
    match runtime {
        "cuda" => crate::backend::cuda::nvml::Nvml::open(pci()?)
            .map(|m| (Box::new(m) as Box<dyn Monitor>, NVML_READS)),
        "hip" => crate::backend::rocm::smi::Smi::open(pci()?)
            .map(|m| (Box::new(m) as Box<dyn Monitor>, SMI_READS)),
        _ => Err("torch runs on the CPU".into()),
    }
}

impl TorchBackend {
    /// Starts the Python side. Err: why torch cannot run here (no such Python, no torch).
    pub fn open() -> Result<TorchBackend, String> {
        let (python, why) = choose_python();
        let fault = crate::backend::ChildFault::default();
        let (conn, hello) = Conn::start(&python, fault.clone()).map_err(|e| {
            format!("{e} (python from {why}; name one whose environment has torch with --python)")
        })?;
        let i = &hello["info"];
        let strings = |k: &str| -> Vec<String> {
            i[k].as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut versions: std::collections::BTreeMap<String, String> = i["versions"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect()
            })
            .unwrap_or_default();
        versions.insert(
            "python".into(),
            format!(
                "{} ({why})",
                i["python"]
                    .as_str()
                    .unwrap_or(&python.display().to_string())
            ),
        );
        let runtime = i["runtime"].as_str().unwrap_or("cpu");
        versions.insert("torch device".into(), runtime.to_string());
        let mut info = BackendInfo {
            backend: "torch".into(),
            available: true,
            devices: strings("devices"),
            device_count: i["device_count"].as_u64().unwrap_or(1) as usize,
            versions,
            libraries: strings("libraries")
                .into_iter()
                .map(|path| LibraryFile {
                    path,
                    ..LibraryFile::default()
                })
                .collect(),
            ..BackendInfo::default()
        };
        let gpu = i["gpu"].as_bool().unwrap_or(false);
        let (monitor, line) = match open_monitor(runtime, i["pci_bus_id"].as_str()) {
            Ok((m, what)) => (Some(m), what.to_string()),
            Err(why) => (None, format!("none ({why})")),
        };
        info.versions.insert("telemetry".into(), line);
        if let Some(beside) = std::env::var(NEEDS_GPU_VAR).ok().filter(|_| !gpu) {
            return Err(format!(
                "torch {} has no GPU (python {}), and this run sets it beside {beside}, which runs on one",
                info.versions.get("torch").map_or("?", String::as_str),
                python.display()
            ));
        }
        Ok(TorchBackend {
            python,
            spare: Some(conn),
            conns: std::collections::HashMap::new(),
            fault,
            gpu,
            info,
            monitor,
        })
    }
}

/// Set to `1` in a worker's environment: every solver's calls go to one Python process, as a
/// model's calls do (a sequence, issue 43), instead of one process per solver.
pub const ONE_PROCESS_VAR: &str = "ROCSWEEP_TORCH_ONE_PROCESS";

impl TorchBackend {
    /// The solver's own Python process: the one `open` started if no solver has it yet, else a
    /// new one; with `ONE_PROCESS_VAR`, the one process every solver shares. Err: a new one
    /// could not start (the row is an `error` with why).
    fn conn_for(&mut self, solver: &str) -> Result<Rc<RefCell<Conn>>, UnitError> {
        let shared = std::env::var(ONE_PROCESS_VAR).is_ok_and(|v| v == "1");
        let solver = if shared { "(every solver)" } else { solver };
        if let Some(c) = self.conns.get(solver) {
            return Ok(Rc::clone(c));
        }
        let conn = match self.spare.take() {
            Some(c) => c,
            None => Conn::start(&self.python, self.fault.clone())
                .map(|(c, _)| c)
                .map_err(|e| {
                    UnitError::library("torch", "python", format!("a Python for {solver}: {e}"))
                })?,
        };
        crate::noteln!(
            "worker: torch solver {solver} runs in Python process {} of its own",
            conn.pid()
        );
        let conn = Rc::new(RefCell::new(conn));
        self.conns.insert(solver.to_string(), Rc::clone(&conn));
        Ok(conn)
    }
}

/// The inputs as the Python side reads them: one little-endian tensor per blob, borrowed.
fn blobs(inputs: &Inputs) -> (Vec<&[u8]>, u64) {
    match inputs {
        Inputs::Conv2d(i) => (vec![i.a.le_bytes(), i.b.le_bytes()], 0),
        Inputs::Gemm(i) => (vec![i.a.le_bytes(), i.b.le_bytes()], 0),
        Inputs::Rng { seed } => (Vec::new(), *seed),
        Inputs::Copy(d) | Inputs::Cast(d) => (vec![d.le_bytes()], 0),
        Inputs::Graph(g) => {
            let mut v = vec![g.mix.le_bytes(), g.filter.le_bytes()];
            v.extend(g.activations.iter().map(HostData::le_bytes));
            (v, 0)
        }
    }
}

/// The phase names the Python side may report while preparing.
fn known_phase(p: &str) -> Option<&'static str> {
    ["alloc", "compile", "run"].into_iter().find(|k| *k == p)
}

impl Backend for TorchBackend {
    fn name(&self) -> &'static str {
        "torch"
    }

    fn info(&self) -> BackendInfo {
        self.info.clone()
    }

    fn telemetry(&mut self) -> Reading {
        self.monitor.as_ref().map(|m| m.read()).unwrap_or_default()
    }

    fn solvers(&self, problem: &Problem) -> Vec<String> {
        solver_names(problem.kind())
            .iter()
            .filter(|s| self.gpu || !GPU_ONLY.contains(s))
            .map(|s| s.to_string())
            .collect()
    }

    fn child_fault(&self) -> Option<crate::backend::ChildFault> {
        Some(self.fault.clone())
    }

    fn prepare(
        &mut self,
        problem: &Problem,
        solver: &str,
        inputs: &Inputs,
        phases: &mut dyn PhaseSink,
    ) -> Result<Box<dyn Prepared>, UnitError> {
        let solver = if solver == "default" {
            solver_names(problem.kind())[0]
        } else {
            solver
        };
        let (data, seed) = blobs(inputs);
        let mut head =
            json!({"cmd": "prepare", "problem": problem, "solver": solver, "seed": seed});
        let shared = self.conn_for(solver)?;
        let mut conn = shared.borrow_mut();
        // The same inputs as the last prepare (the same case, another solver): the Python side
        // still has them.
        let same = !data.is_empty()
            && conn
                .last_inputs
                .as_ref()
                .is_some_and(|last| last.iter().map(Vec::as_slice).eq(data.iter().copied()));
        if same {
            head["same_inputs"] = Json::from(true);
        } else {
            // Dropped before the new copy is made: at most one copy besides the inputs.
            conn.last_inputs = None;
        }
        let sent: &[&[u8]] = if same { &[] } else { &data };
        let answer = conn.ask(head, sent, &mut |p| {
            if let Some(p) = known_phase(p) {
                phases.phase(p);
            }
        });
        if !same {
            conn.last_inputs = Some(data.iter().map(|b| b.to_vec()).collect());
        }
        let answer = answer?;
        drop(conn);
        Ok(Box::new(TorchPrepared {
            conn: Rc::clone(&shared),
            chosen: answer.head["chosen"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            out_dtype: problem.output_dtype(),
            last_call: f64::NAN,
        }))
    }
}

struct TorchPrepared {
    conn: Rc<RefCell<Conn>>,
    chosen: String,
    /// The type of a raw output (the graph op hands its replays over as bytes).
    out_dtype: crate::dtype::DType,
    /// The last sample's device seconds per call: how many calls the next launch-free sample
    /// holds.
    last_call: f64,
}

impl TorchPrepared {
    fn ask(&self, head: Json) -> Result<child::Answer, UnitError> {
        self.conn.borrow_mut().ask(head, &[], &mut |_| {})
    }
}

impl Prepared for TorchPrepared {
    fn run(&mut self, batch: Batch) -> Result<Sample, UnitError> {
        let k = timing::calls_per_sample(batch, self.last_call);
        let a = self.ask(json!({"cmd": "run", "k": k}))?;
        let get = |key: &str| a.head[key].as_f64().unwrap_or(f64::NAN);
        // The Python side says how it took the device figure; an older one said nothing and
        // queued the calls behind a spin.
        let method = a.head["method"].as_str().and_then(timing::Method::parse);
        let s = Sample {
            device: get("device"),
            call: get("call"),
            method: method.unwrap_or(timing::Method::Held),
        };
        // The next sample's size from this one's device time per call: torch's per-call figure
        // holds Python's dispatch (10-30 us), which would leave a short call's graph a few calls
        // long, and a graph's start a larger share of each call than in PyTorch's own graphs.
        self.last_call = if s.device > 0.0 && s.device.is_finite() {
            s.device
        } else {
            s.call
        };
        Ok(s)
    }

    fn output(&mut self) -> Result<HostData, UnitError> {
        let a = self.ask(json!({"cmd": "output"}))?;
        let dtype = match a.head["dtype"].as_str() {
            Some(name) => crate::dtype::DType::parse(name).unwrap_or(self.out_dtype),
            None => self.out_dtype,
        };
        let len = a.blob.len() / dtype.size();
        Ok(HostData::from_le_bytes(dtype, &a.blob, len))
    }

    fn chosen(&self) -> String {
        self.chosen.clone()
    }

    fn flush_cache(&mut self, bytes: u64) -> bool {
        // The Python side flushes torch's GPU (it says `flushed`); on the CPU it has nothing to.
        self.ask(json!({"cmd": "flush", "bytes": bytes}))
            .is_ok_and(|a| a.head["flushed"].as_bool() == Some(true))
    }
}

#[cfg(test)]
mod tests {
    use super::open_monitor;

    /// A PCI address no machine has (the last bus of the last domain), so that the libraries'
    /// refusals are tested even where a GPU is present.
    const NOWHERE: &str = "ffff:ff:1f.7";

    fn why(runtime: &str, pci: Option<&str>) -> String {
        match open_monitor(runtime, pci) {
            Ok((_, what)) => format!("opened: {what}"),
            Err(e) => e,
        }
    }

    /// Which management library torch's device is read through, and the note when none opens:
    /// on this machine (no GPU) every GPU runtime ends in the real library's own refusal.
    #[test]
    fn torchs_device_is_read_through_its_vendors_library_or_the_manifest_says_why_not() {
        assert_eq!(why("cpu", Some(NOWHERE)), "torch runs on the CPU");
        for runtime in ["cuda", "hip"] {
            assert_eq!(
                why(runtime, None),
                "this torch does not report its device's PCI bus id"
            );
        }
        // NVML: absent here (no NVIDIA driver), or present without this device.
        let e = why("cuda", Some(NOWHERE));
        assert!(
            e.starts_with("NVML (libnvidia-ml.so.1) not loaded") || e.starts_with("NVML: "),
            "{e}"
        );
        // ROCm SMI: Debian's real librocm-smi64 (.ci/run installs it) refuses without an AMD GPU;
        // without the package, the loader says it found none.
        let e = why("hip", Some(NOWHERE));
        assert!(e.starts_with("ROCm SMI"), "{e}");
    }
}

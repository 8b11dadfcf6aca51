//! The ROCm backend: HIP, hipRTC, MIOpen, hipBLASLt, rocBLAS and hipRAND, every library opened
//! at run time (no ROCm at build time; one binary for ROCm 5.7, 6.x and 7.x). Each library has
//! its own module in three layers: a table of raw symbols (the engine's `api!`), calls that turn
//! status codes into Results with the library's own code names, and `loader::Owned` objects.
//! A missing library disables only the ops that need it, with a message saying what was looked
//! for where.
//!
//! What is not ROCm-specific (memory, timing, kernels, graphs, the probes, the `Backend` itself)
//! is the GPU engine's (backend::engine), which the CUDA backend runs on an H100 over the same
//! code. No AMD GPU exists on any machine of this project: this code is exercised through the
//! fake ROCm library (tests/fake-rocm, same dlopen path) and Debian's real HIP 5.2 runtime.

pub(crate) mod code_object;
mod conv;
mod gemm;
pub mod hip;
mod hipblaslt;
mod hiprand;
pub(crate) mod hiprtc;
mod kdb;
mod libs;
pub mod loader;
mod miopen;
pub mod provenance;
mod rocblas;
mod rocblas_gemm;
pub use rocblas_gemm::chosen_solution;
pub mod runtime;
pub mod smi;
pub mod solvers;

use super::engine;
use super::engine::backend::{GpuBackend, Made, Unit, Vendor};
use super::engine::graph::{GemmThenConv, Sequence};
use super::engine::probes::Normals;
use super::{BackendInfo, UnitError};
use crate::op::conv2d::{Conv2d, ConvInputs};
use crate::op::gemm::{Gemm, GemmInputs};
use crate::op::graph::Graph;
use crate::op::{OpKind, Problem};
use hip::{Hip, Stream};
use runtime::HipRt;
use std::collections::BTreeMap;

/// Solver names the ROCm backend knows per op (for sweep validation; `solver#<id>` and
/// `hipblaslt#...` are accepted by pattern).
pub fn solver_names(op: OpKind) -> Vec<&'static str> {
    match op {
        OpKind::Conv2d => solvers::names(),
        OpKind::Gemm => gemm::NAMES.to_vec(),
        OpKind::Rng => vec!["hiprand-philox"],
        OpKind::Copy => vec!["hipMemcpy"],
        OpKind::Cast => vec!["hiprtc-cast"],
        OpKind::Graph => engine::graph::SOLVERS.to_vec(),
    }
}

/// Solver names the ROCm backend accepts by pattern: hipBLASLt solutions (`hipblaslt#..`) and
/// MIOpen solver ids (`solver#<id>`).
pub fn accepts_solver(op: OpKind, s: &str) -> bool {
    (op == OpKind::Gemm && s.starts_with("hipblaslt#"))
        || s.strip_prefix("solver#")
            .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
}

pub(crate) use libs::Lib;
pub use libs::{Dev, DevMem, DevRef, Kernels};
use libs::{Libs, need};

/// The ROCm backend: the engine over HIP with ROCm's libraries.
pub type RocmBackend = GpuBackend<Rocm>;

/// ROCm's libraries over the engine's device (the vendor half of the ROCm backend).
pub struct Rocm {
    libs: Libs,
    /// Set when the process maps ROCm files from more than one tree: every unit is an error.
    mix: Option<String>,
}

/// The PCI bus id of HIP device 0 ("0000:03:00.0"), which ROCm SMI looks devices up by.
fn pci_bus_id(hip: &Hip) -> Result<String, String> {
    let f = hip
        .api
        .hipDeviceGetPCIBusId
        .ok_or("the HIP runtime has no hipDeviceGetPCIBusId")?;
    let mut buf = [0 as std::ffi::c_char; 32];
    // SAFETY: the buffer's length is passed with it.
    let rc = unsafe { f(buf.as_mut_ptr(), buf.len() as std::ffi::c_int, 0) };
    if rc != 0 {
        return Err(format!(
            "hipDeviceGetPCIBusId returned {}",
            hip.error_name(rc)
        ));
    }
    Ok(engine::ffi::c_str_in(&buf))
}

/// The manifest's name for hipBLASLt's git revision (hipblasLtGetGitRevision).
pub const HIPBLASLT_GIT: &str = "hipBLASLt git revision";

/// ROCm-related variables recorded in the manifest (the ones that change what the stack does).
pub const ENV_VARS: &[&str] = &[
    "ROCM_PATH",
    "HSA_OVERRIDE_GFX_VERSION",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "HSA_ENABLE_SDMA",
    "HSA_XNACK",
    "HIP_FORCE_COARSE_GRAIN",
    "AMD_LOG_LEVEL",
    "HIPBLASLT_LOG_LEVEL",
    "HIPBLASLT_TUNING_OVERRIDE_FILE",
    "ROCBLAS_TENSILE_GEMM_OVERRIDE_PATH",
    "PYTORCH_TUNABLEOP_ENABLED",
    "PYTORCH_TUNABLEOP_TUNING",
    "PYTORCH_TUNABLEOP_FILENAME",
    "TORCH_BLAS_PREFER_HIPBLASLT",
    "MIOPEN_FIND_MODE",
    "MIOPEN_FIND_ENFORCE",
    "MIOPEN_USER_DB_PATH",
    "MIOPEN_CUSTOM_CACHE_DIR",
    "MIOPEN_DISABLE_CACHE",
    "MIOPEN_LOG_LEVEL",
    "MIOPEN_DEBUG_CONV_GEMM",
    "MIOPEN_DEBUG_CONV_DIRECT",
    "MIOPEN_DEBUG_CONV_FFT",
    "MIOPEN_DEBUG_CONV_WINOGRAD",
    "MIOPEN_DEBUG_CONV_IMPLICIT_GEMM",
    "MIOPEN_DEBUG_CONV_IMMED_FALLBACK",
    "MIOPEN_DEBUG_FIND_ONLY_SOLVER",
];

/// What `probe --backend rocm` and the manifest say, whether or not a device is present: which
/// libraries loaded from where, their versions, and the device (or why there is none).
pub fn probe() -> BackendInfo {
    let mut info = BackendInfo {
        backend: "rocm".into(),
        ..BackendInfo::default()
    };
    provenance::describe_tree(&mut info.versions);
    let hip = match Hip::load() {
        Ok(h) => h,
        Err(why) => {
            info.missing = Some(why);
            return info;
        }
    };
    // Kept loaded until the check below has seen what they mapped.
    let libs = Libs::load(&hip);
    describe_stack(&hip, &libs, &mut info.versions);
    provenance::record_check(&mut info, libs.miopen.is_ok());
    drop(libs);
    match init_device(&hip) {
        Ok(count) => {
            for d in 0..count {
                let f = hip::device_facts(&hip, d);
                info.devices.push(format!("{} ({})", f.name, f.arch));
                if d == 0 {
                    describe_device(f, &mut info.versions);
                }
            }
            info.available = true;
        }
        Err(why) => info.missing = Some(why),
    }
    info
}

/// Versions of the runtime and of every library (or why it is missing), and the ROCm-related
/// environment.
fn describe_stack(hip: &Hip, libs: &Libs, v: &mut BTreeMap<String, String>) {
    let (a, b, c) = hip.version;
    v.insert("HIP runtime".into(), format!("{a}.{b}.{c} ({})", hip.path));
    let mut dv = 0;
    // SAFETY: out-pointer to a live int.
    if unsafe { (hip.api.hipDriverGetVersion)(&mut dv) } == 0 {
        let (a, b, c) = loader::hip_version(dv);
        v.insert("HIP driver".into(), format!("{a}.{b}.{c}"));
    }
    fn line<T>(
        lib: &Lib<T>,
        version: impl Fn(&T) -> Option<String>,
        path: impl Fn(&T) -> &str,
    ) -> String {
        match lib {
            Ok(l) => format!("{} ({})", version(l).unwrap_or_default(), path(l)),
            Err(why) => why.clone(),
        }
    }
    let rows = [
        ("hipRTC", line(&libs.hiprtc, |l| l.version(), |l| &l.path)),
        ("MIOpen", line(&libs.miopen, |l| l.version(), |l| &l.path)),
        (
            "hipBLASLt",
            line(
                &libs.hipblaslt,
                |l| Some(gemm::hipblaslt_version(l)),
                |l| &l.path,
            ),
        ),
        ("rocBLAS", line(&libs.rocblas, |l| l.version(), |l| &l.path)),
        (
            "hipRAND (rocRAND version)",
            line(&libs.hiprand, |l| l.version(), |l| &l.path),
        ),
    ];
    for (name, text) in rows {
        v.insert(name.to_string(), text);
    }
    // The `Git Version` a hipBLASLt override file must carry (`rocsweep tune`).
    if let Some(git) = libs.hipblaslt.as_ref().ok().and_then(|l| l.git.clone()) {
        v.insert(HIPBLASLT_GIT.to_string(), git);
    }
    for var in ENV_VARS {
        if let Ok(val) = std::env::var(var) {
            v.insert(format!("env {var}"), val);
        }
    }
}

/// The first device's attributes and gfx name.
fn describe_device(f: hip::DeviceFacts, v: &mut BTreeMap<String, String>) {
    for (k, val) in f.attrs {
        v.insert(k.to_string(), val);
    }
    v.insert("gcnArchName".into(), f.arch);
}

/// hipInit and the device count; an error names the runtime's own code.
fn init_device(hip: &Hip) -> Result<i32, String> {
    let (a, b, c) = hip.version;
    let no_gpu = |call: &str, rc| {
        format!(
            "no AMD GPU is present: {call} returned {} (HIP runtime {a}.{b}.{c} loaded from {})",
            hip.error_name(rc),
            hip.path
        )
    };
    // SAFETY: plain calls with valid arguments.
    let rc = unsafe { (hip.api.hipInit)(0) };
    if rc != 0 {
        return Err(no_gpu("hipInit", rc));
    }
    let mut count = 0;
    // SAFETY: out-pointer to a live int.
    let rc = unsafe { (hip.api.hipGetDeviceCount)(&mut count) };
    if rc != 0 || count <= 0 {
        return Err(no_gpu(
            "hipGetDeviceCount",
            if rc == 0 { hip::ERROR_NO_DEVICE } else { rc },
        ));
    }
    Ok(count)
}

/// hipRTC's `--offload-arch` value: the bare target (gfx1010), not the feature suffix
/// (gfx1010:xnack-). Empty when the runtime gave no gfx name: hipRTC then compiles for the
/// current device itself, where `--offload-arch=unknown` would fail.
fn offload_arch(gcn_arch_name: &str) -> String {
    let bare = gcn_arch_name.split(':').next().unwrap_or_default();
    if bare.starts_with("gfx") {
        bare.to_string()
    } else {
        String::new()
    }
}

/// Why the offline half of `selftest` did not pass.
#[derive(Debug)]
pub enum CompileCheckError {
    /// The HIP runtime or hipRTC is not installed here: nothing was checked.
    Missing(String),
    /// hipRTC refused the source, or its code object is not what the backend needs.
    Failed(String),
}

/// The offline half of `selftest`: loads the HIP runtime and hipRTC the way a worker does (no
/// hipInit, so no GPU is needed), compiles the kernels for `arch` and checks the code object.
/// Returns a one-line description of what passed.
pub fn compile_check(arch: &str) -> Result<String, CompileCheckError> {
    let hip = Hip::load().map_err(CompileCheckError::Missing)?;
    let rtc = hiprtc::Hiprtc::load(&hip).map_err(CompileCheckError::Missing)?;
    let failed = |e: UnitError| CompileCheckError::Failed(e.to_string());
    let (_, checked) =
        runtime::compile_checked(&rtc, arch, &engine::kernels::program()).map_err(failed)?;
    runtime::compile_checked(&rtc, arch, &engine::timer::program()).map_err(failed)?;
    let (a, b, c) = hip.version;
    Ok(format!(
        "{} bytes, {} kernels + the timing kernel, bf16 path {}, hipRTC of HIP {a}.{b}.{c} ({})",
        checked.bytes,
        checked.kernels,
        checked.bf16_path.as_deref().unwrap_or("unknown"),
        rtc.path
    ))
}

impl RocmBackend {
    pub fn open() -> Result<RocmBackend, String> {
        let (rocm, dev, info, smi) = Rocm::open()?;
        let monitor = smi.map(|s| (s, crate::backend::telemetry::SMI_READS));
        Ok(GpuBackend::new(rocm, dev, info, monitor))
    }
}

impl Rocm {
    /// The vendor half, the device, the info, and ROCm SMI (or why it did not open).
    #[allow(clippy::type_complexity)]
    fn open() -> Result<(Rocm, DevRef, BackendInfo, Result<smi::Smi, String>), String> {
        let hip = Hip::load()?;
        let count = init_device(&hip)?;
        // SAFETY: device 0 exists (count > 0).
        let rc = unsafe { (hip.api.hipSetDevice)(0) };
        if rc != 0 {
            return Err(format!("hipSetDevice(0) returned {}", hip.error_name(rc)));
        }
        let stream = Stream::new(&hip).map_err(|e| e.to_string())?;
        let mut libs = Libs::load(&hip);
        let facts = hip::device_facts(&hip, 0);
        let arch = offload_arch(&facts.arch);
        kdb::gate(&mut libs, &arch);
        let mut info = BackendInfo {
            backend: "rocm".into(),
            available: true,
            devices: vec![format!("{} ({})", facts.name, facts.arch)],
            // Counted under HIP_VISIBLE_DEVICES, as the devices `--devices` picks from are.
            device_count: usize::try_from(count).unwrap_or(0),
            solver_ids: solvers::ids(),
            ..BackendInfo::default()
        };
        provenance::describe_tree(&mut info.versions);
        describe_stack(&hip, &libs, &mut info.versions);
        describe_device(facts, &mut info.versions);
        let smi = pci_bus_id(&hip).and_then(|id| smi::Smi::open(&id));
        // After every library (ROCm SMI too) is in: what is mapped now is what the units run on.
        let mix = provenance::record_check(&mut info, libs.miopen.is_ok());
        let dev = Dev::new(HipRt {
            hip,
            stream,
            rtc: libs.hiprtc.as_ref().ok().cloned(),
            arch,
        });
        Ok((Rocm { libs, mix }, dev, info, smi))
    }

    fn miopen(&self) -> Result<miopen::MiopenRef, UnitError> {
        need(&self.libs.miopen, "miopen")
    }
}

impl Vendor for Rocm {
    type Rt = HipRt;
    const NAME: &'static str = "rocm";
    const REFERENCE: &'static str = "gpu-direct-f64 (kernels/conv_ref.cu via hipRTC)";
    // hipRAND's f32 normals run where hipRTC did not load.
    const F32_NORMALS_NEED_KERNELS: bool = false;

    fn library_solvers(&self, dev: &DevRef, problem: &Problem) -> Option<Vec<String>> {
        let (lt, rb) = (&self.libs.hipblaslt, &self.libs.rocblas);
        match problem {
            Problem::Conv2d(p) => Some(
                self.miopen()
                    .and_then(|m| conv::enumerate(dev, &m, p))
                    .unwrap_or_else(|_| vec![solvers::FIND.to_string()]),
            ),
            Problem::Gemm(p) => Some(gemm::enumerate(dev, lt, rb, p)),
            _ => None,
        }
    }

    fn names(op: OpKind) -> Vec<&'static str> {
        solver_names(op)
    }

    fn usable(&self) -> Result<(), UnitError> {
        match &self.mix {
            Some(why) => Err(UnitError::library("rocm", "MIXED_ROCM_TREES", why.clone())),
            None => Ok(()),
        }
    }

    fn compiler(&self) -> Result<(), UnitError> {
        need(&self.libs.hiprtc, "hiprtc").map(|_| ())
    }

    fn conv(&mut self, dev: &DevRef, u: Unit<'_, Conv2d, ConvInputs>) -> Made {
        conv::prepare(dev, &self.miopen()?, u.p, u.solver, u.i, u.phases)
    }

    fn gemm(&mut self, dev: &DevRef, u: Unit<'_, Gemm, GemmInputs>) -> Made {
        let (lt, rb) = (&self.libs.hipblaslt, &self.libs.rocblas);
        gemm::prepare(dev, lt, rb, u.p, u.solver, u.i, u.phases)
    }

    fn rng_library(&self) -> Result<(), UnitError> {
        need(&self.libs.hiprand, "hiprand").map(|_| ())
    }

    fn normals(&mut self, dev: &DevRef, seed: u64) -> Result<Box<dyn Normals>, UnitError> {
        let r = need(&self.libs.hiprand, "hiprand")?;
        Ok(Box::new(hiprand::Generator::new(&r, seed, dev.stream.raw)?))
    }

    fn graph_libraries(&self) -> Result<(), UnitError> {
        self.miopen().map(|_| ())
    }

    /// hipBLASLt's or rocBLAS's GEMM (as `default` picks), then MIOpen's first listed
    /// convolution.
    fn sequence(&mut self, dev: &DevRef, p: &Graph) -> Result<Box<dyn Sequence<HipRt>>, UnitError> {
        let miopen = self.miopen()?;
        let (lt, rb) = (&self.libs.hipblaslt, &self.libs.rocblas);
        Ok(Box::new(GemmThenConv {
            gemm: gemm::GemmCall::new(dev, lt, rb, &p.gemm())?,
            conv: conv::ConvCall::first_listed(dev, &miopen, &p.conv())?,
        }))
    }
}

#[cfg(test)]
mod arch_tests {
    use super::offload_arch;

    #[test]
    fn hiprtc_gets_the_bare_target_or_nothing() {
        assert_eq!(offload_arch("gfx1010:xnack-"), "gfx1010");
        assert_eq!(offload_arch("gfx90a:sramecc+:xnack-"), "gfx90a");
        assert_eq!(offload_arch("gfx1151"), "gfx1151");
        // An unreadable gfx name: no --offload-arch (hipRTC compiles for the current device).
        assert_eq!(offload_arch("unknown"), "");
        assert_eq!(offload_arch(""), "");
    }
}

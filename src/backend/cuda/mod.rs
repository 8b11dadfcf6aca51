//! The CUDA backend: cuDNN, cuBLASLt, cuRAND, NVRTC and CUDA graphs through cudarc, every library
//! loaded at run time. The binary builds and its tests pass on a machine with no CUDA at all;
//! there `open` says which library is missing and `probe` reports it. Memory, timing, kernels,
//! graphs, the probes and the `Backend` itself are the GPU engine's (backend::engine), shared
//! with the ROCm backend.

mod buffers;
mod conv;
mod conv_engine;
mod cublas;
mod gemm;
mod graph;
pub(crate) mod graph_info;
pub mod nvml;
mod pad;
pub mod runtime;
mod simple;

use super::engine::Device;
use super::engine::backend::{GpuBackend, Made, Unit, Vendor};
use super::engine::graph::Sequence;
use super::engine::probes::Normals;
use super::{BackendInfo, UnitError};
use crate::op::conv2d::{Conv2d, ConvInputs};
use crate::op::gemm::{Gemm, GemmInputs};
use crate::op::graph::Graph;
use crate::op::{OpKind, Problem};
use buffers::Gpu;
use cudarc::driver::{CudaContext, sys as dsys};
use runtime::CudaRt;
use std::collections::BTreeMap;

pub use conv::solver_names as conv_solver_names;

/// Solver names the CUDA backend knows per op (for sweep validation).
pub fn solver_names(op: OpKind) -> &'static [&'static str] {
    match op {
        OpKind::Conv2d => conv::ALL_NAMES,
        OpKind::Gemm => gemm::NAMES,
        OpKind::Rng => &["curand-philox"],
        OpKind::Copy => &["cuMemcpy"],
        OpKind::Cast => &["nvrtc-cast"],
        OpKind::Graph => graph::SOLVERS,
    }
}

/// Solver names the CUDA backend accepts by pattern: cuBLASLt algorithms (`lt#<n>`) and cuDNN
/// engine configurations (`eng12-k3=2,k5=1`, `engine_heuristic`).
pub fn accepts_solver(op: OpKind, s: &str) -> bool {
    match op {
        OpKind::Gemm => s.starts_with("lt#"),
        OpKind::Conv2d => conv_engine::is_engine_solver(s),
        _ => false,
    }
}

/// Which shared libraries are present, by cudarc's own loader.
fn presence() -> Vec<(&'static str, bool)> {
    // SAFETY: these only try to dlopen candidate names and report success.
    unsafe {
        vec![
            ("libcuda (driver)", cudarc::driver::sys::is_culib_present()),
            ("libcudart", cudarc::runtime::sys::is_culib_present()),
            ("libcudnn", cudarc::cudnn::sys::is_culib_present()),
            ("libcublasLt", cudarc::cublaslt::sys::is_culib_present()),
            ("libcublas", cudarc::cublas::sys::is_culib_present()),
            ("libcurand", cudarc::curand::sys::is_culib_present()),
            ("libnvrtc", cudarc::nvrtc::sys::is_culib_present()),
        ]
    }
}

/// Whether the `presence` entry `name` is the library `lib`, by its whole file name: "libcublas"
/// is not "libcublasLt", and "libcuda (driver)" is "libcuda".
fn is_named(name: &str, lib: &str) -> bool {
    name.split(' ').next() == Some(lib)
}

/// The CUDA backend: the engine over CUDA's driver API with NVIDIA's libraries.
pub type CudaBackend = GpuBackend<Cuda>;

/// NVIDIA's libraries over the engine's device (the vendor half of the CUDA backend).
pub struct Cuda {
    /// Holds its own reference to the context, so it is freed while the context lives.
    _pad: pad::Pad,
    libs: Vec<(&'static str, bool)>,
}

/// The PCI bus id of the context's device ("0000:18:00.0"), which NVML looks devices up by.
fn pci_bus_id(gpu: &Gpu) -> Result<String, String> {
    let mut buf = [0 as std::ffi::c_char; 32];
    // SAFETY: the buffer's length is passed with it; the device is the context's own.
    let rc = unsafe {
        dsys::cuDeviceGetPCIBusId(buf.as_mut_ptr(), buf.len() as i32, gpu.ctx.cu_device())
    };
    if rc != dsys::CUresult::CUDA_SUCCESS {
        return Err(format!("cuDeviceGetPCIBusId returned {rc:?}"));
    }
    Ok(super::engine::ffi::c_str_in(&buf))
}

impl CudaBackend {
    pub fn open() -> Result<CudaBackend, String> {
        let (cuda, gpu, info) = Cuda::open()?;
        let nvml = pci_bus_id(&gpu).and_then(|id| nvml::Nvml::open(&id));
        let monitor = nvml.map(|n| (n, crate::backend::telemetry::NVML_READS));
        Ok(GpuBackend::new(cuda, gpu, info, monitor))
    }
}

impl Cuda {
    fn open() -> Result<(Cuda, Gpu, BackendInfo), String> {
        let libs = presence();
        if !libs[0].1 {
            return Err("the NVIDIA driver library (libcuda.so.1) was not found: no NVIDIA driver on this machine".into());
        }
        let ordinal = 0;
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| format!("cannot open CUDA device {ordinal}: {e:?}"))?;
        // One stream and raw pointers throughout: cudarc's cross-stream event tracking would
        // only add work to every timed call.
        // SAFETY: all work of this backend goes to the one stream created below.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx
            .new_stream()
            .map_err(|e| format!("cannot create a CUDA stream: {e:?}"))?;
        let gpu = Device::new(CudaRt { ctx, stream });
        let pad = pad::Pad::hold(&gpu.stream)?;
        let info = describe(&gpu, &libs);
        let cuda = Cuda { _pad: pad, libs };
        Ok((cuda, gpu, info))
    }

    fn need(&self, lib: &str) -> Result<(), UnitError> {
        match self.libs.iter().find(|(name, _)| is_named(name, lib)) {
            Some((_, true)) => Ok(()),
            _ => Err(UnitError::library(
                lib,
                "LIBRARY_NOT_FOUND",
                format!("{lib}.so was not found on the library path (LD_LIBRARY_PATH, ldconfig)"),
            )),
        }
    }
}

/// The backend's info: the driver's and libraries' versions, the device and its facts.
fn describe(gpu: &Gpu, libs: &[(&'static str, bool)]) -> BackendInfo {
    let mut versions = BTreeMap::new();
    library_versions(libs, &mut versions);
    let name = gpu
        .ctx
        .name()
        .unwrap_or_else(|_| "unknown CUDA device".into());
    let (major, minor) = gpu.ctx.compute_capability().unwrap_or((0, 0));
    device_facts(gpu, (major, minor), &mut versions);
    BackendInfo {
        backend: "cuda".into(),
        available: true,
        missing: None,
        devices: vec![format!("{name} (sm_{major}{minor})")],
        // Counted under CUDA_VISIBLE_DEVICES, as the devices `--devices` picks from are.
        device_count: CudaContext::device_count().map_or(0, |n| n.max(0) as usize),
        versions,
        ..BackendInfo::default()
    }
}

/// The versions of the driver and of each library present (queried only where it is), and
/// "not found" for each library absent.
fn library_versions(libs: &[(&'static str, bool)], versions: &mut BTreeMap<String, String>) {
    let mut dv = 0i32;
    // SAFETY: a plain query with an out-pointer to a live i32.
    if unsafe { dsys::cuDriverGetVersion(&mut dv) } == dsys::CUresult::CUDA_SUCCESS {
        versions.insert(
            "driver (CUDA API)".into(),
            format!("{}.{}", dv / 1000, (dv % 1000) / 10),
        );
    }
    if libs[1].1 {
        let mut v = 0i32;
        // SAFETY: a plain query with an out-pointer to a live i32.
        if unsafe { cudarc::runtime::sys::cudaRuntimeGetVersion(&mut v) }
            == cudarc::runtime::sys::cudaError::cudaSuccess
        {
            versions.insert(
                "runtime".into(),
                format!("{}.{}", v / 1000, (v % 1000) / 10),
            );
        }
    }
    if libs[2].1 {
        let v = cudarc::cudnn::result::get_version();
        versions.insert(
            "cudnn".into(),
            format!("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100),
        );
    }
    if libs[3].1 {
        // SAFETY: a plain query.
        let v = unsafe { cudarc::cublaslt::sys::cublasLtGetVersion() };
        versions.insert(
            "cublasLt".into(),
            format!("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100),
        );
    }
    for (name, present) in libs {
        if !present {
            versions.insert(name.to_string(), "not found".into());
        }
    }
}

/// The device's compute capability, memory, clocks, SM count, L2 size and memory bus width.
fn device_facts(gpu: &Gpu, (major, minor): (i32, i32), versions: &mut BTreeMap<String, String>) {
    let attr = |a: dsys::CUdevice_attribute| gpu.ctx.attribute(a).unwrap_or(-1);
    let mem = gpu.ctx.total_mem().unwrap_or(0);
    versions.insert("compute capability".into(), format!("{major}.{minor}"));
    versions.insert(
        "memory".into(),
        format!("{:.1} GiB", mem as f64 / (1u64 << 30) as f64),
    );
    // Clocks in MHz (the attributes are in kHz; "unknown" where the driver no longer reports them).
    let mhz = |a| match attr(a) {
        v if v > 0 => format!("{}", v / 1000),
        _ => "unknown".to_string(),
    };
    versions.insert(
        "SM clock MHz".into(),
        mhz(dsys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
    );
    versions.insert(
        "memory clock MHz".into(),
        mhz(dsys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
    );
    versions.insert(
        "SMs".into(),
        attr(dsys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).to_string(),
    );
    versions.insert(
        "L2 bytes".into(),
        attr(dsys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).to_string(),
    );
    versions.insert(
        "memory bus bits".into(),
        attr(dsys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH).to_string(),
    );
}

impl Vendor for Cuda {
    type Rt = CudaRt;
    const NAME: &'static str = "cuda";
    const REFERENCE: &'static str = "gpu-direct-f64 (kernels/conv_ref.cu)";
    // Compiled for f32 normals too: NVRTC ships with the toolkit cuRAND comes in.
    const F32_NORMALS_NEED_KERNELS: bool = true;

    fn library_solvers(&self, gpu: &Gpu, problem: &Problem) -> Option<Vec<String>> {
        match problem {
            Problem::Conv2d(p) => {
                let mut names: Vec<String> = conv::solver_names(p.direction)
                    .iter()
                    .map(|s| s.to_string())
                    .collect();
                if self.need("libcudnn").is_ok() {
                    names.extend(conv_engine::solver_list(gpu, p));
                }
                Some(names)
            }
            Problem::Gemm(p) => {
                let mut names =
                    gemm::enumerate(gpu, p).unwrap_or_else(|_| vec!["heuristic".into()]);
                if self.need("libcublas").is_ok() {
                    names.push(cublas::SOLVER.into());
                }
                Some(names)
            }
            _ => None,
        }
    }

    fn names(op: OpKind) -> Vec<&'static str> {
        solver_names(op).to_vec()
    }

    fn compiler(&self) -> Result<(), UnitError> {
        self.need("libnvrtc")
    }

    fn conv(&mut self, gpu: &Gpu, u: Unit<'_, Conv2d, ConvInputs>) -> Made {
        self.need("libcudnn")?;
        conv::prepare(gpu, u.p, u.solver, u.i, u.phases)
    }

    fn gemm(&mut self, gpu: &Gpu, u: Unit<'_, Gemm, GemmInputs>) -> Made {
        if u.solver == cublas::SOLVER {
            self.need("libcublas")?;
            return cublas::prepare(gpu, u.p, u.i, u.phases);
        }
        self.need("libcublasLt")?;
        gemm::prepare(gpu, u.p, u.solver, u.i, u.phases)
    }

    fn rng_library(&self) -> Result<(), UnitError> {
        self.need("libcurand")
    }

    fn normals(&mut self, gpu: &Gpu, seed: u64) -> Result<Box<dyn Normals>, UnitError> {
        Ok(Box::new(simple::Generator::new(gpu, seed)?))
    }

    fn graph_libraries(&self) -> Result<(), UnitError> {
        self.need("libcudnn")?;
        self.need("libcublasLt")
    }

    fn sequence(&mut self, gpu: &Gpu, p: &Graph) -> Result<Box<dyn Sequence<CudaRt>>, UnitError> {
        Ok(Box::new(graph::sequence(gpu, p)?))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_library_is_needed_by_its_whole_name() {
        assert!(super::is_named("libcublas", "libcublas"));
        assert!(!super::is_named("libcublasLt", "libcublas"));
        assert!(super::is_named("libcuda (driver)", "libcuda"));
        assert!(!super::is_named("libcudart", "libcuda"));
    }
}

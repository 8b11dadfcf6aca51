//! The `Backend` written once for the GPU backends: a backend is the engine plus its vendor
//! libraries (`Vendor`), as wgpu-hal's backends are its generic code plus an `Api`. The probes,
//! the graph op's bookkeeping, the device reference, the test kernel and the telemetry readings
//! (through the vendor's `telemetry::Monitor`) live here; the vendor makes the library calls
//! (convolution, GEMM, normals, the graph's GEMM and convolution).

use super::device::Dev;
use super::graph::{self, Sequence};
use super::kernels::Kernels;
use super::probes::{self, Normals};
use super::runtime::Runtime;
use crate::backend::telemetry::{Monitor, Reading};
use crate::backend::{Backend, BackendInfo, PhaseSink, Prepared, UnitError};
use crate::dtype::DType;
use crate::op::conv2d::{Conv2d, ConvInputs, Direction};
use crate::op::gemm::{Gemm, GemmInputs};
use crate::op::graph::Graph;
use crate::op::{Inputs, OpKind, Problem};
use crate::verify::Reference;

/// A GPU backend's vendor libraries over the engine's device: the calls they make, and what
/// they need loaded.
pub trait Vendor {
    type Rt: Runtime;
    /// The backend's name ("cuda", "rocm").
    const NAME: &'static str;
    /// How the device reference is labelled in the manifest.
    const REFERENCE: &'static str;
    /// Whether f32 normals go through the kernels too (they need the compiler then).
    const F32_NORMALS_NEED_KERNELS: bool;

    /// The solvers the libraries list for a convolution or GEMM (None: the op's fixed names).
    fn library_solvers(&self, dev: &Dev<Self::Rt>, problem: &Problem) -> Option<Vec<String>>;
    /// The solver names of an op that the libraries do not list.
    fn names(op: OpKind) -> Vec<&'static str>;
    /// Checked before every unit (an error fails the unit).
    fn usable(&self) -> Result<(), UnitError> {
        Ok(())
    }
    /// Whether the kernels' compiler loaded (an error names it).
    fn compiler(&self) -> Result<(), UnitError>;
    fn conv(&mut self, dev: &Dev<Self::Rt>, u: Unit<'_, Conv2d, ConvInputs>) -> Made;
    fn gemm(&mut self, dev: &Dev<Self::Rt>, u: Unit<'_, Gemm, GemmInputs>) -> Made;
    /// Whether the generator's library loaded (an error names it).
    fn rng_library(&self) -> Result<(), UnitError>;
    /// The vendor's normal generator, seeded and on the stream.
    fn normals(&mut self, dev: &Dev<Self::Rt>, seed: u64) -> Result<Box<dyn Normals>, UnitError>;
    /// Checked before a graph unit compiles its kernels (the libraries it needs).
    fn graph_libraries(&self) -> Result<(), UnitError>;
    /// The graph op's GEMM and convolution for `p`.
    fn sequence(
        &mut self,
        dev: &Dev<Self::Rt>,
        p: &Graph,
    ) -> Result<Box<dyn Sequence<Self::Rt>>, UnitError>;
}

/// One unit as `Backend::prepare` gets it: the problem, the solver, the inputs, the phases.
pub struct Unit<'a, P, I> {
    pub p: &'a P,
    pub solver: &'a str,
    pub i: &'a I,
    pub phases: &'a mut dyn PhaseSink,
}

/// A prepared unit, or why not.
pub type Made = Result<Box<dyn Prepared>, UnitError>;

impl Normals for Box<dyn Normals> {
    fn generate(
        &mut self,
        out: super::runtime::Ptr,
        n: usize,
        mean: f32,
        std: f32,
    ) -> Result<(), UnitError> {
        (**self).generate(out, n, mean, std)
    }
}

impl<R: Runtime> Sequence<R> for Box<dyn Sequence<R>> {
    fn launch(&mut self, b: &graph::Buffers<R>) -> Result<(), UnitError> {
        (**self).launch(b)
    }
}

/// A GPU backend: the engine over a vendor.
pub struct GpuBackend<V: Vendor> {
    vendor: V,
    dev: Dev<V::Rt>,
    info: BackendInfo,
    /// Clock and temperature readings (none where the vendor's library did not open).
    monitor: Option<Box<dyn Monitor>>,
    /// The project's kernels, compiled on first use.
    kernels: Option<Kernels<V::Rt>>,
}

impl<V: Vendor> GpuBackend<V> {
    /// The backend over `vendor`; `monitor` is the vendor's management library with what it
    /// reads (for the manifest's `telemetry` line), or why it did not open.
    pub fn new<M: Monitor + 'static>(
        vendor: V,
        dev: Dev<V::Rt>,
        mut info: BackendInfo,
        monitor: Result<(M, &str), String>,
    ) -> GpuBackend<V> {
        let (line, monitor) = match monitor {
            Ok((m, what)) => (what.to_string(), Some(Box::new(m) as Box<dyn Monitor>)),
            Err(why) => (format!("none ({why})"), None),
        };
        info.versions.insert("telemetry".into(), line);
        GpuBackend {
            vendor,
            dev,
            info,
            monitor,
            kernels: None,
        }
    }

    fn kernels(&mut self) -> Result<Kernels<V::Rt>, UnitError> {
        self.vendor.compiler()?;
        if let Some(k) = &self.kernels {
            return Ok(k.clone());
        }
        let k = Kernels::compile(&self.dev.rt)?;
        self.kernels = Some(k.clone());
        Ok(k)
    }
}

impl<V: Vendor> Backend for GpuBackend<V> {
    fn name(&self) -> &'static str {
        V::NAME
    }

    fn telemetry(&mut self) -> Reading {
        self.monitor.as_ref().map(|m| m.read()).unwrap_or_default()
    }

    fn info(&self) -> BackendInfo {
        self.info.clone()
    }

    fn solvers(&self, problem: &Problem) -> Vec<String> {
        self.vendor
            .library_solvers(&self.dev, problem)
            .unwrap_or_else(|| {
                V::names(problem.kind())
                    .iter()
                    .map(|s| s.to_string())
                    .collect()
            })
    }

    fn prepare(
        &mut self,
        problem: &Problem,
        solver: &str,
        inputs: &Inputs,
        phases: &mut dyn PhaseSink,
    ) -> Made {
        self.vendor.usable()?;
        let dev = self.dev.clone();
        match (problem, inputs) {
            (Problem::Conv2d(p), Inputs::Conv2d(i)) => {
                let u = Unit {
                    p,
                    solver,
                    i,
                    phases,
                };
                self.vendor.conv(&dev, u)
            }
            (Problem::Gemm(p), Inputs::Gemm(i)) => {
                let u = Unit {
                    p,
                    solver,
                    i,
                    phases,
                };
                self.vendor.gemm(&dev, u)
            }
            (Problem::Rng(p), Inputs::Rng { seed }) => {
                self.vendor.rng_library()?;
                let k = if V::F32_NORMALS_NEED_KERNELS || p.dtype != DType::F32 {
                    Some(self.kernels()?)
                } else {
                    None
                };
                let gen_ = self.vendor.normals(&dev, *seed)?;
                probes::prepare_rng(&dev, gen_, k, p, phases)
            }
            (Problem::Copy(p), _) if p.mmap => Err(UnitError::Unsupported(
                crate::op::copy::MMAP_TORCH_ONLY.into(),
            )),
            (Problem::Copy(p), _) if p.unsupported().is_some() => {
                Err(UnitError::Unsupported(p.unsupported().unwrap_or_default()))
            }
            (Problem::Copy(p), Inputs::Copy(src)) => probes::prepare_copy(&dev, p, src, phases),
            (Problem::Cast(p), Inputs::Cast(src)) => {
                phases.phase("compile");
                let k = self.kernels()?;
                probes::prepare_cast(&dev, k, p, src, phases)
            }
            (Problem::Graph(p), Inputs::Graph(i)) => {
                let capture = graph::captures(V::NAME, solver)?;
                self.vendor.graph_libraries()?;
                phases.phase("compile");
                let k = self.kernels()?;
                let seq = self.vendor.sequence(&dev, p)?;
                graph::prepare(&dev, seq, k, p, capture, i, phases)
            }
            _ => Err(UnitError::Library {
                library: "rocsweep".into(),
                code: "INPUT_MISMATCH".into(),
                message: "inputs do not belong to this problem".into(),
            }),
        }
    }

    fn device_reference(
        &mut self,
        problem: &Problem,
        inputs: &Inputs,
    ) -> Option<Result<(Reference, String), UnitError>> {
        let (Problem::Conv2d(p), Inputs::Conv2d(i)) = (problem, inputs) else {
            return None;
        };
        if p.direction != Direction::Fwd {
            return None;
        }
        let run = |k: Kernels<V::Rt>| {
            let v = k.conv_fwd_ref(p, &i.a, &i.b)?;
            Ok((Reference::Values(v), V::REFERENCE.to_string()))
        };
        Some(self.kernels().and_then(run))
    }

    fn compiles_kernels(&self) -> bool {
        self.vendor.compiler().is_ok()
    }

    fn test_never_ending_kernel(&mut self) -> Result<(), UnitError> {
        self.kernels()?.spin_forever()
    }
}

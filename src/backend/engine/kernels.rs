//! The project's own kernels (kernels/): one source that NVRTC and hipRTC both compile (a small
//! prelude hides the differences), loaded once per worker and launched on the runtime's stream.

use super::mem::DevMem;
use super::runtime::{Program, Ptr, Runtime};
use crate::backend::UnitError;
use crate::dtype::DType;
use crate::op::conv2d::{Conv2d, Layout};
use crate::tensor::HostData;
use std::ffi::{c_int, c_void};
use std::rc::Rc;

const PRELUDE: &str = include_str!("../../../kernels/prelude.h");
const CAST: &str = include_str!("../../../kernels/cast.cu");
const CONV_REF: &str = include_str!("../../../kernels/conv_ref.cu");

/// A loaded module, unloaded on drop.
pub struct Module<R: Runtime> {
    rt: Rc<R>,
    raw: Ptr,
}

impl<R: Runtime> Module<R> {
    pub fn compile(rt: &Rc<R>, program: &Program) -> Result<Module<R>, UnitError> {
        let image = rt.compile(program)?;
        Ok(Module {
            rt: rt.clone(),
            raw: rt.load_module(&image)?,
        })
    }

    pub fn function(&self, name: &str) -> Result<Ptr, UnitError> {
        // SAFETY: a live module.
        unsafe { self.rt.function(self.raw, name) }
    }
}

impl<R: Runtime> Drop for Module<R> {
    fn drop(&mut self) {
        // SAFETY: loaded in `compile`, unloaded once.
        unsafe { self.rt.unload_module(self.raw) };
    }
}

pub fn name(d: DType) -> &'static str {
    match d {
        DType::F16 => "f16",
        DType::Bf16 => "bf16",
        _ => "f32",
    }
}

fn cast_name(from: DType, to: DType) -> String {
    format!("cast_{}_{}", name(from), name(to))
}

fn relu_name(t: DType) -> String {
    format!("relu_{}", name(t))
}

fn conv_ref_name(t: DType) -> String {
    format!("conv_fwd_ref_{}", name(t))
}

const SPIN: &str = "spin_forever";

/// The kernels' program. The prelude is pasted in rather than #included: NVRTC sees one
/// self-contained source, and a hipRTC program may include only the headers given to
/// hiprtcCreateProgram.
pub fn program() -> Program {
    const TYPES: [DType; 3] = [DType::F32, DType::F16, DType::Bf16];
    let mut kernels = Vec::new();
    for from in TYPES {
        kernels.extend(TYPES.iter().map(|&to| cast_name(from, to)));
    }
    for t in TYPES {
        kernels.push(relu_name(t));
        kernels.push(conv_ref_name(t));
    }
    kernels.push(SPIN.to_string());
    Program {
        name: "rocsweep_kernels",
        what: "the kernels",
        source: format!("{PRELUDE}\n{CAST}\n{CONV_REF}"),
        kernels,
    }
}

/// The compiled kernels, shared by every unit of a worker.
pub struct Kernels<R: Runtime> {
    module: Rc<Module<R>>,
}

impl<R: Runtime> Clone for Kernels<R> {
    fn clone(&self) -> Self {
        Kernels {
            module: self.module.clone(),
        }
    }
}

impl<R: Runtime> Kernels<R> {
    pub fn compile(rt: &Rc<R>) -> Result<Kernels<R>, UnitError> {
        Ok(Kernels {
            module: Rc::new(Module::compile(rt, &program())?),
        })
    }

    /// Launches `kernel` over `n` threads with the given argument addresses.
    fn launch(&self, kernel: &str, n: usize, args: &mut [*mut c_void]) -> Result<(), UnitError> {
        let f = self.module.function(kernel)?;
        let blocks = n.div_ceil(R::BLOCK as usize).max(1);
        let grid = u32::try_from(blocks).map_err(|_| {
            UnitError::Unsupported(format!("{n} elements exceed one kernel launch's grid"))
        })?;
        // SAFETY: `args` holds one pointer per kernel parameter, each to a live value of the
        // parameter's type, for the duration of the call.
        unsafe { self.module.rt.launch(f, grid, R::BLOCK, args, kernel) }
    }

    /// out[i] = convert(in[i]) for `n` elements (round to nearest even).
    pub fn cast(
        &self,
        from: DType,
        to: DType,
        input: Ptr,
        output: Ptr,
        n: usize,
    ) -> Result<(), UnitError> {
        let (mut i, mut o, mut len) = (input, output, n);
        let mut args = [
            (&mut i as *mut Ptr).cast(),
            (&mut o as *mut Ptr).cast(),
            (&mut len as *mut usize).cast(),
        ];
        self.launch(&cast_name(from, to), n, &mut args)
    }

    /// ReLU in place over `n` elements.
    pub fn relu(&self, dtype: DType, x: Ptr, n: usize) -> Result<(), UnitError> {
        let (mut p, mut len) = (x, n);
        let mut args = [(&mut p as *mut Ptr).cast(), (&mut len as *mut usize).cast()];
        self.launch(&relu_name(dtype), n, &mut args)
    }

    /// The direct f64 forward convolution used as the reference for large problems.
    pub fn conv_fwd_ref(
        &self,
        p: &Conv2d,
        x: &HostData,
        w: &HostData,
    ) -> Result<Vec<f64>, UnitError> {
        let rt = &self.module.rt;
        let g = &p.geom;
        let xd = DevMem::upload(rt, x.le_bytes())?;
        let wd = DevMem::upload(rt, w.le_bytes())?;
        let total = p.output_len();
        let yd = DevMem::zeroed(rt, total * 8)?;
        let too_big = || UnitError::Unsupported("a dimension exceeds the kernel's int".into());
        let mut ints: Vec<c_int> = [
            g.n,
            g.c_in,
            g.c_out,
            g.h,
            g.w,
            g.kh,
            g.kw,
            g.pad_h,
            g.pad_w,
            g.stride_h,
            g.stride_w,
            g.dil_h,
            g.dil_w,
            g.groups,
            g.out_h(),
            g.out_w(),
            usize::from(p.layout == Layout::Nhwc),
        ]
        .iter()
        .map(|&v| c_int::try_from(v).map_err(|_| too_big()))
        .collect::<Result<_, _>>()?;
        let (mut xp, mut wp, mut yp) = (xd.ptr, wd.ptr, yd.ptr);
        let mut args: Vec<*mut c_void> = vec![
            (&mut xp as *mut Ptr).cast(),
            (&mut wp as *mut Ptr).cast(),
            (&mut yp as *mut Ptr).cast(),
        ];
        args.extend(ints.iter_mut().map(|v| (v as *mut c_int).cast::<c_void>()));
        self.launch(&conv_ref_name(p.dtype), total, &mut args)?;
        let bytes = yd.read()?;
        Ok(bytes
            .chunks_exact(8)
            .take(total)
            .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect())
    }

    /// TEST-ONLY: a kernel that never ends; waits for it (the watchdog kills the worker).
    pub fn spin_forever(&self) -> Result<(), UnitError> {
        let rt = &self.module.rt;
        let flag = DevMem::zeroed(rt, 4)?;
        let mut p = flag.ptr;
        let mut args = [(&mut p as *mut Ptr).cast()];
        self.launch(SPIN, 1, &mut args)?;
        rt.sync()
    }
}

//! The kernels in kernels/ compiled once per worker by hipRTC for the device's gfx target (the
//! same source files NVRTC compiles for the CUDA backend), and their launches.

use super::DevRef;
use super::code_object::{self, Checked};
use super::hip::{DevMem, Module, Ptr};
use super::hiprtc::Hiprtc;
use crate::backend::UnitError;
use crate::dtype::DType;
use crate::op::conv2d::{Conv2d, Layout};
use crate::tensor::HostData;
use std::ffi::{c_int, c_void};
use std::rc::Rc;

const PRELUDE: &str = include_str!("../../../kernels/prelude.h");
const CAST: &str = include_str!("../../../kernels/cast.cu");
const CONV_REF: &str = include_str!("../../../kernels/conv_ref.cu");

#[derive(Clone)]
pub struct Kernels {
    module: Rc<Module>,
}

pub fn name(d: DType) -> &'static str {
    match d {
        DType::F16 => "f16",
        DType::Bf16 => "bf16",
        _ => "f32",
    }
}

const BLOCK: u32 = 256;

/// The one source hipRTC compiles. The prelude is pasted in rather than #included: a hipRTC
/// program may include only the headers given to hiprtcCreateProgram.
pub fn source() -> String {
    format!("{PRELUDE}\n{CAST}\n{CONV_REF}")
}

pub const PROGRAM_NAME: &str = "rocsweep_kernels.hip";

/// Every kernel the backend looks up by name in the compiled module.
pub fn names() -> Vec<String> {
    const TYPES: [DType; 3] = [DType::F32, DType::F16, DType::Bf16];
    let mut v = Vec::new();
    for from in TYPES {
        v.extend(TYPES.iter().map(|&to| cast_name(from, to)));
    }
    for t in TYPES {
        v.push(relu_name(t));
        v.push(conv_ref_name(t));
    }
    v.push(SPIN.to_string());
    v
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

/// Compiles the kernels for `arch` ("gfx1030"; empty = the current device's) and checks the code
/// object before anyone loads it.
pub fn compile_checked(rtc: &Hiprtc, arch: &str) -> Result<(Vec<u8>, Checked), UnitError> {
    let code = rtc.compile(&source(), PROGRAM_NAME, arch)?;
    let checked = code_object::check(&code, arch, &names()).map_err(|why| UnitError::Library {
        library: "hiprtc".into(),
        code: "bad code object".into(),
        message: why,
    })?;
    Ok((code, checked))
}

impl Kernels {
    pub fn compile(dev: &DevRef, rtc: &Hiprtc, arch: &str) -> Result<Kernels, UnitError> {
        let (code, _) = compile_checked(rtc, arch)?;
        let module = Module::load(&dev.hip, &code)?;
        Ok(Kernels {
            module: Rc::new(module),
        })
    }

    /// Launches `kernel` over `n` threads with the given argument addresses.
    fn launch(
        &self,
        dev: &DevRef,
        kernel: &str,
        n: usize,
        args: &mut [*mut c_void],
    ) -> Result<(), UnitError> {
        let f = self.module.function(kernel)?;
        let blocks = n.div_ceil(BLOCK as usize).max(1);
        let grid = u32::try_from(blocks).map_err(|_| {
            UnitError::Unsupported(format!("{n} elements exceed one kernel launch's grid"))
        })?;
        let hip = &dev.hip;
        // SAFETY: `args` holds one pointer per kernel parameter, each to a live value of the
        // parameter's type, for the duration of the call.
        hip.check(
            unsafe {
                (hip.api.hipModuleLaunchKernel)(
                    f,
                    grid,
                    1,
                    1,
                    BLOCK,
                    1,
                    1,
                    0,
                    dev.stream.raw,
                    args.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            },
            &format!("hipModuleLaunchKernel({kernel})"),
        )
    }

    /// out[i] = convert(in[i]) for `n` elements (round to nearest even).
    pub fn cast(
        &self,
        dev: &DevRef,
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
        self.launch(dev, &cast_name(from, to), n, &mut args)
    }

    /// ReLU in place over `n` elements.
    pub fn relu(&self, dev: &DevRef, dtype: DType, x: Ptr, n: usize) -> Result<(), UnitError> {
        let (mut p, mut len) = (x, n);
        let mut args = [(&mut p as *mut Ptr).cast(), (&mut len as *mut usize).cast()];
        self.launch(dev, &relu_name(dtype), n, &mut args)
    }

    /// The direct f64 forward convolution used as the reference for large problems.
    pub fn conv_fwd_ref(
        &self,
        dev: &DevRef,
        p: &Conv2d,
        x: &HostData,
        w: &HostData,
    ) -> Result<Vec<f64>, UnitError> {
        let g = &p.geom;
        let xd = DevMem::upload(&dev.hip, &x.as_bytes())?;
        let wd = DevMem::upload(&dev.hip, &w.as_bytes())?;
        let total = p.output_len();
        let yd = DevMem::zeroed(&dev.hip, total * 8)?;
        let too_big = || UnitError::Unsupported("a dimension exceeds the kernel's int".into());
        let ints: Vec<c_int> = [
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
        let mut ints = ints;
        let (mut xp, mut wp, mut yp) = (xd.ptr, wd.ptr, yd.ptr);
        let mut args: Vec<*mut c_void> = vec![
            (&mut xp as *mut Ptr).cast(),
            (&mut wp as *mut Ptr).cast(),
            (&mut yp as *mut Ptr).cast(),
        ];
        args.extend(ints.iter_mut().map(|v| (v as *mut c_int).cast::<c_void>()));
        self.launch(dev, &conv_ref_name(p.dtype), total, &mut args)?;
        dev.stream.sync()?;
        let bytes = yd.read()?;
        Ok(bytes
            .chunks_exact(8)
            .take(total)
            .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect())
    }

    /// TEST-ONLY: a kernel that never ends; waits for it (the watchdog kills the worker).
    pub fn spin_forever(&self, dev: &DevRef) -> Result<(), UnitError> {
        let flag = DevMem::upload(&dev.hip, &[0u8; 4])?;
        let mut p = flag.ptr;
        let mut args = [(&mut p as *mut Ptr).cast()];
        self.launch(dev, SPIN, 1, &mut args)?;
        dev.stream.sync()
    }
}

//! Modules and kernels: code objects from the fake hipRTC, and CPU versions of the project's
//! kernels (kernels/*.cu) that hipModuleLaunchKernel runs with the arguments read through
//! `params`. Like the GPU kernels, they touch only the elements the grid covers (blockIdx.x *
//! blockDim.x + threadIdx.x), so a launch with too small a grid leaves the rest untouched.

use crate::Registry;
use crate::capture::{self, Op};
use crate::elem::{self, DType};
use crate::faults::{self, Action, Lib, V};
use crate::hip::{self, E};
use crate::hiprtc::CODE_MAGIC;
use crate::memory;
use std::ffi::{CStr, c_char, c_void};
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kernel {
    Cast(DType, DType),
    Relu(DType),
    Spin,
    ConvRef(DType),
}

fn dtype(s: &str) -> Option<DType> {
    Some(match s {
        "f32" => DType::F32,
        "f16" => DType::F16,
        "bf16" => DType::Bf16,
        _ => return None,
    })
}

fn implemented(name: &str) -> Option<Kernel> {
    if name == "spin_forever" {
        return Some(Kernel::Spin);
    }
    if let Some(t) = name.strip_prefix("relu_") {
        return dtype(t).map(Kernel::Relu);
    }
    if let Some(t) = name.strip_prefix("conv_fwd_ref_") {
        return dtype(t).map(Kernel::ConvRef);
    }
    let (from, to) = name.strip_prefix("cast_")?.split_once('_')?;
    Some(Kernel::Cast(dtype(from)?, dtype(to)?))
}

struct Function {
    module: usize,
    kernel: Kernel,
}

static MODULES: Registry<Vec<String>> = Registry::new();
static FUNCTIONS: Registry<Function> = Registry::new();

/// The kernel names in a fake code object, or None when `image` is not one.
unsafe fn parse_image(image: *const u8) -> Option<Vec<String>> {
    for (i, want) in CODE_MAGIC.iter().enumerate() {
        // SAFETY: bytes are read one at a time and stop at the first mismatch, so a shorter
        // NUL-terminated image is never read past its end.
        if unsafe { *image.add(i) } != *want {
            return None;
        }
    }
    // SAFETY: a fake code object is NUL-terminated after the magic.
    let body = unsafe { CStr::from_ptr(image.add(CODE_MAGIC.len()).cast()) };
    Some(
        body.to_string_lossy()
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with("arch="))
            .map(String::from)
            .collect(),
    )
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipModuleLoadData(module: *mut *mut c_void, image: *const c_void) -> i32 {
    hip::call(|| {
        if module.is_null() || image.is_null() {
            return E::InvalidValue as i32;
        }
        // SAFETY: the caller passes a code object.
        match unsafe { parse_image(image.cast()) } {
            // SAFETY: module checked non-null.
            Some(names) => {
                unsafe { crate::create(&MODULES, module, names) };
                0
            }
            None => E::InvalidImage as i32,
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipModuleGetFunction(
    function: *mut *mut c_void,
    module: *mut c_void,
    name: *const c_char,
) -> i32 {
    hip::call(|| {
        // SAFETY: a NUL-terminated name (the C contract).
        let (Some(name), false) = (unsafe { crate::text(name) }, function.is_null()) else {
            return E::InvalidValue as i32;
        };
        let Some(names) = MODULES.get(module as usize) else {
            return E::InvalidHandle as i32;
        };
        match implemented(&name).filter(|_| names.contains(&name)) {
            Some(kernel) => {
                let f = Function {
                    module: module as usize,
                    kernel,
                };
                // SAFETY: function checked non-null.
                unsafe { crate::create(&FUNCTIONS, function, f) };
                0
            }
            None => E::NotFound as i32,
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipModuleUnload(module: *mut c_void) -> i32 {
    hip::call(|| match MODULES.remove(module as usize) {
        Some(_) => 0,
        None => E::InvalidHandle as i32,
    })
}

/// The i-th kernel argument, read through `params[i]`.
unsafe fn arg<T: Copy>(params: *mut *mut c_void, i: usize) -> Option<T> {
    // SAFETY: the caller passes one pointer per kernel parameter (the C contract).
    unsafe { crate::get((*params.add(i)).cast::<T>().cast_const()) }
}

unsafe fn op_for(kernel: Kernel, params: *mut *mut c_void, threads: usize) -> Result<Op, i32> {
    let bad = E::IllegalAddress as i32;
    // SAFETY (whole function): reads the kernel's arguments from `params`.
    unsafe {
        match kernel {
            Kernel::Cast(from, to) => {
                let (Some(src), Some(dst), Some(n)) = (
                    arg::<usize>(params, 0),
                    arg::<usize>(params, 1),
                    arg::<usize>(params, 2),
                ) else {
                    return Err(E::InvalidValue as i32);
                };
                let keys = [
                    ("from", V::S(from.name())),
                    ("to", V::S(to.name())),
                    ("n", V::N(n as i64)),
                ];
                let action = faults::check(Lib::Cast, None, &keys, |_| true);
                match action {
                    Some(Action::Error) => return Err(E::LaunchFailure as i32),
                    Some(Action::NotSupported) => return Err(E::NotSupported as i32),
                    _ => {}
                }
                let count = n.min(threads);
                Ok(Arc::new(move || {
                    if !memory::check(src, count * from.size())
                        || !memory::check(dst, count * to.size())
                    {
                        return bad;
                    }
                    if let Some(a) = action {
                        faults::trap(a);
                    }
                    for i in 0..count {
                        let v = match action {
                            Some(Action::Zeros) => 0.0,
                            Some(Action::Nan) => f32::NAN,
                            _ => elem::load(src, from, i),
                        };
                        elem::store_f32(dst, to, i, v);
                    }
                    0
                }))
            }
            Kernel::Relu(t) => {
                let (Some(x), Some(n)) = (arg::<usize>(params, 0), arg::<usize>(params, 1)) else {
                    return Err(E::InvalidValue as i32);
                };
                let count = n.min(threads);
                Ok(Arc::new(move || {
                    if !memory::check(x, count * t.size()) {
                        return bad;
                    }
                    for i in 0..count {
                        let v = elem::load(x, t, i);
                        elem::store_f32(x, t, i, if v > 0.0 { v } else { 0.0 });
                    }
                    0
                }))
            }
            Kernel::Spin => {
                let Some(flag) = arg::<usize>(params, 0) else {
                    return Err(E::InvalidValue as i32);
                };
                Ok(Arc::new(move || {
                    if !memory::check(flag, 4) {
                        return bad;
                    }
                    while std::ptr::read_volatile(flag as *const i32) == 0 {
                        std::hint::spin_loop();
                    }
                    0
                }))
            }
            Kernel::ConvRef(t) => conv_ref(t, params, threads),
        }
    }
}

/// conv_fwd_ref_T(x, w, double* y, n, c_in, c_out, h, wd, kh, kw, pad_h, pad_w, stride_h,
/// stride_w, dil_h, dil_w, groups, oh, ow, nhwc): kernels/conv_ref.cu, f64 accumulation.
unsafe fn conv_ref(t: DType, params: *mut *mut c_void, threads: usize) -> Result<Op, i32> {
    let mut ints = [0i32; 17];
    // SAFETY: reads the kernel's 20 arguments.
    let (x, w, y) = unsafe {
        for (i, slot) in ints.iter_mut().enumerate() {
            *slot = arg::<i32>(params, 3 + i).ok_or(E::InvalidValue as i32)?;
        }
        match (
            arg::<usize>(params, 0),
            arg::<usize>(params, 1),
            arg::<usize>(params, 2),
        ) {
            (Some(x), Some(w), Some(y)) => (x, w, y),
            _ => return Err(E::InvalidValue as i32),
        }
    };
    if ints[..16].iter().any(|v| *v < 0) || ints[13] < 1 {
        return Err(E::InvalidValue as i32);
    }
    let u = ints.map(|v| v as usize);
    let [
        n,
        c_in,
        c_out,
        h,
        wd,
        kh,
        kw,
        ph,
        pw,
        sh,
        sw,
        dh,
        dw,
        groups,
        oh,
        ow,
        _,
    ] = u;
    let nhwc = ints[16] != 0;
    let (cpg, opg) = (c_in / groups, (c_out / groups).max(1));
    let total = n * c_out * oh * ow;
    let count = total.min(threads);
    let (xn, wn) = (n * c_in * h * wd, c_out * cpg * kh * kw);
    Ok(Arc::new(move || {
        if !memory::check(x, xn * t.size())
            || !memory::check(w, wn * t.size())
            || !memory::check(y, count * 8)
        {
            return E::IllegalAddress as i32;
        }
        let vals = elem::par_map(count, |i| {
            let (b, co, oy, ox) = if nhwc {
                let r = i / c_out;
                (r / ow / oh, i % c_out, (r / ow) % oh, r % ow)
            } else {
                let r = i / ow;
                (r / oh / c_out, (r / oh) % c_out, r % oh, i % ow)
            };
            let g = co / opg;
            let mut acc = 0.0f64;
            for c in 0..cpg {
                let ci = g * cpg + c;
                for ky in 0..kh {
                    let Some(iy) = (oy * sh + ky * dh).checked_sub(ph).filter(|v| *v < h) else {
                        continue;
                    };
                    for kx in 0..kw {
                        let Some(ix) = (ox * sw + kx * dw).checked_sub(pw).filter(|v| *v < wd)
                        else {
                            continue;
                        };
                        let (xi, wi) = if nhwc {
                            (
                                ((b * h + iy) * wd + ix) * c_in + ci,
                                ((co * kh + ky) * kw + kx) * cpg + c,
                            )
                        } else {
                            (
                                ((b * c_in + ci) * h + iy) * wd + ix,
                                ((co * cpg + c) * kh + ky) * kw + kx,
                            )
                        };
                        // SAFETY: indices inside the checked x and w extents.
                        let (xv, wv) = unsafe { (elem::load(x, t, xi), elem::load(w, t, wi)) };
                        acc += xv as f64 * wv as f64;
                    }
                }
            }
            acc
        });
        for (i, v) in vals.into_iter().enumerate() {
            // SAFETY: i < count, inside the checked y extent.
            unsafe { (y as *mut f64).add(i).write_unaligned(v) };
        }
        0
    }))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipModuleLaunchKernel(
    f: *mut c_void,
    gx: u32,
    gy: u32,
    gz: u32,
    bx: u32,
    by: u32,
    bz: u32,
    _shared: u32,
    stream: *mut c_void,
    params: *mut *mut c_void,
    _extra: *mut *mut c_void,
) -> i32 {
    hip::call(|| {
        let Some((module, kernel)) = FUNCTIONS.with(f as usize, |f| (f.module, f.kernel)) else {
            return E::InvalidHandle as i32;
        };
        if !MODULES.contains(module) {
            return E::InvalidHandle as i32;
        }
        let block = bx as u64 * by as u64 * bz as u64;
        if [gx, gy, gz, bx, by, bz].contains(&0) || block > 1024 {
            return E::InvalidConfiguration as i32;
        }
        if params.is_null() {
            // Arguments packed in `extra` (HIP_LAUNCH_PARAM_BUFFER_POINTER) are not supported.
            return E::InvalidValue as i32;
        }
        let threads = (gx as usize).saturating_mul(bx as usize);
        // SAFETY: params holds one pointer per kernel argument.
        match unsafe { op_for(kernel, params, threads) } {
            Ok(op) => capture::submit_hip(stream as usize, op),
            Err(e) => e,
        }
    })
}

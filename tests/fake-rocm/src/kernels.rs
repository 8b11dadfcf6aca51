//! Modules and kernels: code objects from the fake hipRTC, and CPU versions of the project's
//! kernels (kernels/*.cu) that hipModuleLaunchKernel runs with the arguments read through
//! `params`. Like the GPU kernels, they touch only the elements the grid covers (blockIdx.x *
//! blockDim.x + threadIdx.x), so a launch with too small a grid leaves the rest untouched.

use crate::Registry;
use crate::capture::{self, Op};
use crate::conv::{self, Shape, Tensor};
use crate::elem::{self, DType};
use crate::faults::{self, Action, Lib, V};
use crate::hip::{self, E};
use crate::memory;
use std::ffi::{c_char, c_void};
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kernel {
    Cast(DType, DType),
    Relu(DType),
    Spin,
    /// The launch-free timer's blocking kernel. The fake runs every launch when it is made, so
    /// nothing is queued behind it and there is no launch cost to hide: it returns at once.
    Block,
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
    if name == "rs_block" {
        return Some(Kernel::Block);
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

/// The kernel names in a code object, or None when `image` is not one. The C call passes no
/// size: as the real loader does, the ELF header says where the file ends (its section table).
unsafe fn parse_image(image: *const u8) -> Option<Vec<String>> {
    const HEADER: usize = 64;
    for (i, want) in b"\x7fELF\x02".iter().enumerate() {
        // SAFETY: one byte at a time, stopping at the first mismatch, so a shorter
        // NUL-terminated image is never read past its end.
        if unsafe { *image.add(i) } != *want {
            return None;
        }
    }
    // SAFETY: an ELF64 file starts with a 64-byte header, which the real hipModuleLoadData
    // reads the same way.
    let hdr = unsafe { std::slice::from_raw_parts(image, HEADER) };
    let u64_at = |o: usize| u64::from_le_bytes(hdr[o..o + 8].try_into().unwrap_or([0; 8]));
    let u16_at = |o: usize| u16::from_le_bytes([hdr[o], hdr[o + 1]]);
    let end = u64_at(0x28) + u64::from(u16_at(0x3a)) * u64::from(u16_at(0x3c));
    if !(HEADER as u64..1 << 26).contains(&end) {
        return None;
    }
    // SAFETY: the header says the image holds `end` bytes.
    let bytes = unsafe { std::slice::from_raw_parts(image, end as usize) };
    crate::hiprtc::kernels_in(bytes)
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
            Kernel::Block => {
                let Some(flag) = arg::<usize>(params, 0) else {
                    return Err(E::InvalidValue as i32);
                };
                Ok(Arc::new(
                    move || if memory::check(flag, 8) { 0 } else { bad },
                ))
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
/// stride_w, dil_h, dil_w, groups, oh, ow, nhwc): kernels/conv_ref.cu (f64 accumulation), computed
/// by the same direct loops as the fake MIOpen.
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
    ] = ints.map(|v| v as usize);
    if c_in % groups != 0 || c_out % groups != 0 || sh == 0 || sw == 0 {
        return Err(E::InvalidValue as i32);
    }
    let nhwc = ints[16] != 0;
    let s = Shape {
        n,
        c_in,
        c_out,
        h,
        w: wd,
        kh,
        kw,
        oh,
        ow,
        pad: [ph, pw],
        stride: [sh, sw],
        dil: [dh, dw],
        groups,
    };
    let cpg = c_in / groups;
    // The layouts the flag selects, as strided views of dense NCHW / KCRS.
    let (xt, wt) = if nhwc {
        (
            Tensor {
                dims: [n, c_in, h, wd],
                strides: [h * wd * c_in, 1, wd * c_in, c_in],
            },
            Tensor {
                dims: [c_out, cpg, kh, kw],
                strides: [kh * kw * cpg, 1, kw * cpg, cpg],
            },
        )
    } else {
        (
            Tensor::packed([n, c_in, h, wd]),
            Tensor::packed([c_out, cpg, kh, kw]),
        )
    };
    let count = (n * c_out * oh * ow).min(threads);
    Ok(Arc::new(move || {
        if !memory::check(x, xt.span() * t.size())
            || !memory::check(w, wt.span() * t.size())
            || !memory::check(y, count * 8)
        {
            return E::IllegalAddress as i32;
        }
        // SAFETY: extents checked just above.
        let vals = unsafe { conv::forward(&s, &conv::gather(x, t, &xt), &conv::gather(w, t, &wt)) };
        for i in 0..count {
            // The kernel's thread i writes output element i in the flag's layout.
            let dense = if nhwc {
                let (co, r) = (i % c_out, i / c_out);
                let (ox, oy, b) = (r % ow, r / ow % oh, r / (ow * oh));
                ((b * c_out + co) * oh + oy) * ow + ox
            } else {
                i
            };
            // SAFETY: i < count, inside the checked y extent.
            unsafe { (y as *mut f64).add(i).write_unaligned(vals[dense]) };
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

//! MIOpen: handles, tensor and convolution descriptors, versions, status strings and the solver
//! table. The convolution entry points are in miopen_conv.rs.

use crate::Registry;
use crate::capture;
use crate::conv::Tensor;
use crate::elem::DType;
use crate::model;
use std::ffi::{c_char, c_void};

pub const SUCCESS: i32 = 0;
pub const NOT_INITIALIZED: i32 = 1;
pub const BAD_PARM: i32 = 3;
pub const INTERNAL_ERROR: i32 = 5;
pub const NOT_IMPLEMENTED: i32 = 6;
pub const UNKNOWN_ERROR: i32 = 7;
pub const UNSUPPORTED_OP: i32 = 8;

const NAMES: &[&str] = &[
    "miopenStatusSuccess",
    "miopenStatusNotInitialized",
    "miopenStatusInvalidValue",
    "miopenStatusBadParm",
    "miopenStatusAllocFailed",
    "miopenStatusInternalError",
    "miopenStatusNotImplemented",
    "miopenStatusUnknownError",
    "miopenStatusUnsupportedOp",
    "miopenStatusGpuOperationsSkipped",
    "miopenStatusVersionMismatch",
];

#[derive(Clone, Copy)]
pub struct Handle {
    pub stream: usize,
}

#[derive(Clone, Copy, Default)]
pub struct TensorDesc {
    pub dtype: Option<DType>,
    pub nd: usize,
    pub t: Option<Tensor>,
}

#[derive(Clone, Copy)]
pub struct ConvDesc {
    pub mode: i32,
    pub pad: [usize; 2],
    pub stride: [usize; 2],
    pub dil: [usize; 2],
    pub groups: usize,
}

pub static HANDLES: Registry<Handle> = Registry::new();
pub static TENSORS: Registry<TensorDesc> = Registry::new();
pub static CONVS: Registry<ConvDesc> = Registry::new();

/// Every MIOpen export: no panic escapes and the model must have loaded.
pub fn call(f: impl FnOnce() -> i32) -> i32 {
    crate::guard(INTERNAL_ERROR, || match model::get() {
        Ok(m) if m.device.count > 0 => f(),
        _ => NOT_INITIALIZED,
    })
}

fn ok_or(b: bool, err: i32) -> i32 {
    if b { SUCCESS } else { err }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenCreate(handle: *mut *mut c_void) -> i32 {
    // SAFETY: null is checked by create.
    call(|| {
        ok_or(
            unsafe { crate::create(&HANDLES, handle, Handle { stream: 0 }) },
            BAD_PARM,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenDestroy(handle: *mut c_void) -> i32 {
    call(|| ok_or(HANDLES.remove(handle as usize).is_some(), BAD_PARM))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenSetStream(handle: *mut c_void, stream: *mut c_void) -> i32 {
    call(|| {
        if !capture::stream_known(stream as usize) {
            return BAD_PARM;
        }
        let set = HANDLES.with(handle as usize, |h| h.stream = stream as usize);
        ok_or(set.is_some(), BAD_PARM)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenGetVersion(
    major: *mut usize,
    minor: *mut usize,
    patch: *mut usize,
) -> i32 {
    call(|| {
        let Ok(m) = model::get() else {
            return NOT_INITIALIZED;
        };
        let v = m.versions.miopen;
        // SAFETY: nulls are checked by put.
        let ok = unsafe {
            crate::put(major, v.major as usize)
                && crate::put(minor, v.minor as usize)
                && crate::put(patch, v.patch as usize)
        };
        ok_or(ok, BAD_PARM)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenGetErrorString(status: i32) -> *const c_char {
    crate::guard_str(|| {
        let name = usize::try_from(status)
            .ok()
            .and_then(|i| NAMES.get(i))
            .copied()
            .unwrap_or("Unknown miopenStatus_t");
        match model::problem() {
            Some(p) if status == NOT_INITIALIZED => crate::leak(format!("{name}: {p}")),
            _ => crate::leak(name.to_string()),
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenCreateTensorDescriptor(desc: *mut *mut c_void) -> i32 {
    // SAFETY: null is checked by create.
    call(|| {
        ok_or(
            unsafe { crate::create(&TENSORS, desc, TensorDesc::default()) },
            BAD_PARM,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenDestroyTensorDescriptor(desc: *mut c_void) -> i32 {
    call(|| ok_or(TENSORS.remove(desc as usize).is_some(), BAD_PARM))
}

pub fn dtype(v: i32) -> Option<DType> {
    match v {
        0 => Some(DType::F16),
        1 => Some(DType::F32),
        5 => Some(DType::Bf16),
        _ => None,
    }
}

fn set_tensor(desc: *mut c_void, dt: i32, dims: &[i32], strides: Option<&[i32]>) -> i32 {
    let Some(dtype) = dtype(dt) else {
        return BAD_PARM;
    };
    if dims.iter().any(|d| *d <= 0) || strides.is_some_and(|s| s.iter().any(|v| *v <= 0)) {
        return BAD_PARM;
    }
    let t = (dims.len() == 4).then(|| {
        let d = [0, 1, 2, 3].map(|i| dims[i] as usize);
        match strides {
            Some(s) => Tensor {
                dims: d,
                strides: [0, 1, 2, 3].map(|i| s[i] as usize),
            },
            None => Tensor::packed(d),
        }
    });
    let set = TENSORS.with(desc as usize, |td| {
        *td = TensorDesc {
            dtype: Some(dtype),
            nd: dims.len(),
            t,
        }
    });
    ok_or(set.is_some(), BAD_PARM)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenSet4dTensorDescriptor(
    desc: *mut c_void,
    dt: i32,
    n: i32,
    c: i32,
    h: i32,
    w: i32,
) -> i32 {
    call(|| set_tensor(desc, dt, &[n, c, h, w], None))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenSetTensorDescriptor(
    desc: *mut c_void,
    dt: i32,
    nb_dims: i32,
    dims: *const i32,
    strides: *const i32,
) -> i32 {
    call(|| {
        if !(1..=8).contains(&nb_dims) || dims.is_null() {
            return BAD_PARM;
        }
        let n = nb_dims as usize;
        // SAFETY: arrays of nb_dims ints (the C contract); strides may be null (packed).
        let d = unsafe { std::slice::from_raw_parts(dims, n) };
        let s = (!strides.is_null()).then(|| unsafe { std::slice::from_raw_parts(strides, n) });
        set_tensor(desc, dt, d, s)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenCreateConvolutionDescriptor(desc: *mut *mut c_void) -> i32 {
    let d = ConvDesc {
        mode: 0,
        pad: [0; 2],
        stride: [1; 2],
        dil: [1; 2],
        groups: 1,
    };
    // SAFETY: null is checked by create.
    call(|| ok_or(unsafe { crate::create(&CONVS, desc, d) }, BAD_PARM))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenDestroyConvolutionDescriptor(desc: *mut c_void) -> i32 {
    call(|| ok_or(CONVS.remove(desc as usize).is_some(), BAD_PARM))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenInitConvolutionDescriptor(
    desc: *mut c_void,
    mode: i32,
    pad_h: i32,
    pad_w: i32,
    stride_h: i32,
    stride_w: i32,
    dil_h: i32,
    dil_w: i32,
) -> i32 {
    call(|| {
        if !(0..=3).contains(&mode)
            || pad_h < 0
            || pad_w < 0
            || [stride_h, stride_w, dil_h, dil_w].iter().any(|v| *v < 1)
        {
            return BAD_PARM;
        }
        let set = CONVS.with(desc as usize, |d| {
            d.mode = mode;
            d.pad = [pad_h as usize, pad_w as usize];
            d.stride = [stride_h as usize, stride_w as usize];
            d.dil = [dil_h as usize, dil_w as usize];
        });
        ok_or(set.is_some(), BAD_PARM)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenSetConvolutionGroupCount(desc: *mut c_void, groups: i32) -> i32 {
    call(|| {
        if groups < 1 {
            return BAD_PARM;
        }
        ok_or(
            CONVS
                .with(desc as usize, |d| d.groups = groups as usize)
                .is_some(),
            BAD_PARM,
        )
    })
}

/// The algorithm a solver id implements (miopenConvAlgorithm_t), from ROCM-ABI.md's table.
pub fn known_algo(id: u64) -> Option<i32> {
    Some(match id {
        1 | 2 | 3 | 11 | 13 | 85 | 86 | 87 | 185 | 216 | 217 => 1,
        14 | 15 | 37 | 53 | 84 | 139 => 3,
        34 => 2,
        88 | 90 | 91 | 95 | 96 | 97 | 101 | 102 => 0,
        26 | 54 | 62 | 63 | 64 | 65 | 66 | 72 | 74 | 82 | 98 | 99 | 100 | 114 | 128 | 129 | 137
        | 155 | 156 => 5,
        _ => return None,
    })
}

/// Ids the table does not know count as Direct.
pub fn algo_of(id: u64) -> i32 {
    known_algo(id).unwrap_or(1)
}

/// MIOPEN_DEBUG_CONV_<ALGO>=0 (or off/no/false/disable[d]) removes an algorithm's solvers from
/// GetSolution and Find, as in real MIOpen.
pub fn algo_enabled(algo: i32) -> bool {
    let var = match algo {
        0 | 4 => "MIOPEN_DEBUG_CONV_GEMM",
        1 => "MIOPEN_DEBUG_CONV_DIRECT",
        2 => "MIOPEN_DEBUG_CONV_FFT",
        3 => "MIOPEN_DEBUG_CONV_WINOGRAD",
        _ => "MIOPEN_DEBUG_CONV_IMPLICIT_GEMM",
    };
    match std::env::var(var) {
        Ok(v) => !matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "0" | "off" | "no" | "false" | "disable" | "disabled"
        ),
        Err(_) => true,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenGetSolverIdConvAlgorithm(solver_id: u64, algo: *mut i32) -> i32 {
    call(|| {
        let listed = model::get().is_ok_and(|m| {
            [&m.miopen.fwd, &m.miopen.bwd_data, &m.miopen.bwd_weights]
                .iter()
                .any(|l| l.contains(&solver_id))
        });
        if known_algo(solver_id).is_none() && !listed {
            return BAD_PARM;
        }
        // SAFETY: null is checked by put.
        ok_or(unsafe { crate::put(algo, algo_of(solver_id)) }, BAD_PARM)
    })
}

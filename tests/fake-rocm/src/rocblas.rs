//! rocBLAS: handles, versions, status strings and rocblas_gemm_strided_batched_ex (the fallback
//! for GEMMs hipBLASLt does not support, as TORCH_BLAS_PREFER_HIPBLASLT=0 does).

use crate::Registry;
use crate::capture;
use crate::elem::{self, DType};
use crate::faults::{self, Action, Lib, V};
use crate::gemm::{Gemm, Mat};
use crate::model::{self, Model};
use std::ffi::{c_char, c_void};
use std::sync::Arc;

const SUCCESS: i32 = 0;
const INVALID_HANDLE: i32 = 1;
const NOT_IMPLEMENTED: i32 = 2;
const INVALID_POINTER: i32 = 3;
const INVALID_SIZE: i32 = 4;
const INTERNAL_ERROR: i32 = 6;
const INVALID_VALUE: i32 = 11;

const NAMES: &[&str] = &[
    "rocblas_status_success",
    "rocblas_status_invalid_handle",
    "rocblas_status_not_implemented",
    "rocblas_status_invalid_pointer",
    "rocblas_status_invalid_size",
    "rocblas_status_memory_error",
    "rocblas_status_internal_error",
    "rocblas_status_perf_degraded",
    "rocblas_status_size_query_mismatch",
    "rocblas_status_size_increased",
    "rocblas_status_size_unchanged",
    "rocblas_status_invalid_value",
    "rocblas_status_continue",
    "rocblas_status_check_numerics_fail",
    "rocblas_status_excluded_from_build",
    "rocblas_status_arch_mismatch",
];

#[derive(Clone, Copy)]
struct Handle {
    stream: usize,
}

static HANDLES: Registry<Handle> = Registry::new();

fn call(f: impl FnOnce(&'static Model) -> i32) -> i32 {
    crate::guard(INTERNAL_ERROR, || match model::get() {
        Ok(m) if m.device.count > 0 => f(m),
        _ => INTERNAL_ERROR,
    })
}

fn ok_or(b: bool, err: i32) -> i32 {
    if b { SUCCESS } else { err }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocblas_create_handle(handle: *mut *mut c_void) -> i32 {
    // SAFETY: null is checked by create.
    call(|_| {
        ok_or(
            unsafe { crate::create(&HANDLES, handle, Handle { stream: 0 }) },
            INVALID_POINTER,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocblas_destroy_handle(handle: *mut c_void) -> i32 {
    call(|_| ok_or(HANDLES.remove(handle as usize).is_some(), INVALID_HANDLE))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocblas_set_stream(handle: *mut c_void, stream: *mut c_void) -> i32 {
    call(|_| {
        if !capture::stream_known(stream as usize) {
            return INVALID_VALUE;
        }
        ok_or(
            HANDLES
                .with(handle as usize, |h| h.stream = stream as usize)
                .is_some(),
            INVALID_HANDLE,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocblas_get_version_string_size(len: *mut usize) -> i32 {
    // SAFETY: null is checked by put.
    call(|m| {
        ok_or(
            unsafe { crate::put(len, m.versions.rocblas.len() + 1) },
            INVALID_POINTER,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocblas_get_version_string(buf: *mut c_char, len: usize) -> i32 {
    call(|m| {
        if buf.is_null() {
            return INVALID_POINTER;
        }
        if len < m.versions.rocblas.len() + 1 {
            return INVALID_SIZE;
        }
        // SAFETY: the caller's buffer holds `len` bytes.
        unsafe { crate::write_text(buf, len, &m.versions.rocblas) };
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocblas_status_to_string(status: i32) -> *const c_char {
    crate::guard_str(|| {
        let name = usize::try_from(status)
            .ok()
            .and_then(|i| NAMES.get(i))
            .copied()
            .unwrap_or("Unrecognized status code");
        match model::problem() {
            Some(p) if status == INTERNAL_ERROR => crate::leak(format!("{name}: {p}")),
            _ => crate::leak(name.to_string()),
        }
    })
}

fn dtype(v: i32) -> Option<DType> {
    match v {
        150 => Some(DType::F16),
        151 => Some(DType::F32),
        168 => Some(DType::Bf16),
        _ => None,
    }
}

fn trans(v: i32) -> Option<bool> {
    match v {
        111 => Some(false),
        112 | 113 => Some(true),
        _ => None,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocblas_gemm_strided_batched_ex(
    handle: *mut c_void,
    trans_a: i32,
    trans_b: i32,
    m: i32,
    n: i32,
    k: i32,
    alpha: *const c_void,
    a: *const c_void,
    a_type: i32,
    lda: i32,
    stride_a: i64,
    b: *const c_void,
    b_type: i32,
    ldb: i32,
    stride_b: i64,
    beta: *const c_void,
    c: *const c_void,
    c_type: i32,
    ldc: i32,
    stride_c: i64,
    d: *mut c_void,
    d_type: i32,
    ldd: i32,
    stride_d: i64,
    batch_count: i32,
    compute_type: i32,
    _algo: i32,
    _solution_index: i32,
    _flags: u32,
) -> i32 {
    call(|_| {
        let Some(h) = HANDLES.get(handle as usize) else {
            return INVALID_HANDLE;
        };
        let (Some(ta), Some(tb)) = (trans(trans_a), trans(trans_b)) else {
            return INVALID_VALUE;
        };
        if m < 0 || n < 0 || k < 0 || batch_count < 0 {
            return INVALID_SIZE;
        }
        let (mu, nu, ku) = (m as usize, n as usize, k as usize);
        let (a_rows, a_cols) = if ta { (ku, mu) } else { (mu, ku) };
        let (b_rows, b_cols) = if tb { (nu, ku) } else { (ku, nu) };
        if lda < a_rows.max(1) as i32
            || ldb < b_rows.max(1) as i32
            || ldc < m.max(1)
            || ldd < m.max(1)
        {
            return INVALID_SIZE;
        }
        if [stride_a, stride_b, stride_c, stride_d]
            .iter()
            .any(|s| *s < 0)
        {
            return INVALID_SIZE;
        }
        if mu == 0 || nu == 0 || batch_count == 0 {
            return SUCCESS;
        }
        let (Some(at), Some(bt), Some(ct), Some(dt)) =
            (dtype(a_type), dtype(b_type), dtype(c_type), dtype(d_type))
        else {
            return NOT_IMPLEMENTED;
        };
        if compute_type != 151 || at != bt || ct != dt || (dt != at && dt != DType::F32) {
            return NOT_IMPLEMENTED;
        }
        if alpha.is_null() || beta.is_null() {
            return INVALID_POINTER;
        }
        // SAFETY: f32 compute takes float scalars (host pointer mode).
        let (al, be) = unsafe {
            (
                elem::load(alpha as usize, DType::F32, 0),
                elem::load(beta as usize, DType::F32, 0),
            )
        };
        // C is not read when beta is 0, so it may be null then.
        if a.is_null() || b.is_null() || d.is_null() || (c.is_null() && be != 0.0) {
            return INVALID_POINTER;
        }
        let mat = |ptr: usize, dt, rows, cols, ld: i32, stride: i64| Mat {
            ptr,
            dt,
            rows,
            cols,
            ld: ld as usize,
            stride: stride as usize,
        };
        let g = Gemm {
            trans_a: ta,
            trans_b: tb,
            m: mu,
            n: nu,
            k: ku,
            batch: batch_count as usize,
            a: mat(a as usize, at, a_rows, a_cols, lda, stride_a),
            b: mat(b as usize, bt, b_rows, b_cols, ldb, stride_b),
            c: mat(c as usize, ct, mu, nu, ldc, stride_c),
            d: mat(d as usize, dt, mu, nu, ldd, stride_d),
            alpha: al as f64,
            beta: be as f64,
        };
        let keys = [
            ("m", V::N(m as i64)),
            ("n", V::N(n as i64)),
            ("k", V::N(k as i64)),
            ("batch", V::N(batch_count as i64)),
            ("dtype", V::S(at.name())),
        ];
        let action = faults::check(Lib::Rocblas, None, &keys, |_| true);
        match action {
            Some(Action::NotSupported) => return NOT_IMPLEMENTED,
            Some(Action::Error) => return INTERNAL_ERROR,
            _ => {}
        }
        faults::ran(faults::Ran::Gemm);
        if !g.buffers_valid() {
            return INVALID_POINTER;
        }
        capture::submit(
            h.stream,
            Arc::new(move || {
                let fill = match action {
                    Some(Action::Zeros) => Some(elem::fill_value(true)),
                    Some(Action::Nan) => Some(elem::fill_value(false)),
                    Some(a) => {
                        faults::trap(a);
                        None
                    }
                    None => None,
                };
                if g.run(fill) {
                    SUCCESS
                } else {
                    INVALID_POINTER
                }
            }),
        )
    })
}

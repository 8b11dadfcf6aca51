//! rocBLAS: handles, versions and status strings; its GEMMs are in rocblas_gemm.rs.

use crate::Registry;
use crate::capture;
use crate::elem::DType;
use crate::model::{self, Model};
use std::ffi::{c_char, c_void};

pub(crate) const SUCCESS: i32 = 0;
pub(crate) const INVALID_HANDLE: i32 = 1;
pub(crate) const NOT_IMPLEMENTED: i32 = 2;
pub(crate) const INVALID_POINTER: i32 = 3;
pub(crate) const INVALID_SIZE: i32 = 4;
pub(crate) const INTERNAL_ERROR: i32 = 6;
pub(crate) const INVALID_VALUE: i32 = 11;

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
pub(crate) struct Handle {
    pub(crate) stream: usize,
}

pub(crate) static HANDLES: Registry<Handle> = Registry::new();

pub(crate) fn call(f: impl FnOnce(&'static Model) -> i32) -> i32 {
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

pub(crate) fn dtype(v: i32) -> Option<DType> {
    match v {
        150 => Some(DType::F16),
        151 => Some(DType::F32),
        168 => Some(DType::Bf16),
        _ => None,
    }
}

pub(crate) fn trans(v: i32) -> Option<bool> {
    match v {
        111 => Some(false),
        112 | 113 => Some(true),
        _ => None,
    }
}

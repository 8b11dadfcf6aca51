//! rocBLAS: the GEMM library PyTorch falls back to when hipBLASLt says NOT_SUPPORTED (RDNA1 and
//! RDNA2 have no hipBLASLt kernels). Sonames follow rocBLAS's own major: 3 on ROCm 5.x, 4 on
//! 6.x, 5 on 7.x.

use super::hip::Ptr;
use super::loader::{self, Owned};
use crate::backend::UnitError;
use crate::backend::engine::ffi::{api, c_str, c_str_in};
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

pub const SONAMES: &[&str] = &[
    "librocblas.so.5",
    "librocblas.so.4",
    "librocblas.so.3",
    "librocblas.so",
];

pub const OP_N: c_int = 111;
pub const OP_T: c_int = 112;
pub const F16: c_int = 150;
pub const F32: c_int = 151;
pub const BF16: c_int = 168;
pub const ALGO_STANDARD: c_int = 0;
/// `rocblas_gemm_algo_solution_index`: run the solution `solution_index` names.
pub const ALGO_SOLUTION_INDEX: c_int = 1;
const NOT_IMPLEMENTED: c_int = 2;

api! {
    pub struct RocblasApi {
        required {
            rocblas_create_handle: fn(*mut Ptr) -> c_int;
            rocblas_destroy_handle: fn(Ptr) -> c_int;
            rocblas_set_stream: fn(Ptr, Ptr) -> c_int;
            rocblas_status_to_string: fn(c_int) -> *const c_char;
            rocblas_gemm_strided_batched_ex: fn(
                Ptr, c_int, c_int, c_int, c_int, c_int, *const c_void,
                *const c_void, c_int, c_int, i64,
                *const c_void, c_int, c_int, i64,
                *const c_void,
                *const c_void, c_int, c_int, i64,
                Ptr, c_int, c_int, i64,
                c_int, c_int, c_int, i32, u32,
            ) -> c_int;
        }
        optional {
            rocblas_get_version_string: fn(*mut c_char, usize) -> c_int;
            rocblas_gemm_ex: fn(
                Ptr, c_int, c_int, c_int, c_int, c_int, *const c_void,
                *const c_void, c_int, c_int,
                *const c_void, c_int, c_int,
                *const c_void,
                *const c_void, c_int, c_int,
                Ptr, c_int, c_int,
                c_int, c_int, i32, u32,
            ) -> c_int;
            rocblas_gemm_ex_get_solutions: fn(
                Ptr, c_int, c_int, c_int, c_int, c_int, *const c_void,
                *const c_void, c_int, c_int,
                *const c_void, c_int, c_int,
                *const c_void,
                *const c_void, c_int, c_int,
                Ptr, c_int, c_int,
                c_int, c_int, u32, *mut c_int, *mut c_int,
            ) -> c_int;
            rocblas_gemm_strided_batched_ex_get_solutions: fn(
                Ptr, c_int, c_int, c_int, c_int, c_int, *const c_void,
                *const c_void, c_int, c_int, i64,
                *const c_void, c_int, c_int, i64,
                *const c_void,
                *const c_void, c_int, c_int, i64,
                Ptr, c_int, c_int, i64,
                c_int, c_int, c_int, u32, *mut c_int, *mut c_int,
            ) -> c_int;
        }
    }
}

pub struct Rocblas {
    pub api: RocblasApi,
    pub path: String,
}

pub type RocblasRef = Arc<Rocblas>;

impl Rocblas {
    pub fn load() -> Result<RocblasRef, String> {
        let l = loader::open(SONAMES).map_err(|e| format!("rocBLAS (librocblas) {e}"))?;
        let api = RocblasApi::load(l.lib).map_err(|e| format!("{}: {e}", l.path))?;
        Ok(Arc::new(Rocblas { api, path: l.path }))
    }

    pub fn version(&self) -> Option<String> {
        let f = self.api.rocblas_get_version_string?;
        let mut buf = [0 as c_char; 128];
        // SAFETY: the buffer and its size.
        (unsafe { f(buf.as_mut_ptr(), buf.len()) } == 0).then(|| c_str_in(&buf))
    }

    pub fn check(&self, rc: c_int, what: &str) -> Result<(), UnitError> {
        if rc == 0 {
            return Ok(());
        }
        // SAFETY: rocblas_status_to_string returns a static NUL-terminated string for any code.
        let name = unsafe { c_str((self.api.rocblas_status_to_string)(rc)) };
        if rc == NOT_IMPLEMENTED {
            return Err(UnitError::Unsupported(format!("{name} from {what}")));
        }
        Err(UnitError::library("rocblas", name, what))
    }
}

/// A rocBLAS handle bound to a stream.
pub type Handle = Owned<Rocblas>;

/// A rocBLAS handle on `stream`.
pub fn handle(lib: &RocblasRef, stream: Ptr) -> Result<Handle, UnitError> {
    let a = &lib.api;
    // SAFETY: out-pointer to a live handle.
    let create = |r| unsafe { (a.rocblas_create_handle)(r) };
    let check = |rc| lib.check(rc, "rocblas_create_handle");
    let h = Owned::make(lib, create, check, a.rocblas_destroy_handle)?;
    // SAFETY: live handle and stream.
    lib.check(
        unsafe { (a.rocblas_set_stream)(h.raw, stream) },
        "rocblas_set_stream",
    )?;
    Ok(h)
}

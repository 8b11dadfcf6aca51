//! hipBLASLt: raw symbols, statuses as Results, owning handles. The type enums changed in
//! hipBLASLt 0.6.0, shipped with ROCm 6.0 (hipDataType / hipblasComputeType_t replaced
//! hipblasDatatype_t / hipblasLtComputeType_t); `Enums` picks the set by the version of the
//! hipBLASLt actually loaded (its own hipblasLtGetVersion), which need not match the HIP
//! runtime's release when libraries from two releases are mixed.

use super::hip::Ptr;
use super::loader::{self, Owned};
use crate::backend::UnitError;
use crate::backend::engine::ffi::api;
use crate::dtype::DType;
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

pub const SONAMES: &[&str] = &["libhipblaslt.so.1", "libhipblaslt.so.0", "libhipblaslt.so"];

pub const STATUS_NOT_SUPPORTED: c_int = 7;
pub const OP_N: i32 = 111;
pub const OP_T: i32 = 112;
pub const DESC_TRANSA: c_int = 0;
pub const DESC_TRANSB: c_int = 1;
pub const PREF_MAX_WORKSPACE_BYTES: c_int = 1;

/// hipblasLtMatmulAlgo_t: 16 opaque bytes (the first int32 is the solution index) and the
/// maximum workspace.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Algo {
    pub data: [u8; 16],
    pub max_workspace_bytes: usize,
}

impl Algo {
    pub fn index(&self) -> i32 {
        i32::from_ne_bytes([self.data[0], self.data[1], self.data[2], self.data[3]])
    }
}

/// hipblasLtMatmulHeuristicResult_t (56 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct HeuristicResult {
    pub algo: Algo,
    pub workspace_size: usize,
    pub state: c_int,
    pub waves_count: f32,
    pub reserved: [c_int; 4],
}

type H = Ptr;

api! {
    pub struct HipblasltApi {
        required {
            hipblasLtCreate: fn(*mut H) -> c_int;
            hipblasLtDestroy: fn(H) -> c_int;
            hipblasLtMatmulDescCreate: fn(*mut H, c_int, c_int) -> c_int;
            hipblasLtMatmulDescDestroy: fn(H) -> c_int;
            hipblasLtMatmulDescSetAttribute: fn(H, c_int, *const c_void, usize) -> c_int;
            hipblasLtMatrixLayoutCreate: fn(*mut H, c_int, u64, u64, i64) -> c_int;
            hipblasLtMatrixLayoutDestroy: fn(H) -> c_int;
            hipblasLtMatrixLayoutSetAttribute: fn(H, c_int, *const c_void, usize) -> c_int;
            hipblasLtMatmulPreferenceCreate: fn(*mut H) -> c_int;
            hipblasLtMatmulPreferenceDestroy: fn(H) -> c_int;
            hipblasLtMatmulPreferenceSetAttribute: fn(H, c_int, *const c_void, usize) -> c_int;
            hipblasLtMatmulAlgoGetHeuristic: fn(H, H, H, H, H, H, H, c_int, *mut HeuristicResult, *mut c_int) -> c_int;
            hipblasLtMatmul: fn(
                H, H, *const c_void, *const c_void, H, *const c_void, H, *const c_void,
                *const c_void, H, Ptr, H, *const Algo, Ptr, usize, Ptr,
            ) -> c_int;
        }
        optional {
            hipblasLtGetVersion: fn(H, *mut c_int) -> c_int;
            hipblasLtGetGitRevision: fn(H, *mut c_char) -> c_int;
        }
    }
}

/// Enum values for one ROCm generation.
#[derive(Clone, Copy, Debug)]
pub struct Enums {
    pub f32: c_int,
    pub f16: c_int,
    pub bf16: c_int,
    pub compute_f32: c_int,
    pub compute_tf32: c_int,
}

/// Matrix-layout attributes, the same in every release from 5.7 (the header's TYPE member, 2,
/// only exists from 6.0 and is not used here).
pub const LAYOUT_BATCH_COUNT: c_int = 0;
pub const LAYOUT_STRIDED_BATCH_OFFSET: c_int = 1;

/// hipblasLtGetVersion's value of hipBLASLt 0.6.0 (major * 100000 + minor * 100 + patch), the
/// first with hipDataType and hipblasComputeType_t.
pub const FIRST_HIPDATATYPE_VERSION: c_int = 600;

impl Enums {
    /// The enum set of a hipBLASLt that reports `version`; without one (no version call, or it
    /// failed), the set of the HIP runtime's release.
    pub fn for_library(version: Option<c_int>, hip_major: i32) -> Enums {
        let new = match version {
            Some(v) => v >= FIRST_HIPDATATYPE_VERSION,
            None => hip_major >= 6,
        };
        if new {
            Enums {
                f32: 0,
                f16: 2,
                bf16: 14,
                compute_f32: 2,
                compute_tf32: 6,
            }
        } else {
            // hipBLASLt before 0.6 (ROCm 5.7): hipblasDatatype_t and hipblasLtComputeType_t.
            Enums {
                f32: 151,
                f16: 150,
                bf16: 168,
                compute_f32: 300,
                compute_tf32: 301,
            }
        }
    }

    pub fn data(&self, d: DType) -> c_int {
        match d {
            DType::F16 => self.f16,
            DType::Bf16 => self.bf16,
            _ => self.f32,
        }
    }
}

pub struct Hipblaslt {
    pub api: HipblasltApi,
    pub path: String,
    pub enums: Enums,
    /// hipblasLtGetVersion's value, where the library answered.
    pub version: Option<c_int>,
    /// hipblasLtGetGitRevision's answer: the `Git Version` its override file must carry.
    pub git: Option<String>,
}

pub type HipblasltRef = Arc<Hipblaslt>;

impl Hipblaslt {
    pub fn load(hip_version: (i32, i32, i32)) -> Result<HipblasltRef, String> {
        // Before ROCm 5.7 hipblasLtMatmulAlgo_t was 112 bytes (data[104]), not 24: the heuristic
        // results would overrun the buffers declared here.
        if hip_version < (5, 7, 0) {
            return Err(format!(
                "hipBLASLt (libhipblaslt) not used: HIP {}.{}.{} is older than ROCm 5.7, whose hipBLASLt structs this build knows",
                hip_version.0, hip_version.1, hip_version.2
            ));
        }
        let l = loader::open(SONAMES).map_err(|e| format!("hipBLASLt (libhipblaslt) {e}"))?;
        let api = HipblasltApi::load(l.lib).map_err(|e| format!("{}: {e}", l.path))?;
        let (version, git) = library_version(&api);
        Ok(Arc::new(Hipblaslt {
            enums: Enums::for_library(version, hip_version.0),
            api,
            path: l.path,
            version,
            git,
        }))
    }

    pub fn check(&self, rc: c_int, what: &str) -> Result<(), UnitError> {
        if rc == 0 {
            return Ok(());
        }
        let name = status_name(rc);
        if rc == STATUS_NOT_SUPPORTED {
            return Err(UnitError::Unsupported(format!("{name} from {what}")));
        }
        Err(UnitError::library("hipblaslt", name, what))
    }
}

/// hipblasLtGetVersion and hipblasLtGetGitRevision through a handle of their own (the calls
/// need one).
fn library_version(api: &HipblasltApi) -> (Option<c_int>, Option<String>) {
    let mut h: H = std::ptr::null_mut();
    // SAFETY: an out-pointer to a live handle variable.
    if unsafe { (api.hipblasLtCreate)(&mut h) } != 0 || h.is_null() {
        return (None, None);
    }
    let version = api.hipblasLtGetVersion.and_then(|f| {
        let mut v: c_int = 0;
        // SAFETY: a live handle and an out-pointer to a live int.
        let rc = unsafe { f(h, &mut v) };
        (rc == 0 && v > 0).then_some(v)
    });
    let git = api.hipblasLtGetGitRevision.and_then(|f| {
        // hipBLASLt copies the revision with strcpy: a buffer far longer than a git hash.
        let mut buf = [0 as c_char; 256];
        // SAFETY: a live handle and a 256-byte buffer, NUL-terminated by the last byte.
        let rc = unsafe { f(h, buf.as_mut_ptr()) };
        buf[255] = 0;
        // SAFETY: NUL-terminated above.
        let s = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
        let s = s.to_string_lossy().trim().to_string();
        (rc == 0 && !s.is_empty()).then_some(s)
    });
    // SAFETY: created above, destroyed once.
    unsafe { (api.hipblasLtDestroy)(h) };
    (version, git)
}

pub fn status_name(rc: c_int) -> String {
    const NAMES: &[&str] = &[
        "HIPBLAS_STATUS_SUCCESS",
        "HIPBLAS_STATUS_NOT_INITIALIZED",
        "HIPBLAS_STATUS_ALLOC_FAILED",
        "HIPBLAS_STATUS_INVALID_VALUE",
        "HIPBLAS_STATUS_MAPPING_ERROR",
        "HIPBLAS_STATUS_EXECUTION_FAILED",
        "HIPBLAS_STATUS_INTERNAL_ERROR",
        "HIPBLAS_STATUS_NOT_SUPPORTED",
        "HIPBLAS_STATUS_ARCH_MISMATCH",
        "HIPBLAS_STATUS_HANDLE_IS_NULLPTR",
        "HIPBLAS_STATUS_INVALID_ENUM",
        "HIPBLAS_STATUS_UNKNOWN",
    ];
    usize::try_from(rc)
        .ok()
        .and_then(|i| NAMES.get(i))
        .map(|s| s.to_string())
        .unwrap_or_else(|| format!("HIPBLAS_STATUS#{rc}"))
}

/// An owned hipBLASLt object (handle, matmul descriptor, layout, preference).
pub type Obj = Owned<Hipblaslt>;

impl Obj {
    pub fn handle(lib: &HipblasltRef) -> Result<Obj, UnitError> {
        let a = &lib.api;
        // SAFETY: out-pointer to a live handle.
        let create = |r| unsafe { (a.hipblasLtCreate)(r) };
        Owned::make(
            lib,
            create,
            |rc| lib.check(rc, "hipblasLtCreate"),
            a.hipblasLtDestroy,
        )
    }

    pub fn matmul_desc(lib: &HipblasltRef, compute: c_int, scale: c_int) -> Result<Obj, UnitError> {
        let a = &lib.api;
        // SAFETY: out-pointer to a live handle.
        let create = |r| unsafe { (a.hipblasLtMatmulDescCreate)(r, compute, scale) };
        let check = |rc| lib.check(rc, "hipblasLtMatmulDescCreate");
        Owned::make(lib, create, check, a.hipblasLtMatmulDescDestroy)
    }

    pub fn layout(
        lib: &HipblasltRef,
        dtype: c_int,
        rows: u64,
        cols: u64,
        ld: i64,
    ) -> Result<Obj, UnitError> {
        let a = &lib.api;
        // SAFETY: out-pointer to a live handle.
        let create = |r| unsafe { (a.hipblasLtMatrixLayoutCreate)(r, dtype, rows, cols, ld) };
        let check = |rc| lib.check(rc, "hipblasLtMatrixLayoutCreate");
        Owned::make(lib, create, check, a.hipblasLtMatrixLayoutDestroy)
    }

    pub fn preference(lib: &HipblasltRef) -> Result<Obj, UnitError> {
        let a = &lib.api;
        // SAFETY: out-pointer to a live handle.
        let create = |r| unsafe { (a.hipblasLtMatmulPreferenceCreate)(r) };
        let check = |rc| lib.check(rc, "hipblasLtMatmulPreferenceCreate");
        Owned::make(lib, create, check, a.hipblasLtMatmulPreferenceDestroy)
    }

    /// Sets a plain-value attribute through `f` (one of the SetAttribute entry points).
    pub fn set<T>(
        &self,
        f: unsafe extern "C" fn(H, c_int, *const c_void, usize) -> c_int,
        attr: c_int,
        value: &T,
        what: &str,
    ) -> Result<(), UnitError> {
        // SAFETY: the value's address and exact size.
        self.lib.check(
            unsafe {
                f(
                    self.raw,
                    attr,
                    (value as *const T).cast(),
                    std::mem::size_of::<T>(),
                )
            },
            what,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_enum_set_follows_the_loaded_hipblaslt_not_the_hip_release() {
        // hipBLASLt 0.3 (ROCm 5.7) loaded beside a HIP 6 runtime keeps the old enums...
        assert_eq!(Enums::for_library(Some(300), 6).f32, 151);
        // ...and 0.6 (ROCm 6.0) beside HIP 5.7 has the new ones.
        assert_eq!(Enums::for_library(Some(600), 5).f32, 0);
        assert_eq!(Enums::for_library(Some(100_100), 7).bf16, 14);
        // No version call: the HIP release decides.
        assert_eq!(Enums::for_library(None, 5).compute_f32, 300);
        assert_eq!(Enums::for_library(None, 6).compute_f32, 2);
    }
}

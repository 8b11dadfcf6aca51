//! hipRAND: normal draws on the device (seed 000: randn_like giving zeros on gfx1151).

use super::hip::Ptr;
use super::loader::{self, Owned};
use crate::backend::UnitError;
use crate::backend::engine::ffi::api;
use std::ffi::c_int;
use std::sync::Arc;

pub const SONAMES: &[&str] = &["libhiprand.so.1", "libhiprand.so"];
pub const PHILOX4_32_10: c_int = 405;

api! {
    pub struct HiprandApi {
        required {
            hiprandCreateGenerator: fn(*mut Ptr, c_int) -> c_int;
            hiprandDestroyGenerator: fn(Ptr) -> c_int;
            hiprandSetPseudoRandomGeneratorSeed: fn(Ptr, u64) -> c_int;
            hiprandSetStream: fn(Ptr, Ptr) -> c_int;
            hiprandGenerateNormal: fn(Ptr, *mut f32, usize, f32, f32) -> c_int;
        }
        optional {
            hiprandGetVersion: fn(*mut c_int) -> c_int;
        }
    }
}

pub struct Hiprand {
    pub api: HiprandApi,
    pub path: String,
}

pub type HiprandRef = Arc<Hiprand>;

impl Hiprand {
    pub fn load() -> Result<HiprandRef, String> {
        let l = loader::open(SONAMES).map_err(|e| format!("hipRAND (libhiprand) {e}"))?;
        let api = HiprandApi::load(l.lib).map_err(|e| format!("{}: {e}", l.path))?;
        Ok(Arc::new(Hiprand { api, path: l.path }))
    }

    pub fn version(&self) -> Option<String> {
        let f = self.api.hiprandGetVersion?;
        let mut v = 0;
        // SAFETY: out-pointer to a live int.
        (unsafe { f(&mut v) } == 0)
            .then(|| format!("{}.{}.{}", v / 100_000, (v / 100) % 1000, v % 100))
    }

    pub fn check(&self, rc: c_int, what: &str) -> Result<(), UnitError> {
        if rc == 0 {
            return Ok(());
        }
        let name = match rc {
            100 => "HIPRAND_STATUS_VERSION_MISMATCH",
            101 => "HIPRAND_STATUS_NOT_INITIALIZED",
            102 => "HIPRAND_STATUS_ALLOCATION_FAILED",
            103 => "HIPRAND_STATUS_TYPE_ERROR",
            104 => "HIPRAND_STATUS_OUT_OF_RANGE",
            105 => "HIPRAND_STATUS_LENGTH_NOT_MULTIPLE",
            106 => "HIPRAND_STATUS_DOUBLE_PRECISION_REQUIRED",
            201 => "HIPRAND_STATUS_LAUNCH_FAILURE",
            202 => "HIPRAND_STATUS_PREEXISTING_FAILURE",
            203 => "HIPRAND_STATUS_INITIALIZATION_FAILED",
            204 => "HIPRAND_STATUS_ARCH_MISMATCH",
            999 => "HIPRAND_STATUS_INTERNAL_ERROR",
            1000 => "HIPRAND_STATUS_NOT_IMPLEMENTED",
            _ => "HIPRAND_STATUS_UNKNOWN",
        };
        Err(UnitError::library("hiprand", name, what))
    }
}

/// A Philox generator seeded and bound to a stream.
pub struct Generator(Owned<Hiprand>);

impl Generator {
    pub fn new(lib: &HiprandRef, seed: u64, stream: Ptr) -> Result<Generator, UnitError> {
        let a = &lib.api;
        // SAFETY: out-pointer to a live handle.
        let create = |r| unsafe { (a.hiprandCreateGenerator)(r, PHILOX4_32_10) };
        let check = |rc| lib.check(rc, "hiprandCreateGenerator(PHILOX4_32_10)");
        let g = Owned::make(lib, create, check, a.hiprandDestroyGenerator)?;
        // SAFETY: a live generator and stream.
        unsafe {
            lib.check(
                (a.hiprandSetPseudoRandomGeneratorSeed)(g.raw, seed),
                "hiprandSetPseudoRandomGeneratorSeed",
            )?;
            lib.check((a.hiprandSetStream)(g.raw, stream), "hiprandSetStream")?;
        }
        Ok(Generator(g))
    }
}

impl crate::backend::engine::probes::Normals for Generator {
    fn generate(&mut self, out: Ptr, n: usize, mean: f32, std: f32) -> Result<(), UnitError> {
        let (lib, raw) = (&self.0.lib, self.0.raw);
        // SAFETY: `out` holds n f32 values, n even (the engine's contract).
        lib.check(
            unsafe { (lib.api.hiprandGenerateNormal)(raw, out.cast(), n, mean, std) },
            "hiprandGenerateNormal",
        )
    }
}

//! Device memory held for a worker's whole life before its first unit, so that the units' buffers
//! land on other memory: a diagnostic for how much a unit's time depends on where its operands
//! lie (the physical pages and L2 slices behind them), which a fresh worker otherwise always
//! draws the same way. `ROCSWEEP_DEBUG_PAD_MIB` holds that many MiB through `cuMemAlloc`
//! (outside the stream's pool, whose addresses the units keep); `ROCSWEEP_DEBUG_PAD_POOL_MIB`
//! holds them from the stream's pool (the units' addresses move too). Unset or 0: nothing held.

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, result, sys as dsys};
use std::sync::Arc;

/// Outside the pool.
pub const ENV: &str = "ROCSWEEP_DEBUG_PAD_MIB";
/// From the stream's pool.
pub const ENV_POOL: &str = "ROCSWEEP_DEBUG_PAD_POOL_MIB";

/// What is held; freed with the backend.
#[derive(Default)]
pub struct Pad {
    sync: Option<(Arc<CudaContext>, dsys::CUdeviceptr)>,
    _pool: Option<CudaSlice<u8>>,
}

/// The MiB that variable `name`, set to `v`, asks for: 0 where unset; Err naming the variable
/// where it is not a whole number of MiB up to 1 TiB.
fn mib(name: &str, v: Option<std::ffi::OsString>) -> Result<usize, String> {
    let Some(v) = v else {
        return Ok(0);
    };
    v.to_str()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|&n| n <= 1 << 20)
        .ok_or_else(|| format!("{name}={v:?}: expected a whole number of MiB from 0 to 1048576"))
}

impl Pad {
    /// Allocates what the two variables ask for (after the context and stream exist).
    pub fn hold(stream: &Arc<CudaStream>) -> Result<Pad, String> {
        let wanted = |name| mib(name, std::env::var_os(name));
        let (sync_mib, pool_mib) = (wanted(ENV)?, wanted(ENV_POOL)?);
        let mut pad = Pad::default();
        if sync_mib > 0 {
            let ctx = stream.context().clone();
            let e = |e| format!("{ENV}={sync_mib}: cuMemAlloc failed: {e:?}");
            ctx.bind_to_thread().map_err(e)?;
            // SAFETY: the context is current on this thread; the pointer is freed once, in `drop`.
            let p = unsafe { result::malloc_sync(sync_mib << 20) }.map_err(e)?;
            pad.sync = Some((ctx, p));
        }
        if pool_mib > 0 {
            let s = stream
                .alloc_zeros::<u8>(pool_mib << 20)
                .map_err(|e| format!("{ENV_POOL}={pool_mib}: allocation failed: {e:?}"))?;
            pad._pool = Some(s);
        }
        Ok(pad)
    }
}

impl Drop for Pad {
    fn drop(&mut self) {
        if let Some((ctx, p)) = self.sync.take()
            && ctx.bind_to_thread().is_ok()
        {
            // SAFETY: allocated by malloc_sync in `hold` in this context, freed only here.
            let _ = unsafe { result::free_sync(p) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_checked_and_named() {
        let v = |s: &str| Some(std::ffi::OsString::from(s));
        assert_eq!(mib(ENV, v("64")), Ok(64));
        assert_eq!(mib(ENV, None), Ok(0));
        let e = mib(ENV, v("8GiB")).unwrap_err();
        assert!(e.contains("ROCSWEEP_DEBUG_PAD_MIB=\"8GiB\""), "{e}");
        assert!(e.contains("whole number of MiB"), "{e}");
        assert!(mib(ENV_POOL, v("2000000")).is_err());
    }
}

//! Launch-free device time on ROCm, as on CUDA (see `crate::timing`): the calls of one sample are
//! queued behind `rs_block` (kernels/timing.cu, compiled by hipRTC for the device), a kernel
//! spinning on a flag in host-mapped memory, released once everything is enqueued; the events
//! around the calls then measure the device alone. One call between two events is the per-call
//! figure. An event interval of zero or less (seen with MIOpen on gfx1151) is an error, never a
//! sample.

use super::Dev;
use super::hip::{Event, Module, Ptr};
use super::hiprtc::Hiprtc;
use crate::backend::UnitError;
use crate::timing::{Batch, Sample, calls_per_sample};
use std::ffi::{c_longlong, c_void};

const SRC: &str = include_str!("../../../kernels/timing.cu");

/// About two seconds at 2 GHz: far longer than enqueuing a sample takes.
const BUDGET_CYCLES: c_longlong = 4_000_000_000;

/// hipHostMallocMapped.
const HOST_MALLOC_MAPPED: u32 = 2;

pub struct Blocker {
    module: Module,
    host: Ptr,
    dev: Ptr,
}

/// The timing kernel compiled for `arch` and its code object checked (selftest runs this
/// without a GPU).
pub fn compile_checked(rtc: &Hiprtc, arch: &str) -> Result<Vec<u8>, UnitError> {
    let code = rtc.compile(SRC, "rocsweep_timing.hip", arch)?;
    super::code_object::check(&code, arch, &["rs_block".to_string()]).map_err(|why| {
        UnitError::Library {
            library: "hiprtc".into(),
            code: "bad code object".into(),
            message: format!("the timing kernel: {why}"),
        }
    })?;
    Ok(code)
}

impl Blocker {
    pub fn new(d: &Dev, rtc: &Hiprtc, arch: &str) -> Result<Blocker, UnitError> {
        let code = compile_checked(rtc, arch)?;
        let module = Module::load(&d.hip, &code)?;
        module.function("rs_block")?;
        let hip = &d.hip;
        let mut host: Ptr = std::ptr::null_mut();
        // SAFETY: out-pointer to a live pointer; 8 bytes of pinned memory mapped for the device.
        hip.check(
            unsafe { (hip.api.hipHostMalloc)(&mut host, 8, HOST_MALLOC_MAPPED) },
            "hipHostMalloc (timing flags)",
        )?;
        let mut b = Blocker {
            module,
            host,
            dev: host,
        };
        if let Some(f) = hip.api.hipHostGetDevicePointer {
            let mut dev: Ptr = std::ptr::null_mut();
            // SAFETY: `host` was allocated mapped just above.
            hip.check(
                unsafe { f(&mut dev, host, 0) },
                "hipHostGetDevicePointer (timing flags)",
            )?;
            b.dev = dev;
        }
        Ok(b)
    }

    fn set(&self, i: usize, v: u32) {
        // SAFETY: two u32 flags live at `host` for the Blocker's lifetime; the device reads them.
        unsafe { std::ptr::write_volatile(self.host.cast::<u32>().wrapping_add(i), v) };
    }

    fn get(&self, i: usize) -> u32 {
        // SAFETY: as in `set`.
        unsafe { std::ptr::read_volatile(self.host.cast::<u32>().wrapping_add(i)) }
    }

    /// Device seconds per call of `k` calls of `f` queued behind the blocking kernel.
    fn blocked(
        &self,
        d: &Dev,
        k: usize,
        f: &mut dyn FnMut() -> Result<(), UnitError>,
    ) -> Result<f64, UnitError> {
        self.set(0, 0);
        self.set(1, 0);
        let func = self.module.function("rs_block")?;
        let (mut flag, mut budget) = (self.dev, BUDGET_CYCLES);
        let mut args: [*mut c_void; 2] = [
            (&mut flag as *mut Ptr).cast(),
            (&mut budget as *mut c_longlong).cast(),
        ];
        let hip = &d.hip;
        // SAFETY: one pointer per kernel parameter, each to a live value of its type.
        hip.check(
            unsafe {
                (hip.api.hipModuleLaunchKernel)(
                    func,
                    1,
                    1,
                    1,
                    1,
                    1,
                    1,
                    0,
                    d.stream.raw,
                    args.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            },
            "hipModuleLaunchKernel(rs_block)",
        )?;
        // Released once the calls and the end event are enqueued (before waiting for the end
        // event, which the blocked stream would never reach), and whatever happened.
        let secs = events_then(d, || (0..k).try_for_each(|_| f()), || self.set(0, 1));
        self.set(0, 1);
        let secs = secs?;
        if self.get(1) != 0 {
            return Err(crate::timing::blocker_timed_out(k));
        }
        Ok(secs / k as f64)
    }
}

impl Drop for Blocker {
    fn drop(&mut self) {
        // SAFETY: allocated by hipHostMalloc in `new`, freed once (the module is unloaded by its
        // own drop).
        unsafe { (self.module.hip().api.hipHostFree)(self.host) };
    }
}

/// Seconds between two events around `f` on the device's stream, waiting for the second.
pub fn events(d: &Dev, f: impl FnOnce() -> Result<(), UnitError>) -> Result<f64, UnitError> {
    events_then(d, f, || {})
}

/// `events`, running `enqueued` once the end event is recorded and before waiting for it.
fn events_then(
    d: &Dev,
    f: impl FnOnce() -> Result<(), UnitError>,
    enqueued: impl FnOnce(),
) -> Result<f64, UnitError> {
    let hip = &d.hip;
    let start = Event::new(hip)?;
    let end = Event::new(hip)?;
    start.record(&d.stream)?;
    f()?;
    end.record(&d.stream)?;
    enqueued();
    let ms = end.elapsed_since(&start)?;
    if ms <= 0.0 || !ms.is_finite() {
        return Err(UnitError::Library {
            library: "hip".into(),
            code: "invalid elapsed time".into(),
            message: format!("hipEventElapsedTime gave an interval of {ms} ms"),
        });
    }
    Ok(f64::from(ms) / 1e3)
}

impl Dev {
    /// One sample of `f`: one call with its launch, then `calls_per_sample` calls launch-free.
    pub fn timed(
        &self,
        batch: Batch,
        mut f: impl FnMut() -> Result<(), UnitError>,
    ) -> Result<Sample, UnitError> {
        let call = events(self, &mut f)?;
        let mut slot = self.blocker.borrow_mut();
        if slot.is_none() {
            *slot = Some(match &self.rtc {
                Some(rtc) => Blocker::new(self, rtc, &self.arch),
                None => Err(UnitError::Unsupported(
                    "launch-free timing needs hipRTC, which did not load".into(),
                )),
            });
        }
        let blocker = match slot.as_ref() {
            Some(Ok(b)) => b,
            Some(Err(e)) => return Err(e.clone()),
            None => return Err(UnitError::Unsupported("no timer".into())),
        };
        let device = blocker.blocked(self, calls_per_sample(batch, call), &mut f)?;
        Ok(Sample { device, call })
    }

    /// One sample of a call that synchronizes with the host (a copy from pageable memory): both
    /// figures are one call between two events.
    pub fn timed_host_sync(
        &self,
        f: impl FnOnce() -> Result<(), UnitError>,
    ) -> Result<Sample, UnitError> {
        events(self, f).map(Sample::same)
    }
}

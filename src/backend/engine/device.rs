//! The worker's [`Device`]: the runtime and what the timer, the cold-sample flush and the
//! uploads keep between units.

use super::mem::DevMem;
use super::runtime::Runtime;
use super::timer::{Blocker, events, graphed};
use crate::backend::UnitError;
use crate::timing::{Batch, Method, Sample, calls_per_sample};
use std::cell::RefCell;
use std::rc::Rc;

/// A worker's device: the runtime (its one stream included) and what the timer keeps between
/// units. Dereferences to the runtime, so a backend reaches its own runtime's fields through it.
pub struct Device<R: Runtime> {
    pub rt: Rc<R>,
    /// The launch-free timer's blocking kernel, made on first use.
    pub(super) blocker: RefCell<Option<Result<super::timer::Blocker<R>, UnitError>>>,
    /// The cold-sample flush buffer (`flush_cache`), made on first use.
    pub(super) flush: RefCell<Option<DevMem<R>>>,
    /// The pinned buffer inputs are uploaded through, piece by piece (`super::mem::STAGE_BYTES`).
    pub(super) stage: RefCell<Option<super::mem::Pinned<R>>>,
}

/// The device as units hold it.
pub type Dev<R> = Rc<Device<R>>;

impl<R: Runtime> std::ops::Deref for Device<R> {
    type Target = R;
    fn deref(&self) -> &R {
        &self.rt
    }
}

impl<R: Runtime> Device<R> {
    pub fn new(rt: R) -> Dev<R> {
        Rc::new(Device {
            rt: Rc::new(rt),
            blocker: RefCell::new(None),
            flush: RefCell::new(None),
            stage: RefCell::new(None),
        })
    }

    /// Writes `bytes` (0: the runtime's default) of device memory before a cold sample,
    /// evicting the working set from the caches, and waits for it. The buffer is kept for the
    /// worker's next flush; a flush that cannot be made is skipped (the sample is then warm,
    /// which the row's numbers show, rather than an error).
    /// Writes `bytes` of device memory (0: the runtime's default), past the caches; whether
    /// it did.
    pub fn flush_cache(&self, bytes: u64) -> bool {
        let want = if bytes > 0 {
            bytes as usize
        } else {
            self.rt.default_flush_bytes()
        };
        if want == 0 {
            return false;
        }
        let mut slot = self.flush.borrow_mut();
        if slot.as_ref().is_none_or(|m| m.bytes < want) {
            *slot = None;
            *slot = DevMem::alloc(&self.rt, want).ok();
        }
        match slot.as_ref() {
            Some(m) => {
                // SAFETY: the buffer holds m.bytes bytes.
                let set = unsafe { self.rt.memset_async(m.ptr, m.bytes) };
                set.is_ok() && self.rt.sync().is_ok()
            }
            None => false,
        }
    }

    pub fn upload(&self, h: &crate::tensor::HostData) -> Result<super::mem::Tensor<R>, UnitError> {
        super::mem::Tensor::upload(&self.rt, h, &mut self.stage.borrow_mut())
    }

    pub fn zeros(
        &self,
        dtype: crate::dtype::DType,
        len: usize,
    ) -> Result<super::mem::Tensor<R>, UnitError> {
        super::mem::Tensor::zeros(&self.rt, dtype, len)
    }

    /// A workspace of `bytes` (none for zero).
    pub fn workspace(&self, bytes: usize) -> Result<Option<DevMem<R>>, UnitError> {
        (bytes > 0)
            .then(|| DevMem::alloc(&self.rt, bytes))
            .transpose()
    }
}

impl<R: Runtime> Device<R> {
    /// One sample of `f` (`timer`): one call with its launch, then `calls_per_sample` calls launch-free.
    pub fn timed(
        &self,
        batch: Batch,
        mut f: impl FnMut() -> Result<(), UnitError>,
    ) -> Result<Sample, UnitError> {
        let rt: &R = &self.rt;
        let call = events(rt, &mut f)?;
        let k = calls_per_sample(batch, call);
        if self.blocker.borrow().is_none() {
            let made = Blocker::new(&self.rt);
            *self.blocker.borrow_mut() = Some(made);
        }
        // A shared borrow for the sample: nothing the calls do can need the blocker mutably.
        let slot = self.blocker.borrow();
        let blocker = match slot.as_ref() {
            Some(Ok(b)) => b,
            Some(Err(e)) => return Err(e.clone()),
            None => return Err(UnitError::Unsupported("no launch-free timer".into())),
        };
        // A cold sample (one call after a cache flush) is not captured: it waits behind the
        // blocker as it is.
        if R::GRAPHED_TIMING
            && batch == Batch::Auto
            && let Some(device) = graphed(rt, blocker, k, &mut f)?
        {
            return Ok(Sample {
                device,
                call,
                method: Method::Graph,
            });
        }
        let device = blocker.blocked(rt, k, &mut f)?;
        Ok(Sample {
            device,
            call,
            method: Method::Held,
        })
    }

    /// One sample of a call that synchronizes with the host (a copy from pageable memory): it
    /// cannot wait behind the blocking kernel, so both figures are one call between two events.
    pub fn timed_host_sync(
        &self,
        f: impl FnOnce() -> Result<(), UnitError>,
    ) -> Result<Sample, UnitError> {
        events(&*self.rt, f).map(Sample::events)
    }
}

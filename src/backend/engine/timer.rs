//! Launch-free device time (see `crate::timing`), written once for every runtime. A sample's
//! calls are queued behind `rs_block` (kernels/timing.cu), a kernel spinning on a flag in
//! host-mapped memory, released once everything is enqueued (nvbench's method): the events
//! around the calls then measure the device alone, with no host launch cost. Where the runtime
//! times through graphs (`Runtime::GRAPHED_TIMING`, CUDA), the calls of one sample are first
//! captured into a graph, uploaded, and its one replay is queued behind `rs_block` instead: the
//! same measurement as PyTorch's CUDA-graph timing (`benches/peer/peer_times.py
//! --graph-protocol held`), with the graph's short gaps between kernels rather than a stream's.
//! One call between two events, with neither, is the per-call figure. An event interval of zero
//! or less (seen with MIOpen on gfx1151) is an error, never a sample.

use super::kernels::Module;
use super::mem::Pinned;
use super::runtime::{Program, Ptr, Runtime};
use crate::backend::UnitError;
use std::ffi::{c_longlong, c_void};
use std::rc::Rc;

const SRC: &str = include_str!("../../../kernels/timing.cu");

/// About two seconds at 2 GHz: far longer than enqueuing a sample takes.
const BUDGET_CYCLES: c_longlong = 4_000_000_000;

/// The timing kernel's program.
pub fn program() -> Program {
    Program {
        name: "rocsweep_timing",
        what: "the timing kernel",
        source: SRC.to_string(),
        kernels: vec!["rs_block".to_string()],
    }
}

/// The compiled blocking kernel and its two flags in host-mapped pinned memory.
pub struct Blocker<R: Runtime> {
    // Declared first: the function belongs to the module.
    func: Ptr,
    _module: Module<R>,
    flags: Pinned<R>,
    dev: Ptr,
}

impl<R: Runtime> Blocker<R> {
    pub fn new(rt: &Rc<R>) -> Result<Blocker<R>, UnitError> {
        let module = Module::compile(rt, &program())?;
        let func = module.function("rs_block")?;
        let flags = Pinned::alloc(rt, 8, true)?;
        // SAFETY: allocated mapped just above.
        let dev = unsafe { rt.mapped_device_ptr(flags.ptr) }?;
        Ok(Blocker {
            func,
            _module: module,
            flags,
            dev,
        })
    }

    fn set(&self, i: usize, v: u32) {
        // SAFETY: two u32 flags live in `flags` for the Blocker's lifetime; the device reads them.
        unsafe { std::ptr::write_volatile(self.flags.ptr.cast::<u32>().wrapping_add(i), v) };
    }

    fn get(&self, i: usize) -> u32 {
        // SAFETY: as in `set`.
        unsafe { std::ptr::read_volatile(self.flags.ptr.cast::<u32>().wrapping_add(i)) }
    }

    /// Device seconds per call of `k` calls of `f` queued behind the blocking kernel.
    pub(super) fn blocked(
        &self,
        rt: &R,
        k: usize,
        f: &mut dyn FnMut() -> Result<(), UnitError>,
    ) -> Result<f64, UnitError> {
        self.set(0, 0);
        self.set(1, 0);
        let (mut flag, mut budget) = (self.dev, BUDGET_CYCLES);
        let mut args: [*mut c_void; 2] = [
            (&mut flag as *mut Ptr).cast(),
            (&mut budget as *mut c_longlong).cast(),
        ];
        // SAFETY: one pointer per kernel parameter, each to a live value of its type.
        unsafe { rt.launch(self.func, 1, 1, &mut args, "rs_block") }?;
        // Released once the calls and the end event are enqueued (before waiting for the end
        // event, which the blocked stream would never reach), and whatever happened.
        let secs = events_then(rt, || (0..k).try_for_each(|_| f()), || self.set(0, 1));
        self.set(0, 1);
        let secs = secs?;
        if self.get(1) != 0 {
            return Err(blocker_timed_out(k));
        }
        Ok(secs / k as f64)
    }
}

/// An event destroyed on drop.
struct Event<'a, R: Runtime> {
    rt: &'a R,
    raw: Ptr,
}

impl<'a, R: Runtime> Event<'a, R> {
    fn recorded(rt: &'a R) -> Result<Event<'a, R>, UnitError> {
        let e = Event {
            rt,
            raw: rt.create_event()?,
        };
        // SAFETY: a live event.
        unsafe { rt.record_event(e.raw) }?;
        Ok(e)
    }
}

impl<R: Runtime> Drop for Event<'_, R> {
    fn drop(&mut self) {
        // SAFETY: created in `recorded`, destroyed once.
        unsafe { self.rt.destroy_event(self.raw) };
    }
}

/// Seconds between two events around `f` on the stream, waiting for the second.
pub fn events<R: Runtime>(
    rt: &R,
    f: impl FnOnce() -> Result<(), UnitError>,
) -> Result<f64, UnitError> {
    events_then(rt, f, || {})
}

/// `events`, running `enqueued` once the end event is recorded and before waiting for it.
fn events_then<R: Runtime>(
    rt: &R,
    f: impl FnOnce() -> Result<(), UnitError>,
    enqueued: impl FnOnce(),
) -> Result<f64, UnitError> {
    let start = Event::recorded(rt)?;
    f()?;
    let end = Event::recorded(rt)?;
    enqueued();
    // SAFETY: both events are live and recorded on the stream.
    let ms = unsafe { rt.elapsed_ms(start.raw, end.raw) }?;
    if ms <= 0.0 || !ms.is_finite() {
        return Err(UnitError::Library {
            library: R::LIBRARY.into(),
            code: "invalid elapsed time".into(),
            message: format!("{} gave an interval of {ms} ms", R::ELAPSED_CALL),
        });
    }
    Ok(f64::from(ms) / 1e3)
}

/// Device seconds per call of `k` calls of `f` captured into one graph and replayed; None when
/// the calls cannot be captured (the stream is usable again either way).
pub(super) fn graphed<R: Runtime>(
    rt: &R,
    blocker: &Blocker<R>,
    k: usize,
    f: &mut dyn FnMut() -> Result<(), UnitError>,
) -> Result<Option<f64>, UnitError> {
    rt.sync()?;
    if rt.begin_capture().is_err() {
        return Ok(None);
    }
    let body = (0..k).try_for_each(|_| f());
    let graph = match (body, rt.end_capture()) {
        (Ok(()), Ok(g)) if !g.is_null() => g,
        (_, Ok(g)) => {
            if !g.is_null() {
                // SAFETY: a graph the failed capture made; destroyed once.
                unsafe { rt.destroy_graph(g) };
            }
            return Ok(None);
        }
        (_, Err(_)) => return Ok(None),
    };
    rt.captured(graph, k);
    // SAFETY: a graph just produced by the capture; destroyed once below.
    let result = match unsafe { rt.instantiate(graph) } {
        Ok(exec) => {
            // The graph's work is uploaded first and its one replay waits behind the blocking
            // kernel, so the timed interval holds neither an upload nor the host's launch. No
            // warm-up replay: it would read the very operands the timed one reads, and rotating
            // inputs (`rotate_inputs`) would then be warm in L2.
            // SAFETY: a live executable graph, launched on the stream and destroyed once.
            let timed = unsafe { rt.upload_graph(exec) }
                .and_then(|_| blocker.blocked(rt, 1, &mut || unsafe { rt.launch_graph(exec) }));
            // SAFETY: instantiated above, destroyed once.
            unsafe { rt.destroy_exec(exec) };
            timed.map(|s| Some(s / k as f64))
        }
        Err(_) => Ok(None),
    };
    // SAFETY: made by the capture above, destroyed once.
    unsafe { rt.destroy_graph(graph) };
    result
}

/// The error of a launch-free sample whose blocking kernel gave up before the host released it:
/// `k` queued calls waited for the device (a call that synchronizes with the host).
fn blocker_timed_out(k: usize) -> UnitError {
    UnitError::Library {
        library: "rocsweep-timing".into(),
        code: "blocking kernel timed out".into(),
        message: format!(
            "{k} queued call(s) waited for the device before the timer released it; a call that synchronizes with the host cannot be timed launch-free"
        ),
    }
}

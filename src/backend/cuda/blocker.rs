//! Launch-free device time on CUDA. `timed` first captures the calls of one sample into a CUDA
//! graph (thread-local capture), uploads it and times its one replay queued behind `rs_block`
//! (below), divided by the number of calls: the same measurement as PyTorch's CUDA-graph timing
//! (`benches/peer/peer_times.py --graph-protocol held`), with no host launch cost and the graph's
//! short gaps between kernels. Where a call cannot be captured, the calls are queued behind `rs_block`
//! (kernels/timing.cu), a kernel spinning on a flag in host-mapped memory, released once
//! everything is enqueued (nvbench's method): no host launch cost either, but a stream's gaps
//! between kernels. One call between two events, with neither, is the per-call figure.

use super::buffers::Gpu;
use super::driver_err;
use crate::backend::UnitError;
use crate::timing::{Batch, Sample, calls_per_sample};
use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg, sys as dsys};
use std::sync::Arc;

const SRC: &str = include_str!("../../../kernels/timing.cu");

/// About two seconds at 2 GHz: far longer than enqueuing a sample takes.
const BUDGET_CYCLES: i64 = 4_000_000_000;

/// The compiled blocking kernel and its two flags in host-mapped pinned memory.
pub struct Blocker {
    func: CudaFunction,
    /// Host address of the flags (kept as an integer: the memory is the driver's, freed on drop).
    host: usize,
    dev: dsys::CUdeviceptr,
}

impl Drop for Blocker {
    fn drop(&mut self) {
        // SAFETY: allocated by cuMemHostAlloc in `new`, freed once.
        unsafe { dsys::cuMemFreeHost(self.host as *mut std::ffi::c_void) };
    }
}

fn check(rc: dsys::CUresult, what: &str) -> Result<(), UnitError> {
    if rc == dsys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(UnitError::Library {
            library: "cuda".into(),
            code: format!("{rc:?}"),
            message: what.into(),
        })
    }
}

impl Blocker {
    pub fn new(gpu: &Gpu) -> Result<Blocker, UnitError> {
        let ptx = cudarc::nvrtc::compile_ptx(SRC).map_err(|e| UnitError::Library {
            library: "nvrtc".into(),
            code: "NVRTC_ERROR_COMPILATION".into(),
            message: format!("the timing kernel: {e:?}"),
        })?;
        let module = gpu
            .ctx
            .load_module(ptx)
            .map_err(|e| driver_err("loading the timing kernel", e))?;
        let func = module
            .load_function("rs_block")
            .map_err(|e| driver_err("kernel rs_block", e))?;
        gpu.ctx
            .bind_to_thread()
            .map_err(|e| driver_err("binding the context", e))?;
        let mut host: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: out-pointer to a live pointer; 8 bytes, mapped into the device's space.
        check(
            unsafe { dsys::cuMemHostAlloc(&mut host, 8, dsys::CU_MEMHOSTALLOC_DEVICEMAP) },
            "cuMemHostAlloc (timing flags)",
        )?;
        let mut dev: dsys::CUdeviceptr = 0;
        // SAFETY: `host` was just allocated with DEVICEMAP.
        let rc = unsafe { dsys::cuMemHostGetDevicePointer_v2(&mut dev, host, 0) };
        let b = Blocker {
            func,
            host: host as usize,
            dev,
        };
        check(rc, "cuMemHostGetDevicePointer (timing flags)")?;
        Ok(b)
    }

    fn flag(&self, i: usize) -> *mut u32 {
        (self.host as *mut u32).wrapping_add(i)
    }

    fn set(&self, i: usize, v: u32) {
        // SAFETY: two u32 flags live at `host` for the Blocker's lifetime; the device reads them.
        unsafe { std::ptr::write_volatile(self.flag(i), v) };
    }

    fn get(&self, i: usize) -> u32 {
        // SAFETY: as in `set`.
        unsafe { std::ptr::read_volatile(self.flag(i)) }
    }

    /// Device seconds per call of `k` calls of `f` queued behind the blocking kernel.
    fn blocked(
        &self,
        gpu: &Gpu,
        k: usize,
        f: &mut dyn FnMut() -> Result<(), UnitError>,
    ) -> Result<f64, UnitError> {
        self.set(0, 0);
        self.set(1, 0);
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = gpu.stream.launch_builder(&self.func);
        b.arg(&self.dev).arg(&BUDGET_CYCLES);
        // SAFETY: the kernel reads flag[0] and may write flag[1], both in the mapped allocation.
        unsafe { b.launch(cfg) }.map_err(|e| driver_err("launching the timing kernel", e))?;
        // Released once the calls and the end event are enqueued (before waiting for the end
        // event, which the blocked stream would never reach), and whatever happened.
        let secs = events_then(gpu, || (0..k).try_for_each(|_| f()), || self.set(0, 1));
        self.set(0, 1);
        let secs = secs?;
        if self.get(1) != 0 {
            return Err(crate::timing::blocker_timed_out(k));
        }
        Ok(secs / k as f64)
    }
}

/// Seconds between two events around `f` on the stream, waiting for the second. An interval of
/// zero or less is an error, never a sample.
pub fn events(gpu: &Gpu, f: impl FnOnce() -> Result<(), UnitError>) -> Result<f64, UnitError> {
    events_then(gpu, f, || {})
}

/// `events`, running `enqueued` once the end event is recorded and before waiting for it.
fn events_then(
    gpu: &Gpu,
    f: impl FnOnce() -> Result<(), UnitError>,
    enqueued: impl FnOnce(),
) -> Result<f64, UnitError> {
    let e = |e| driver_err("timing with CUDA events", e);
    let flags = Some(dsys::CUevent_flags::CU_EVENT_DEFAULT);
    let start = gpu.ctx.new_event(flags).map_err(e)?;
    let end = gpu.ctx.new_event(flags).map_err(e)?;
    start.record(&gpu.stream).map_err(e)?;
    f()?;
    end.record(&gpu.stream).map_err(e)?;
    enqueued();
    end.synchronize()
        .map_err(|e| driver_err("waiting for the device", e))?;
    let ms = start.elapsed_ms(&end).map_err(e)?;
    if ms <= 0.0 || !ms.is_finite() {
        return Err(UnitError::Library {
            library: "cuda".into(),
            code: "invalid elapsed time".into(),
            message: format!("an event interval of {ms} ms"),
        });
    }
    Ok(f64::from(ms) / 1e3)
}

/// Device seconds per call of `k` calls of `f` captured into one graph and replayed; None when
/// the calls cannot be captured (the stream is usable again either way).
fn graphed(
    gpu: &Gpu,
    blocker: &Blocker,
    k: usize,
    f: &mut dyn FnMut() -> Result<(), UnitError>,
) -> Result<Option<f64>, UnitError> {
    use cudarc::driver::result as dr;
    gpu.stream
        .synchronize()
        .map_err(|e| driver_err("before capture", e))?;
    if gpu
        .stream
        .begin_capture(dsys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .is_err()
    {
        return Ok(None);
    }
    let body = (0..k).try_for_each(|_| f());
    // SAFETY: ends the capture begun above on our own stream, whatever the body did.
    let ended = unsafe { dr::stream::end_capture(gpu.stream.cu_stream()) };
    let graph = match (body, ended) {
        (Ok(()), Ok(g)) if !g.is_null() => g,
        (_, Ok(g)) => {
            if !g.is_null() {
                // SAFETY: a graph the failed capture made; destroyed once.
                let _ = unsafe { dr::graph::destroy(g) };
            }
            return Ok(None);
        }
        (_, Err(_)) => return Ok(None),
    };
    super::graph_info::log(graph, k);
    // SAFETY: a graph just produced by the capture; destroyed once below.
    let exec = unsafe { dr::graph::instantiate(graph, dsys::CUgraphInstantiate_flags(0)) };
    let result = match exec {
        Ok(exec) => {
            // The graph's work is uploaded first and its one replay waits behind the blocking
            // kernel, so the timed interval holds neither an upload nor the host's launch. No
            // warm-up replay: it would read the very operands the timed one reads, and rotating
            // inputs (`rotate_inputs`) would then be warm in L2.
            // SAFETY: a live executable graph on our stream.
            let timed = unsafe { dr::graph::upload(exec, gpu.stream.cu_stream()) }
                .map_err(|e| driver_err("cuGraphUpload (timing)", e))
                .and_then(|_| {
                    blocker.blocked(gpu, 1, &mut || {
                        // SAFETY: as above.
                        unsafe { dr::graph::launch(exec, gpu.stream.cu_stream()) }
                            .map_err(|e| driver_err("cuGraphLaunch (timing)", e))
                    })
                });
            // SAFETY: instantiated above, destroyed once.
            let _ = unsafe { dr::graph::exec_destroy(exec) };
            timed.map(|s| Some(s / k as f64))
        }
        Err(_) => Ok(None),
    };
    // SAFETY: made by the capture above, destroyed once.
    let _ = unsafe { dr::graph::destroy(graph) };
    result
}

/// The blocker of a worker's context, made on first use and shared by every unit.
pub type Shared = Arc<std::sync::OnceLock<Result<Blocker, UnitError>>>;

/// One sample of `f`: one call with its launch, then `calls_per_sample` calls launch-free.
pub fn timed(
    gpu: &Gpu,
    batch: Batch,
    mut f: impl FnMut() -> Result<(), UnitError>,
) -> Result<Sample, UnitError> {
    let call = events(gpu, &mut f)?;
    let k = calls_per_sample(batch, call);
    let blocker = gpu
        .blocker
        .get_or_init(|| Blocker::new(gpu))
        .as_ref()
        .map_err(Clone::clone)?;
    // A cold sample (one call after a cache flush) is not captured: it waits behind the blocker
    // as it is.
    if batch == Batch::Auto
        && let Some(device) = graphed(gpu, blocker, k, &mut f)?
    {
        return Ok(Sample { device, call });
    }
    let device = blocker.blocked(gpu, k, &mut f)?;
    Ok(Sample { device, call })
}

/// One sample of a call that synchronizes with the host (a copy from pageable memory): it
/// cannot wait behind the blocking kernel, so both figures are one call between two events.
pub fn timed_host_sync(
    gpu: &Gpu,
    f: impl FnOnce() -> Result<(), UnitError>,
) -> Result<Sample, UnitError> {
    events(gpu, f).map(Sample::same)
}

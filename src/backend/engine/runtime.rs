//! The runtime interface the GPU engine is written against: what the engine needs from CUDA's
//! driver or HIP's runtime, call for call, and nothing of the vendor libraries above them.
//!
//! Every handle is an opaque pointer (`Ptr`): device addresses, events, modules, functions,
//! graphs and executable graphs. A runtime owns exactly one stream, on which every call below
//! that queues work queues it; the vendor libraries of a backend are bound to the same stream.
//! The engine never frees a handle twice and never uses one after freeing it; a runtime need not
//! check either.
//!
//! What each call must guarantee, so that a third runtime is a new implementation of this trait
//! and not a copy of the engine:
//! - Errors are `UnitError::Library` with the runtime's own name for its status code
//!   (`CUDA_ERROR_...`, `hipError...`) as the code, never a bare number, and a message naming
//!   the call. A call that fails leaves nothing allocated.
//! - `alloc` returns at least `bytes` bytes of device memory (callers ask for at least one), not
//!   initialised; memory is stream-ordered where the runtime allocates on the stream, so it may
//!   be used by work queued on the stream right away. `free` releases it, after queued work that
//!   uses it where the runtime frees on the stream.
//! - `alloc_host` returns page-locked host memory the device can copy from and to
//!   asynchronously; with `mapped`, also addressable by kernels through `mapped_device_ptr`, and
//!   coherent enough that a kernel spinning on a word sees a host write to it without any other
//!   call (the blocking kernel of launch-free timing depends on it).
//! - `copy_async` and `memset_async` are queued on the stream and return without waiting, except
//!   where the host side is pageable memory, where they may (and on CUDA and HIP do) wait.
//! - `sync` returns once everything queued on the stream has finished.
//! - Events: `record_event` queues a timestamp on the stream; `elapsed_ms` waits for `end` and
//!   returns the milliseconds between the two timestamps (any value, the engine judges it).
//! - Capture: between `begin_capture` and `end_capture` work queued on the stream by this thread
//!   is recorded, not run (thread-local capture mode: other threads' calls cannot invalidate the
//!   capture). A call that is illegal during capture on the real runtime (a synchronising call,
//!   among them) must fail the body or the capture, never run. `end_capture` always ends the
//!   capture, whatever the body did, so the stream is usable again, and returns the graph (null
//!   where the capture made none). `instantiate` makes an executable graph of it; `upload_graph`
//!   puts its work on the device without running it; `launch_graph` queues one replay.
//! - Kernels: `compile` turns one of the project's kernel sources into an image `load_module`
//!   accepts, or fails with the compiler's log; `launch` queues one launch of a 1-D grid with
//!   `args` holding one pointer per kernel parameter, each to a live value of its type.

use crate::backend::UnitError;
use std::ffi::c_void;

/// An opaque runtime handle or device address.
pub type Ptr = *mut c_void;

/// The direction of a copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyKind {
    HostToDevice,
    DeviceToHost,
    DeviceToDevice,
}

/// Which step of making a graph failed; a runtime may name it in its error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// begin_capture.
    Begin,
    /// The work issued while capturing.
    Body,
    /// end_capture.
    End,
    /// instantiate.
    Instantiate,
}

/// One of the project's kernel sources (kernels/), and the kernels the engine looks up in it.
pub struct Program {
    /// The program's name without its extension ("rocsweep_kernels").
    pub name: &'static str,
    /// What it is, for messages ("the timing kernel").
    pub what: &'static str,
    pub source: String,
    pub kernels: Vec<String>,
}

/// A GPU runtime: CUDA's driver API (`backend::cuda::runtime`) or HIP's runtime
/// (`backend::rocm::runtime`).
pub trait Runtime: 'static {
    /// The library name of the errors the engine itself makes ("cuda", "hip").
    const LIBRARY: &'static str;
    /// The compiler of the project's kernels, for messages ("NVRTC", "hipRTC").
    const COMPILER: &'static str;
    /// The runtime's call that reports an event interval, for an implausible one's message.
    const ELAPSED_CALL: &'static str;
    /// Whether launch-free timing first replays the sample's calls captured into a graph (CUDA)
    /// or always queues them behind the blocking kernel (HIP, whose graphs are what the graph op
    /// probes for faults: timing must not depend on them).
    const GRAPHED_TIMING: bool;
    /// Threads per block of the project's element-wise kernels.
    const BLOCK: u32;

    fn alloc(&self, bytes: usize) -> Result<Ptr, UnitError>;
    /// # Safety
    /// `ptr` came from `alloc` of this runtime and is freed once.
    unsafe fn free(&self, ptr: Ptr);
    fn alloc_host(&self, bytes: usize, mapped: bool) -> Result<Ptr, UnitError>;
    /// # Safety
    /// `ptr` came from `alloc_host` of this runtime and is freed once.
    unsafe fn free_host(&self, ptr: Ptr);
    /// The device's address of memory from `alloc_host(_, true)`.
    /// # Safety
    /// `host` came from `alloc_host` with `mapped` and is live.
    unsafe fn mapped_device_ptr(&self, host: Ptr) -> Result<Ptr, UnitError>;

    /// # Safety
    /// Both sides hold `bytes` bytes and stay live until the copy has run.
    unsafe fn copy_async(
        &self,
        dst: Ptr,
        src: *const c_void,
        bytes: usize,
        kind: CopyKind,
    ) -> Result<(), UnitError>;
    /// Sets `bytes` bytes at `ptr` to zero.
    /// # Safety
    /// `ptr` holds `bytes` bytes of this runtime's device memory.
    unsafe fn memset_async(&self, ptr: Ptr, bytes: usize) -> Result<(), UnitError>;
    fn sync(&self) -> Result<(), UnitError>;

    fn create_event(&self) -> Result<Ptr, UnitError>;
    /// # Safety
    /// A live event of this runtime, destroyed once.
    unsafe fn destroy_event(&self, event: Ptr);
    /// # Safety
    /// A live event.
    unsafe fn record_event(&self, event: Ptr) -> Result<(), UnitError>;
    /// # Safety
    /// Live events, both recorded on the stream.
    unsafe fn elapsed_ms(&self, start: Ptr, end: Ptr) -> Result<f32, UnitError>;

    fn begin_capture(&self) -> Result<(), UnitError>;
    fn end_capture(&self) -> Result<Ptr, UnitError>;
    /// # Safety
    /// A live graph from `end_capture`.
    unsafe fn instantiate(&self, graph: Ptr) -> Result<Ptr, UnitError>;
    /// # Safety
    /// A live executable graph.
    unsafe fn upload_graph(&self, exec: Ptr) -> Result<(), UnitError>;
    /// # Safety
    /// A live executable graph.
    unsafe fn launch_graph(&self, exec: Ptr) -> Result<(), UnitError>;
    /// # Safety
    /// A live graph, destroyed once (after any executable made from it).
    unsafe fn destroy_graph(&self, graph: Ptr);
    /// # Safety
    /// A live executable graph, destroyed once.
    unsafe fn destroy_exec(&self, exec: Ptr);
    /// Telemetry hook: a sample's `calls` calls were captured into `graph` for timing (CUDA
    /// describes it in the worker's log under `ROCSWEEP_DEBUG_GRAPH`). Must not fail or alter it.
    fn captured(&self, _graph: Ptr, _calls: usize) {}
    /// The error of a failed graph step as the graph op reports it (the default: as it is).
    fn graph_error(&self, _stage: Stage, e: UnitError) -> UnitError {
        e
    }

    fn compile(&self, program: &Program) -> Result<Vec<u8>, UnitError>;
    fn load_module(&self, image: &[u8]) -> Result<Ptr, UnitError>;
    /// # Safety
    /// A live module.
    unsafe fn function(&self, module: Ptr, name: &str) -> Result<Ptr, UnitError>;
    /// # Safety
    /// A live module, unloaded once.
    unsafe fn unload_module(&self, module: Ptr);
    /// # Safety
    /// `f` is a live function and `args` matches its parameters (see the module docs).
    unsafe fn launch(
        &self,
        f: Ptr,
        grid: u32,
        block: u32,
        args: &mut [*mut c_void],
        what: &str,
    ) -> Result<(), UnitError>;

    /// The flush that evicts the device's caches when a sweep sets no `flush_mib` (0: none).
    fn default_flush_bytes(&self) -> usize;
}

//! The HIP runtime for the engine: libamdhip64 opened at run time (backend::rocm::hip holds its
//! symbol table), on the one stream the ROCm backend binds MIOpen, hipBLASLt, rocBLAS and
//! hipRAND to. Kernels are compiled by hipRTC for the device's gfx target and their code object
//! is checked before anyone loads it.

use super::code_object::{self, Checked};
use super::hip::{self, HipRef, Stream};
use super::hiprtc::Hiprtc;
use crate::backend::UnitError;
use crate::backend::engine::ffi::c_str_in;
use crate::backend::engine::runtime::{CopyKind, Program, Ptr, Runtime, Stage};
use std::ffi::{c_char, c_void};
use std::sync::Arc;

pub struct HipRt {
    pub hip: HipRef,
    pub stream: Stream,
    pub rtc: Option<Arc<Hiprtc>>,
    /// hipRTC's `--offload-arch` (empty: the current device's).
    pub arch: String,
}

/// hipHostMallocMapped.
const HOST_MALLOC_MAPPED: u32 = 2;

/// The default flush when a sweep sets no `flush_mib`: past MI300's 256 MiB Infinity Cache (HIP
/// has no attribute for its size) and past twice the L2.
const DEFAULT_FLUSH_BYTES: usize = 512 << 20;

/// `program` compiled by hipRTC for `arch` and its code object checked (selftest runs this
/// without a GPU).
pub fn compile_checked(
    rtc: &Hiprtc,
    arch: &str,
    program: &Program,
) -> Result<(Vec<u8>, Checked), UnitError> {
    let code = rtc.compile(&program.source, &format!("{}.hip", program.name), arch)?;
    let checked =
        code_object::check(&code, arch, &program.kernels).map_err(|why| UnitError::Library {
            library: "hiprtc".into(),
            code: "bad code object".into(),
            message: format!("{}: {why}", program.what),
        })?;
    Ok((code, checked))
}

/// A failed graph step's error with its stage in front, as the ROCm graph op reports it.
fn staged(stage: &str, e: UnitError) -> UnitError {
    match e {
        UnitError::Library {
            library,
            code,
            message,
        } => UnitError::Library {
            library,
            code,
            message: format!("{stage}: {message}"),
        },
        other => other,
    }
}

impl HipRt {
    fn raw(&self) -> Ptr {
        self.stream.raw
    }
}

impl Runtime for HipRt {
    const LIBRARY: &'static str = "hip";
    const COMPILER: &'static str = "hipRTC";
    const ELAPSED_CALL: &'static str = "hipEventElapsedTime";
    const GRAPHED_TIMING: bool = false;
    const BLOCK: u32 = 256;

    fn alloc(&self, bytes: usize) -> Result<Ptr, UnitError> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: out-pointer to a live pointer.
        self.hip.check(
            unsafe { (self.hip.api.hipMalloc)(&mut ptr, bytes) },
            "hipMalloc",
        )?;
        Ok(ptr)
    }

    unsafe fn free(&self, ptr: Ptr) {
        // SAFETY: the caller's contract.
        unsafe { (self.hip.api.hipFree)(ptr) };
    }

    fn alloc_host(&self, bytes: usize, mapped: bool) -> Result<Ptr, UnitError> {
        let mut ptr = std::ptr::null_mut();
        let flags = if mapped { HOST_MALLOC_MAPPED } else { 0 };
        // SAFETY: out-pointer to a live pointer.
        self.hip.check(
            unsafe { (self.hip.api.hipHostMalloc)(&mut ptr, bytes, flags) },
            "hipHostMalloc",
        )?;
        Ok(ptr)
    }

    unsafe fn free_host(&self, ptr: Ptr) {
        // SAFETY: the caller's contract.
        unsafe { (self.hip.api.hipHostFree)(ptr) };
    }

    unsafe fn mapped_device_ptr(&self, host: Ptr) -> Result<Ptr, UnitError> {
        // Without hipHostGetDevicePointer the host address is the device's (unified addressing).
        let Some(f) = self.hip.api.hipHostGetDevicePointer else {
            return Ok(host);
        };
        let mut dev: Ptr = std::ptr::null_mut();
        // SAFETY: `host` was allocated mapped (the caller's contract).
        self.hip.check(
            unsafe { f(&mut dev, host, 0) },
            "hipHostGetDevicePointer (timing flags)",
        )?;
        Ok(dev)
    }

    unsafe fn copy_async(
        &self,
        dst: Ptr,
        src: *const c_void,
        bytes: usize,
        kind: CopyKind,
    ) -> Result<(), UnitError> {
        let (kind, what) = match kind {
            CopyKind::HostToDevice => (hip::MEMCPY_H2D, "hipMemcpyAsync host to device"),
            CopyKind::DeviceToHost => (hip::MEMCPY_D2H, "hipMemcpyAsync device to host"),
            CopyKind::DeviceToDevice => (hip::MEMCPY_D2D, "hipMemcpyAsync device to device"),
        };
        // SAFETY: the caller's contract.
        self.hip.check(
            unsafe { (self.hip.api.hipMemcpyAsync)(dst, src, bytes, kind, self.raw()) },
            what,
        )
    }

    unsafe fn memset_async(&self, ptr: Ptr, bytes: usize) -> Result<(), UnitError> {
        // SAFETY: the caller's contract.
        self.hip.check(
            unsafe { (self.hip.api.hipMemsetAsync)(ptr, 0, bytes, self.raw()) },
            "hipMemsetAsync",
        )
    }

    fn sync(&self) -> Result<(), UnitError> {
        self.stream.sync()
    }

    fn create_event(&self) -> Result<Ptr, UnitError> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: out-pointer to a live handle.
        self.hip.check(
            unsafe { (self.hip.api.hipEventCreate)(&mut raw) },
            "hipEventCreate",
        )?;
        Ok(raw)
    }

    unsafe fn destroy_event(&self, event: Ptr) {
        // SAFETY: the caller's contract.
        unsafe { (self.hip.api.hipEventDestroy)(event) };
    }

    unsafe fn record_event(&self, event: Ptr) -> Result<(), UnitError> {
        // SAFETY: the caller's contract.
        self.hip.check(
            unsafe { (self.hip.api.hipEventRecord)(event, self.raw()) },
            "hipEventRecord",
        )
    }

    unsafe fn elapsed_ms(&self, start: Ptr, end: Ptr) -> Result<f32, UnitError> {
        // SAFETY: the caller's contract.
        self.hip.check(
            unsafe { (self.hip.api.hipEventSynchronize)(end) },
            "hipEventSynchronize",
        )?;
        let mut ms = 0f32;
        // SAFETY: out-pointer to a live float; both events are live.
        self.hip.check(
            unsafe { (self.hip.api.hipEventElapsedTime)(&mut ms, start, end) },
            "hipEventElapsedTime",
        )?;
        Ok(ms)
    }

    fn begin_capture(&self) -> Result<(), UnitError> {
        // SAFETY: a live stream.
        self.hip.check(
            unsafe {
                (self.hip.api.hipStreamBeginCapture)(self.raw(), hip::CAPTURE_MODE_THREAD_LOCAL)
            },
            "hipStreamBeginCapture",
        )
    }

    fn end_capture(&self) -> Result<Ptr, UnitError> {
        let mut graph = std::ptr::null_mut();
        // SAFETY: ends a capture on our own stream.
        let rc = unsafe { (self.hip.api.hipStreamEndCapture)(self.raw(), &mut graph) };
        if rc != 0 && !graph.is_null() {
            // SAFETY: a graph a failed EndCapture still made; destroyed once, here.
            unsafe { (self.hip.api.hipGraphDestroy)(graph) };
        }
        self.hip.check(rc, "hipStreamEndCapture")?;
        Ok(graph)
    }

    unsafe fn instantiate(&self, graph: Ptr) -> Result<Ptr, UnitError> {
        let mut exec = std::ptr::null_mut();
        let mut log = [0 as c_char; 512];
        // SAFETY: a graph from EndCapture; the log buffer's size is passed with it.
        let rc = unsafe {
            (self.hip.api.hipGraphInstantiate)(
                &mut exec,
                graph,
                std::ptr::null_mut(),
                log.as_mut_ptr(),
                log.len(),
            )
        };
        let text = c_str_in(&log);
        self.hip.check(rc, &format!("hipGraphInstantiate {text}"))?;
        Ok(exec)
    }

    unsafe fn upload_graph(&self, exec: Ptr) -> Result<(), UnitError> {
        // An optional symbol: without it the first launch uploads the graph.
        let Some(f) = self.hip.api.hipGraphUpload else {
            return Ok(());
        };
        // SAFETY: the caller's contract.
        self.hip
            .check(unsafe { f(exec, self.raw()) }, "hipGraphUpload")
    }

    unsafe fn launch_graph(&self, exec: Ptr) -> Result<(), UnitError> {
        // SAFETY: the caller's contract.
        self.hip.check(
            unsafe { (self.hip.api.hipGraphLaunch)(exec, self.raw()) },
            "hipGraphLaunch",
        )
    }

    unsafe fn destroy_graph(&self, graph: Ptr) {
        // SAFETY: the caller's contract.
        unsafe { (self.hip.api.hipGraphDestroy)(graph) };
    }

    unsafe fn destroy_exec(&self, exec: Ptr) {
        // SAFETY: the caller's contract.
        unsafe { (self.hip.api.hipGraphExecDestroy)(exec) };
    }

    fn graph_error(&self, stage: Stage, e: UnitError) -> UnitError {
        match stage {
            Stage::Instantiate => staged("instantiate", e),
            Stage::Begin | Stage::Body | Stage::End => staged("capture", e),
        }
    }

    fn compile(&self, program: &Program) -> Result<Vec<u8>, UnitError> {
        let Some(rtc) = &self.rtc else {
            return Err(UnitError::Unsupported(format!(
                "{} needs hipRTC, which did not load",
                if program.name == crate::backend::engine::timer::program().name {
                    "launch-free timing"
                } else {
                    program.what
                }
            )));
        };
        compile_checked(rtc, &self.arch, program).map(|(code, _)| code)
    }

    fn load_module(&self, image: &[u8]) -> Result<Ptr, UnitError> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: the image outlives the call (the runtime copies it).
        self.hip.check(
            unsafe { (self.hip.api.hipModuleLoadData)(&mut raw, image.as_ptr().cast()) },
            "hipModuleLoadData",
        )?;
        Ok(raw)
    }

    unsafe fn function(&self, module: Ptr, name: &str) -> Result<Ptr, UnitError> {
        let c = std::ffi::CString::new(name).map_err(|_| UnitError::Library {
            library: "hip".into(),
            code: "hipErrorInvalidValue".into(),
            message: format!("kernel name {name:?} contains NUL"),
        })?;
        let mut f = std::ptr::null_mut();
        // SAFETY: live module (the caller's contract), NUL-terminated name, out-pointer.
        self.hip.check(
            unsafe { (self.hip.api.hipModuleGetFunction)(&mut f, module, c.as_ptr()) },
            &format!("hipModuleGetFunction({name})"),
        )?;
        Ok(f)
    }

    unsafe fn unload_module(&self, module: Ptr) {
        // SAFETY: the caller's contract.
        unsafe { (self.hip.api.hipModuleUnload)(module) };
    }

    unsafe fn launch(
        &self,
        f: Ptr,
        grid: u32,
        block: u32,
        args: &mut [*mut c_void],
        what: &str,
    ) -> Result<(), UnitError> {
        // SAFETY: the caller's contract.
        self.hip.check(
            unsafe {
                (self.hip.api.hipModuleLaunchKernel)(
                    f,
                    grid,
                    1,
                    1,
                    block,
                    1,
                    1,
                    0,
                    self.raw(),
                    args.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            },
            &format!("hipModuleLaunchKernel({what})"),
        )
    }

    fn default_flush_bytes(&self) -> usize {
        let mut l2: std::ffi::c_int = 0;
        // SAFETY: out-pointer to a live int; device 0 is the worker's device.
        let rc =
            unsafe { (self.hip.api.hipDeviceGetAttribute)(&mut l2, hip::ATTR_L2_CACHE_SIZE, 0) };
        let l2 = if rc == 0 { l2.max(0) as usize } else { 0 };
        DEFAULT_FLUSH_BYTES.max(2 * l2)
    }
}

//! The CUDA runtime for the engine: CUDA's driver API through cudarc (loaded at run time), on
//! the one stream the CUDA backend binds cuDNN, cuBLASLt and cuRAND to. Kernels are compiled
//! by NVRTC for the device's compute capability.

use crate::backend::UnitError;
use crate::backend::engine::runtime::{CopyKind, Program, Ptr, Runtime, Stage};
use cudarc::driver::{CudaContext, CudaStream, DriverError, result as dr, sys as dsys};
use std::ffi::{CString, c_void};
use std::sync::Arc;

pub struct CudaRt {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
}

/// A driver error as a unit error: the code is the driver's own name (`CUDA_ERROR_...`).
pub fn driver_err(what: &str, e: DriverError) -> UnitError {
    UnitError::Library {
        library: "cuda".into(),
        code: format!("{:?}", e.0),
        message: what.to_string(),
    }
}

/// A graph step's error, under the library name the graph op has always reported.
fn graph_err(what: &str, e: DriverError) -> UnitError {
    UnitError::Library {
        library: "cuda-graph".into(),
        code: format!("{:?}", e.0),
        message: what.to_string(),
    }
}

fn include_paths() -> Vec<String> {
    let mut v = Vec::new();
    if let Ok(p) = std::env::var("CUDA_PATH").or_else(|_| std::env::var("CUDA_HOME")) {
        v.push(format!("{p}/include"));
    }
    v.push("/usr/local/cuda/include".into());
    v.push("/usr/local/cuda/targets/x86_64-linux/include".into());
    v.push("/usr/include".into());
    v
}

impl CudaRt {
    fn cu_stream(&self) -> dsys::CUstream {
        self.stream.cu_stream()
    }

    /// The raw calls below need the context current on this thread.
    fn bind(&self) -> Result<(), UnitError> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| driver_err("binding the context", e))
    }
}

impl Runtime for CudaRt {
    const LIBRARY: &'static str = "cuda";
    const COMPILER: &'static str = "NVRTC";
    const ELAPSED_CALL: &'static str = "cuEventElapsedTime";
    const GRAPHED_TIMING: bool = true;
    /// As cudarc's `LaunchConfig::for_num_elems`.
    const BLOCK: u32 = 1024;

    fn alloc(&self, bytes: usize) -> Result<Ptr, UnitError> {
        self.bind()?;
        // Stream-ordered from the stream's pool where the device has one, as cudarc allocates
        // (the units' addresses, and with them `ROCSWEEP_DEBUG_PAD_*`, depend on it).
        // SAFETY: a live stream; the memory is only used on it.
        let p = unsafe {
            if self.ctx.has_async_alloc() {
                dr::malloc_async(self.cu_stream(), bytes)
            } else {
                dr::malloc_sync(bytes)
            }
        }
        .map_err(|e| driver_err("allocating device memory", e))?;
        Ok(p as Ptr)
    }

    unsafe fn free(&self, ptr: Ptr) {
        if self.ctx.bind_to_thread().is_err() {
            return;
        }
        // SAFETY: the caller's contract: from `alloc`, freed once.
        let _ = unsafe {
            if self.ctx.has_async_alloc() {
                dr::free_async(ptr as dsys::CUdeviceptr, self.cu_stream())
            } else {
                dr::free_sync(ptr as dsys::CUdeviceptr)
            }
        };
    }

    fn alloc_host(&self, bytes: usize, mapped: bool) -> Result<Ptr, UnitError> {
        self.bind()?;
        let flags = if mapped {
            dsys::CU_MEMHOSTALLOC_DEVICEMAP
        } else {
            0
        };
        // SAFETY: a plain allocation; freed by `free_host`.
        unsafe { dr::malloc_host(bytes, flags) }.map_err(|e| driver_err("cuMemHostAlloc", e))
    }

    unsafe fn free_host(&self, ptr: Ptr) {
        // SAFETY: the caller's contract.
        let _ = unsafe { dr::free_host(ptr) };
    }

    unsafe fn mapped_device_ptr(&self, host: Ptr) -> Result<Ptr, UnitError> {
        let mut dev: dsys::CUdeviceptr = 0;
        // SAFETY: `host` was allocated with DEVICEMAP (the caller's contract).
        let rc = unsafe { dsys::cuMemHostGetDevicePointer_v2(&mut dev, host, 0) };
        rc.result()
            .map_err(|e| driver_err("cuMemHostGetDevicePointer (timing flags)", e))?;
        Ok(dev as Ptr)
    }

    unsafe fn copy_async(
        &self,
        dst: Ptr,
        src: *const c_void,
        bytes: usize,
        kind: CopyKind,
    ) -> Result<(), UnitError> {
        let s = self.cu_stream();
        // SAFETY: the caller's contract: both sides hold `bytes` bytes.
        let rc = unsafe {
            match kind {
                CopyKind::HostToDevice => {
                    dsys::cuMemcpyHtoDAsync_v2(dst as dsys::CUdeviceptr, src, bytes, s)
                }
                CopyKind::DeviceToHost => {
                    dsys::cuMemcpyDtoHAsync_v2(dst, src as dsys::CUdeviceptr, bytes, s)
                }
                CopyKind::DeviceToDevice => dsys::cuMemcpyDtoDAsync_v2(
                    dst as dsys::CUdeviceptr,
                    src as dsys::CUdeviceptr,
                    bytes,
                    s,
                ),
            }
        };
        rc.result().map_err(|e| driver_err("cuMemcpy", e))
    }

    unsafe fn memset_async(&self, ptr: Ptr, bytes: usize) -> Result<(), UnitError> {
        // SAFETY: the caller's contract.
        unsafe { dr::memset_d8_async(ptr as dsys::CUdeviceptr, 0, bytes, self.cu_stream()) }
            .map_err(|e| driver_err("cuMemsetD8Async", e))
    }

    fn sync(&self) -> Result<(), UnitError> {
        self.stream
            .synchronize()
            .map_err(|e| driver_err("waiting for the device", e))
    }

    fn create_event(&self) -> Result<Ptr, UnitError> {
        self.bind()?;
        dr::event::create(dsys::CUevent_flags::CU_EVENT_DEFAULT)
            .map(|e| e as Ptr)
            .map_err(|e| driver_err("timing with CUDA events", e))
    }

    unsafe fn destroy_event(&self, event: Ptr) {
        // SAFETY: the caller's contract.
        let _ = unsafe { dr::event::destroy(event as dsys::CUevent) };
    }

    unsafe fn record_event(&self, event: Ptr) -> Result<(), UnitError> {
        // SAFETY: the caller's contract.
        unsafe { dr::event::record(event as dsys::CUevent, self.cu_stream()) }
            .map_err(|e| driver_err("timing with CUDA events", e))
    }

    unsafe fn elapsed_ms(&self, start: Ptr, end: Ptr) -> Result<f32, UnitError> {
        // SAFETY: the caller's contract.
        unsafe {
            dr::event::synchronize(end as dsys::CUevent)
                .map_err(|e| driver_err("waiting for the device", e))?;
            dr::event::elapsed(start as dsys::CUevent, end as dsys::CUevent)
        }
        .map_err(|e| driver_err("timing with CUDA events", e))
    }

    fn begin_capture(&self) -> Result<(), UnitError> {
        self.stream
            .begin_capture(dsys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(|e| graph_err("stream capture failed to begin (cuStreamBeginCapture)", e))
    }

    fn end_capture(&self) -> Result<Ptr, UnitError> {
        // SAFETY: ends a capture on our own stream.
        let g = unsafe { dr::stream::end_capture(self.cu_stream()) }
            .map_err(|e| graph_err("stream capture failed (cuStreamEndCapture)", e))?;
        if g.is_null() {
            return Err(UnitError::Library {
                library: "cuda-graph".into(),
                code: "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED".into(),
                message: "stream capture produced no graph".into(),
            });
        }
        Ok(g as Ptr)
    }

    unsafe fn instantiate(&self, graph: Ptr) -> Result<Ptr, UnitError> {
        // SAFETY: the caller's contract.
        unsafe { dr::graph::instantiate(graph as dsys::CUgraph, dsys::CUgraphInstantiate_flags(0)) }
            .map(|e| e as Ptr)
            .map_err(|e| graph_err("graph instantiation failed (cuGraphInstantiate)", e))
    }

    unsafe fn upload_graph(&self, exec: Ptr) -> Result<(), UnitError> {
        // SAFETY: the caller's contract.
        unsafe { dr::graph::upload(exec as dsys::CUgraphExec, self.cu_stream()) }
            .map_err(|e| driver_err("cuGraphUpload (timing)", e))
    }

    unsafe fn launch_graph(&self, exec: Ptr) -> Result<(), UnitError> {
        // SAFETY: the caller's contract.
        unsafe { dr::graph::launch(exec as dsys::CUgraphExec, self.cu_stream()) }
            .map_err(|e| graph_err("graph replay failed (cuGraphLaunch)", e))
    }

    unsafe fn destroy_graph(&self, graph: Ptr) {
        // SAFETY: the caller's contract.
        let _ = unsafe { dr::graph::destroy(graph as dsys::CUgraph) };
    }

    unsafe fn destroy_exec(&self, exec: Ptr) {
        // SAFETY: the caller's contract.
        let _ = unsafe { dr::graph::exec_destroy(exec as dsys::CUgraphExec) };
    }

    fn captured(&self, graph: Ptr, calls: usize) {
        crate::backend::cuda::graph_info::log(graph as dsys::CUgraph, calls);
    }

    fn graph_error(&self, stage: Stage, e: UnitError) -> UnitError {
        match (stage, e) {
            (
                Stage::Body,
                UnitError::Library {
                    library,
                    code,
                    message,
                },
            ) => UnitError::Library {
                library,
                code,
                message: format!("{message} (while capturing the graph)"),
            },
            (_, e) => e,
        }
    }

    fn compile(&self, program: &Program) -> Result<Vec<u8>, UnitError> {
        let (major, minor) = self
            .ctx
            .compute_capability()
            .map_err(|e| driver_err("compute capability", e))?;
        let opts = cudarc::nvrtc::CompileOptions {
            include_paths: include_paths(),
            options: vec![
                format!("--gpu-architecture=compute_{major}{minor}"),
                "--std=c++17".into(),
            ],
            name: Some(format!("{}.cu", program.name)),
            ..Default::default()
        };
        let ptx = cudarc::nvrtc::compile_ptx_with_opts(&program.source, opts).map_err(|e| {
            UnitError::Library {
                library: "nvrtc".into(),
                code: "NVRTC_ERROR_COMPILATION".into(),
                message: format!("{}: {e:?}", program.what),
            }
        })?;
        CString::new(ptx.to_src())
            .map(CString::into_bytes_with_nul)
            .map_err(|_| UnitError::Library {
                library: "nvrtc".into(),
                code: "NVRTC_ERROR_COMPILATION".into(),
                message: format!("{}: the PTX holds a NUL byte", program.what),
            })
    }

    fn load_module(&self, image: &[u8]) -> Result<Ptr, UnitError> {
        self.bind()?;
        // SAFETY: a NUL-terminated PTX image from `compile`; the driver copies it.
        unsafe { dr::module::load_data(image.as_ptr().cast()) }
            .map(|m| m as Ptr)
            .map_err(|e| driver_err("loading the compiled kernels", e))
    }

    unsafe fn function(&self, module: Ptr, name: &str) -> Result<Ptr, UnitError> {
        let c = CString::new(name).map_err(|_| UnitError::Library {
            library: "cuda".into(),
            code: "CUDA_ERROR_INVALID_VALUE".into(),
            message: format!("kernel name {name:?} contains NUL"),
        })?;
        // SAFETY: the caller's contract: a live module.
        unsafe { dr::module::get_function(module as dsys::CUmodule, c) }
            .map(|f| f as Ptr)
            .map_err(|e| driver_err(&format!("kernel {name}"), e))
    }

    unsafe fn unload_module(&self, module: Ptr) {
        // SAFETY: the caller's contract.
        let _ = unsafe { dr::module::unload(module as dsys::CUmodule) };
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
        unsafe {
            dr::launch_kernel(
                f as dsys::CUfunction,
                (grid, 1, 1),
                (block, 1, 1),
                0,
                self.cu_stream(),
                args,
            )
        }
        .map_err(|e| driver_err(&format!("launching {what}"), e))
    }

    /// Twice the L2.
    fn default_flush_bytes(&self) -> usize {
        let l2 = self
            .ctx
            .attribute(dsys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
            .unwrap_or(0);
        2 * l2.max(0) as usize
    }
}

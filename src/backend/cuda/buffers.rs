//! The CUDA backend's names for the engine's device and memory (backend::engine over CudaRt),
//! and the raw addresses cuDNN and cuBLASLt take.

use super::runtime::CudaRt;
use crate::backend::engine;
use cudarc::driver::sys as dsys;
use std::ffi::c_void;

/// The worker's device: the engine over the CUDA runtime, its context and one stream.
pub type Gpu = engine::Dev<CudaRt>;
/// A device tensor in its storage type.
pub type DevBuf = engine::mem::Tensor<CudaRt>;
/// A library's workspace (none for zero bytes).
pub type Workspace = Option<engine::mem::DevMem<CudaRt>>;

/// A device tensor's address as the driver API types it.
pub trait Addr {
    fn addr(&self) -> dsys::CUdeviceptr;
}

impl Addr for DevBuf {
    fn addr(&self) -> dsys::CUdeviceptr {
        self.ptr() as dsys::CUdeviceptr
    }
}

/// The workspace's address (null for none).
pub fn ws_ptr(ws: &Workspace) -> *mut c_void {
    ws.as_ref().map_or(std::ptr::null_mut(), |w| w.ptr)
}

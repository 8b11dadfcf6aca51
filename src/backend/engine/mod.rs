//! One GPU engine for the CUDA and ROCm backends, written once over a small runtime interface
//! (`runtime::Runtime`, implemented by `cuda::CudaRt` over cudarc and `hip::HipRt` over the
//! dlopen'd HIP runtime; HIP mirrors CUDA call for call). What the engine does on the H100 it
//! does on AMD:
//! - `backend`: the `Backend` trait written once (`GpuBackend<V>`) over a `Vendor`, which makes
//!   the library calls: cuDNN and MIOpen, cuBLASLt, hipBLASLt and rocBLAS, cuRAND and hipRAND;
//! - `timer`: launch-free device time behind the blocking kernel (and through graphs where the
//!   runtime times that way) and per-call time; `Device::flush_cache`: cold samples;
//! - `mem`: device and pinned memory, checked uploads and downloads;
//! - `run`: a library call's unit (GEMM, convolution) with rotating operands; `gemm`: what GEMM
//!   through cuBLASLt and hipBLASLt shares (the column-major view, the heuristic's solver names);
//! - `kernels`: the project's own kernels (compiled by NVRTC or hipRTC behind
//!   `Runtime::compile`), `graph`: capture and the graph op's replay bookkeeping, `probes`: the
//!   copy, rng and cast probes;
//! - `ffi`: the tables of raw symbols of libraries opened at run time (`api!`: the ROCm
//!   libraries, ROCm SMI, NVML) and the C strings they return.
//!
//! The backends keep only what is truly vendor-specific: the libraries above, the compilers'
//! options and checks, NVML and ROCm SMI, and where the libraries are found.

pub mod backend;
pub mod cuda;
pub mod ffi;
pub mod gemm;
pub mod graph;
pub mod hip;
pub mod kernels;
pub mod mem;
pub mod probes;
pub mod run;
pub mod runtime;
pub mod timer;

use crate::backend::UnitError;
use mem::DevMem;
use runtime::Runtime;
use std::cell::RefCell;
use std::rc::Rc;

/// A worker's device: the runtime (its one stream included) and what the timer keeps between
/// units. Dereferences to the runtime, so a backend reaches its own runtime's fields through it.
pub struct Device<R: Runtime> {
    pub rt: Rc<R>,
    /// The launch-free timer's blocking kernel, made on first use.
    blocker: RefCell<Option<Result<timer::Blocker<R>, UnitError>>>,
    /// The cold-sample flush buffer (`flush_cache`), made on first use.
    flush: RefCell<Option<DevMem<R>>>,
    /// The pinned buffer inputs are uploaded through, piece by piece (`mem::STAGE_BYTES`).
    stage: RefCell<Option<mem::Pinned<R>>>,
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
    pub fn flush_cache(&self, bytes: u64) {
        let want = if bytes > 0 {
            bytes as usize
        } else {
            self.rt.default_flush_bytes()
        };
        if want == 0 {
            return;
        }
        let mut slot = self.flush.borrow_mut();
        if slot.as_ref().is_none_or(|m| m.bytes < want) {
            *slot = None;
            *slot = DevMem::alloc(&self.rt, want).ok();
        }
        if let Some(m) = slot.as_ref() {
            // SAFETY: the buffer holds m.bytes bytes.
            let _ = unsafe { self.rt.memset_async(m.ptr, m.bytes) };
            let _ = self.rt.sync();
        }
    }

    pub fn upload(&self, h: &crate::tensor::HostData) -> Result<mem::Tensor<R>, UnitError> {
        mem::Tensor::upload(&self.rt, h, &mut self.stage.borrow_mut())
    }

    pub fn zeros(
        &self,
        dtype: crate::dtype::DType,
        len: usize,
    ) -> Result<mem::Tensor<R>, UnitError> {
        mem::Tensor::zeros(&self.rt, dtype, len)
    }

    /// A workspace of `bytes` (none for zero).
    pub fn workspace(&self, bytes: usize) -> Result<Option<DevMem<R>>, UnitError> {
        (bytes > 0)
            .then(|| DevMem::alloc(&self.rt, bytes))
            .transpose()
    }
}

#[cfg(test)]
mod tests;

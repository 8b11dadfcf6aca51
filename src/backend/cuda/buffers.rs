//! Device memory for host tensors, CUDA-event timing, and the L2 flush.

use super::driver_err;
use crate::backend::UnitError;
use crate::dtype::DType;
use crate::tensor::HostData;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, sys as dsys};
use half::{bf16, f16};
use std::sync::Arc;

#[derive(Clone)]
pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    /// The launch-free timer's blocking kernel (super::blocker), made on first use.
    pub blocker: super::blocker::Shared,
    /// The cold-sample flush buffer (`flush_cache`), made on first use.
    pub flush: Arc<std::sync::Mutex<Option<CudaSlice<u8>>>>,
}

/// A device tensor in its storage type.
pub enum DevBuf {
    F32(CudaSlice<f32>),
    F16(CudaSlice<f16>),
    Bf16(CudaSlice<bf16>),
}

impl DevBuf {
    pub fn upload(gpu: &Gpu, h: &HostData) -> Result<DevBuf, UnitError> {
        let e = |e| driver_err("copying inputs to the device", e);
        Ok(match h {
            HostData::F32(v) => DevBuf::F32(gpu.stream.clone_htod(v).map_err(e)?),
            HostData::F16(v) => DevBuf::F16(gpu.stream.clone_htod(v).map_err(e)?),
            HostData::Bf16(v) => DevBuf::Bf16(gpu.stream.clone_htod(v).map_err(e)?),
        })
    }

    pub fn zeros(gpu: &Gpu, dtype: DType, len: usize) -> Result<DevBuf, UnitError> {
        let e = |e| driver_err("allocating device memory", e);
        // At least one element: a zero-length allocation has no pointer to hand to a library.
        let len = len.max(1);
        Ok(match dtype {
            DType::F16 => DevBuf::F16(gpu.stream.alloc_zeros(len).map_err(e)?),
            DType::Bf16 => DevBuf::Bf16(gpu.stream.alloc_zeros(len).map_err(e)?),
            _ => DevBuf::F32(gpu.stream.alloc_zeros(len).map_err(e)?),
        })
    }

    pub fn download(&self, gpu: &Gpu) -> Result<HostData, UnitError> {
        let e = |e| driver_err("copying results to the host", e);
        Ok(match self {
            DevBuf::F32(d) => HostData::F32(gpu.stream.clone_dtoh(d).map_err(e)?),
            DevBuf::F16(d) => HostData::F16(gpu.stream.clone_dtoh(d).map_err(e)?),
            DevBuf::Bf16(d) => HostData::Bf16(gpu.stream.clone_dtoh(d).map_err(e)?),
        })
    }

    /// The raw device address (event tracking is off, so the guard does nothing).
    pub fn ptr(&self, gpu: &Gpu) -> dsys::CUdeviceptr {
        match self {
            DevBuf::F32(d) => d.device_ptr(&gpu.stream).0,
            DevBuf::F16(d) => d.device_ptr(&gpu.stream).0,
            DevBuf::Bf16(d) => d.device_ptr(&gpu.stream).0,
        }
    }

    pub fn ptr_mut(&mut self, gpu: &Gpu) -> dsys::CUdeviceptr {
        match self {
            DevBuf::F32(d) => d.device_ptr_mut(&gpu.stream).0,
            DevBuf::F16(d) => d.device_ptr_mut(&gpu.stream).0,
            DevBuf::Bf16(d) => d.device_ptr_mut(&gpu.stream).0,
        }
    }
}

/// A workspace of `bytes` (none for zero).
pub fn workspace(gpu: &Gpu, bytes: usize) -> Result<Option<CudaSlice<u8>>, UnitError> {
    if bytes == 0 {
        return Ok(None);
    }
    gpu.stream
        .alloc_zeros::<u8>(bytes)
        .map(Some)
        .map_err(|e| driver_err("allocating the workspace", e))
}

pub fn ws_ptr(gpu: &Gpu, ws: &mut Option<CudaSlice<u8>>) -> dsys::CUdeviceptr {
    ws.as_mut().map_or(0, |w| w.device_ptr_mut(&gpu.stream).0)
}

impl Gpu {
    /// Writes `bytes` (0: twice the L2) of device memory before a cold sample, evicting the
    /// working set, and waits for it. The buffer is kept for the worker's next flush.
    pub fn flush_cache(&self, bytes: u64) {
        let want = if bytes > 0 {
            bytes as usize
        } else {
            let l2 = self
                .ctx
                .attribute(dsys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
                .unwrap_or(0);
            2 * l2.max(0) as usize
        };
        if want == 0 {
            return;
        }
        let mut slot = self.flush.lock().unwrap_or_else(|e| e.into_inner());
        if slot.as_ref().is_none_or(|b| b.len() < want) {
            *slot = None;
            *slot = self.stream.alloc_zeros::<u8>(want).ok();
        }
        if let Some(b) = slot.as_mut() {
            let _ = self.stream.memset_zeros(b);
            let _ = self.stream.synchronize();
        }
    }
}

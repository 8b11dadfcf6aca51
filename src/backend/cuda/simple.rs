//! cuRAND normals, copies (pageable and pinned) and casts through the NVRTC kernels.

use super::blocker::{timed, timed_host_sync};
use super::buffers::{DevBuf, Gpu};
use super::driver_err;
use super::kernels::Kernels;
use crate::backend::{PhaseSink, Prepared, UnitError};
use crate::dtype::DType;
use crate::op::cast::Cast;
use crate::op::copy::{Copy, CopyDir};
use crate::op::rng::Rng;
use crate::tensor::HostData;
use crate::timing::{Batch, Sample};
use cudarc::curand::{result as cr, sys as cs};
use cudarc::driver::{CudaSlice, DevicePtrMut, PinnedHostSlice};

fn curand_err(what: &str, e: cr::CurandError) -> UnitError {
    UnitError::Library {
        library: "curand".into(),
        code: format!("{:?}", e.0),
        message: what.to_string(),
    }
}

pub struct RngRun {
    gpu: Gpu,
    k: Kernels,
    gen_: cs::curandGenerator_t,
    /// f32 samples (cuRAND's normal generator needs an even count).
    raw: CudaSlice<f32>,
    out: Option<DevBuf>,
    p: Rng,
}

impl Drop for RngRun {
    fn drop(&mut self) {
        // SAFETY: created in prepare_rng, destroyed once.
        unsafe {
            let _ = cr::destroy_generator(self.gen_);
        }
    }
}

pub fn prepare_rng(
    gpu: &Gpu,
    k: Kernels,
    p: &Rng,
    seed: u64,
    phases: &mut dyn PhaseSink,
) -> Result<Box<dyn Prepared>, UnitError> {
    let gen_ = cr::create_generator_kind(cs::curandRngType_t::CURAND_RNG_PSEUDO_PHILOX4_32_10)
        .map_err(|e| curand_err("curandCreateGenerator", e))?;
    // SAFETY: a fresh generator bound to our stream.
    unsafe {
        cr::set_seed(gen_, seed)
            .map_err(|e| curand_err("curandSetPseudoRandomGeneratorSeed", e))?;
        cr::set_stream(gen_, gpu.stream.cu_stream() as _)
            .map_err(|e| curand_err("curandSetStream", e))?;
    }
    phases.phase("alloc");
    let even = p.count.div_ceil(2) * 2;
    let raw = gpu
        .stream
        .alloc_zeros::<f32>(even)
        .map_err(|e| driver_err("alloc", e))?;
    let out = if p.dtype == DType::F32 {
        None
    } else {
        Some(DevBuf::zeros(gpu, p.dtype, p.count)?)
    };
    Ok(Box::new(RngRun {
        gpu: gpu.clone(),
        k,
        gen_,
        raw,
        out,
        p: p.clone(),
    }))
}

impl Prepared for RngRun {
    fn run(&mut self, batch: Batch) -> Result<Sample, UnitError> {
        let g = self.gpu.clone();
        let n = self.raw.len();
        let ptr = self.raw.device_ptr_mut(&g.stream).0;
        let (gen_, mean, std) = (self.gen_, self.p.mean as f32, self.p.std as f32);
        let (k, dtype, count) = (self.k.clone(), self.p.dtype, self.p.count);
        let out = self.out.as_mut().map(|o| o.ptr_mut(&g));
        timed(&g, batch, || {
            // SAFETY: `ptr` holds n f32 values.
            unsafe { cr::generate::normal_f32(gen_, ptr as *mut f32, n, mean, std) }
                .map_err(|e| curand_err("curandGenerateNormal", e))?;
            match out {
                Some(o) => k.cast(&g, DType::F32, dtype, ptr, o, count),
                None => Ok(()),
            }
        })
    }
    fn flush_cache(&mut self, bytes: u64) {
        self.gpu.flush_cache(bytes);
    }
    fn output(&mut self) -> Result<HostData, UnitError> {
        match &self.out {
            Some(o) => o.download(&self.gpu),
            None => {
                let mut v = self
                    .gpu
                    .stream
                    .clone_dtoh(&self.raw)
                    .map_err(|e| driver_err("dtoh", e))?;
                v.truncate(self.p.count);
                Ok(HostData::F32(v))
            }
        }
    }
}

enum Host {
    Pageable(Vec<f32>),
    Pinned(PinnedHostSlice<f32>),
}

pub struct CopyRun {
    gpu: Gpu,
    dir: CopyDir,
    host: Host,
    dev: CudaSlice<f32>,
    dev2: CudaSlice<f32>,
}

pub fn prepare_copy(
    gpu: &Gpu,
    p: &Copy,
    src: &HostData,
    phases: &mut dyn PhaseSink,
) -> Result<Box<dyn Prepared>, UnitError> {
    phases.phase("alloc");
    let data = src.to_f32_vec();
    let n = data.len();
    let e = |e| driver_err("allocating copy buffers", e);
    let host_init = if p.direction == CopyDir::H2d {
        data.clone()
    } else {
        vec![0.0; n]
    };
    let host = if p.pinned {
        // SAFETY: the pinned buffer is filled right after allocation, before any read.
        let mut h = unsafe { gpu.ctx.alloc_pinned_with_flags::<f32>(n.max(1), 0) }.map_err(e)?;
        h.as_mut_slice().map_err(e)?[..n].copy_from_slice(&host_init);
        Host::Pinned(h)
    } else {
        Host::Pageable(host_init)
    };
    let dev = if p.direction == CopyDir::H2d {
        gpu.stream.alloc_zeros::<f32>(n.max(1)).map_err(e)?
    } else {
        gpu.stream.clone_htod(&data).map_err(e)?
    };
    let dev2 = gpu.stream.alloc_zeros::<f32>(n.max(1)).map_err(e)?;
    gpu.stream.synchronize().map_err(e)?;
    Ok(Box::new(CopyRun {
        gpu: gpu.clone(),
        dir: p.direction,
        host,
        dev,
        dev2,
    }))
}

impl Prepared for CopyRun {
    fn run(&mut self, batch: Batch) -> Result<Sample, UnitError> {
        let g = self.gpu.clone();
        let e = |e| driver_err("cuMemcpy", e);
        let (dir, host, dev, dev2) = (self.dir, &mut self.host, &mut self.dev, &mut self.dev2);
        // A copy from or to pageable memory synchronizes with the host: it cannot wait behind the
        // launch-free timer's blocking kernel, so it is timed per call.
        if let Host::Pageable(h) = host
            && dir != CopyDir::D2d
        {
            return timed_host_sync(&g, || match dir {
                CopyDir::H2d => g.stream.memcpy_htod(h, dev).map_err(e),
                _ => g.stream.memcpy_dtoh(dev, h).map_err(e),
            });
        }
        timed(&g, batch, || match (dir, &mut *host) {
            (CopyDir::H2d, Host::Pinned(h)) => g.stream.memcpy_htod(h, dev).map_err(e),
            (CopyDir::D2h, Host::Pinned(h)) => g.stream.memcpy_dtoh(dev, h).map_err(e),
            (CopyDir::D2d, _) => g.stream.memcpy_dtod(dev, dev2).map_err(e),
            (_, Host::Pageable(_)) => Ok(()),
        })
    }
    fn flush_cache(&mut self, bytes: u64) {
        self.gpu.flush_cache(bytes);
    }
    fn output(&mut self) -> Result<HostData, UnitError> {
        let e = |e| driver_err("reading back the copy", e);
        let n = self.dev.len();
        Ok(HostData::F32(match (&self.dir, &self.host) {
            (CopyDir::H2d, _) => self.gpu.stream.clone_dtoh(&self.dev).map_err(e)?,
            (CopyDir::D2h, Host::Pageable(h)) => h.clone(),
            (CopyDir::D2h, Host::Pinned(h)) => {
                self.gpu.stream.synchronize().map_err(e)?;
                h.as_slice().map_err(e)?[..n].to_vec()
            }
            (CopyDir::D2d, _) => self.gpu.stream.clone_dtoh(&self.dev2).map_err(e)?,
        }))
    }
}

pub struct CastRun {
    gpu: Gpu,
    k: Kernels,
    p: Cast,
    input: DevBuf,
    out: DevBuf,
}

pub fn prepare_cast(
    gpu: &Gpu,
    k: Kernels,
    p: &Cast,
    src: &HostData,
    phases: &mut dyn PhaseSink,
) -> Result<Box<dyn Prepared>, UnitError> {
    phases.phase("alloc");
    let input = DevBuf::upload(gpu, src)?;
    let out = DevBuf::zeros(gpu, p.to, src.len())?;
    Ok(Box::new(CastRun {
        gpu: gpu.clone(),
        k,
        p: p.clone(),
        input,
        out,
    }))
}

impl Prepared for CastRun {
    fn run(&mut self, batch: Batch) -> Result<Sample, UnitError> {
        let g = self.gpu.clone();
        let (i, o) = (self.input.ptr(&g), self.out.ptr_mut(&g));
        let (k, from, to, n) = (self.k.clone(), self.p.from, self.p.to, self.p.count);
        timed(&g, batch, || k.cast(&g, from, to, i, o, n))
    }
    fn flush_cache(&mut self, bytes: u64) {
        self.gpu.flush_cache(bytes);
    }
    fn output(&mut self) -> Result<HostData, UnitError> {
        let mut h = self.out.download(&self.gpu)?;
        // Buffers are at least one element long; trim to the case's count.
        h.truncate(self.p.count);
        Ok(h)
    }
}

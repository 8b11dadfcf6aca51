//! The probes written once: normals from the vendor's generator (cast through the engine's
//! kernel for f16/bf16), copies (pageable and pinned, each direction) and casts through the
//! engine's kernels.

use super::device::{Dev, Device};
use super::kernels::Kernels;
use super::mem::{DevMem, Pinned, Tensor};
use super::runtime::{CopyKind, Ptr, Runtime};
use crate::backend::{PhaseSink, Prepared, UnitError};
use crate::dtype::DType;
use crate::op::cast::Cast;
use crate::op::copy::{Copy, CopyDir};
use crate::op::rng::Rng;
use crate::tensor::HostData;
use crate::timing::{Batch, Sample};
use std::rc::Rc;

/// The vendor's normal generator (cuRAND, hipRAND), seeded and bound to the runtime's stream.
pub trait Normals {
    /// Queues `n` (even) f32 normals into `out`.
    fn generate(&mut self, out: Ptr, n: usize, mean: f32, std: f32) -> Result<(), UnitError>;
}

struct RngRun<R: Runtime, G> {
    dev: Dev<R>,
    gen_: G,
    k: Option<Kernels<R>>,
    /// f32 samples (the generators' normal call needs an even count).
    raw: Tensor<R>,
    out: Option<Tensor<R>>,
    p: Rng,
}

/// The rng unit over `gen_`; `k` casts to f16/bf16 (without it only f32 runs).
pub fn prepare_rng<R: Runtime, G: Normals + 'static>(
    dev: &Dev<R>,
    gen_: G,
    k: Option<Kernels<R>>,
    p: &Rng,
    phases: &mut dyn PhaseSink,
) -> Result<Box<dyn Prepared>, UnitError> {
    phases.phase("alloc");
    let even = p.count.div_ceil(2) * 2;
    let raw = dev.zeros(DType::F32, even)?;
    let out = match (p.dtype, &k) {
        (DType::F32, _) => None,
        (d, Some(_)) => Some(dev.zeros(d, p.count)?),
        (d, None) => {
            return Err(UnitError::Unsupported(format!(
                "{} normals need the cast kernels ({}), which are not available",
                d.name(),
                R::COMPILER
            )));
        }
    };
    Ok(Box::new(RngRun {
        dev: dev.clone(),
        gen_,
        k,
        raw,
        out,
        p: p.clone(),
    }))
}

impl<R: Runtime, G: Normals> Prepared for RngRun<R, G> {
    fn run(&mut self, batch: Batch) -> Result<Sample, UnitError> {
        let d: &Device<R> = &self.dev;
        let (n, ptr) = (self.raw.len, self.raw.ptr());
        let (mean, std) = (self.p.mean as f32, self.p.std as f32);
        let cast = match (&self.k, &self.out) {
            (Some(k), Some(o)) => Some((k, o.ptr(), o.dtype)),
            _ => None,
        };
        let (count, gen_) = (self.p.count, &mut self.gen_);
        d.timed(batch, || {
            gen_.generate(ptr, n, mean, std)?;
            match &cast {
                Some((k, o, dtype)) => k.cast(DType::F32, *dtype, ptr, *o, count),
                None => Ok(()),
            }
        })
    }

    fn flush_cache(&mut self, bytes: u64) -> bool {
        self.dev.flush_cache(bytes)
    }

    fn output(&mut self) -> Result<HostData, UnitError> {
        match &self.out {
            Some(o) => o.download(),
            None => {
                let mut h = self.raw.download()?;
                h.truncate(self.p.count);
                Ok(h)
            }
        }
    }
}

enum Host<R: Runtime> {
    Pageable(Vec<u8>),
    Pinned(Pinned<R>),
}

impl<R: Runtime> Host<R> {
    fn ptr(&mut self) -> Ptr {
        match self {
            Host::Pageable(v) => v.as_mut_ptr().cast(),
            Host::Pinned(p) => p.ptr,
        }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Host::Pageable(v) => v,
            Host::Pinned(p) => p.as_slice(),
        }
    }
}

struct CopyRun<R: Runtime> {
    dev: Dev<R>,
    dir: CopyDir,
    host: Host<R>,
    src: DevMem<R>,
    dst: DevMem<R>,
    len: usize,
}

pub fn prepare_copy<R: Runtime>(
    dev: &Dev<R>,
    p: &Copy,
    src: &HostData,
    phases: &mut dyn PhaseSink,
) -> Result<Box<dyn Prepared>, UnitError> {
    phases.phase("alloc");
    let data = HostData::F32(src.to_f32_vec()).as_bytes();
    let n = data.len();
    let host_init = if p.direction == CopyDir::H2d {
        data.clone()
    } else {
        vec![0u8; n]
    };
    let rt: &Rc<R> = &dev.rt;
    let host = if p.pinned {
        let mut h = Pinned::alloc(rt, n, false)?;
        h.as_mut_slice().copy_from_slice(&host_init);
        Host::Pinned(h)
    } else {
        Host::Pageable(host_init)
    };
    // The device side is set up through pinned memory and checked (DevMem::upload), so only the
    // copy under test takes the path the case names.
    let srcm = if p.direction == CopyDir::H2d {
        DevMem::zeroed(rt, n)?
    } else {
        DevMem::upload(rt, &data)?
    };
    let dst = DevMem::zeroed(rt, n)?;
    Ok(Box::new(CopyRun {
        dev: dev.clone(),
        dir: p.direction,
        host,
        src: srcm,
        dst,
        len: src.len(),
    }))
}

impl<R: Runtime> Prepared for CopyRun<R> {
    fn run(&mut self, batch: Batch) -> Result<Sample, UnitError> {
        let d: &Device<R> = &self.dev;
        let n = self.src.bytes;
        let host = self.host.ptr();
        let (src, dst) = (self.src.ptr, self.dst.ptr);
        let (to, from, kind) = match self.dir {
            // H2D lands in `src` (the device buffer read back by output()).
            CopyDir::H2d => (src, host.cast_const(), CopyKind::HostToDevice),
            CopyDir::D2h => (host, src.cast_const(), CopyKind::DeviceToHost),
            CopyDir::D2d => (dst, src.cast_const(), CopyKind::DeviceToDevice),
        };
        // SAFETY: both sides hold n bytes and live across the call and the sync below.
        let copy = || unsafe { d.copy_async(to, from, n, kind) };
        // A copy from or to pageable memory synchronizes with the host: it cannot wait behind the
        // launch-free timer's blocking kernel, so it is timed per call.
        let host_sync = matches!(self.host, Host::Pageable(_)) && self.dir != CopyDir::D2d;
        let t = if host_sync {
            d.timed_host_sync(copy)?
        } else {
            d.timed(batch, copy)?
        };
        d.sync()?;
        Ok(t)
    }

    fn flush_cache(&mut self, bytes: u64) -> bool {
        self.dev.flush_cache(bytes)
    }

    fn output(&mut self) -> Result<HostData, UnitError> {
        let bytes = match self.dir {
            CopyDir::H2d => self.src.read()?,
            CopyDir::D2h => {
                self.dev.sync()?;
                self.host.bytes().to_vec()
            }
            CopyDir::D2d => self.dst.read()?,
        };
        Ok(HostData::from_le_bytes(DType::F32, &bytes, self.len))
    }
}

struct CastRun<R: Runtime> {
    dev: Dev<R>,
    k: Kernels<R>,
    p: Cast,
    input: Tensor<R>,
    out: Tensor<R>,
}

pub fn prepare_cast<R: Runtime>(
    dev: &Dev<R>,
    k: Kernels<R>,
    p: &Cast,
    src: &HostData,
    phases: &mut dyn PhaseSink,
) -> Result<Box<dyn Prepared>, UnitError> {
    phases.phase("alloc");
    let input = dev.upload(src)?;
    let out = dev.zeros(p.to, src.len())?;
    Ok(Box::new(CastRun {
        dev: dev.clone(),
        k,
        p: p.clone(),
        input,
        out,
    }))
}

impl<R: Runtime> Prepared for CastRun<R> {
    fn run(&mut self, batch: Batch) -> Result<Sample, UnitError> {
        let (i, o) = (self.input.ptr(), self.out.ptr());
        let (from, to, n) = (self.p.from, self.p.to, self.p.count);
        let k = &self.k;
        self.dev.timed(batch, || k.cast(from, to, i, o, n))
    }

    fn flush_cache(&mut self, bytes: u64) -> bool {
        self.dev.flush_cache(bytes)
    }

    fn output(&mut self) -> Result<HostData, UnitError> {
        let mut h = self.out.download()?;
        h.truncate(self.p.count);
        Ok(h)
    }
}

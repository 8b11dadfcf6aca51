//! hipRAND normals, hipMemcpy copies (pageable and pinned) and casts through the hipRTC kernels.

use super::DevRef;
use super::hip::{DevMem, MEMCPY_D2D, MEMCPY_D2H, MEMCPY_H2D, PinnedMem};
use super::hiprand::{Generator, HiprandRef};
use super::kernels::Kernels;
use crate::backend::{PhaseSink, Prepared, UnitError};
use crate::dtype::DType;
use crate::op::cast::Cast;
use crate::op::copy::{Copy, CopyDir};
use crate::op::rng::Rng;
use crate::tensor::HostData;
use crate::timing::{Batch, Sample};

/// A device tensor: memory plus its element type and length.
pub struct DevTensor {
    pub mem: DevMem,
    pub dtype: DType,
    pub len: usize,
}

impl DevTensor {
    pub fn upload(dev: &DevRef, h: &HostData) -> Result<DevTensor, UnitError> {
        Ok(DevTensor {
            mem: DevMem::upload(&dev.hip, &h.as_bytes())?,
            dtype: h.dtype(),
            len: h.len(),
        })
    }

    pub fn zeros(dev: &DevRef, dtype: DType, len: usize) -> Result<DevTensor, UnitError> {
        Ok(DevTensor {
            mem: DevMem::zeroed(&dev.hip, len * dtype.size())?,
            dtype,
            len,
        })
    }

    pub fn download(&self, dev: &DevRef) -> Result<HostData, UnitError> {
        dev.stream.sync()?;
        Ok(HostData::from_le_bytes(
            self.dtype,
            &self.mem.read()?,
            self.len,
        ))
    }
}

pub struct RngRun {
    dev: DevRef,
    gen_: Generator,
    lib: HiprandRef,
    k: Option<Kernels>,
    /// f32 samples (hipRAND's normal generator needs an even count).
    raw: DevTensor,
    out: Option<DevTensor>,
    p: Rng,
}

pub fn prepare_rng(
    dev: &DevRef,
    lib: &HiprandRef,
    k: Option<Kernels>,
    p: &Rng,
    seed: u64,
    phases: &mut dyn PhaseSink,
) -> Result<Box<dyn Prepared>, UnitError> {
    let gen_ = Generator::new(lib, seed, dev.stream.raw)?;
    phases.phase("alloc");
    let even = p.count.div_ceil(2) * 2;
    let raw = DevTensor::zeros(dev, DType::F32, even)?;
    let out = match (p.dtype, &k) {
        (DType::F32, _) => None,
        (d, Some(_)) => Some(DevTensor::zeros(dev, d, p.count)?),
        (d, None) => {
            return Err(UnitError::Unsupported(format!(
                "{} normals need the cast kernels (hipRTC), which are not available",
                d.name()
            )));
        }
    };
    Ok(Box::new(RngRun {
        dev: dev.clone(),
        gen_,
        lib: lib.clone(),
        k,
        raw,
        out,
        p: p.clone(),
    }))
}

impl Prepared for RngRun {
    fn run(&mut self, batch: Batch) -> Result<Sample, UnitError> {
        let d = self.dev.clone();
        let (n, ptr) = (self.raw.len, self.raw.mem.ptr);
        let (mean, std) = (self.p.mean as f32, self.p.std as f32);
        let (lib, g) = (&self.lib, self.gen_.raw);
        let cast = match (&self.k, &self.out) {
            (Some(k), Some(o)) => Some((k.clone(), o.mem.ptr, o.dtype)),
            _ => None,
        };
        let count = self.p.count;
        d.timed(batch, || {
            // SAFETY: `ptr` holds n f32 values, n even.
            lib.check(
                unsafe { (lib.api.hiprandGenerateNormal)(g, ptr.cast(), n, mean, std) },
                "hiprandGenerateNormal",
            )?;
            match &cast {
                Some((k, o, dtype)) => k.cast(&d, DType::F32, *dtype, ptr, *o, count),
                None => Ok(()),
            }
        })
    }

    fn flush_cache(&mut self, bytes: u64) {
        self.dev.flush_cache(bytes);
    }

    fn output(&mut self) -> Result<HostData, UnitError> {
        match &self.out {
            Some(o) => o.download(&self.dev),
            None => {
                let mut h = self.raw.download(&self.dev)?;
                h.truncate(self.p.count);
                Ok(h)
            }
        }
    }
}

enum Host {
    Pageable(Vec<u8>),
    Pinned(PinnedMem),
}

impl Host {
    fn ptr(&mut self) -> *mut std::ffi::c_void {
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

pub struct CopyRun {
    dev: DevRef,
    dir: CopyDir,
    host: Host,
    src: DevMem,
    dst: DevMem,
    len: usize,
}

pub fn prepare_copy(
    dev: &DevRef,
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
    let host = if p.pinned {
        let mut h = PinnedMem::alloc(&dev.hip, n)?;
        h.as_mut_slice().copy_from_slice(&host_init);
        Host::Pinned(h)
    } else {
        Host::Pageable(host_init)
    };
    // The device side is set up through pinned memory and checked (DevMem::upload), so only the
    // copy under test takes the path the case names.
    let srcm = if p.direction == CopyDir::H2d {
        DevMem::zeroed(&dev.hip, n)?
    } else {
        DevMem::upload(&dev.hip, &data)?
    };
    let dst = DevMem::zeroed(&dev.hip, n)?;
    Ok(Box::new(CopyRun {
        dev: dev.clone(),
        dir: p.direction,
        host,
        src: srcm,
        dst,
        len: src.len(),
    }))
}

impl Prepared for CopyRun {
    fn run(&mut self, batch: Batch) -> Result<Sample, UnitError> {
        let d = self.dev.clone();
        let n = self.src.bytes;
        let host = self.host.ptr();
        let (src, dst) = (self.src.ptr, self.dst.ptr);
        let (to, from, kind, what) = match self.dir {
            // H2D lands in `src` (the device buffer read back by output()).
            CopyDir::H2d => (
                src,
                host.cast_const(),
                MEMCPY_H2D,
                "hipMemcpyAsync host to device",
            ),
            CopyDir::D2h => (
                host,
                src.cast_const(),
                MEMCPY_D2H,
                "hipMemcpyAsync device to host",
            ),
            CopyDir::D2d => (
                dst,
                src.cast_const(),
                MEMCPY_D2D,
                "hipMemcpyAsync device to device",
            ),
        };
        let copy = || {
            // SAFETY: both sides hold n bytes and live across the call and the sync below.
            d.hip.check(
                unsafe { (d.hip.api.hipMemcpyAsync)(to, from, n, kind, d.stream.raw) },
                what,
            )
        };
        // A copy from or to pageable memory synchronizes with the host: it cannot wait behind the
        // launch-free timer's blocking kernel, so it is timed per call.
        let host_sync = matches!(self.host, Host::Pageable(_)) && self.dir != CopyDir::D2d;
        let t = if host_sync {
            d.timed_host_sync(copy)?
        } else {
            d.timed(batch, copy)?
        };
        d.stream.sync()?;
        Ok(t)
    }

    fn flush_cache(&mut self, bytes: u64) {
        self.dev.flush_cache(bytes);
    }

    fn output(&mut self) -> Result<HostData, UnitError> {
        let bytes = match self.dir {
            CopyDir::H2d => self.src.read()?,
            CopyDir::D2h => {
                self.dev.stream.sync()?;
                self.host.bytes().to_vec()
            }
            CopyDir::D2d => self.dst.read()?,
        };
        Ok(HostData::from_le_bytes(DType::F32, &bytes, self.len))
    }
}

pub struct CastRun {
    dev: DevRef,
    k: Kernels,
    p: Cast,
    input: DevTensor,
    out: DevTensor,
}

pub fn prepare_cast(
    dev: &DevRef,
    k: Kernels,
    p: &Cast,
    src: &HostData,
    phases: &mut dyn PhaseSink,
) -> Result<Box<dyn Prepared>, UnitError> {
    phases.phase("alloc");
    let input = DevTensor::upload(dev, src)?;
    let out = DevTensor::zeros(dev, p.to, src.len())?;
    Ok(Box::new(CastRun {
        dev: dev.clone(),
        k,
        p: p.clone(),
        input,
        out,
    }))
}

impl Prepared for CastRun {
    fn run(&mut self, batch: Batch) -> Result<Sample, UnitError> {
        let d = self.dev.clone();
        let (i, o) = (self.input.mem.ptr, self.out.mem.ptr);
        let (from, to, n) = (self.p.from, self.p.to, self.p.count);
        let k = &self.k;
        d.timed(batch, || k.cast(&d, from, to, i, o, n))
    }

    fn flush_cache(&mut self, bytes: u64) {
        self.dev.flush_cache(bytes);
    }

    fn output(&mut self) -> Result<HostData, UnitError> {
        self.out.download(&self.dev)
    }
}

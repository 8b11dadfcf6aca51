//! Memory the engine owns: device buffers, pinned host buffers and device tensors, each freed
//! on drop through the runtime that made it.

use super::runtime::{CopyKind, Ptr, Runtime};
use crate::backend::UnitError;
use crate::dtype::DType;
use crate::tensor::HostData;
use std::rc::Rc;

/// Copies `bytes` bytes and waits for the copy.
///
/// # Safety
/// Both sides hold `bytes` bytes.
unsafe fn copy_now<R: Runtime>(
    rt: &R,
    dst: Ptr,
    src: Ptr,
    bytes: usize,
    kind: CopyKind,
) -> Result<(), UnitError> {
    // SAFETY: the caller's contract; both sides live until the sync below returns.
    unsafe { rt.copy_async(dst, src.cast_const(), bytes, kind) }?;
    rt.sync()
}

/// How many bytes of an upload go through pinned memory at a time.
pub const STAGE_BYTES: usize = 64 << 20;

/// Device memory freed on drop.
pub struct DevMem<R: Runtime> {
    rt: Rc<R>,
    pub ptr: Ptr,
    pub bytes: usize,
}

impl<R: Runtime> DevMem<R> {
    /// `bytes` of device memory, not initialised; at least one byte: a library needs a real
    /// pointer even for an empty tensor.
    pub fn alloc(rt: &Rc<R>, bytes: usize) -> Result<DevMem<R>, UnitError> {
        let ptr = rt.alloc(bytes.max(1))?;
        Ok(DevMem {
            rt: rt.clone(),
            ptr,
            bytes,
        })
    }

    /// Device memory set to zero, waited for.
    pub fn zeroed(rt: &Rc<R>, bytes: usize) -> Result<DevMem<R>, UnitError> {
        let m = DevMem::alloc(rt, bytes)?;
        // SAFETY: the allocation holds at least `bytes` bytes.
        unsafe { rt.memset_async(m.ptr, bytes.max(1)) }?;
        rt.sync()?;
        Ok(m)
    }

    /// Device memory holding `bytes`: staged through pinned host memory and read back to check
    /// that it arrived. Inputs are set up this way so that a broken pageable copy path (seed 001)
    /// shows in the copy probe that measures it, not as wrong results of every other op; a setup
    /// copy that arrives changed is an error of its own, never silently wrong inputs.
    pub fn upload(rt: &Rc<R>, bytes: &[u8]) -> Result<DevMem<R>, UnitError> {
        DevMem::upload_via(rt, bytes, &mut None, STAGE_BYTES)
    }

    /// As [`DevMem::upload`], `piece` bytes at a time through `stage`: grown to `piece` bytes
    /// (or the whole upload, if smaller) when it is smaller, and left there for the next upload
    /// (pinning a unit's hundreds of MB of inputs anew for every unit cost more than copying
    /// them; pinning them all for a worker's life would hold that much locked memory).
    pub fn upload_via(
        rt: &Rc<R>,
        bytes: &[u8],
        stage: &mut Option<Pinned<R>>,
        piece: usize,
    ) -> Result<DevMem<R>, UnitError> {
        let n = bytes.len();
        let m = DevMem::alloc(rt, n)?;
        let piece = piece.max(1);
        let want = n.clamp(1, piece);
        let stage = match stage {
            Some(s) if s.bytes >= want => s,
            slot => {
                *slot = None;
                slot.insert(Pinned::alloc(rt, want, false)?)
            }
        };
        // The device address of the piece starting at byte `at` (an address, never dereferenced
        // here).
        let on_device = |at: usize| -> Ptr { m.ptr.cast::<u8>().wrapping_add(at).cast() };
        for (i, part) in bytes.chunks(piece).enumerate() {
            stage.as_mut_slice()[..part.len()].copy_from_slice(part);
            // SAFETY: the stage holds at least part.len() bytes, and so does the device buffer
            // from this piece's offset.
            unsafe {
                copy_now(
                    &**rt,
                    on_device(i * piece),
                    stage.ptr,
                    part.len(),
                    CopyKind::HostToDevice,
                )
            }?;
        }
        let (mut differ, mut zeros) = (0, true);
        for (i, part) in bytes.chunks(piece).enumerate() {
            let len = part.len();
            stage.as_mut_slice()[..len].fill(0);
            // SAFETY: as above.
            unsafe {
                copy_now(
                    &**rt,
                    stage.ptr,
                    on_device(i * piece),
                    len,
                    CopyKind::DeviceToHost,
                )
            }?;
            let back = &stage.as_slice()[..len];
            if back != part {
                differ += back.iter().zip(part).filter(|(a, b)| a != b).count();
            }
            zeros &= back.iter().all(|&b| b == 0);
        }
        if differ > 0 {
            return Err(UnitError::Library {
                library: R::LIBRARY.into(),
                code: "INPUT_UPLOAD_CORRUPTED".into(),
                message: format!(
                    "the inputs did not arrive on the device intact through pinned memory: {differ} of {n} bytes differ{}",
                    if zeros { " (all zeros)" } else { "" }
                ),
            });
        }
        Ok(m)
    }

    /// The contents, once everything queued before has finished.
    pub fn read(&self) -> Result<Vec<u8>, UnitError> {
        let mut v = vec![0u8; self.bytes];
        self.read_into(&mut v)?;
        Ok(v)
    }

    /// The first `to.len()` bytes of the contents (at most all of them) into `to`, once
    /// everything queued before has finished; the rest of `to` is left as it is.
    pub fn read_into(&self, to: &mut [u8]) -> Result<(), UnitError> {
        self.rt.sync()?;
        let n = self.bytes.min(to.len());
        // SAFETY: both sides hold at least n bytes.
        unsafe {
            copy_now(
                &*self.rt,
                to.as_mut_ptr().cast(),
                self.ptr,
                n,
                CopyKind::DeviceToHost,
            )
        }
    }

    /// Queues a copy of the first `min(len)` bytes of `from` into this buffer.
    pub fn copy_from(&self, from: &DevMem<R>) -> Result<(), UnitError> {
        let n = self.bytes.min(from.bytes);
        // SAFETY: both buffers hold at least n bytes and outlive the queued copy (the engine
        // waits for the stream before it frees anything it copies).
        unsafe {
            self.rt
                .copy_async(self.ptr, from.ptr.cast_const(), n, CopyKind::DeviceToDevice)
        }
    }
}

impl<R: Runtime> Drop for DevMem<R> {
    fn drop(&mut self) {
        // SAFETY: allocated by `alloc` and freed once.
        unsafe { self.rt.free(self.ptr) };
    }
}

/// Pinned (page-locked) host memory freed on drop.
pub struct Pinned<R: Runtime> {
    rt: Rc<R>,
    pub ptr: Ptr,
    pub bytes: usize,
}

impl<R: Runtime> Pinned<R> {
    pub fn alloc(rt: &Rc<R>, bytes: usize, mapped: bool) -> Result<Pinned<R>, UnitError> {
        let ptr = rt.alloc_host(bytes.max(1), mapped)?;
        Ok(Pinned {
            rt: rt.clone(),
            ptr,
            bytes,
        })
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the allocation holds at least `bytes` bytes and lives as long as self.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.bytes) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast::<u8>(), self.bytes) }
    }
}

impl<R: Runtime> Drop for Pinned<R> {
    fn drop(&mut self) {
        // SAFETY: allocated by `alloc_host` and freed once.
        unsafe { self.rt.free_host(self.ptr) };
    }
}

/// A device tensor: memory plus its element type and length.
pub struct Tensor<R: Runtime> {
    pub mem: DevMem<R>,
    pub dtype: DType,
    pub len: usize,
}

impl<R: Runtime> Tensor<R> {
    pub fn upload(
        rt: &Rc<R>,
        h: &HostData,
        stage: &mut Option<Pinned<R>>,
    ) -> Result<Tensor<R>, UnitError> {
        Ok(Tensor {
            mem: DevMem::upload_via(rt, h.le_bytes(), stage, STAGE_BYTES)?,
            dtype: h.dtype(),
            len: h.len(),
        })
    }

    pub fn zeros(rt: &Rc<R>, dtype: DType, len: usize) -> Result<Tensor<R>, UnitError> {
        Ok(Tensor {
            mem: DevMem::zeroed(rt, len * dtype.size())?,
            dtype,
            len,
        })
    }

    pub fn ptr(&self) -> Ptr {
        self.mem.ptr
    }

    pub fn download(&self) -> Result<HostData, UnitError> {
        let mut h = HostData::zeros(self.dtype, self.len);
        self.mem.read_into(h.le_bytes_mut())?;
        Ok(h)
    }
}

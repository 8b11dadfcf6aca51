//! A thin safe wrapper over cuDNN's backend-API descriptors: an owned descriptor (`Desc`:
//! create, set, finalize, get, destroy on drop), an owned handle on the backend's stream
//! (`Handle`), and the mapping of cuDNN's status codes to unit errors (`check`, and `refused`
//! for the configurations cuDNN may turn down).

use crate::backend::UnitError;
use crate::backend::cuda::buffers::Gpu;
use cudarc::cudnn::{result as r, sys as s};
use std::ffi::c_void;

use s::cudnnBackendAttributeName_t as A;
use s::cudnnBackendAttributeType_t as T;
use s::cudnnBackendDescriptorType_t as D;

type Status = s::cudnnStatus_t;

fn code(st: Status) -> String {
    format!("{st:?}")
}

pub(super) fn check(st: Status, what: impl FnOnce() -> String) -> Result<(), UnitError> {
    if st == Status::CUDNN_STATUS_SUCCESS {
        return Ok(());
    }
    let code = code(st);
    Err(if code.starts_with("CUDNN_STATUS_NOT_SUPPORTED") {
        UnitError::Unsupported(format!("{code} ({})", what()))
    } else {
        UnitError::Library {
            library: "cudnn".into(),
            code,
            message: what(),
        }
    })
}

/// For engines, knob choices and plans: cuDNN refusing one (not supported, or a parameter it
/// rejects for this graph) is `unsupported`; an internal or execution failure stays an error.
fn refused(st: Status, what: &str) -> Result<(), UnitError> {
    let code = code(st);
    if code.starts_with("CUDNN_STATUS_BAD_PARAM") {
        return Err(UnitError::Unsupported(format!("{code} ({what})")));
    }
    check(st, || what.to_string())
}

/// An owned backend descriptor.
pub(super) struct Desc(s::cudnnBackendDescriptor_t);

impl Drop for Desc {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: created by Desc::new and destroyed exactly once, here.
            unsafe {
                let _ = s::cudnnBackendDestroyDescriptor(self.0);
            }
        }
    }
}

impl Desc {
    /// The raw descriptor, for calls that take it (execution).
    pub(super) fn raw(&self) -> s::cudnnBackendDescriptor_t {
        self.0
    }

    pub(super) fn new(ty: D) -> Result<Desc, UnitError> {
        let mut d: s::cudnnBackendDescriptor_t = std::ptr::null_mut();
        // SAFETY: an out-pointer to a live local.
        let st = unsafe { s::cudnnBackendCreateDescriptor(ty, &mut d) };
        check(st, || format!("cudnnBackendCreateDescriptor({ty:?})"))?;
        Ok(Desc(d))
    }

    /// Sets `values` (of the C type `ty` names) on attribute `name`.
    ///
    /// # Safety
    /// `V` must have the size and layout of the C type that `ty` stands for.
    pub(super) unsafe fn set<V>(&self, name: A, ty: T, values: &[V]) -> Result<(), UnitError> {
        // SAFETY: the caller's promise on V; the slice lives across the call and cuDNN copies it.
        let st = unsafe {
            s::cudnnBackendSetAttribute(
                self.0,
                name,
                ty,
                values.len() as i64,
                values.as_ptr() as *const c_void,
            )
        };
        check(st, || format!("cudnnBackendSetAttribute({name:?})"))
    }

    pub(super) fn set_i64(&self, name: A, values: &[i64]) -> Result<(), UnitError> {
        // SAFETY: CUDNN_TYPE_INT64 is int64_t.
        unsafe { self.set(name, T::CUDNN_TYPE_INT64, values) }
    }

    pub(super) fn set_descs(&self, name: A, values: &[&Desc]) -> Result<(), UnitError> {
        let raw: Vec<s::cudnnBackendDescriptor_t> = values.iter().map(|d| d.0).collect();
        // SAFETY: CUDNN_TYPE_BACKEND_DESCRIPTOR is an array of descriptor handles.
        unsafe { self.set(name, T::CUDNN_TYPE_BACKEND_DESCRIPTOR, &raw) }
    }

    /// C enums (knob types, modes) go over as their 32-bit values, never as Rust enums, so a
    /// value newer than these bindings cannot become an invalid Rust value.
    pub(super) fn set_enum(&self, name: A, ty: T, value: u32) -> Result<(), UnitError> {
        // SAFETY: the C enums behind these attribute types are 32-bit.
        unsafe { self.set(name, ty, &[value]) }
    }

    /// The graph's and the plan's handle attributes are required in cuDNN 9.0 and deprecated
    /// later (cudnnBackendExecute takes the handle); a release that refuses them would say so at
    /// finalize, so a refusal here is not an error.
    pub(super) fn set_handle_if_known(&self, name: A, h: s::cudnnHandle_t) {
        // SAFETY: CUDNN_TYPE_HANDLE is cudnnHandle_t.
        let _ = unsafe { self.set(name, T::CUDNN_TYPE_HANDLE, &[h]) };
    }

    pub(super) fn finalize(&self, what: &str) -> Result<(), UnitError> {
        // SAFETY: a live descriptor.
        let st = unsafe { s::cudnnBackendFinalize(self.0) };
        check(st, || format!("cudnnBackendFinalize ({what})"))
    }

    /// Finalizes an engine, knob choice, engine configuration or plan (see `refused`).
    pub(super) fn finalize_config(&self, what: &str) -> Result<(), UnitError> {
        // SAFETY: a live descriptor.
        let st = unsafe { s::cudnnBackendFinalize(self.0) };
        refused(st, &format!("cudnnBackendFinalize ({what})"))
    }

    /// Reads up to `out.len()` elements; returns how many cuDNN has.
    ///
    /// # Safety
    /// `V` must have the size and layout of the C type that `ty` stands for.
    unsafe fn get<V>(&self, name: A, ty: T, out: &mut [V]) -> Result<usize, UnitError> {
        let mut n = 0i64;
        // SAFETY: the caller's promise on V; cuDNN writes at most out.len() elements.
        let st = unsafe {
            s::cudnnBackendGetAttribute(
                self.0,
                name,
                ty,
                out.len() as i64,
                &mut n,
                out.as_mut_ptr() as *mut c_void,
            )
        };
        check(st, || format!("cudnnBackendGetAttribute({name:?})"))?;
        Ok(n.max(0) as usize)
    }

    /// How many elements an attribute holds (a read of none, as cuDNN's frontend asks).
    pub(super) fn count(&self, name: A, ty: T) -> Result<usize, UnitError> {
        let mut n = 0i64;
        // SAFETY: zero elements requested and no array: cuDNN only writes the count.
        let st = unsafe {
            s::cudnnBackendGetAttribute(self.0, name, ty, 0, &mut n, std::ptr::null_mut())
        };
        check(st, || format!("cudnnBackendGetAttribute({name:?}) count"))?;
        Ok(n.max(0) as usize)
    }

    pub(super) fn get_i64(&self, name: A) -> Result<i64, UnitError> {
        let mut v = [0i64];
        // SAFETY: CUDNN_TYPE_INT64 is int64_t.
        unsafe { self.get(name, T::CUDNN_TYPE_INT64, &mut v) }?;
        Ok(v[0])
    }

    pub(super) fn get_enums(&self, name: A, ty: T, max: usize) -> Result<Vec<u32>, UnitError> {
        let mut v = vec![0u32; max];
        // SAFETY: the C enums behind these attribute types are 32-bit.
        let n = unsafe { self.get(name, ty, &mut v) }?;
        v.truncate(n.min(max));
        Ok(v)
    }

    /// Reads every descriptor an attribute holds: the count first (a read of none, as cuDNN's
    /// frontend does for heuristic results), then exactly that many.
    pub(super) fn get_all_descs(&self, name: A, ty: D) -> Result<Vec<Desc>, UnitError> {
        let n = self.count(name, T::CUDNN_TYPE_BACKEND_DESCRIPTOR)?;
        self.get_descs(name, ty, n)
    }

    /// Reads descriptors of type `ty` (cuDNN fills descriptors the caller created).
    pub(super) fn get_descs(&self, name: A, ty: D, max: usize) -> Result<Vec<Desc>, UnitError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let descs = (0..max)
            .map(|_| Desc::new(ty))
            .collect::<Result<Vec<_>, _>>()?;
        let mut raw: Vec<s::cudnnBackendDescriptor_t> = descs.iter().map(|d| d.0).collect();
        // SAFETY: an array of live descriptor handles of the type the attribute holds.
        let n = unsafe { self.get(name, T::CUDNN_TYPE_BACKEND_DESCRIPTOR, &mut raw) }?;
        let mut descs = descs;
        descs.truncate(n.min(max));
        Ok(descs)
    }
}

/// A cuDNN handle on the backend's stream.
pub(super) struct Handle(s::cudnnHandle_t);

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: created by Handle::new and destroyed once, after every descriptor that uses it
        // (owners declare it last).
        unsafe {
            let _ = r::destroy_handle(self.0);
        }
    }
}

impl Handle {
    /// The raw handle, for the attributes and calls that take it.
    pub(super) fn raw(&self) -> s::cudnnHandle_t {
        self.0
    }

    pub(super) fn new(gpu: &Gpu) -> Result<Handle, UnitError> {
        let lib = |what: &str, e: r::CudnnError| UnitError::Library {
            library: "cudnn".into(),
            code: format!("{:?}", e.0),
            message: what.to_string(),
        };
        let h = Handle(r::create_handle().map_err(|e| lib("cudnnCreate", e))?);
        // SAFETY: the handle is live; the stream outlives it (the backend owns both).
        unsafe { r::set_stream(h.0, gpu.stream.cu_stream() as _) }
            .map_err(|e| lib("cudnnSetStream", e))?;
        Ok(h)
    }
}

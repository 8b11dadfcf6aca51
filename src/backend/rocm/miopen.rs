//! MIOpen (libMIOpen.so.1): raw symbols, status codes as Results named by MIOpen, and its owned
//! handle and descriptors. Workspace and solution queries take the weight descriptor before the input
//! descriptor (see ROCM-ABI.md).

use super::hip::Ptr;
use super::loader::{self, Owned};
use crate::backend::UnitError;
use crate::backend::engine::ffi::{api, c_str};
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

pub const SONAMES: &[&str] = &["libMIOpen.so.1", "libMIOpen.so"];

pub const STATUS_UNSUPPORTED_OP: c_int = 8;
pub const STATUS_NOT_IMPLEMENTED: c_int = 6;
pub const HALF: c_int = 0;
pub const FLOAT: c_int = 1;
pub const BFLOAT16: c_int = 5;
pub const MODE_CONVOLUTION: c_int = 0;

/// miopenConvSolution_t (32 bytes on x86-64).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ConvSolution {
    pub time: f32,
    pub workspace_size: usize,
    pub solution_id: u64,
    pub algorithm: c_int,
}

/// miopenConvAlgoPerf_t (16 bytes): the first member is a union of the three algorithm enums.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ConvAlgoPerf {
    pub algo: c_int,
    pub time: f32,
    pub memory: usize,
}

type D = Ptr; // descriptors and handles are opaque pointers

api! {
    pub struct MiopenApi {
        required {
            miopenCreate: fn(*mut D) -> c_int;
            miopenDestroy: fn(D) -> c_int;
            miopenSetStream: fn(D, Ptr) -> c_int;
            miopenGetVersion: fn(*mut usize, *mut usize, *mut usize) -> c_int;
            miopenGetErrorString: fn(c_int) -> *const c_char;
            miopenCreateTensorDescriptor: fn(*mut D) -> c_int;
            miopenDestroyTensorDescriptor: fn(D) -> c_int;
            miopenSetTensorDescriptor: fn(D, c_int, c_int, *const c_int, *const c_int) -> c_int;
            miopenCreateConvolutionDescriptor: fn(*mut D) -> c_int;
            miopenDestroyConvolutionDescriptor: fn(D) -> c_int;
            miopenInitConvolutionDescriptor: fn(D, c_int, c_int, c_int, c_int, c_int, c_int, c_int) -> c_int;
            miopenSetConvolutionGroupCount: fn(D, c_int) -> c_int;
            miopenConvolutionForwardGetSolutionCount: fn(D, D, D, D, D, *mut usize) -> c_int;
            miopenConvolutionForwardGetSolution: fn(D, D, D, D, D, usize, *mut usize, *mut ConvSolution) -> c_int;
            miopenConvolutionForwardGetSolutionWorkspaceSize: fn(D, D, D, D, D, u64, *mut usize) -> c_int;
            miopenConvolutionForwardCompileSolution: fn(D, D, D, D, D, u64) -> c_int;
            miopenConvolutionForwardImmediate: fn(D, D, *const c_void, D, *const c_void, D, D, Ptr, Ptr, usize, u64) -> c_int;
            miopenConvolutionBackwardDataGetSolutionCount: fn(D, D, D, D, D, *mut usize) -> c_int;
            miopenConvolutionBackwardDataGetSolution: fn(D, D, D, D, D, usize, *mut usize, *mut ConvSolution) -> c_int;
            miopenConvolutionBackwardDataGetSolutionWorkspaceSize: fn(D, D, D, D, D, u64, *mut usize) -> c_int;
            miopenConvolutionBackwardDataCompileSolution: fn(D, D, D, D, D, u64) -> c_int;
            miopenConvolutionBackwardDataImmediate: fn(D, D, *const c_void, D, *const c_void, D, D, Ptr, Ptr, usize, u64) -> c_int;
            miopenConvolutionBackwardWeightsGetSolutionCount: fn(D, D, D, D, D, *mut usize) -> c_int;
            miopenConvolutionBackwardWeightsGetSolution: fn(D, D, D, D, D, usize, *mut usize, *mut ConvSolution) -> c_int;
            miopenConvolutionBackwardWeightsGetSolutionWorkspaceSize: fn(D, D, D, D, D, u64, *mut usize) -> c_int;
            miopenConvolutionBackwardWeightsCompileSolution: fn(D, D, D, D, D, u64) -> c_int;
            miopenConvolutionBackwardWeightsImmediate: fn(D, D, *const c_void, D, *const c_void, D, D, Ptr, Ptr, usize, u64) -> c_int;
            miopenFindConvolutionForwardAlgorithm: fn(
                D, D, *const c_void, D, *const c_void, D, D, Ptr, c_int, *mut c_int,
                *mut ConvAlgoPerf, Ptr, usize, bool,
            ) -> c_int;
            miopenConvolutionForward: fn(
                D, *const c_void, D, *const c_void, D, *const c_void, D, c_int, *const c_void, D,
                Ptr, Ptr, usize,
            ) -> c_int;
            miopenFindConvolutionBackwardDataAlgorithm: fn(
                D, D, *const c_void, D, *const c_void, D, D, Ptr, c_int, *mut c_int,
                *mut ConvAlgoPerf, Ptr, usize, bool,
            ) -> c_int;
            miopenConvolutionBackwardData: fn(
                D, *const c_void, D, *const c_void, D, *const c_void, D, c_int, *const c_void, D,
                Ptr, Ptr, usize,
            ) -> c_int;
            miopenFindConvolutionBackwardWeightsAlgorithm: fn(
                D, D, *const c_void, D, *const c_void, D, D, Ptr, c_int, *mut c_int,
                *mut ConvAlgoPerf, Ptr, usize, bool,
            ) -> c_int;
            miopenConvolutionBackwardWeights: fn(
                D, *const c_void, D, *const c_void, D, *const c_void, D, c_int, *const c_void, D,
                Ptr, Ptr, usize,
            ) -> c_int;
        }
        optional {
            miopenGetSolverIdConvAlgorithm: fn(u64, *mut c_int) -> c_int;
        }
    }
}

pub struct Miopen {
    pub api: MiopenApi,
    pub path: String,
}

pub type MiopenRef = Arc<Miopen>;

impl Miopen {
    pub fn load() -> Result<MiopenRef, String> {
        let l = loader::open(SONAMES).map_err(|e| format!("MIOpen (libMIOpen) {e}"))?;
        let api = MiopenApi::load(l.lib).map_err(|e| format!("{}: {e}", l.path))?;
        Ok(Arc::new(Miopen { api, path: l.path }))
    }

    pub fn version(&self) -> Option<String> {
        let (mut a, mut b, mut c) = (0, 0, 0);
        // SAFETY: out-pointers to live integers.
        (unsafe { (self.api.miopenGetVersion)(&mut a, &mut b, &mut c) } == 0)
            .then(|| format!("{a}.{b}.{c}"))
    }

    /// The status's own name; unsupported problems and solvers become `unsupported`.
    pub fn check(&self, rc: c_int, what: &str) -> Result<(), UnitError> {
        if rc == 0 {
            return Ok(());
        }
        let name = status_name(rc);
        // SAFETY: miopenGetErrorString returns a static NUL-terminated string for any code.
        let text = unsafe { c_str((self.api.miopenGetErrorString)(rc)) };
        if rc == STATUS_UNSUPPORTED_OP || rc == STATUS_NOT_IMPLEMENTED {
            return Err(UnitError::Unsupported(format!(
                "{name} from {what}: {text}"
            )));
        }
        Err(UnitError::library(
            "miopen",
            name,
            format!("{what}: {text}"),
        ))
    }
}

pub fn status_name(rc: c_int) -> String {
    match rc {
        0 => "miopenStatusSuccess".into(),
        1 => "miopenStatusNotInitialized".into(),
        2 => "miopenStatusInvalidValue".into(),
        3 => "miopenStatusBadParm".into(),
        4 => "miopenStatusAllocFailed".into(),
        5 => "miopenStatusInternalError".into(),
        6 => "miopenStatusNotImplemented".into(),
        7 => "miopenStatusUnknownError".into(),
        8 => "miopenStatusUnsupportedOp".into(),
        9 => "miopenStatusGpuOperationsSkipped".into(),
        10 => "miopenStatusVersionMismatch".into(),
        other => format!("miopenStatus#{other}"),
    }
}

/// A MIOpen handle bound to a stream.
pub type Handle = Owned<Miopen>;

/// A MIOpen handle on `stream`.
pub fn handle(lib: &MiopenRef, stream: Ptr) -> Result<Handle, UnitError> {
    let a = &lib.api;
    // SAFETY: out-pointer to a live handle.
    let create = |r| unsafe { (a.miopenCreate)(r) };
    let h = Owned::make(
        lib,
        create,
        |rc| lib.check(rc, "miopenCreate"),
        a.miopenDestroy,
    )?;
    // SAFETY: a live handle and stream.
    lib.check(
        unsafe { (a.miopenSetStream)(h.raw, stream) },
        "miopenSetStream",
    )?;
    Ok(h)
}

/// A 4-d tensor descriptor: dims in NCHW order, strides giving the memory layout.
pub type TensorDesc = Owned<Miopen>;

pub fn tensor(
    lib: &MiopenRef,
    dtype: c_int,
    dims: [usize; 4],
    nhwc: bool,
) -> Result<TensorDesc, UnitError> {
    let [_, c, h, w] = dims;
    let strides = if nhwc {
        [h * w * c, 1, w * c, c]
    } else {
        [c * h * w, h * w, w, 1]
    };
    let ints = |v: [usize; 4]| {
        v.iter()
            .map(|&v| c_int::try_from(v))
            .collect::<Result<Vec<c_int>, _>>()
            .map_err(|_| UnitError::Unsupported("a tensor dimension exceeds MIOpen's int".into()))
    };
    let (d, s) = (ints(dims)?, ints(strides)?);
    let a = &lib.api;
    // SAFETY: out-pointer to a live handle.
    let create = |r| unsafe { (a.miopenCreateTensorDescriptor)(r) };
    let check = |rc| lib.check(rc, "miopenCreateTensorDescriptor");
    let t = Owned::make(lib, create, check, a.miopenDestroyTensorDescriptor)?;
    // SAFETY: dims and strides hold 4 ints each.
    lib.check(
        unsafe { (a.miopenSetTensorDescriptor)(t.raw, dtype, 4, d.as_ptr(), s.as_ptr()) },
        "miopenSetTensorDescriptor",
    )?;
    Ok(t)
}

/// A convolution descriptor.
pub type ConvDesc = Owned<Miopen>;

pub fn convolution(
    lib: &MiopenRef,
    pad: (usize, usize),
    stride: (usize, usize),
    dil: (usize, usize),
    groups: usize,
) -> Result<ConvDesc, UnitError> {
    let i = |v: usize| c_int::try_from(v).unwrap_or(c_int::MAX);
    let a = &lib.api;
    // SAFETY: out-pointer to a live handle.
    let create = |r| unsafe { (a.miopenCreateConvolutionDescriptor)(r) };
    let check = |rc| lib.check(rc, "miopenCreateConvolutionDescriptor");
    let c = Owned::make(lib, create, check, a.miopenDestroyConvolutionDescriptor)?;
    // SAFETY: a live descriptor.
    lib.check(
        unsafe {
            (a.miopenInitConvolutionDescriptor)(
                c.raw,
                MODE_CONVOLUTION,
                i(pad.0),
                i(pad.1),
                i(stride.0),
                i(stride.1),
                i(dil.0),
                i(dil.1),
            )
        },
        "miopenInitConvolutionDescriptor",
    )?;
    if groups > 1 {
        // SAFETY: a live descriptor.
        lib.check(
            unsafe { (a.miopenSetConvolutionGroupCount)(c.raw, i(groups)) },
            "miopenSetConvolutionGroupCount",
        )?;
    }
    Ok(c)
}

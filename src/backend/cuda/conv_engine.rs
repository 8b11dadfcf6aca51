//! Convolutions through cuDNN's backend ("graph") API, the one cuDNN's frontend and PyTorch use:
//! the convolution is an operation graph, cuDNN's heuristics (mode A, then the fallback list)
//! name the engine configurations that can run it, and each configuration is its own solver
//! unit, named `eng<global index>` plus its knob choices (`eng12-k3=2,k5=1`: knob type 3 set to
//! 2, knob type 5 set to 1; `k<N>` is cudnnBackendKnobType_t value N). The name is the whole
//! configuration: `prepare` rebuilds exactly that engine with exactly those knobs, so a unit can
//! be re-run from its name alone, in another process or another run.
//!
//! Which configurations `all` gets, in this order, without repeats:
//! - the first `HEURISTIC_LIMIT` (10, as many as PyTorch's benchmark mode times:
//!   `torch.backends.cudnn.benchmark_limit`) of mode A's list, then
//! - up to `FALLBACK_LIMIT` (10) of the fallback list that mode A did not already name (both
//!   counts can be set per run with the environment variables `HEURISTIC_LIMIT_VAR` and
//!   `FALLBACK_LIMIT_VAR`, e.g. in the sweep's `[env]`);
//! - leaving out what PyTorch leaves out with TF32 off: configurations whose numerical notes say
//!   they down-convert their inputs, and, for f32 data, configurations on tensor cores (TF32).
//!   f32 convolutions thus stay FMA math, as on the legacy path.
//!
//! Where no list can be had (the heuristic fails, or leaves nothing), `all` gets the single unit
//! `engine_heuristic` (mode A's first usable configuration) instead, so the failure is a row with
//! cuDNN's status name rather than a silent gap. A configuration whose engine or execution plan
//! does not finalize is `unsupported` with cuDNN's status name.

use super::blocker::timed;
use super::buffers::{DevBuf, Gpu, workspace, ws_ptr};
use super::conv::TRANSFORM_ERROR_FACTOR;
use crate::backend::{PhaseSink, Prepared, UnitError};
use crate::dtype::DType;
use crate::op::conv2d::{Conv2d, ConvInputs, Direction, Layout};
use crate::tensor::HostData;
use crate::timing::{Batch, Sample};
use cudarc::cudnn::{result as r, sys as s};
use cudarc::driver::CudaSlice;
use std::ffi::c_void;
use std::fmt;

use s::cudnnBackendAttributeName_t as A;
use s::cudnnBackendAttributeType_t as T;
use s::cudnnBackendDescriptorType_t as D;
use s::cudnnBackendNumericalNote_t as N;

/// The solver that runs mode A's first usable configuration (what `all` falls back to).
pub const HEURISTIC: &str = "engine_heuristic";
/// Mode A configurations kept per problem by default: as many as PyTorch's benchmark mode times
/// (`benchmark_limit`), so rocsweep's search covers what PyTorch's does.
pub const HEURISTIC_LIMIT: usize = 10;
/// Fallback configurations kept per problem by default, beyond those mode A named. With TF32 off,
/// mode A's list for an f32 problem can hold only two or three usable configurations; on the
/// H200 PyTorch's pick for 512->512 3x3 stride 2 at 14x14 came from the fallback list (with 2
/// from it rocsweep's best was 0.80x PyTorch's, with 10 it matched).
pub const FALLBACK_LIMIT: usize = 10;
/// Environment variables that override the two counts (read by the worker).
pub const HEURISTIC_LIMIT_VAR: &str = "ROCSWEEP_CUDNN_HEURISTIC_CONFIGS";
pub const FALLBACK_LIMIT_VAR: &str = "ROCSWEEP_CUDNN_FALLBACK_CONFIGS";

/// (mode A, fallback) configurations kept per problem: the variables' values, else the defaults.
pub fn limits() -> (usize, usize) {
    let read = |var: &str, default: usize| {
        std::env::var(var)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(default)
    };
    (
        read(HEURISTIC_LIMIT_VAR, HEURISTIC_LIMIT),
        read(FALLBACK_LIMIT_VAR, FALLBACK_LIMIT),
    )
}
/// Numerical notes read from one engine: as many as there are note types, as cuDNN's frontend
/// asks (an engine has a few).
const MAX_NOTES: usize = N::CUDNN_NUMERICAL_NOTE_TYPE_COUNT as usize;
/// cudaMalloc'd buffers are 256-byte aligned; 16 is what cuDNN's vectorised kernels look for.
const ALIGNMENT: i64 = 16;

/// One engine configuration: cuDNN's global engine index and its knob choices, sorted by knob
/// type. Its `Display` form is the solver name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineConfig {
    pub engine: i64,
    pub knobs: Vec<(u32, i64)>,
}

impl EngineConfig {
    pub fn new(engine: i64, mut knobs: Vec<(u32, i64)>) -> EngineConfig {
        knobs.sort_unstable();
        knobs.dedup();
        EngineConfig { engine, knobs }
    }

    /// Parses a solver name; only the canonical form (the one `Display` writes) is accepted, so
    /// one configuration has exactly one name.
    pub fn parse(name: &str) -> Option<EngineConfig> {
        let rest = name.strip_prefix("eng")?;
        let (index, knobs) = match rest.split_once('-') {
            Some((i, k)) => (i, Some(k)),
            None => (rest, None),
        };
        if index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let engine = index.parse().ok()?;
        let mut parsed = Vec::new();
        for knob in knobs.map(|k| k.split(',')).into_iter().flatten() {
            let (ty, value) = knob.strip_prefix('k')?.split_once('=')?;
            if ty.is_empty() || !ty.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            parsed.push((ty.parse().ok()?, value.parse().ok()?));
        }
        let config = EngineConfig::new(engine, parsed);
        (config.to_string() == name).then_some(config)
    }
}

impl fmt::Display for EngineConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "eng{}", self.engine)?;
        for (i, (ty, value)) in self.knobs.iter().enumerate() {
            let sep = if i == 0 { '-' } else { ',' };
            write!(f, "{sep}k{ty}={value}")?;
        }
        Ok(())
    }
}

/// Whether a solver name belongs to this module (an engine configuration or `engine_heuristic`).
pub fn is_engine_solver(name: &str) -> bool {
    name == HEURISTIC || EngineConfig::parse(name).is_some()
}

/// Dimensions and strides of one tensor, dimensions always in N, C, H, W order (the backend API
/// describes every layout by its strides).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorShape {
    pub dims: [i64; 4],
    pub strides: [i64; 4],
}

impl TensorShape {
    /// A packed tensor of `dims` (n, c, h, w) stored in `layout` (NHWC filters are KRSC).
    pub fn packed(dims: [i64; 4], layout: Layout) -> TensorShape {
        let [_, c, h, w] = dims;
        let strides = match layout {
            Layout::Nchw => [c * h * w, h * w, w, 1],
            Layout::Nhwc => [h * w * c, 1, w * c, c],
        };
        TensorShape { dims, strides }
    }
}

/// The x, w and y tensors of a problem (y is dy and x is dx in the backward directions).
pub fn tensor_shapes(p: &Conv2d) -> [TensorShape; 3] {
    let g = &p.geom;
    let i = |v: usize| v as i64;
    [
        [i(g.n), i(g.c_in), i(g.h), i(g.w)],
        [i(g.c_out), i(g.c_in / g.groups.max(1)), i(g.kh), i(g.kw)],
        [i(g.n), i(g.c_out), i(g.out_h()), i(g.out_w())],
    ]
    .map(|dims| TensorShape::packed(dims, p.layout))
}

/// Unique ids of x, w and y in the graph and the variant pack.
const UID_X: i64 = 1;
const UID_W: i64 = 2;
const UID_Y: i64 = 3;

/// Which tensor uid each of the unit's buffers (a, b, out) is, per direction.
pub fn operand_uids(d: Direction) -> [i64; 3] {
    match d {
        Direction::Fwd => [UID_X, UID_W, UID_Y],
        Direction::BwdData => [UID_Y, UID_W, UID_X],
        Direction::BwdWeights => [UID_X, UID_Y, UID_W],
    }
}

/// Pre/post paddings, strides and dilations of the convolution descriptor, as (h, w) pairs.
pub fn conv_params(p: &Conv2d) -> [[i64; 2]; 4] {
    let g = &p.geom;
    let i = |v: usize| v as i64;
    [
        [i(g.pad_h), i(g.pad_w)],
        [i(g.pad_h), i(g.pad_w)],
        [i(g.stride_h), i(g.stride_w)],
        [i(g.dil_h), i(g.dil_w)],
    ]
}

fn has(notes: &[u32], n: N) -> bool {
    notes.contains(&(n as u32))
}

/// FFT and Winograd engines round in the transformed domain too (see conv.rs).
pub fn is_transform(notes: &[u32]) -> bool {
    [
        N::CUDNN_NUMERICAL_NOTE_FFT,
        N::CUDNN_NUMERICAL_NOTE_WINOGRAD,
        N::CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4,
        N::CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6,
        N::CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13,
    ]
    .into_iter()
    .any(|n| has(notes, n))
}

/// Why `all` leaves a configuration out, from its engine's numerical notes (None: kept).
pub fn excluded(notes: &[u32], dtype: DType) -> Option<&'static str> {
    if has(notes, N::CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) {
        Some("it down-converts its inputs")
    } else if dtype == DType::F32 && has(notes, N::CUDNN_NUMERICAL_NOTE_TENSOR_CORE) {
        Some("it runs f32 data on tensor cores (TF32)")
    } else {
        None
    }
}

/// One configuration a heuristic named, with its engine's numerical notes.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub config: EngineConfig,
    pub notes: Vec<u32>,
}

/// The configurations `all` runs, from mode A's list and the fallback list (see the module doc).
pub fn select(
    mode_a: &[Candidate],
    fallback: &[Candidate],
    dtype: DType,
    (limit_a, limit_fallback): (usize, usize),
) -> Vec<EngineConfig> {
    let mut out: Vec<EngineConfig> = Vec::new();
    for (list, limit) in [(mode_a, limit_a), (fallback, limit_fallback)] {
        let mut taken = 0;
        for c in list {
            if taken == limit {
                break;
            }
            if excluded(&c.notes, dtype).is_none() && !out.contains(&c.config) {
                out.push(c.config.clone());
                taken += 1;
            }
        }
    }
    out
}

// ---- cuDNN calls -------------------------------------------------------------------------

type Status = s::cudnnStatus_t;

fn code(st: Status) -> String {
    format!("{st:?}")
}

fn check(st: Status, what: impl FnOnce() -> String) -> Result<(), UnitError> {
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
struct Desc(s::cudnnBackendDescriptor_t);

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
    fn new(ty: D) -> Result<Desc, UnitError> {
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
    unsafe fn set<V>(&self, name: A, ty: T, values: &[V]) -> Result<(), UnitError> {
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

    fn set_i64(&self, name: A, values: &[i64]) -> Result<(), UnitError> {
        // SAFETY: CUDNN_TYPE_INT64 is int64_t.
        unsafe { self.set(name, T::CUDNN_TYPE_INT64, values) }
    }

    fn set_descs(&self, name: A, values: &[&Desc]) -> Result<(), UnitError> {
        let raw: Vec<s::cudnnBackendDescriptor_t> = values.iter().map(|d| d.0).collect();
        // SAFETY: CUDNN_TYPE_BACKEND_DESCRIPTOR is an array of descriptor handles.
        unsafe { self.set(name, T::CUDNN_TYPE_BACKEND_DESCRIPTOR, &raw) }
    }

    /// C enums (knob types, modes) go over as their 32-bit values, never as Rust enums, so a
    /// value newer than these bindings cannot become an invalid Rust value.
    fn set_enum(&self, name: A, ty: T, value: u32) -> Result<(), UnitError> {
        // SAFETY: the C enums behind these attribute types are 32-bit.
        unsafe { self.set(name, ty, &[value]) }
    }

    /// The graph's and the plan's handle attributes are required in cuDNN 9.0 and deprecated
    /// later (cudnnBackendExecute takes the handle); a release that refuses them would say so at
    /// finalize, so a refusal here is not an error.
    fn set_handle_if_known(&self, name: A, h: s::cudnnHandle_t) {
        // SAFETY: CUDNN_TYPE_HANDLE is cudnnHandle_t.
        let _ = unsafe { self.set(name, T::CUDNN_TYPE_HANDLE, &[h]) };
    }

    fn finalize(&self, what: &str) -> Result<(), UnitError> {
        // SAFETY: a live descriptor.
        let st = unsafe { s::cudnnBackendFinalize(self.0) };
        check(st, || format!("cudnnBackendFinalize ({what})"))
    }

    /// Finalizes an engine, knob choice, engine configuration or plan (see `refused`).
    fn finalize_config(&self, what: &str) -> Result<(), UnitError> {
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
    fn count(&self, name: A, ty: T) -> Result<usize, UnitError> {
        let mut n = 0i64;
        // SAFETY: zero elements requested and no array: cuDNN only writes the count.
        let st = unsafe {
            s::cudnnBackendGetAttribute(self.0, name, ty, 0, &mut n, std::ptr::null_mut())
        };
        check(st, || format!("cudnnBackendGetAttribute({name:?}) count"))?;
        Ok(n.max(0) as usize)
    }

    fn get_i64(&self, name: A) -> Result<i64, UnitError> {
        let mut v = [0i64];
        // SAFETY: CUDNN_TYPE_INT64 is int64_t.
        unsafe { self.get(name, T::CUDNN_TYPE_INT64, &mut v) }?;
        Ok(v[0])
    }

    fn get_enums(&self, name: A, ty: T, max: usize) -> Result<Vec<u32>, UnitError> {
        let mut v = vec![0u32; max];
        // SAFETY: the C enums behind these attribute types are 32-bit.
        let n = unsafe { self.get(name, ty, &mut v) }?;
        v.truncate(n.min(max));
        Ok(v)
    }

    /// Reads every descriptor an attribute holds: the count first (a read of none, as cuDNN's
    /// frontend does for heuristic results), then exactly that many.
    fn get_all_descs(&self, name: A, ty: D) -> Result<Vec<Desc>, UnitError> {
        let n = self.count(name, T::CUDNN_TYPE_BACKEND_DESCRIPTOR)?;
        self.get_descs(name, ty, n)
    }

    /// Reads descriptors of type `ty` (cuDNN fills descriptors the caller created).
    fn get_descs(&self, name: A, ty: D, max: usize) -> Result<Vec<Desc>, UnitError> {
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
struct Handle(s::cudnnHandle_t);

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
    fn new(gpu: &Gpu) -> Result<Handle, UnitError> {
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

fn data_type(d: DType) -> s::cudnnDataType_t {
    match d {
        DType::F16 => s::cudnnDataType_t::CUDNN_DATA_HALF,
        DType::Bf16 => s::cudnnDataType_t::CUDNN_DATA_BFLOAT16,
        _ => s::cudnnDataType_t::CUDNN_DATA_FLOAT,
    }
}

/// The operation graph of one convolution, with the descriptors it was built from.
struct OpGraph {
    graph: Desc,
    _parts: Vec<Desc>,
    dtype: DType,
    handle: Handle,
}

impl OpGraph {
    fn new(gpu: &Gpu, p: &Conv2d) -> Result<OpGraph, UnitError> {
        let handle = Handle::new(gpu)?;
        let [xs, ws, ys] = tensor_shapes(p);
        let tensor = |uid: i64, shape: TensorShape| -> Result<Desc, UnitError> {
            let t = Desc::new(D::CUDNN_BACKEND_TENSOR_DESCRIPTOR)?;
            // SAFETY: CUDNN_TYPE_DATA_TYPE is cudnnDataType_t, a valid value of it.
            unsafe {
                t.set(
                    A::CUDNN_ATTR_TENSOR_DATA_TYPE,
                    T::CUDNN_TYPE_DATA_TYPE,
                    &[data_type(p.dtype)],
                )
            }?;
            t.set_i64(A::CUDNN_ATTR_TENSOR_DIMENSIONS, &shape.dims)?;
            t.set_i64(A::CUDNN_ATTR_TENSOR_STRIDES, &shape.strides)?;
            t.set_i64(A::CUDNN_ATTR_TENSOR_UNIQUE_ID, &[uid])?;
            t.set_i64(A::CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, &[ALIGNMENT])?;
            t.finalize("tensor")?;
            Ok(t)
        };
        let (x, w, y) = (tensor(UID_X, xs)?, tensor(UID_W, ws)?, tensor(UID_Y, ys)?);

        let conv = Desc::new(D::CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR)?;
        // f32 accumulation for every dtype, as PyTorch asks for f16 and bf16.
        // SAFETY: CUDNN_TYPE_DATA_TYPE is cudnnDataType_t, a valid value of it.
        unsafe {
            conv.set(
                A::CUDNN_ATTR_CONVOLUTION_COMP_TYPE,
                T::CUDNN_TYPE_DATA_TYPE,
                &[s::cudnnDataType_t::CUDNN_DATA_FLOAT],
            )
        }?;
        conv.set_enum(
            A::CUDNN_ATTR_CONVOLUTION_CONV_MODE,
            T::CUDNN_TYPE_CONVOLUTION_MODE,
            s::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION as u32,
        )?;
        let [pre, post, stride, dil] = conv_params(p);
        conv.set_i64(A::CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, &[2])?;
        conv.set_i64(A::CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, &pre)?;
        conv.set_i64(A::CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, &post)?;
        conv.set_i64(A::CUDNN_ATTR_CONVOLUTION_DILATIONS, &dil)?;
        conv.set_i64(A::CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, &stride)?;
        conv.finalize("convolution")?;

        let (op_ty, attrs) = match p.direction {
            Direction::Fwd => (
                D::CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                [
                    (A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, &x),
                    (A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, &w),
                    (A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, &y),
                    (A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, &conv),
                ],
            ),
            Direction::BwdData => (
                D::CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                [
                    (A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, &x),
                    (A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, &w),
                    (A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, &y),
                    (
                        A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                        &conv,
                    ),
                ],
            ),
            Direction::BwdWeights => (
                D::CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
                [
                    (A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, &x),
                    (A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, &w),
                    (A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, &y),
                    (
                        A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                        &conv,
                    ),
                ],
            ),
        };
        let (alpha, beta) = match p.direction {
            Direction::Fwd => (
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
            ),
            Direction::BwdData => (
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
            ),
            Direction::BwdWeights => (
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
                A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
            ),
        };
        let op = Desc::new(op_ty)?;
        for (name, d) in attrs {
            op.set_descs(name, &[d])?;
        }
        // SAFETY: CUDNN_TYPE_FLOAT is float (the scaling type of an f32-compute operation).
        unsafe {
            op.set(alpha, T::CUDNN_TYPE_FLOAT, &[1.0f32])?;
            op.set(beta, T::CUDNN_TYPE_FLOAT, &[0.0f32])?;
        }
        op.finalize("convolution operation")?;

        let graph = Desc::new(D::CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR)?;
        graph.set_handle_if_known(A::CUDNN_ATTR_OPERATIONGRAPH_HANDLE, handle.0);
        graph.set_descs(A::CUDNN_ATTR_OPERATIONGRAPH_OPS, &[&op])?;
        graph.finalize("operation graph")?;
        Ok(OpGraph {
            graph,
            _parts: vec![op, conv, x, w, y],
            dtype: p.dtype,
            handle,
        })
    }

    /// The configurations a heuristic mode names, in its order.
    fn heuristic(&self, mode: s::cudnnBackendHeurMode_t) -> Result<Vec<Candidate>, UnitError> {
        let heur = Desc::new(D::CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR)?;
        heur.set_descs(A::CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, &[&self.graph])?;
        heur.set_enum(
            A::CUDNN_ATTR_ENGINEHEUR_MODE,
            T::CUDNN_TYPE_HEUR_MODE,
            mode as u32,
        )?;
        heur.finalize(&format!("engine heuristic {mode:?}"))?;
        let configs = heur.get_all_descs(
            A::CUDNN_ATTR_ENGINEHEUR_RESULTS,
            D::CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
        )?;
        let mut out = Vec::new();
        let mut first_err = None;
        for cfg in &configs {
            match describe(cfg) {
                Ok(c) => out.push(c),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(e) if out.is_empty() => Err(e),
            _ => Ok(out),
        }
    }

    /// What `all` runs for this graph (see the module doc).
    fn configs(&self) -> Result<Vec<EngineConfig>, UnitError> {
        use s::cudnnBackendHeurMode_t as M;
        let a = self.heuristic(M::CUDNN_HEUR_MODE_A);
        let fallback = self.heuristic(M::CUDNN_HEUR_MODE_FALLBACK);
        match (a, fallback) {
            (Err(e), Err(_)) => Err(e),
            (a, f) => Ok(select(
                &a.unwrap_or_default(),
                &f.unwrap_or_default(),
                self.dtype,
                limits(),
            )),
        }
    }
}

/// Engine index, knob choices and numerical notes of a configuration cuDNN returned.
fn describe(cfg: &Desc) -> Result<Candidate, UnitError> {
    let engine = cfg
        .get_descs(
            A::CUDNN_ATTR_ENGINECFG_ENGINE,
            D::CUDNN_BACKEND_ENGINE_DESCRIPTOR,
            1,
        )?
        .pop()
        .ok_or_else(|| UnitError::Library {
            library: "cudnn".into(),
            code: "NO_ENGINE".into(),
            message: "an engine configuration without an engine".into(),
        })?;
    let index = engine.get_i64(A::CUDNN_ATTR_ENGINE_GLOBAL_INDEX)?;
    let notes = notes(&engine)?;
    let mut knobs = Vec::new();
    // A read of none reports no knob choices (cuDNN 9.14 on an H200): ask for one per knob
    // type, as cuDNN's frontend and XLA do, and cuDNN says how many it filled.
    let max = cfg
        .count(
            A::CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
            T::CUDNN_TYPE_BACKEND_DESCRIPTOR,
        )
        .unwrap_or(0)
        .max(s::cudnnBackendKnobType_t::CUDNN_KNOB_TYPE_COUNTS as usize);
    for k in cfg.get_descs(
        A::CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
        D::CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR,
        max,
    )? {
        let ty = k.get_enums(
            A::CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
            T::CUDNN_TYPE_KNOB_TYPE,
            1,
        )?;
        let value = k.get_i64(A::CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE)?;
        if let Some(&ty) = ty.first() {
            knobs.push((ty, value));
        }
    }
    Ok(Candidate {
        config: EngineConfig::new(index, knobs),
        notes,
    })
}

fn notes(engine: &Desc) -> Result<Vec<u32>, UnitError> {
    engine.get_enums(
        A::CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
        T::CUDNN_TYPE_NUMERICAL_NOTE,
        MAX_NOTES,
    )
}

/// The engine configurations `all` runs for a problem, as solver names; `engine_heuristic`
/// alone where cuDNN gives no list (its unit then reports why).
pub fn solver_list(gpu: &Gpu, p: &Conv2d) -> Vec<String> {
    match OpGraph::new(gpu, p).and_then(|g| g.configs()) {
        Ok(list) if !list.is_empty() => list.iter().map(|c| c.to_string()).collect(),
        _ => vec![HEURISTIC.to_string()],
    }
}

/// A finalized execution plan and everything it was built from.
struct Plan {
    plan: Desc,
    _config: Desc,
    _knobs: Vec<Desc>,
    _engine: Desc,
    notes: Vec<u32>,
    ws_bytes: usize,
}

fn plan(g: &OpGraph, c: &EngineConfig) -> Result<Plan, UnitError> {
    let engine = Desc::new(D::CUDNN_BACKEND_ENGINE_DESCRIPTOR)?;
    engine.set_descs(A::CUDNN_ATTR_ENGINE_OPERATION_GRAPH, &[&g.graph])?;
    engine.set_i64(A::CUDNN_ATTR_ENGINE_GLOBAL_INDEX, &[c.engine])?;
    engine.finalize_config(&format!("engine {}", c.engine))?;
    let notes = notes(&engine)?;
    let mut knobs = Vec::new();
    for &(ty, value) in &c.knobs {
        let k = Desc::new(D::CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR)?;
        k.set_enum(
            A::CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
            T::CUDNN_TYPE_KNOB_TYPE,
            ty,
        )?;
        k.set_i64(A::CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, &[value])?;
        k.finalize_config(&format!("knob k{ty}={value}"))?;
        knobs.push(k);
    }
    let config = Desc::new(D::CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)?;
    config.set_descs(A::CUDNN_ATTR_ENGINECFG_ENGINE, &[&engine])?;
    if !knobs.is_empty() {
        let refs: Vec<&Desc> = knobs.iter().collect();
        config.set_descs(A::CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, &refs)?;
    }
    config.finalize_config(&format!("engine configuration {c}"))?;
    let plan = Desc::new(D::CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)?;
    plan.set_handle_if_known(A::CUDNN_ATTR_EXECUTION_PLAN_HANDLE, g.handle.0);
    plan.set_descs(A::CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, &[&config])?;
    plan.finalize_config(&format!("execution plan {c}"))?;
    let ws = plan.get_i64(A::CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE)?;
    Ok(Plan {
        plan,
        _config: config,
        _knobs: knobs,
        _engine: engine,
        notes,
        ws_bytes: ws.max(0) as usize,
    })
}

/// The configuration a solver name stands for (`engine_heuristic`: mode A's first usable one).
fn resolve(g: &OpGraph, solver: &str) -> Result<EngineConfig, UnitError> {
    if solver == HEURISTIC {
        let list = g.heuristic(s::cudnnBackendHeurMode_t::CUDNN_HEUR_MODE_A)?;
        return list
            .into_iter()
            .find(|c| excluded(&c.notes, g.dtype).is_none())
            .map(|c| c.config)
            .ok_or_else(|| {
                UnitError::Unsupported(
                    "cuDNN's heuristic (mode A) names no usable engine configuration".into(),
                )
            });
    }
    EngineConfig::parse(solver).ok_or_else(|| {
        UnitError::Unsupported(format!(
            "`{solver}` is not an engine configuration name (eng<index>[-k<type>=<value>,...])"
        ))
    })
}

pub struct EngineRun {
    gpu: Gpu,
    vpack: Desc,
    plan: Plan,
    // The variant pack holds these buffers' addresses; they live as long as it does.
    _ws: Option<CudaSlice<u8>>,
    _a: DevBuf,
    _b: DevBuf,
    out: DevBuf,
    graph: OpGraph,
    /// The engine configuration run (what `heuristic` resolved to).
    config: String,
}

pub fn prepare(
    gpu: &Gpu,
    p: &Conv2d,
    solver: &str,
    i: &ConvInputs,
    phases: &mut dyn PhaseSink,
) -> Result<Box<dyn Prepared>, UnitError> {
    let graph = OpGraph::new(gpu, p)?;
    let config = resolve(&graph, solver)?;
    let plan = plan(&graph, &config)?;
    phases.phase("alloc");
    let a = DevBuf::upload(gpu, &i.a)?;
    let b = DevBuf::upload(gpu, &i.b)?;
    let mut out = DevBuf::zeros(gpu, p.dtype, p.output_len())?;
    let mut ws = workspace(gpu, plan.ws_bytes)?;
    let ptrs: [*mut c_void; 3] = [
        a.ptr(gpu) as *mut c_void,
        b.ptr(gpu) as *mut c_void,
        out.ptr_mut(gpu) as *mut c_void,
    ];
    let ws_p = ws_ptr(gpu, &mut ws) as *mut c_void;
    let vpack = Desc::new(D::CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)?;
    vpack.set_i64(
        A::CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
        &operand_uids(p.direction),
    )?;
    // SAFETY: CUDNN_TYPE_VOID_PTR is void*; the buffers are owned by the EngineRun that owns the
    // variant pack, so the addresses stay valid for every execution.
    unsafe {
        vpack.set(
            A::CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
            T::CUDNN_TYPE_VOID_PTR,
            &ptrs,
        )?;
        vpack.set(
            A::CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
            T::CUDNN_TYPE_VOID_PTR,
            &[ws_p],
        )?;
    }
    vpack.finalize("variant pack")?;
    Ok(Box::new(EngineRun {
        gpu: gpu.clone(),
        vpack,
        plan,
        _ws: ws,
        _a: a,
        _b: b,
        out,
        graph,
        config: config.to_string(),
    }))
}

impl EngineRun {
    fn execute(&self) -> Result<(), UnitError> {
        // SAFETY: handle, plan and variant pack are live and finalized; the variant pack's
        // pointers are this struct's buffers.
        let st =
            unsafe { s::cudnnBackendExecute(self.graph.handle.0, self.plan.plan.0, self.vpack.0) };
        check(st, || "cudnnBackendExecute".to_string())
    }
}

impl Prepared for EngineRun {
    fn run(&mut self, batch: Batch) -> Result<Sample, UnitError> {
        let g = self.gpu.clone();
        timed(&g, batch, || self.execute())
    }
    fn output(&mut self) -> Result<HostData, UnitError> {
        self.out.download(&self.gpu)
    }
    fn chosen(&self) -> String {
        format!("cudnn {}", self.config)
    }
    fn workspace_bytes(&self) -> u64 {
        self.plan.ws_bytes as u64
    }
    fn tolerance_factor(&self) -> f64 {
        if is_transform(&self.plan.notes) {
            TRANSFORM_ERROR_FACTOR
        } else {
            1.0
        }
    }
    fn flush_cache(&mut self, bytes: u64) {
        self.gpu.flush_cache(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::conv::ConvGeom;

    fn problem(direction: Direction, layout: Layout, dtype: DType, groups: usize) -> Conv2d {
        Conv2d {
            direction,
            geom: ConvGeom {
                n: 2,
                c_in: 4,
                c_out: 6,
                h: 9,
                w: 7,
                kh: 3,
                kw: 3,
                pad_h: 1,
                pad_w: 1,
                stride_h: 2,
                stride_w: 2,
                dil_h: 1,
                dil_w: 1,
                groups,
            },
            layout,
            dtype,
        }
    }

    #[test]
    fn names_are_canonical_and_round_trip() {
        let c = EngineConfig::new(12, vec![(5, 1), (3, 2)]);
        assert_eq!(c.to_string(), "eng12-k3=2,k5=1");
        assert_eq!(EngineConfig::parse("eng12-k3=2,k5=1"), Some(c));
        let plain = EngineConfig::new(0, vec![]);
        assert_eq!(plain.to_string(), "eng0");
        assert_eq!(EngineConfig::parse("eng0"), Some(plain));
        let negative = EngineConfig::new(7, vec![(14, -1)]);
        assert_eq!(negative.to_string(), "eng7-k14=-1");
        assert_eq!(EngineConfig::parse("eng7-k14=-1"), Some(negative));
    }

    #[test]
    fn non_canonical_or_malformed_names_are_refused() {
        for bad in [
            "eng",
            "eng-k1=2",
            "eng012",
            "eng12-k5=1,k3=2", // knobs out of order
            "eng12-k3=2,",
            "eng12-",
            "eng12-k=2",
            "eng12-kx=2",
            "eng12-k3",
            "eng12-k3=two",
            "eng+1",
            "implicit_gemm",
            "engine_heuristic",
            "eng12-k3=+2",
        ] {
            assert_eq!(EngineConfig::parse(bad), None, "{bad}");
        }
        assert!(is_engine_solver("engine_heuristic"));
        assert!(is_engine_solver("eng3-k2=4"));
        assert!(!is_engine_solver("algo_0"));
        assert!(!is_engine_solver("winograd_nonfused"));
    }

    #[test]
    fn strides_describe_nchw_and_nhwc() {
        let nchw = TensorShape::packed([2, 3, 4, 5], Layout::Nchw);
        assert_eq!(nchw.strides, [60, 20, 5, 1]);
        let nhwc = TensorShape::packed([2, 3, 4, 5], Layout::Nhwc);
        assert_eq!(nhwc.dims, [2, 3, 4, 5]);
        assert_eq!(nhwc.strides, [60, 1, 15, 3]);
    }

    #[test]
    fn tensor_shapes_follow_the_geometry() {
        let p = problem(Direction::Fwd, Layout::Nhwc, DType::F16, 2);
        let [x, w, y] = tensor_shapes(&p);
        assert_eq!(x.dims, [2, 4, 9, 7]);
        // Grouped filter: c_in / groups input channels, stored KRSC in NHWC problems.
        assert_eq!(w.dims, [6, 2, 3, 3]);
        assert_eq!(w.strides, [18, 1, 6, 2]);
        // (9 + 2 - 3) / 2 + 1 = 5, (7 + 2 - 3) / 2 + 1 = 4
        assert_eq!(y.dims, [2, 6, 5, 4]);
        assert_eq!(y.strides, [120, 1, 24, 6]);
        // Packed: the largest stride times its extent is the element count.
        for t in [x, w, y] {
            assert_eq!(
                t.strides[0] * t.dims[0],
                t.dims.iter().product::<i64>(),
                "{t:?}"
            );
        }
        let nchw = problem(Direction::Fwd, Layout::Nchw, DType::F32, 1);
        assert_eq!(tensor_shapes(&nchw)[1].strides, [36, 9, 3, 1]);
        assert_eq!(
            conv_params(&nchw),
            [[1, 1], [1, 1], [2, 2], [1, 1]],
            "pre, post, stride, dilation"
        );
    }

    #[test]
    fn operands_map_to_tensors_per_direction() {
        // a, b, out: (x, w) -> y; (dy, w) -> dx; (x, dy) -> dw.
        assert_eq!(operand_uids(Direction::Fwd), [UID_X, UID_W, UID_Y]);
        assert_eq!(operand_uids(Direction::BwdData), [UID_Y, UID_W, UID_X]);
        assert_eq!(operand_uids(Direction::BwdWeights), [UID_X, UID_Y, UID_W]);
        let p = problem(Direction::BwdData, Layout::Nchw, DType::F32, 1);
        let lens = tensor_shapes(&p).map(|t| t.dims.iter().product::<i64>() as usize);
        // The output of bwd_data is x-shaped, as the op says.
        assert_eq!(lens[0], p.output_len());
    }

    #[test]
    fn notes_decide_tolerance_and_exclusion() {
        let tc = N::CUDNN_NUMERICAL_NOTE_TENSOR_CORE as u32;
        let down = N::CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS as u32;
        let fft = N::CUDNN_NUMERICAL_NOTE_FFT as u32;
        let wino = N::CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4 as u32;
        let nondet = N::CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC as u32;
        assert!(is_transform(&[fft]));
        assert!(is_transform(&[tc, wino]));
        assert!(!is_transform(&[tc, nondet]));
        assert!(!is_transform(&[]));
        assert!(excluded(&[tc], DType::F32).is_some());
        assert!(excluded(&[tc], DType::Bf16).is_none());
        assert!(excluded(&[down], DType::F16).is_some());
        assert!(excluded(&[nondet, fft], DType::F32).is_none());
        // A note value newer than these bindings is carried, not misread.
        assert!(excluded(&[999], DType::F32).is_none());
    }

    #[test]
    fn selection_keeps_order_drops_repeats_and_caps_each_list() {
        let tc = N::CUDNN_NUMERICAL_NOTE_TENSOR_CORE as u32;
        let cand = |e: i64, notes: Vec<u32>| Candidate {
            config: EngineConfig::new(e, vec![(2, e)]),
            notes,
        };
        let a: Vec<Candidate> = (0..15)
            .map(|e| cand(e, if e == 1 { vec![tc] } else { vec![] }))
            .collect();
        let fallback = vec![
            cand(3, vec![]),
            cand(40, vec![]),
            cand(41, vec![]),
            cand(42, vec![]),
        ];
        let engines = |dtype| -> Vec<i64> {
            select(&a, &fallback, dtype, (10, 2))
                .iter()
                .map(|c| c.engine)
                .collect()
        };
        // Engine 1 is TF32 on f32 data and is skipped there; then the fallback list's first
        // configuration that mode A did not already name (3 is a repeat).
        let mut f32: Vec<i64> = (0..=10).filter(|&e| e != 1).collect();
        f32.extend(&[40, 41]);
        assert_eq!(engines(DType::F32), f32);
        let mut bf16: Vec<i64> = (0..10).collect();
        bf16.extend([3, 40, 41].iter().filter(|&&e| e >= 10).take(2));
        assert_eq!(engines(DType::Bf16), bf16);
        assert!(select(&[], &[], DType::F32, (5, 1)).is_empty());
        // Same engine, other knobs: a different configuration.
        let twins = vec![
            Candidate {
                config: EngineConfig::new(5, vec![(1, 1)]),
                notes: vec![],
            },
            Candidate {
                config: EngineConfig::new(5, vec![(1, 2)]),
                notes: vec![],
            },
        ];
        assert_eq!(select(&twins, &twins, DType::F16, (5, 1)).len(), 2);
    }
}

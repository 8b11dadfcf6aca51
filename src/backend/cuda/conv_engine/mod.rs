//! Convolutions through cuDNN's backend ("graph") API, the one cuDNN's frontend and PyTorch use:
//! the convolution is an operation graph, cuDNN's heuristics (mode A, then the fallback list)
//! name the engine configurations that can run it, and each configuration is its own solver
//! unit, named `eng<global index>` plus its knob choices (`eng12-k3=2,k5=1`: knob type 3 set to
//! 2, knob type 5 set to 1; `k<N>` is cudnnBackendKnobType_t value N). The name is the whole
//! configuration: `prepare` rebuilds exactly that engine with exactly those knobs, so a unit can
//! be re-run from its name alone, in another process or another run.
//!
//! Three layers, one file each: `select` says which configurations a problem's units are and
//! what their names mean (no cuDNN calls), `descriptor` is a thin safe wrapper over the backend
//! API's descriptors, and this module builds the operation graph, asks cuDNN's heuristics for
//! their lists, builds a configuration's execution plan and runs it.
//!
//! Where no list can be had (the heuristic fails, or leaves nothing), `all` gets the single unit
//! `engine_heuristic` (mode A's first usable configuration) instead, so the failure is a row with
//! cuDNN's status name rather than a silent gap. A configuration whose engine or execution plan
//! does not finalize is `unsupported` with cuDNN's status name.

mod descriptor;
mod select;

use super::blocker::timed;
use super::buffers::{DevBuf, Gpu, workspace, ws_ptr};
use super::conv::TRANSFORM_ERROR_FACTOR;
use crate::backend::{PhaseSink, Prepared, UnitError};
use crate::dtype::DType;
use crate::op::conv2d::{Conv2d, ConvInputs, Direction, Layout};
use crate::tensor::HostData;
use crate::timing::{Batch, Sample};
use cudarc::cudnn::sys as s;
use cudarc::driver::CudaSlice;
use descriptor::{Desc, Handle, check};
use select::{Candidate, EngineConfig, excluded, is_transform, limits, select};
use std::ffi::c_void;

use s::cudnnBackendAttributeName_t as A;
use s::cudnnBackendAttributeType_t as T;
use s::cudnnBackendDescriptorType_t as D;
use s::cudnnBackendNumericalNote_t as N;

pub use select::{HEURISTIC, is_engine_solver};

/// Numerical notes read from one engine: as many as there are note types, as cuDNN's frontend
/// asks (an engine has a few).
const MAX_NOTES: usize = N::CUDNN_NUMERICAL_NOTE_TYPE_COUNT as usize;
/// cudaMalloc'd buffers are 256-byte aligned; 16 is what cuDNN's vectorised kernels look for.
const ALIGNMENT: i64 = 16;

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

/// A finalized tensor descriptor: `shape`, of `dtype` elements, known in the graph as `uid`.
fn tensor(uid: i64, shape: TensorShape, dtype: DType) -> Result<Desc, UnitError> {
    let t = Desc::new(D::CUDNN_BACKEND_TENSOR_DESCRIPTOR)?;
    // SAFETY: CUDNN_TYPE_DATA_TYPE is cudnnDataType_t, a valid value of it.
    unsafe {
        t.set(
            A::CUDNN_ATTR_TENSOR_DATA_TYPE,
            T::CUDNN_TYPE_DATA_TYPE,
            &[data_type(dtype)],
        )
    }?;
    t.set_i64(A::CUDNN_ATTR_TENSOR_DIMENSIONS, &shape.dims)?;
    t.set_i64(A::CUDNN_ATTR_TENSOR_STRIDES, &shape.strides)?;
    t.set_i64(A::CUDNN_ATTR_TENSOR_UNIQUE_ID, &[uid])?;
    t.set_i64(A::CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, &[ALIGNMENT])?;
    t.finalize("tensor")?;
    Ok(t)
}

/// The finalized convolution descriptor: cross-correlation with the problem's paddings, strides
/// and dilations.
fn convolution(p: &Conv2d) -> Result<Desc, UnitError> {
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
    Ok(conv)
}

/// One direction's convolution operation: its descriptor type and the names of its attributes
/// (the x, w and y tensors are dx, dw and dy where the direction computes or consumes those).
struct OperationAttrs {
    ty: D,
    x: A,
    w: A,
    y: A,
    conv: A,
    alpha: A,
    beta: A,
}

fn operation_attrs(d: Direction) -> OperationAttrs {
    match d {
        Direction::Fwd => OperationAttrs {
            ty: D::CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
            x: A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
            w: A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
            y: A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
            conv: A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
            alpha: A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
            beta: A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
        },
        Direction::BwdData => OperationAttrs {
            ty: D::CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
            x: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
            w: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
            y: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
            conv: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
            alpha: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
            beta: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
        },
        Direction::BwdWeights => OperationAttrs {
            ty: D::CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
            x: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
            w: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
            y: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
            conv: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
            alpha: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
            beta: A::CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
        },
    }
}

/// The finalized convolution operation of direction `d` over tensors x, w, y and `conv`
/// (alpha 1, beta 0: the output is overwritten).
fn operation(d: Direction, [x, w, y]: [&Desc; 3], conv: &Desc) -> Result<Desc, UnitError> {
    let names = operation_attrs(d);
    let op = Desc::new(names.ty)?;
    for (name, desc) in [(names.x, x), (names.w, w), (names.y, y), (names.conv, conv)] {
        op.set_descs(name, &[desc])?;
    }
    // SAFETY: CUDNN_TYPE_FLOAT is float (the scaling type of an f32-compute operation).
    unsafe {
        op.set(names.alpha, T::CUDNN_TYPE_FLOAT, &[1.0f32])?;
        op.set(names.beta, T::CUDNN_TYPE_FLOAT, &[0.0f32])?;
    }
    op.finalize("convolution operation")?;
    Ok(op)
}

impl OpGraph {
    /// The tensors, the convolution, its operation and the finalized graph of one operation.
    fn new(gpu: &Gpu, p: &Conv2d) -> Result<OpGraph, UnitError> {
        let handle = Handle::new(gpu)?;
        let [xs, ws, ys] = tensor_shapes(p);
        let (x, w, y) = (
            tensor(UID_X, xs, p.dtype)?,
            tensor(UID_W, ws, p.dtype)?,
            tensor(UID_Y, ys, p.dtype)?,
        );
        let conv = convolution(p)?;
        let op = operation(p.direction, [&x, &w, &y], &conv)?;

        let graph = Desc::new(D::CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR)?;
        graph.set_handle_if_known(A::CUDNN_ATTR_OPERATIONGRAPH_HANDLE, handle.raw());
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

    /// What `all` runs for this graph (see `select`).
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
    plan.set_handle_if_known(A::CUDNN_ATTR_EXECUTION_PLAN_HANDLE, g.handle.raw());
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
        let st = unsafe {
            s::cudnnBackendExecute(
                self.graph.handle.raw(),
                self.plan.plan.raw(),
                self.vpack.raw(),
            )
        };
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
}

//! Convolutions through cuDNN's backend ("graph") API, the one cuDNN's frontend and PyTorch use:
//! the convolution is an operation graph, cuDNN's heuristics (mode A, then the fallback list)
//! name the engine configurations that can run it, and each configuration is its own solver
//! unit, named `eng<global index>` plus its knob choices (`eng12-k3=2,k5=1`: knob type 3 set to
//! 2, knob type 5 set to 1; `k<N>` is cudnnBackendKnobType_t value N). The name is the whole
//! configuration: `prepare` rebuilds exactly that engine with exactly those knobs, so a unit can
//! be re-run from its name alone, in another process or another run.
//!
//! One file per layer: `select` says which configurations a problem's units are and what their
//! names mean (no cuDNN calls), `descriptor` is a thin safe wrapper over the backend API's
//! descriptors, `graph` builds the operation graph of one convolution, and this module asks
//! cuDNN's heuristics for their lists, builds a configuration's execution plan and runs it.
//!
//! Where no list can be had (the heuristic fails, or leaves nothing), `all` gets the single unit
//! `engine_heuristic` (mode A's first usable configuration) instead, so the failure is a row with
//! cuDNN's status name rather than a silent gap. A configuration whose engine or execution plan
//! does not finalize is `unsupported` with cuDNN's status name.

mod descriptor;
mod graph;
mod select;

use super::buffers::{Addr, DevBuf, Gpu, Workspace, ws_ptr};
use crate::backend::engine::run::TRANSFORM_ERROR_FACTOR;
use crate::backend::{PhaseSink, Prepared, UnitError};

use crate::op::conv2d::{Conv2d, ConvInputs};
use crate::tensor::HostData;
use crate::timing::{Batch, Sample};
use cudarc::cudnn::sys as s;
use descriptor::{Desc, check};
use graph::{OpGraph, operand_uids};
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
impl OpGraph {
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
    _ws: Workspace,
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
    let a = gpu.upload(&i.a)?;
    let b = gpu.upload(&i.b)?;
    let out = gpu.zeros(p.dtype, p.output_len())?;
    let ws = gpu.workspace(plan.ws_bytes)?;
    let ptrs: [*mut c_void; 3] = [
        a.addr() as *mut c_void,
        b.addr() as *mut c_void,
        out.addr() as *mut c_void,
    ];
    let ws_p = ws_ptr(&ws);
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
        g.timed(batch, || self.execute())
    }
    fn output(&mut self) -> Result<HostData, UnitError> {
        self.out.download()
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
    fn flush_cache(&mut self, bytes: u64) -> bool {
        self.gpu.flush_cache(bytes)
    }
}

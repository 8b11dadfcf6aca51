//! GEMM through hipBLASLt (the heuristic's list, one unit each: `hipblaslt#<rank>-sol<index>`)
//! and rocBLAS (`rocblas`, what PyTorch falls back to when hipBLASLt says NOT_SUPPORTED). The
//! solver's prefix is the library, so `solver = ["hipblaslt", "rocblas"]` is the library axis.
//! Row-major C = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T.

use super::hip::Ptr;
use super::hipblaslt::{self as lt, HeuristicResult, HipblasltRef, Obj};
use super::libs::DevMem;
use super::libs::{DevRef, Lib, need};
use super::rocblas::{self as rb, RocblasRef};
use crate::backend::engine;
use crate::backend::engine::gemm::{Heuristic, Scalars, WORKSPACE, col_major};
use crate::backend::{PhaseSink, Prepared, UnitError};
use crate::dtype::DType;
use crate::op::gemm::{Gemm, GemmInputs};
use std::ffi::{c_int, c_void};

/// Solver names for validation (`hipblaslt#...` is accepted by pattern).
pub const NAMES: &[&str] = &["hipblaslt", "rocblas"];

const MAX_ALGOS: usize = 64;

/// hipBLASLt's algorithms as solvers: `hipblaslt#<rank>-sol<index>`.
const LT: Heuristic = Heuristic {
    library: "hipBLASLt",
    prefix: "hipblaslt#",
    tag: "-sol",
    first: &["hipblaslt"],
    usage: "hipblaslt, hipblaslt#N, rocblas or all",
    not_supported: "HIPBLAS_STATUS_NOT_SUPPORTED",
    id_noun: "solution",
    named: "",
};

pub fn hipblaslt_version(l: &HipblasltRef) -> String {
    match l.version {
        Some(v) => format!("{}.{}.{}", v / 100_000, (v / 100) % 1000, v % 100),
        None => "unknown".into(),
    }
}

/// Descriptors for one problem (column-major view: A' = B, B' = A).
struct Plan {
    lib: HipblasltRef,
    handle: Obj,
    desc: Obj,
    a: Obj,
    b: Obj,
    c: Obj,
    pref: Obj,
}

impl Plan {
    fn new(lib: &HipblasltRef, p: &Gemm) -> Result<Plan, UnitError> {
        let e = lib.enums;
        // rocblaslt accepts 32F compute (and its fast variants) with a 32F scale only; f16
        // compute goes through rocBLAS.
        let compute = match p.compute {
            DType::Tf32 => e.compute_tf32,
            DType::F16 => {
                return Err(UnitError::Unsupported(
                    "hipBLASLt has no f16 compute type (only 32F and its fast variants); use rocblas"
                        .into(),
                ));
            }
            _ => e.compute_f32,
        };
        let scale = e.f32;
        let handle = Obj::handle(lib)?;
        let desc = Obj::matmul_desc(lib, compute, scale)?;
        let ((ar, ac), (br, bc)) = col_major(p);
        let layout = |dt: DType, rows: usize, cols: usize| -> Result<Obj, UnitError> {
            // A leading dimension of at least 1, even for an empty matrix (both libraries refuse 0).
            let l = Obj::layout(
                lib,
                e.data(dt),
                rows as u64,
                cols as u64,
                rows.max(1) as i64,
            )?;
            if p.batch > 1 {
                let count = i32::try_from(p.batch)
                    .map_err(|_| UnitError::Unsupported("batch exceeds i32".into()))?;
                let stride = (rows * cols) as i64;
                let set = lib.api.hipblasLtMatrixLayoutSetAttribute;
                l.set(set, lt::LAYOUT_BATCH_COUNT, &count, "layout batch count")?;
                l.set(
                    set,
                    lt::LAYOUT_STRIDED_BATCH_OFFSET,
                    &stride,
                    "layout batch stride",
                )?;
            }
            Ok(l)
        };
        let plan = Plan {
            lib: lib.clone(),
            a: layout(p.dtype, ar, ac)?,
            b: layout(p.dtype, br, bc)?,
            c: layout(p.out_dtype, p.n, p.m)?,
            pref: Obj::preference(lib)?,
            handle,
            desc,
        };
        let (op_a, op_b) = (
            if p.trans_b { lt::OP_T } else { lt::OP_N },
            if p.trans_a { lt::OP_T } else { lt::OP_N },
        );
        let set = lib.api.hipblasLtMatmulDescSetAttribute;
        plan.desc.set(set, lt::DESC_TRANSA, &op_a, "TRANSA")?;
        plan.desc.set(set, lt::DESC_TRANSB, &op_b, "TRANSB")?;
        plan.pref.set(
            lib.api.hipblasLtMatmulPreferenceSetAttribute,
            lt::PREF_MAX_WORKSPACE_BYTES,
            &WORKSPACE,
            "workspace preference",
        )?;
        Ok(plan)
    }

    fn heuristics(&self) -> Result<Vec<HeuristicResult>, UnitError> {
        let mut out = vec![HeuristicResult::default(); MAX_ALGOS];
        let mut n: c_int = 0;
        // SAFETY: `out` has room for MAX_ALGOS results; `n` says how many were written.
        let rc = unsafe {
            (self.lib.api.hipblasLtMatmulAlgoGetHeuristic)(
                self.handle.raw,
                self.desc.raw,
                self.a.raw,
                self.b.raw,
                self.c.raw,
                self.c.raw,
                self.pref.raw,
                MAX_ALGOS as c_int,
                out.as_mut_ptr(),
                &mut n,
            )
        };
        self.lib.check(rc, "hipblasLtMatmulAlgoGetHeuristic")?;
        out.truncate((n.max(0) as usize).min(MAX_ALGOS));
        out.retain(|h| h.state == 0);
        Ok(out)
    }
}

fn index(h: &HeuristicResult) -> i32 {
    h.algo.index()
}

/// The heuristic's algorithms as solver names, then rocBLAS. Where hipBLASLt cannot even list
/// (missing, or NOT_SUPPORTED for the shape) the plain `hipblaslt` unit records why.
pub fn enumerate(
    dev: &DevRef,
    lt_lib: &Lib<HipblasltRef>,
    rb_lib: &Lib<RocblasRef>,
    p: &Gemm,
) -> Vec<String> {
    let mut v: Vec<String> = match lt_lib
        .as_ref()
        .ok()
        .map(|l| Plan::new(l, p).and_then(|plan| plan.heuristics()))
    {
        Some(Ok(hs)) if !hs.is_empty() => LT.names(&hs, index),
        _ => vec!["hipblaslt".into()],
    };
    v.push("rocblas".into());
    if let Ok(rb) = rb_lib.as_ref()
        && let Ok(list) = super::rocblas_gemm::solutions(dev, rb, p)
    {
        v.extend(super::rocblas_gemm::RB.names(&list, |i| *i));
    }
    v
}

enum Call {
    Lt {
        plan: Plan,
        algo: HeuristicResult,
    },
    Rocblas {
        lib: RocblasRef,
        handle: rb::Handle,
        /// A solution by index (`rocblas#R-solN`), else rocBLAS's own pick.
        solution: Option<i32>,
    },
}

pub fn prepare(
    dev: &DevRef,
    lt_lib: &Lib<HipblasltRef>,
    rb_lib: &Lib<RocblasRef>,
    p: &Gemm,
    solver: &str,
    i: &GemmInputs,
    phases: &mut dyn PhaseSink,
) -> Result<Box<dyn Prepared>, UnitError> {
    // `default` is what PyTorch does: hipBLASLt's first pick where it has one, else rocBLAS
    // (RDNA1/RDNA2 have no hipBLASLt kernels).
    let call = if solver == "default" {
        GemmCall::new(dev, lt_lib, rb_lib, p)?
    } else {
        let (call, ws_bytes) = if solver == "rocblas" || solver.starts_with("rocblas#") {
            rocblas_call(dev, rb_lib, p, solver)?
        } else {
            hipblaslt_call(lt_lib, p, solver)?
        };
        GemmCall {
            dev: dev.clone(),
            call,
            p: p.clone(),
            ws: dev.workspace(ws_bytes)?,
        }
    };
    phases.phase("alloc");
    let ops = engine::run::gemm_operands(dev, p, i)?;
    Ok(engine::run::prepare(dev, call, ops))
}

/// The `rocblas` solver (rocBLAS's own pick) or `rocblas#<rank>-sol<index>` (that solution, checked
/// to be the one rocBLAS lists at that rank): a rocBLAS handle on the device's stream.
fn rocblas_call(
    dev: &DevRef,
    rb_lib: &Lib<RocblasRef>,
    p: &Gemm,
    solver: &str,
) -> Result<(Call, usize), UnitError> {
    if p.compute == DType::Tf32 {
        return Err(UnitError::Unsupported(
            "rocBLAS gemm_ex has no TF32 compute type".into(),
        ));
    }
    let lib = need(rb_lib, "rocblas")?;
    let solution = if solver == "rocblas" {
        None
    } else {
        let list = super::rocblas_gemm::solutions(dev, &lib, p)?;
        Some(super::rocblas_gemm::pick(&list, solver)?)
    };
    let handle = rb::handle(&lib, dev.stream.raw)?;
    Ok((
        Call::Rocblas {
            lib,
            handle,
            solution,
        },
        0,
    ))
}

/// A `hipblaslt` or `hipblaslt#<rank>-sol<index>` solver: the heuristic's algorithm at that rank
/// (checked to be the solution the name says), and the workspace it asks for.
fn hipblaslt_call(
    lt_lib: &Lib<HipblasltRef>,
    p: &Gemm,
    solver: &str,
) -> Result<(Call, usize), UnitError> {
    let lib = need(lt_lib, "hipblaslt")?;
    let plan = Plan::new(&lib, p)?;
    let hs = plan.heuristics()?;
    let algo = LT.pick(&hs, solver, index)?;
    let ws = algo.workspace_size;
    Ok((Call::Lt { plan, algo }, ws))
}

/// Launches C = A x B (row-major) for the tensors at the given addresses.
fn launch(
    dev: &DevRef,
    call: &Call,
    p: &Gemm,
    pa: *const c_void,
    pb: *const c_void,
    pc: *mut c_void,
    ws: Option<&DevMem>,
) -> Result<(), UnitError> {
    match call {
        Call::Lt { plan, algo } => launch_lt(dev, plan, algo, pa, pb, pc, ws),
        Call::Rocblas {
            lib,
            handle,
            solution,
        } => super::rocblas_gemm::launch(lib, handle, p, (pa, pb, pc), *solution),
    }
}

/// One hipblasLtMatmul with the plan's descriptors and the chosen algorithm, on the device's
/// stream.
fn launch_lt(
    dev: &DevRef,
    plan: &Plan,
    algo: &HeuristicResult,
    pa: *const c_void,
    pb: *const c_void,
    pc: *mut c_void,
    ws: Option<&DevMem>,
) -> Result<(), UnitError> {
    // The scale type is always 32F (see Plan::new): f32 alpha and beta.
    let one = Scalars::ONE;
    let (al, be) = one.ptrs(false);
    let (wsp, wsn) = ws.map_or((std::ptr::null_mut(), 0), |w| (w.ptr, w.bytes));
    // SAFETY: live descriptors and device buffers sized for them; D aliases C (beta = 0).
    let rc = unsafe {
        (plan.lib.api.hipblasLtMatmul)(
            plan.handle.raw,
            plan.desc.raw,
            al,
            pb,
            plan.a.raw,
            pa,
            plan.b.raw,
            be,
            pc.cast_const(),
            plan.c.raw,
            pc,
            plan.c.raw,
            &algo.algo,
            wsp,
            wsn,
            dev.stream.raw,
        )
    };
    plan.lib.check(rc, "hipblasLtMatmul")
}

/// A configured GEMM: the solver's library and algorithm, and its workspace; launchable on any
/// operands (the graph op's too).
pub struct GemmCall {
    dev: DevRef,
    call: Call,
    p: Gemm,
    ws: Option<DevMem>,
}

impl GemmCall {
    pub fn new(
        dev: &DevRef,
        lt_lib: &Lib<HipblasltRef>,
        rb_lib: &Lib<RocblasRef>,
        p: &Gemm,
    ) -> Result<GemmCall, UnitError> {
        // hipBLASLt's first pick where it has one, else rocBLAS (what PyTorch does).
        let lt_first = lt_lib.as_ref().ok().and_then(|l| {
            let plan = Plan::new(l, p).ok()?;
            let algo = *plan.heuristics().ok()?.first()?;
            Some((plan, algo))
        });
        let (call, ws_bytes) = match lt_first {
            Some((plan, algo)) => {
                let ws = algo.workspace_size;
                (Call::Lt { plan, algo }, ws)
            }
            None => {
                let lib = need(rb_lib, "rocblas")?;
                let handle = rb::handle(&lib, dev.stream.raw)?;
                (
                    Call::Rocblas {
                        lib,
                        handle,
                        solution: None,
                    },
                    0,
                )
            }
        };
        Ok(GemmCall {
            dev: dev.clone(),
            call,
            p: p.clone(),
            ws: dev.workspace(ws_bytes)?,
        })
    }
}

impl engine::run::Call for GemmCall {
    fn launch(&mut self, a: Ptr, b: Ptr, c: Ptr) -> Result<(), UnitError> {
        let (dev, call, p) = (&self.dev, &self.call, &self.p);
        launch(
            dev,
            call,
            p,
            a.cast_const(),
            b.cast_const(),
            c,
            self.ws.as_ref(),
        )
    }

    fn chosen(&self) -> String {
        match &self.call {
            Call::Lt { algo, .. } => {
                super::rocblas_gemm::chosen_solution("hipblaslt", algo.algo.index().into())
            }
            Call::Rocblas { solution, .. } => super::rocblas_gemm::chosen(*solution),
        }
    }

    fn workspace_bytes(&self) -> u64 {
        self.ws.as_ref().map_or(0, |w| w.bytes as u64)
    }
}

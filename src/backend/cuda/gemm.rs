//! GEMM through cuBLASLt: the heuristic's list of algorithms for the problem, one unit each
//! (`lt#<rank>-algo<id>`). Row-major C = op(A) op(B) is computed as the column-major
//! C^T = op(B)^T op(A)^T, which needs no copies.

use super::buffers::{Gpu, Workspace, ws_ptr};
use crate::backend::engine::gemm::{Heuristic, Scalars, WORKSPACE, col_major};
use crate::backend::engine::run::{self, Call};
use crate::backend::engine::runtime::Ptr;
use crate::backend::{PhaseSink, Prepared, UnitError};
use crate::dtype::DType;
use crate::op::gemm::{Gemm, GemmInputs};
use cudarc::cublaslt::{result as r, sys as s};
use cudarc::driver::sys as dsys;
use std::ffi::c_void;

/// Solver names for validation: `heuristic` (cuBLASLt's first), `cublas` (cuBLAS's own choice,
/// cublas.rs), `all`, or `lt#<rank>...` (a pattern).
pub const NAMES: &[&str] = &["heuristic", super::cublas::SOLVER];

/// Requested from the heuristic; cuBLASLt rarely returns more than a handful.
const MAX_ALGOS: usize = 32;

/// cuBLASLt's algorithms as solvers: `lt#<rank>-algo<id>`.
const LT: Heuristic = Heuristic {
    library: "cuBLASLt",
    prefix: "lt#",
    tag: "-algo",
    first: &["default", "heuristic"],
    usage: "heuristic, all or lt#N",
    not_supported: "CUBLAS_STATUS_NOT_SUPPORTED",
    id_noun: "algo",
    named: "algo ",
};

fn lt_err(what: &str, e: r::CublasError) -> UnitError {
    let code = format!("{:?}", e.0);
    if code == "CUBLAS_STATUS_NOT_SUPPORTED" {
        UnitError::Unsupported(format!("{code} ({what})"))
    } else {
        UnitError::library("cublasLt", code, what)
    }
}

fn data_type(d: DType) -> s::cudaDataType {
    match d {
        DType::F16 => s::cudaDataType::CUDA_R_16F,
        DType::Bf16 => s::cudaDataType::CUDA_R_16BF,
        _ => s::cudaDataType::CUDA_R_32F,
    }
}

/// Handle, descriptors and preference for one problem, destroyed together.
struct Plan {
    handle: s::cublasLtHandle_t,
    desc: s::cublasLtMatmulDesc_t,
    a: s::cublasLtMatrixLayout_t,
    b: s::cublasLtMatrixLayout_t,
    c: s::cublasLtMatrixLayout_t,
    pref: s::cublasLtMatmulPreference_t,
}

impl Drop for Plan {
    fn drop(&mut self) {
        // SAFETY: each was created by Plan::new and is destroyed once.
        unsafe {
            let _ = r::destroy_matmul_pref(self.pref);
            let _ = r::destroy_matrix_layout(self.a);
            let _ = r::destroy_matrix_layout(self.b);
            let _ = r::destroy_matrix_layout(self.c);
            let _ = r::destroy_matmul_desc(self.desc);
            let _ = r::destroy_handle(self.handle);
        }
    }
}

fn layout(
    dt: DType,
    rows: usize,
    cols: usize,
    batch: usize,
) -> Result<s::cublasLtMatrixLayout_t, UnitError> {
    let l = r::create_matrix_layout(data_type(dt), rows as u64, cols as u64, rows as i64)
        .map_err(|e| lt_err("cublasLtMatrixLayoutCreate", e))?;
    if batch > 1 {
        let count = batch as i32;
        let stride = (rows * cols) as i64;
        // SAFETY: the attribute buffers are live values of the documented types.
        unsafe {
            r::set_matrix_layout_attribute(
                l,
                s::cublasLtMatrixLayoutAttribute_t::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                &count as *const i32 as *const c_void,
                4,
            )
            .map_err(|e| lt_err("batch count", e))?;
            r::set_matrix_layout_attribute(
                l,
                s::cublasLtMatrixLayoutAttribute_t::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                &stride as *const i64 as *const c_void,
                8,
            )
            .map_err(|e| lt_err("batch stride", e))?;
        }
    }
    Ok(l)
}

impl Plan {
    fn new(p: &Gemm) -> Result<Plan, UnitError> {
        let (compute, scale) = match p.compute {
            DType::Tf32 => (
                s::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32,
                s::cudaDataType::CUDA_R_32F,
            ),
            DType::F16 => (
                s::cublasComputeType_t::CUBLAS_COMPUTE_16F,
                s::cudaDataType::CUDA_R_16F,
            ),
            _ => (
                s::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                s::cudaDataType::CUDA_R_32F,
            ),
        };
        let handle = r::create_handle().map_err(|e| lt_err("cublasLtCreate", e))?;
        let desc = r::create_matmul_desc(compute, scale)
            .map_err(|e| lt_err("cublasLtMatmulDescCreate", e))?;
        // A' = B, B' = A (see the module comment); op T where the stored matrix is transposed.
        let (op_a, op_b): (i32, i32) = (p.trans_b as i32, p.trans_a as i32);
        let ((ar, ac), (br, bc)) = col_major(p);
        let mut plan = Plan {
            handle,
            desc,
            a: layout(p.dtype, ar, ac, p.batch)?,
            b: layout(p.dtype, br, bc, p.batch)?,
            c: layout(p.out_dtype, p.n, p.m, p.batch)?,
            pref: r::create_matmul_pref()
                .map_err(|e| lt_err("cublasLtMatmulPreferenceCreate", e))?,
        };
        let ws = WORKSPACE;
        // SAFETY: attribute buffers are live values of the documented types.
        unsafe {
            r::set_matmul_desc_attribute(
                plan.desc,
                s::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA,
                &op_a as *const i32 as *const c_void,
                4,
            )
            .map_err(|e| lt_err("TRANSA", e))?;
            r::set_matmul_desc_attribute(
                plan.desc,
                s::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSB,
                &op_b as *const i32 as *const c_void,
                4,
            )
            .map_err(|e| lt_err("TRANSB", e))?;
            r::set_matmul_pref_attribute(
                plan.pref,
                s::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                &ws as *const u64 as *const c_void,
                8,
            )
            .map_err(|e| lt_err("workspace preference", e))?;
        }
        plan.handle = handle;
        Ok(plan)
    }

    fn heuristics(&self) -> Result<Vec<s::cublasLtMatmulHeuristicResult_t>, UnitError> {
        let mut out: Vec<s::cublasLtMatmulHeuristicResult_t> = Vec::with_capacity(MAX_ALGOS);
        let mut n = 0i32;
        // SAFETY: `out` has room for MAX_ALGOS results; `n` says how many were written.
        unsafe {
            s::cublasLtMatmulAlgoGetHeuristic(
                self.handle,
                self.desc,
                self.a,
                self.b,
                self.c,
                self.c,
                self.pref,
                MAX_ALGOS as i32,
                out.as_mut_ptr(),
                &mut n,
            )
            .result()
            .map_err(|e| lt_err("cublasLtMatmulAlgoGetHeuristic", e))?;
            out.set_len((n.max(0) as usize).min(MAX_ALGOS));
        }
        Ok(out
            .into_iter()
            .filter(|h| h.state == s::cublasStatus_t::CUBLAS_STATUS_SUCCESS)
            .collect())
    }
}

/// One 4-byte attribute of an algorithm's configuration (-1 where cuBLASLt does not say).
fn algo_attr(h: &s::cublasLtMatmulHeuristicResult_t, attr: AlgoAttr) -> i32 {
    let mut v = -1i32;
    let mut written = 0usize;
    // SAFETY: reads one 4-byte attribute (ID is int32, the others uint32) of a valid algo into
    // a live i32.
    unsafe {
        let _ = s::cublasLtMatmulAlgoConfigGetAttribute(
            &h.algo,
            attr,
            &mut v as *mut i32 as *mut c_void,
            4,
            &mut written,
        );
    }
    v
}

type AlgoAttr = s::cublasLtMatmulAlgoConfigAttributes_t;

fn algo_id(h: &s::cublasLtMatmulHeuristicResult_t) -> i32 {
    algo_attr(h, AlgoAttr::CUBLASLT_ALGO_CONFIG_ID)
}

/// The algorithm as the `chosen` column names it: id, tile, stages and split-K.
fn algo_text(h: &s::cublasLtMatmulHeuristicResult_t) -> String {
    format!(
        "cublasLt algo={} tile={} stages={} splitk={}",
        algo_id(h),
        algo_attr(h, AlgoAttr::CUBLASLT_ALGO_CONFIG_TILE_ID),
        algo_attr(h, AlgoAttr::CUBLASLT_ALGO_CONFIG_STAGES_ID),
        algo_attr(h, AlgoAttr::CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
    )
}

/// The heuristic's algorithms for the problem, as solver names.
pub fn enumerate(_gpu: &Gpu, p: &Gemm) -> Result<Vec<String>, UnitError> {
    let plan = Plan::new(p)?;
    let hs = plan.heuristics()?;
    if hs.is_empty() {
        return Ok(vec!["heuristic".into()]);
    }
    Ok(LT.names(&hs, algo_id))
}

/// One configured matmul (plan, chosen algorithm, workspace), launchable on any operands.
pub struct GemmCall {
    gpu: Gpu,
    plan: Plan,
    algo: s::cublasLtMatmulHeuristicResult_t,
    ws: Workspace,
    compute: DType,
}

impl GemmCall {
    pub fn new(gpu: &Gpu, p: &Gemm, solver: &str) -> Result<GemmCall, UnitError> {
        let plan = Plan::new(p)?;
        let hs = plan.heuristics()?;
        let algo = LT.pick(&hs, solver, algo_id)?;
        Ok(GemmCall {
            gpu: gpu.clone(),
            ws: gpu.workspace(algo.workspaceSize)?,
            plan,
            algo,
            compute: p.compute,
        })
    }

    /// C = A x B for row-major A, B, C at the given addresses.
    fn matmul(
        &mut self,
        pa: dsys::CUdeviceptr,
        pb: dsys::CUdeviceptr,
        pc: dsys::CUdeviceptr,
    ) -> Result<(), UnitError> {
        let ws = ws_ptr(&self.ws);
        let one = Scalars::ONE;
        let (al, be) = one.ptrs(self.compute == DType::F16);
        let p = &self.plan;
        // SAFETY: live descriptors and device buffers sized for them; D aliases C (beta = 0).
        // A' = B and B' = A (column-major view of the row-major product).
        unsafe {
            r::matmul(
                p.handle,
                p.desc,
                al,
                be,
                pb as *const c_void,
                p.a,
                pa as *const c_void,
                p.b,
                pc as *const c_void,
                p.c,
                pc as *mut c_void,
                p.c,
                &self.algo.algo,
                ws,
                self.algo.workspaceSize,
                self.gpu.stream.cu_stream() as _,
            )
        }
        .map_err(|e| lt_err("cublasLtMatmul", e))
    }
}

impl Call for GemmCall {
    fn launch(&mut self, a: Ptr, b: Ptr, c: Ptr) -> Result<(), UnitError> {
        self.matmul(a as _, b as _, c as _)
    }

    fn chosen(&self) -> String {
        algo_text(&self.algo)
    }

    fn workspace_bytes(&self) -> u64 {
        self.algo.workspaceSize as u64
    }
}

pub fn prepare(
    gpu: &Gpu,
    p: &Gemm,
    solver: &str,
    i: &GemmInputs,
    phases: &mut dyn PhaseSink,
) -> Result<Box<dyn Prepared>, UnitError> {
    let call = GemmCall::new(gpu, p, solver)?;
    phases.phase("alloc");
    let ops = run::gemm_operands(gpu, p, i)?;
    Ok(run::prepare(gpu, call, ops))
}

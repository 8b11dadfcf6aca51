//! GEMM through cuBLAS's own entry point (`cublasGemmEx`, `cublasGemmStridedBatchedEx` for
//! batches) with its default algorithm: solver `cublas`. PyTorch calls cuBLAS's entry points
//! for `matmul` and `linear` on NVIDIA unless told to prefer cuBLASLt, and cuBLAS's own choice
//! of kernel is not always one of those cuBLASLt's heuristic lists, so the library search tries
//! it beside the `lt#` algorithms. The math mode and compute type are the ones the `lt#`
//! solvers use for the problem: TF32 tensor-op math and a TF32 compute type for
//! `compute = "tf32"`, the default math with a 32-bit compute type otherwise, and a 16-bit
//! compute type for `compute = "f16"` (which PyTorch itself never asks for). Row-major
//! C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T, as in gemm.rs.

use super::buffers::{Gpu, Workspace, ws_ptr};
use crate::backend::engine::gemm::{Scalars, WORKSPACE, col_major};
use crate::backend::engine::run::{self, Call};
use crate::backend::engine::runtime::Ptr;
use crate::backend::{PhaseSink, Prepared, UnitError};
use crate::dtype::DType;
use crate::op::gemm::{Gemm, GemmInputs};
use cudarc::cublas::sys as b;
use std::ffi::{c_int, c_void};

/// The solver's name.
pub const SOLVER: &str = "cublas";

fn check(what: &str, st: b::cublasStatus_t) -> Result<(), UnitError> {
    match st {
        b::cublasStatus_t::CUBLAS_STATUS_SUCCESS => Ok(()),
        b::cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED => Err(UnitError::Unsupported(format!(
            "CUBLAS_STATUS_NOT_SUPPORTED ({what})"
        ))),
        other => Err(UnitError::library("cublas", format!("{other:?}"), what)),
    }
}

fn data_type(d: DType) -> b::cudaDataType {
    match d {
        DType::F16 => b::cudaDataType::CUDA_R_16F,
        DType::Bf16 => b::cudaDataType::CUDA_R_16BF,
        _ => b::cudaDataType::CUDA_R_32F,
    }
}

fn op(transposed: bool) -> b::cublasOperation_t {
    if transposed {
        b::cublasOperation_t::CUBLAS_OP_T
    } else {
        b::cublasOperation_t::CUBLAS_OP_N
    }
}

/// A size as cuBLAS's 32-bit int, or why the problem is too large for this entry point.
fn int(v: usize, what: &str) -> Result<c_int, UnitError> {
    c_int::try_from(v).map_err(|_| {
        UnitError::Unsupported(format!(
            "{what} = {v} does not fit cublasGemmEx's 32-bit sizes"
        ))
    })
}

/// The column-major call's sizes: m' = n, n' = m, A' = B, B' = A (see the module comment).
struct Dims {
    m: c_int,
    n: c_int,
    k: c_int,
    lda: c_int,
    ldb: c_int,
    ldc: c_int,
    stride_a: i64,
    stride_b: i64,
    stride_c: i64,
    batch: c_int,
}

impl Dims {
    fn of(p: &Gemm) -> Result<Dims, UnitError> {
        let ((lda, _), (ldb, _)) = col_major(p);
        Ok(Dims {
            m: int(p.n, "n")?,
            n: int(p.m, "m")?,
            k: int(p.k, "k")?,
            lda: int(lda, "ldb")?,
            ldb: int(ldb, "lda")?,
            ldc: int(p.n, "ldc")?,
            stride_a: (p.k * p.n) as i64,
            stride_b: (p.m * p.k) as i64,
            stride_c: (p.m * p.n) as i64,
            batch: int(p.batch, "batch")?,
        })
    }
}

/// One cuBLAS handle bound to the worker's stream, with its workspace and the problem's types.
pub struct BlasCall {
    handle: b::cublasHandle_t,
    // Set as the handle's workspace; kept alive as long as the handle.
    ws: Workspace,
    p: Gemm,
    dims: Dims,
    compute: b::cublasComputeType_t,
    math: b::cublasMath_t,
}

impl Drop for BlasCall {
    fn drop(&mut self) {
        // SAFETY: created by BlasCall::new and destroyed once.
        let _ = unsafe { b::cublasDestroy_v2(self.handle) };
    }
}

impl BlasCall {
    pub fn new(gpu: &Gpu, p: &Gemm) -> Result<BlasCall, UnitError> {
        let dims = Dims::of(p)?;
        let (compute, math) = match p.compute {
            DType::Tf32 => (
                b::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32,
                b::cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH,
            ),
            DType::F16 => (
                b::cublasComputeType_t::CUBLAS_COMPUTE_16F,
                b::cublasMath_t::CUBLAS_DEFAULT_MATH,
            ),
            _ => (
                b::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                b::cublasMath_t::CUBLAS_DEFAULT_MATH,
            ),
        };
        let ws = gpu.workspace(WORKSPACE as usize)?;
        let mut handle: b::cublasHandle_t = std::ptr::null_mut();
        // SAFETY: writes a new handle into `handle`.
        check("cublasCreate", unsafe { b::cublasCreate_v2(&mut handle) })?;
        let call = BlasCall {
            handle,
            ws,
            p: p.clone(),
            dims,
            compute,
            math,
        };
        // SAFETY: a live handle, the worker's live stream, and a workspace that lives as long
        // as the handle (both are fields of `call`).
        unsafe {
            check(
                "cublasSetStream",
                b::cublasSetStream_v2(handle, gpu.stream.cu_stream() as b::cudaStream_t),
            )?;
            check(
                "cublasSetWorkspace",
                b::cublasSetWorkspace_v2(handle, ws_ptr(&call.ws), WORKSPACE as usize),
            )?;
            check("cublasSetMathMode", b::cublasSetMathMode(handle, math))?;
        }
        Ok(call)
    }

    /// The entry point the problem goes through.
    fn entry(&self) -> &'static str {
        if self.dims.batch == 1 {
            "cublasGemmEx"
        } else {
            "cublasGemmStridedBatchedEx"
        }
    }

    /// C = A x B for row-major A, B, C at the given addresses.
    fn gemm(&mut self, pa: Ptr, pb: Ptr, pc: Ptr) -> Result<(), UnitError> {
        let scalars = Scalars::ONE;
        let (al, be) = scalars.ptrs(self.compute == b::cublasComputeType_t::CUBLAS_COMPUTE_16F);
        let (d, p) = (&self.dims, &self.p);
        let (ab, cd) = (data_type(p.dtype), data_type(p.out_dtype));
        let algo = b::cublasGemmAlgo_t::CUBLAS_GEMM_DFALT;
        // SAFETY: a live handle and device buffers sized for the problem; the scalars live on
        // the host for the call (host pointer mode, cuBLAS's default).
        let st = unsafe {
            if d.batch == 1 {
                b::cublasGemmEx(
                    self.handle,
                    op(p.trans_b),
                    op(p.trans_a),
                    d.m,
                    d.n,
                    d.k,
                    al,
                    pb as *const c_void,
                    ab,
                    d.lda,
                    pa as *const c_void,
                    ab,
                    d.ldb,
                    be,
                    pc,
                    cd,
                    d.ldc,
                    self.compute,
                    algo,
                )
            } else {
                b::cublasGemmStridedBatchedEx(
                    self.handle,
                    op(p.trans_b),
                    op(p.trans_a),
                    d.m,
                    d.n,
                    d.k,
                    al,
                    pb as *const c_void,
                    ab,
                    d.lda,
                    d.stride_a,
                    pa as *const c_void,
                    ab,
                    d.ldb,
                    d.stride_b,
                    be,
                    pc,
                    cd,
                    d.ldc,
                    d.stride_c,
                    d.batch,
                    self.compute,
                    algo,
                )
            }
        };
        check(self.entry(), st)
    }
}

impl Call for BlasCall {
    fn launch(&mut self, a: Ptr, b: Ptr, c: Ptr) -> Result<(), UnitError> {
        self.gemm(a, b, c)
    }

    fn chosen(&self) -> String {
        format!(
            "{} default algo, {:?}, {:?}",
            self.entry(),
            self.math,
            self.compute
        )
    }

    fn workspace_bytes(&self) -> u64 {
        WORKSPACE
    }
}

pub fn prepare(
    gpu: &Gpu,
    p: &Gemm,
    i: &GemmInputs,
    phases: &mut dyn PhaseSink,
) -> Result<Box<dyn Prepared>, UnitError> {
    let call = BlasCall::new(gpu, p)?;
    phases.phase("alloc");
    let ops = run::gemm_operands(gpu, p, i)?;
    Ok(run::prepare(gpu, call, ops))
}

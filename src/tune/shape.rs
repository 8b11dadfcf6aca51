//! A tuned GEMM as the libraries and PyTorch see it. rocsweep's row-major C = op(A) op(B) is
//! the column-major C^T = op(B)^T op(A)^T, as PyTorch calls BLAS: the library's m is our n, its
//! n our m, its first operand our B (so its transA is our trans_b). Every file is written in
//! these terms, which is what the library matches at call time.

use crate::dtype::DType;
use crate::op::gemm::Gemm;
use crate::results::rundata::Row;

/// The call as a column-major BLAS sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blas {
    pub trans_a: bool,
    pub trans_b: bool,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub batch: usize,
    pub lda: usize,
    pub ldb: usize,
    pub ldc: usize,
    pub stride_a: usize,
    pub stride_b: usize,
    pub stride_c: usize,
}

impl Blas {
    pub fn of(p: &Gemm) -> Blas {
        let ((ar, ac), (br, bc)) = crate::backend::engine::gemm::col_major(p);
        Blas {
            trans_a: p.trans_b,
            trans_b: p.trans_a,
            m: p.n,
            n: p.m,
            k: p.k,
            batch: p.batch,
            lda: ar.max(1),
            ldb: br.max(1),
            ldc: p.n.max(1),
            stride_a: ar * ac,
            stride_b: br * bc,
            stride_c: p.n * p.m,
        }
    }

    /// `N` or `T` for an operand.
    pub fn letter(t: bool) -> char {
        if t { 'T' } else { 'N' }
    }
}

/// The type's name in hipBLASLt's and rocBLAS's files (`f32_r`, ...); None for tf32, a compute
/// mode.
pub fn type_name(d: DType) -> Option<&'static str> {
    match d {
        DType::F32 => Some("f32_r"),
        DType::F16 => Some("f16_r"),
        DType::Bf16 => Some("bf16_r"),
        DType::F64 => Some("f64_r"),
        DType::Tf32 => None,
    }
}

/// The GEMM of a results.csv row (its parameters as the op reads them).
pub fn gemm_of(row: &Row) -> Result<Gemm, String> {
    let int = |name: &str| -> Result<usize, String> {
        row.param(name)
            .and_then(|v| v.parse::<usize>().ok())
            .ok_or_else(|| format!("row {}: no whole number `{name}`", row.unit_id))
    };
    let flag = |name: &str| -> Result<bool, String> {
        match row.param(name) {
            Some("true") => Ok(true),
            Some("false") | None => Ok(false),
            Some(v) => Err(format!("row {}: `{name}` is {v:?}", row.unit_id)),
        }
    };
    let dtype = |name: &str, or: Option<DType>| -> Result<DType, String> {
        match row.param(name).filter(|v| !v.is_empty()) {
            Some(v) => {
                DType::parse(v).ok_or_else(|| format!("row {}: `{name}` is {v:?}", row.unit_id))
            }
            None => or.ok_or_else(|| format!("row {}: no `{name}`", row.unit_id)),
        }
    };
    let dt = dtype("dtype", None)?;
    Ok(Gemm {
        m: int("m")?,
        n: int("n")?,
        k: int("k")?,
        trans_a: flag("trans_a")?,
        trans_b: flag("trans_b")?,
        batch: int("batch").unwrap_or(1),
        dtype: dt,
        out_dtype: dtype("out_dtype", Some(dt))?,
        compute: dtype("compute", Some(DType::F32))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PyTorch's torch.matmul of contiguous A (M x K) @ B (K x N) is the BLAS call nn with
    /// m = N, n = M, k = K, lda = N, ldb = K, ldc = N (its TunableOp signature says so).
    #[test]
    fn a_row_major_matmul_is_the_column_major_call_pytorch_makes() {
        let g = Gemm {
            m: 1024,
            n: 256,
            k: 512,
            trans_a: false,
            trans_b: false,
            batch: 1,
            dtype: DType::F32,
            out_dtype: DType::F32,
            compute: DType::F32,
        };
        let b = Blas::of(&g);
        assert_eq!((b.m, b.n, b.k), (256, 1024, 512));
        assert_eq!((b.lda, b.ldb, b.ldc), (256, 512, 256));
        assert!(!b.trans_a && !b.trans_b);
        // F.linear (A @ W^T): W stored (N x K) is the first operand, transposed.
        let lin = Blas::of(&Gemm { trans_b: true, ..g });
        assert!(lin.trans_a && !lin.trans_b);
        assert_eq!((lin.lda, lin.ldb), (512, 512));
    }
}

//! What the BLAS formats share: a column-major GEMM named by type strings, checked into a
//! problem or a reason it is not one rocsweep can run.

use super::problem::{BlasGemm, Parsed, blas_type};
use crate::dtype::DType;

/// A GEMM's fields as a log gives them, before their types are read.
pub struct Fields<'a> {
    pub m: i64,
    pub n: i64,
    pub k: i64,
    pub trans_a: bool,
    pub trans_b: bool,
    pub batch: i64,
    pub a: &'a str,
    pub b: &'a str,
    pub d: &'a str,
    pub compute: &'a str,
    pub calls: f64,
    pub traced_ms: Option<f64>,
}

/// The problem, or why rocsweep cannot run it (`library` names the source in the reason).
pub fn gemm(library: &str, f: &Fields) -> Parsed {
    if f.m < 1 || f.n < 1 || f.k < 1 || f.batch < 1 {
        return Parsed::Malformed(format!(
            "sizes m={} n={} k={} batch={} are not all positive",
            f.m, f.n, f.k, f.batch
        ));
    }
    let storage = |t: &str| match blas_type(t) {
        Ok(DType::Tf32) | Err(_) => {
            Err(format!("{library} GEMM with {} data", t.trim_matches('"')))
        }
        Ok(d) => Ok(d),
    };
    let compute = match blas_type(f.compute) {
        Ok(d @ (DType::F32 | DType::Tf32 | DType::F16)) => Ok(d),
        _ => Err(format!(
            "{library} GEMM computing in {}",
            f.compute.trim_matches('"')
        )),
    };
    let read = || -> Result<BlasGemm, String> {
        Ok(BlasGemm {
            m: f.m,
            n: f.n,
            k: f.k,
            trans_a: f.trans_a,
            trans_b: f.trans_b,
            batch: f.batch,
            a: storage(f.a)?,
            b: storage(f.b)?,
            d: storage(f.d)?,
            compute: compute.clone()?,
        })
    };
    match read().and_then(|g| g.problem(f.calls, f.traced_ms)) {
        Ok(p) => Parsed::Problem(p),
        Err(why) => Parsed::Unsupported(why),
    }
}

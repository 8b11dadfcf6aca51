//! rocBLAS's `ROCBLAS_TENSILE_GEMM_OVERRIDE_PATH` (from rocBLAS 3.1, ROCm 5.7; read once per
//! process by Tensile's UserDrivenTuningParser), the CSV `rocblas-gemm-tune` writes: a header
//! (skipped: it holds `transA`), then one row per problem of 15 columns
//! (`transA,transB,M,N,batch_count,K,alpha,beta,lda,ldb,ldc,input_type,output_type,
//! compute_type,solution_index`: a `rocblas_gemm_ex` call, whose strides Tensile takes as 1) or
//! 18 (`stride_a,stride_b,stride_c` after `ldc`: a strided-batched call). Tensile matches the
//! transposes, types, sizes, batch, beta, leading dimensions and strides.
//!
//! The value is Tensile's solution index + 1. rocBLAS's own solution indices
//! (`rocblas_gemm_ex_get_solutions`, what rocsweep's `rocblas#R-solN` names) are that value
//! before rocBLAS 5 (ROCm 7); from rocBLAS 5 a Tensile solution is numbered `-(value) - 10` and a
//! positive index is a hipBLASLt solution, which this file cannot name. An index written
//! unconverted is dropped by the parser, silently where other rows load: [`file_value`] converts.

use super::shape::{Blas, type_name};
use crate::dtype::DType;
use std::fmt::Write as _;

pub const VAR: &str = "ROCBLAS_TENSILE_GEMM_OVERRIDE_PATH";
pub const FILE: &str = "rocblas_override.csv";

const HEADER: &str = "transA,transB,M,N,batch_count,K,alpha,beta,lda,ldb,ldc,input_type,output_type,compute_type,solution_index";
const HEADER_STRIDED: &str = "transA,transB,M,N,batch_count,K,alpha,beta,lda,ldb,ldc,stride_a,stride_b,stride_c,input_type,output_type,compute_type,solution_index";

/// The rocBLAS major version in the run's manifest ("4.2.0 (path)", "5.1.0.abc (path)").
pub fn major(versions: &std::collections::BTreeMap<String, String>) -> Result<u32, String> {
    let v = versions.get("rocBLAS").map(String::as_str).unwrap_or("");
    let number = v.split_whitespace().next().unwrap_or("");
    let mut parts = number.split('.').map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(ma), Some(mi)) if (ma, mi) >= (3, 1) => Ok(ma),
        (Some(ma), Some(mi)) => Err(format!(
            "the run's rocBLAS is {ma}.{mi}: its override file (ROCBLAS_TENSILE_GEMM_OVERRIDE_PATH) exists from rocBLAS 3.1 (ROCm 5.7)"
        )),
        _ => Err(format!(
            "the run's manifest names no rocBLAS version ({v:?}), so no override file can be written for it"
        )),
    }
}

/// The file's value for rocBLAS solution `index` of a rocBLAS of major version `major`.
pub fn file_value(index: i64, major: u32) -> Result<i64, String> {
    match index {
        i if i <= -11 => Ok(-i - 10),
        i if i > 0 && major < 5 => Ok(i),
        i if i > 0 => Err(format!(
            "rocBLAS {major} numbers hipBLASLt solutions positive: solution {i} runs through hipBLASLt, which the Tensile override file cannot name"
        )),
        i => Err(format!("index {i} is rocBLAS's default, not a solution")),
    }
}

/// One row: the call, its types and the file's value.
pub fn row(
    b: &Blas,
    (dtype, out, compute): (DType, DType, DType),
    value: i64,
) -> Result<String, String> {
    let (Some(a), Some(c), Some(k)) = (type_name(dtype), type_name(out), type_name(compute)) else {
        return Err(format!(
            "types {} -> {} (compute {}) have no rocBLAS name",
            dtype.name(),
            out.name(),
            compute.name()
        ));
    };
    let l = Blas::letter;
    let mut s = format!(
        "{},{},{},{},{},{},1,0,{},{},{}",
        l(b.trans_a),
        l(b.trans_b),
        b.m,
        b.n,
        b.batch,
        b.k,
        b.lda,
        b.ldb,
        b.ldc
    );
    if b.batch > 1 {
        let _ = write!(s, ",{},{},{}", b.stride_a, b.stride_b, b.stride_c);
    }
    let _ = write!(s, ",{a},{c},{k},{value}");
    Ok(s)
}

/// The file for the tuned shapes whose best is a rocBLAS solution; records per shape whether it
/// is a row or why not. None: no row.
pub fn build(
    versions: &std::collections::BTreeMap<String, String>,
    tuned: &mut [super::model::Tuned],
) -> Option<String> {
    use super::tunableop::Lib;
    let major = major(versions);
    let (mut plain, mut strided) = (Vec::new(), Vec::new());
    for t in tuned.iter_mut() {
        let Some((Lib::Rocblas, index)) = t.target else {
            continue;
        };
        let g = &t.gemm;
        let r = match (&major, t.checks.get(FILE)) {
            (Err(why), _) => Err(why.clone()),
            (_, Some(super::verify::Check::Dropped(why))) => Err(format!("verification: {why}")),
            (Ok(m), _) => file_value(index, *m)
                .and_then(|v| row(&t.blas, (g.dtype, g.out_dtype, g.compute), v))
                .map(|r| {
                    if t.blas.batch > 1 {
                        strided.push(r);
                    } else {
                        plain.push(r);
                    }
                }),
        };
        t.files.insert(FILE, r);
    }
    if plain.is_empty() && strided.is_empty() {
        return None;
    }
    let mut s = String::new();
    for (header, rows) in [(HEADER, &plain), (HEADER_STRIDED, &strided)] {
        if !rows.is_empty() {
            let _ = writeln!(s, "{header}");
            for r in rows {
                let _ = writeln!(s, "{r}");
            }
        }
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::gemm::Gemm;

    /// A reader written from Tensile's documented parser: `transA` lines and comma-free lines
    /// skipped, 15 or 18 fields, the value > 0 (Tensile's index + 1).
    fn parse(text: &str) -> Vec<(Vec<String>, i64)> {
        text.lines()
            .filter(|l| !l.contains("transA") && l.contains(','))
            .map(|l| l.split(',').map(str::to_string).collect::<Vec<_>>())
            .filter(|f| f.len() == 15 || f.len() == 18)
            .filter_map(|f| {
                let v = f.last()?.parse::<i64>().ok().filter(|v| *v > 0)?;
                Some((f, v))
            })
            .collect()
    }

    #[test]
    fn indices_convert_by_release_and_rows_round_trip() {
        assert_eq!(file_value(1234, 4), Ok(1234));
        assert_eq!(file_value(-1244, 5), Ok(1234));
        assert!(file_value(77, 5).unwrap_err().contains("hipBLASLt"));
        assert!(file_value(-1, 5).is_err());
        let g = Gemm {
            m: 512,
            n: 1024,
            k: 256,
            trans_a: false,
            trans_b: false,
            batch: 1,
            dtype: DType::F32,
            out_dtype: DType::F32,
            compute: DType::F32,
        };
        let types = (DType::F32, DType::F32, DType::F32);
        let one = row(&Blas::of(&g), types, 1234).unwrap();
        assert_eq!(
            one,
            "N,N,1024,512,1,256,1,0,1024,256,1024,f32_r,f32_r,f32_r,1234"
        );
        let four = row(&Blas::of(&Gemm { batch: 4, ..g }), types, 9).unwrap();
        let text = format!("{HEADER}\n{one}\n{HEADER_STRIDED}\n{four}\n");
        let rows = parse(&text);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].1, 1234);
        assert_eq!(rows[1].0.len(), 18);
        assert_eq!(&rows[1].0[11..14], ["262144", "131072", "524288"]);
    }
}

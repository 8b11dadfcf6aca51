//! rocBLAS's logs: `ROCBLAS_LAYER=2` prints a rocblas-bench command per call, `ROCBLAS_LAYER=4`
//! a YAML line per problem with its `call_count`. GEMMs become problems; other functions are
//! counted as not supported.

use super::blas::{Fields, gemm};
use super::flags::{Flags, transposed};
use super::problem::{Found, Parsed};
use super::yaml::Entries;
use std::collections::HashMap;

pub const BENCH: &str = "rocBLAS bench commands";
pub const PROFILE: &str = "rocBLAS profile (YAML)";

/// A rocblas-bench command line; `None` when the line has none.
pub fn bench_line(text: &str) -> Option<Found> {
    let tokens: Vec<&str> = text.split_whitespace().collect();
    let at = tokens.iter().position(|t| t.ends_with("rocblas-bench"))?;
    let f = Flags::parse(&tokens[at + 1..]);
    let read = || -> Result<Parsed, String> {
        let function = f.text(&["-f", "--function"], None)?;
        let Some(batched) = gemm_kind(function) else {
            return Ok(Parsed::Unsupported(format!("rocBLAS {function}")));
        };
        let ex = function.ends_with("_ex");
        let r = f.text(&["-r", "--precision"], Some("f32_r"))?;
        let a = if ex {
            f.text(&["--a_type"], Some(r))?
        } else {
            r
        };
        let d = f.text(&["--d_type", "--c_type"], Some(a))?;
        Ok(gemm(
            "rocBLAS",
            &Fields {
                m: f.int(&["-m", "--sizem"], None)?,
                n: f.int(&["-n", "--sizen"], None)?,
                k: f.int(&["-k", "--sizek"], None)?,
                trans_a: transposed(f.text(&["--transposeA"], Some("N"))?)?,
                trans_b: transposed(f.text(&["--transposeB"], Some("N"))?)?,
                batch: if batched {
                    f.int(&["--batch_count"], Some(1))?
                } else {
                    1
                },
                a,
                b: f.text(&["--b_type"], Some(a))?,
                d,
                // The typed functions compute in their data type (hgemm in f16).
                compute: if ex {
                    f.text(&["--compute_type"], Some(a))?
                } else {
                    a
                },
                calls: 1.0,
                traced_ms: None,
            },
        ))
    };
    Some(Found::new(BENCH, read().unwrap_or_else(Parsed::Malformed)))
}

/// A rocBLAS profile line (`rocblas_function: ...`).
pub fn profile(map: &HashMap<String, String>) -> Option<Found> {
    let e = Entries(map);
    let function = e.text(&["rocblas_function"])?;
    let name = function.strip_prefix("rocblas_").unwrap_or(function);
    // rocblas_sgemm, rocblas_hgemm_strided_batched: the letter names the type.
    let (letter, rest) = name.split_at(name.find("gemm").unwrap_or(0));
    let Some(batched) = gemm_kind(rest).filter(|_| letter.len() <= 1) else {
        return Some(Found::new(
            PROFILE,
            Parsed::Unsupported(format!("rocBLAS {name}")),
        ));
    };
    let read = || -> Result<Parsed, String> {
        let typed = match letter {
            "s" => "f32_r",
            "h" => "f16_r",
            "d" => "f64_r",
            "c" | "z" => "complex",
            _ => "",
        };
        let a = e.text(&["a_type"]).unwrap_or(typed);
        if a.is_empty() {
            return Err(format!("{function} without a_type"));
        }
        Ok(gemm(
            "rocBLAS",
            &Fields {
                m: e.int(&["M", "m"], None)?,
                n: e.int(&["N", "n"], None)?,
                k: e.int(&["K", "k"], None)?,
                trans_a: transposed(e.text(&["transA"]).unwrap_or("N"))?,
                trans_b: transposed(e.text(&["transB"]).unwrap_or("N"))?,
                batch: if batched {
                    e.int(&["batch_count"], Some(1))?
                } else {
                    1
                },
                a,
                b: e.text(&["b_type"]).unwrap_or(a),
                d: e.text(&["d_type", "c_type"]).unwrap_or(a),
                compute: e.text(&["compute_type"]).unwrap_or(a),
                calls: e.calls()?,
                traced_ms: None,
            },
        ))
    };
    Some(Found::new(
        PROFILE,
        read().unwrap_or_else(Parsed::Malformed),
    ))
}

/// `Some(batched)` for the GEMM functions (`gemm`, `gemm_ex`, `gemm_strided_batched_ex` ...).
fn gemm_kind(function: &str) -> Option<bool> {
    let f = function.strip_suffix("_ex").unwrap_or(function);
    match f {
        "gemm" => Some(false),
        "gemm_strided_batched" | "gemm_batched" => Some(true),
        _ => None,
    }
}

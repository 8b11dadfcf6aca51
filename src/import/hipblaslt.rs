//! hipBLASLt's logs: `HIPBLASLT_LOG_MASK=32` prints a hipblaslt-bench command per call,
//! `HIPBLASLT_LOG_MASK=64` a YAML line per problem with its `call_count`.

use super::blas::{Fields, gemm};
use super::flags::{Flags, transposed};
use super::problem::{Found, Parsed};
use super::yaml::Entries;
use std::collections::HashMap;

pub const BENCH: &str = "hipBLASLt bench commands";
pub const PROFILE: &str = "hipBLASLt profile (YAML)";

/// A hipblaslt-bench command line; `None` when the line has none.
pub fn bench_line(text: &str) -> Option<Found> {
    let tokens: Vec<&str> = text.split_whitespace().collect();
    let at = tokens.iter().position(|t| t.ends_with("hipblaslt-bench"))?;
    let f = Flags::parse(&tokens[at + 1..]);
    let read = || -> Result<Parsed, String> {
        let a = f.text(&["--a_type", "--precision", "-r"], None)?;
        let d = f.text(&["--d_type", "--c_type"], Some(a))?;
        Ok(gemm(
            "hipBLASLt",
            &Fields {
                m: f.int(&["-m", "--m"], None)?,
                n: f.int(&["-n", "--n"], None)?,
                k: f.int(&["-k", "--k"], None)?,
                trans_a: transposed(f.text(&["--transA"], Some("N"))?)?,
                trans_b: transposed(f.text(&["--transB"], Some("N"))?)?,
                batch: f.int(&["--batch_count"], Some(1))?,
                a,
                b: f.text(&["--b_type"], Some(a))?,
                d,
                compute: f.text(&["--compute_type"], Some("c_f32_r"))?,
                calls: 1.0,
                traced_ms: None,
            },
        ))
    };
    Some(Found::new(BENCH, read().unwrap_or_else(Parsed::Malformed)))
}

/// A hipBLASLt profile line (a YAML map with M, N, K and a_type, not rocBLAS's).
pub fn profile(map: &HashMap<String, String>) -> Option<Found> {
    let e = Entries(map);
    if map.contains_key("rocblas_function")
        || e.text(&["M", "m"]).is_none()
        || e.text(&["a_type"]).is_none()
    {
        return None;
    }
    let read = || -> Result<Parsed, String> {
        let a = e.text(&["a_type"]).unwrap_or("");
        Ok(gemm(
            "hipBLASLt",
            &Fields {
                m: e.int(&["M", "m"], None)?,
                n: e.int(&["N", "n"], None)?,
                k: e.int(&["K", "k"], None)?,
                trans_a: transposed(e.text(&["transA"]).unwrap_or("N"))?,
                trans_b: transposed(e.text(&["transB"]).unwrap_or("N"))?,
                batch: e.int(&["batch_count"], Some(1))?,
                a,
                b: e.text(&["b_type"]).unwrap_or(a),
                d: e.text(&["d_type", "c_type"]).unwrap_or(a),
                compute: e.text(&["compute_type"]).unwrap_or("c_f32_r"),
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

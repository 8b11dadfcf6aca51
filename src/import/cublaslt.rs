//! cuBLASLt's trace log (`CUBLASLT_LOG_LEVEL=5`): one `[Trace][cublasLtMatmul]` line per call
//! (and `[Trace][cublasLtTSTMatmul]` for the calls cuBLAS routes through cuBLASLt), with the
//! matrix layouts and the compute descriptor inline:
//! `Adesc=[type=R_16F rows=.. cols=.. ld=..] ... computeDesc=[computeType=COMPUTE_32F ... transa=OP_T]`.

use super::blas::{Fields, gemm};
use super::problem::{Found, Parsed};

pub const FORMAT: &str = "cuBLASLt trace log";

pub fn line(text: &str) -> Option<Found> {
    if !(text.contains("[Trace][cublasLtMatmul]") || text.contains("[Trace][cublasLtTSTMatmul]")) {
        return None;
    }
    Some(Found::new(
        FORMAT,
        read(text).unwrap_or_else(Parsed::Malformed),
    ))
}

/// `key=value` of the bracketed descriptor `name=[...]`.
fn desc<'a>(text: &'a str, name: &str) -> Result<Vec<(&'a str, &'a str)>, String> {
    let start = text
        .find(&format!(" {name}=["))
        .map(|i| i + name.len() + 3)
        .ok_or_else(|| format!("no {name}=[...] (truncated line?)"))?;
    let end = text[start..]
        .find(']')
        .ok_or_else(|| format!("{name}=[ is not closed (truncated line?)"))?;
    Ok(text[start..start + end]
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .collect())
}

fn get<'a>(d: &[(&str, &'a str)], key: &str) -> Option<&'a str> {
    d.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

fn int(d: &[(&str, &str)], key: &str, of: &str) -> Result<i64, String> {
    get(d, key)
        .ok_or_else(|| format!("{of} has no {key}"))?
        .parse()
        .map_err(|_| format!("{of} {key} is not an integer"))
}

fn read(text: &str) -> Result<Parsed, String> {
    let a = desc(text, "Adesc")?;
    let b = desc(text, "Bdesc")?;
    let d = desc(text, "Ddesc").or_else(|_| desc(text, "Cdesc"))?;
    let c = desc(text, "computeDesc")?;
    let trans_a = get(&c, "transa").is_some_and(|t| t != "OP_N");
    let trans_b = get(&c, "transb").is_some_and(|t| t != "OP_N");
    // D is m x n; A is stored m x k (k x m when transposed).
    let (m, n) = (int(&d, "rows", "Ddesc")?, int(&d, "cols", "Ddesc")?);
    let k = if trans_a {
        int(&a, "rows", "Adesc")?
    } else {
        int(&a, "cols", "Adesc")?
    };
    fn ty<'a>(x: &[(&str, &'a str)]) -> &'a str {
        get(x, "type").unwrap_or("")
    }
    let compute = get(&c, "computeType").ok_or("computeDesc has no computeType")?;
    // TF32 only changes f32 inputs; with 16-bit inputs FAST_TF32 computes as COMPUTE_32F.
    let compute = if compute == "COMPUTE_32F_FAST_TF32" && ty(&a) != "R_32F" {
        "COMPUTE_32F"
    } else {
        compute
    };
    Ok(gemm(
        "cuBLASLt",
        &Fields {
            m,
            n,
            k,
            trans_a,
            trans_b,
            batch: get(&d, "batchCount").map_or(Ok(1), |_| int(&d, "batchCount", "Ddesc"))?,
            a: ty(&a),
            b: ty(&b),
            d: ty(&d),
            compute,
            calls: 1.0,
            traced_ms: None,
        },
    ))
}

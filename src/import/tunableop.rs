//! PyTorch TunableOp's GEMM files: the untuned list (`PYTORCH_TUNABLEOP_RECORD_UNTUNED=1`,
//! `Op,Params`) and the results file (`Op,Params,Solution,ms`, after `Validator,...` lines).
//! `Op` is `Gemm|GemmAndBias|GemmStridedBatched` + `TunableOp_<type>_<AB>`; `Params` is
//! `ab_M_N_K[_B_batch][_ld_LDA_LDB_LDC]`, in the column-major BLAS call's terms.

use super::blas::{Fields, gemm};
use super::problem::{Found, Parsed};

pub const FORMAT: &str = "PyTorch TunableOp GEMM list";

/// One line; `None` when it is no TunableOp line (a `Validator` line is skipped as read).
pub fn line(text: &str) -> Option<Found> {
    let mut fields = text.trim().split(',');
    let op = fields.next()?;
    let (kind, rest) = op.split_once("TunableOp_")?;
    let found = |p| Some(Found::new(FORMAT, p));
    let batched = match kind {
        "Gemm" | "GemmAndBias" => false,
        "GemmStridedBatched" => true,
        other => return found(Parsed::Unsupported(format!("TunableOp {other}"))),
    };
    let Some(params) = fields.next() else {
        return found(Parsed::Malformed(format!(
            "{op} without its parameters (truncated line?)"
        )));
    };
    let read = || -> Result<Parsed, String> {
        let (ty, _) = rest
            .rsplit_once('_')
            .ok_or_else(|| format!("`{rest}` does not end in _<transposes>"))?;
        let t = match ty {
            "float" => "f32_r",
            "Half" => "f16_r",
            "BFloat16" => "bf16_r",
            other => other,
        };
        let parts: Vec<&str> = params.trim().split('_').collect();
        let ab = parts.first().copied().unwrap_or("");
        let (Some(ta), Some(tb), 2) = (ab.chars().next(), ab.chars().nth(1), ab.len()) else {
            return Err(format!(
                "`{params}` does not start with two transpose letters"
            ));
        };
        let num = |i: usize, what: &str| -> Result<i64, String> {
            parts
                .get(i)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| format!("`{params}` has no {what}"))
        };
        let batch = if batched {
            if parts.get(4) != Some(&"B") {
                return Err(format!("`{params}` has no _B_<batch>"));
            }
            num(5, "batch count")?
        } else {
            1
        };
        Ok(gemm(
            "TunableOp",
            &Fields {
                m: num(1, "m")?,
                n: num(2, "n")?,
                k: num(3, "k")?,
                trans_a: ta.eq_ignore_ascii_case(&'t'),
                trans_b: tb.eq_ignore_ascii_case(&'t'),
                batch,
                a: t,
                b: t,
                d: t,
                compute: "f32_r",
                calls: 1.0,
                traced_ms: None,
            },
        ))
    };
    found(read().unwrap_or_else(Parsed::Malformed))
}

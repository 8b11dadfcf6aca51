//! Verdicts: compare a backend's output with the reference and say `ok`, `mismatch`, `zeros` or
//! `nonfinite`, with the error metrics that back the verdict.

use crate::dtype::DType;
use crate::tensor::HostData;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// What a verification found; the CSV's `status` column uses the same words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Ok,
    Mismatch,
    /// The output is all zero where the reference is not (seeds 000-002).
    Zeros,
    /// NaN or Inf where the reference is finite.
    Nonfinite,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Mismatch => "mismatch",
            Verdict::Zeros => "zeros",
            Verdict::Nonfinite => "nonfinite",
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    pub max_abs_err: f64,
    pub max_rel_err: f64,
    pub rms_err: f64,
    /// Fraction of output elements that are exactly zero.
    pub zero_frac: f64,
    /// Output elements that are NaN or Inf where the reference is finite.
    pub nonfinite: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    pub verdict: Verdict,
    pub metrics: Metrics,
    /// A short sentence on why the verdict is not `ok` (first failing element, statistic, ...).
    pub detail: String,
}

/// Element-wise bound: |out - ref| <= rtol * |ref| + atol_rms * rms(ref).
///
/// Scaling the absolute part by the reference's RMS makes one rule work for any input scale: the
/// error of a length-K dot product of random-signed terms grows like u * sqrt(K) * |partial sums|,
/// and |partial sums| is of the order of rms(ref).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tolerance {
    pub rtol: f64,
    pub atol_rms: f64,
}

/// Safety factor over the first-order error estimates; wrong results are off by O(1), far above it.
const SAFETY: f64 = 16.0;

impl Tolerance {
    /// Tolerance for outputs that are sums of `k` products of exactly representable inputs,
    /// multiplied in `mul` precision, accumulated in `acc` precision and stored as `out`.
    pub fn for_reduction(k: usize, mul: DType, acc: DType, out: DType) -> Tolerance {
        let k = k.max(1) as f64;
        let u_mul = if mul == DType::Tf32 {
            2.0 * mul.unit_roundoff()
        } else {
            0.0
        };
        Tolerance {
            rtol: 2.0 * out.unit_roundoff(),
            atol_rms: SAFETY * (acc.unit_roundoff() * k.sqrt() + u_mul + out.unit_roundoff()),
        }
    }

    pub fn scaled(self, factor: f64) -> Tolerance {
        Tolerance {
            rtol: self.rtol * factor,
            atol_rms: self.atol_rms * factor,
        }
    }
}

/// How an op's output is judged.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Check {
    Close(Tolerance),
    /// Same bits (any NaN matches any NaN, since devices may canonicalise NaN payloads).
    BitExact,
    /// Normal samples: mean and standard deviation within `sigmas` standard errors, not constant.
    Normal {
        mean: f64,
        std: f64,
        sigmas: f64,
    },
}

/// Compares `out` with `reference` under `check`. Lengths must match (a backend bug otherwise,
/// reported as a mismatch rather than a panic).
pub fn verify(out: &HostData, reference: &Reference, check: Check) -> Verification {
    let n = out.len();
    let mut m = Metrics::default();
    let zeros: usize = pieces(n)
        .map(|rg| rg.filter(|&i| out.get_f64(i) == 0.0).count())
        .sum();
    m.zero_frac = if n == 0 { 0.0 } else { zeros as f64 / n as f64 };
    match (check, reference) {
        (Check::Normal { mean, std, sigmas }, _) => verify_normal(out, mean, std, sigmas, m),
        (Check::BitExact, Reference::Data(r)) => verify_bits(out, r, m),
        (Check::Close(tol), Reference::Values(r)) => verify_close(out, r, tol, m),
        (Check::Close(_), Reference::Data(r)) => {
            let values = Reference::Values(r.to_f64_vec());
            verify(out, &values, check)
        }
        (Check::BitExact, Reference::Values(_)) => Verification {
            verdict: Verdict::Mismatch,
            metrics: m,
            detail: "internal: bit-exact check needs a typed reference".into(),
        },
    }
}

/// The reference an output is compared with: exact values (f64) or a typed tensor for bit checks.
#[derive(Clone, Debug, PartialEq)]
pub enum Reference {
    Values(Vec<f64>),
    Data(HostData),
}

fn length_mismatch(n: usize, r: usize, m: Metrics) -> Verification {
    Verification {
        verdict: Verdict::Mismatch,
        metrics: m,
        detail: format!("output has {n} elements, reference {r}"),
    }
}

/// Elements per piece of the parallel passes. Fixed, so that the pieces and the order their
/// sums are added in (and so every metric, to the last bit) do not depend on the thread count.
const PIECE: usize = 1 << 16;

/// The pieces of `0..n`, in parallel.
fn pieces(n: usize) -> impl IndexedParallelIterator<Item = Range<usize>> {
    (0..n.div_ceil(PIECE))
        .into_par_iter()
        .map(move |p| p * PIECE..((p + 1) * PIECE).min(n))
}

/// What one piece of a close comparison found.
struct Piece {
    sq: f64,
    max_abs: f64,
    max_rel: f64,
    nonfinite: u64,
    /// (index, got, want, bound) of the piece's first element past its bound.
    first_bad: Option<(usize, f64, f64, f64)>,
    out_all_zero: bool,
    ref_all_zero: bool,
}

fn close_piece(
    out: &HostData,
    r: &[f64],
    range: Range<usize>,
    ref_rms: f64,
    tol: Tolerance,
) -> Piece {
    let atol = tol.atol_rms * ref_rms;
    let mut p = Piece {
        sq: 0.0,
        max_abs: 0.0,
        max_rel: 0.0,
        nonfinite: 0,
        first_bad: None,
        out_all_zero: true,
        ref_all_zero: true,
    };
    for i in range {
        let (got, want) = (out.get_f64(i), r[i]);
        p.out_all_zero &= got == 0.0;
        p.ref_all_zero &= want == 0.0;
        if !got.is_finite() {
            if want.is_finite() {
                p.nonfinite += 1;
            }
            continue;
        }
        let err = (got - want).abs();
        p.sq += err * err;
        p.max_abs = p.max_abs.max(err);
        // Relative error against max(|ref|, rms(ref)): elements near zero would otherwise dominate.
        let denom = want.abs().max(ref_rms);
        if denom > 0.0 {
            p.max_rel = p.max_rel.max(err / denom);
        }
        let bound = tol.rtol * want.abs() + atol;
        if err > bound && p.first_bad.is_none() {
            p.first_bad = Some((i, got, want, bound));
        }
    }
    p
}

/// Compares in pieces on rayon's pool (a 200-million-element output takes seconds on one
/// core); the pieces are combined in order, so the first bad element is the lowest index.
fn verify_close(out: &HostData, r: &[f64], tol: Tolerance, mut m: Metrics) -> Verification {
    let n = out.len();
    if n != r.len() {
        return length_mismatch(n, r.len(), m);
    }
    let sums: Vec<f64> = pieces(n)
        .map(|rg| r[rg].iter().map(|x| x * x).sum::<f64>())
        .collect();
    let ref_rms = (sums.iter().sum::<f64>() / n.max(1) as f64).sqrt();
    let found: Vec<Piece> = pieces(n)
        .map(|rg| close_piece(out, r, rg, ref_rms, tol))
        .collect();
    let mut sq = 0.0;
    let mut first_bad = None;
    let (mut out_all_zero, mut ref_all_zero) = (true, true);
    for p in found {
        sq += p.sq;
        m.max_abs_err = m.max_abs_err.max(p.max_abs);
        m.max_rel_err = m.max_rel_err.max(p.max_rel);
        m.nonfinite += p.nonfinite;
        first_bad = first_bad.or(p.first_bad);
        out_all_zero &= p.out_all_zero;
        ref_all_zero &= p.ref_all_zero;
    }
    m.rms_err = (sq / n.max(1) as f64).sqrt();
    if m.nonfinite > 0 {
        return Verification {
            verdict: Verdict::Nonfinite,
            detail: format!("{} of {n} elements are NaN or Inf", m.nonfinite),
            metrics: m,
        };
    }
    if n > 0 && out_all_zero && !ref_all_zero {
        return Verification {
            verdict: Verdict::Zeros,
            detail: format!("all {n} elements are zero; reference rms is {ref_rms:.3e}"),
            metrics: m,
        };
    }
    match first_bad {
        Some((i, got, want, bound)) => Verification {
            verdict: Verdict::Mismatch,
            detail: format!(
                "element {i}: got {got:.6e}, expected {want:.6e} (|err| {:.3e} > bound {bound:.3e})",
                (got - want).abs()
            ),
            metrics: m,
        },
        None => Verification {
            verdict: Verdict::Ok,
            detail: String::new(),
            metrics: m,
        },
    }
}

fn verify_bits(out: &HostData, r: &HostData, mut m: Metrics) -> Verification {
    let n = out.len();
    if n != r.len() {
        return length_mismatch(n, r.len(), m);
    }
    if out.dtype() != r.dtype() {
        return Verification {
            verdict: Verdict::Mismatch,
            metrics: m,
            detail: format!(
                "output dtype {} but reference dtype {}",
                out.dtype(),
                r.dtype()
            ),
        };
    }
    let mut differing = 0u64;
    let mut first: Option<usize> = None;
    let (mut out_all_zero, mut ref_all_zero) = (true, true);
    for i in 0..n {
        let (got, want) = (out.get_f64(i), r.get_f64(i));
        out_all_zero &= got == 0.0;
        ref_all_zero &= want == 0.0;
        if !got.is_finite() && want.is_finite() {
            m.nonfinite += 1;
        }
        let same = out.bits(i) == r.bits(i) || (got.is_nan() && want.is_nan());
        if !same {
            differing += 1;
            first.get_or_insert(i);
            let err = (got - want).abs();
            if err.is_finite() {
                m.max_abs_err = m.max_abs_err.max(err);
                if want != 0.0 {
                    m.max_rel_err = m.max_rel_err.max(err / want.abs());
                }
            }
        }
    }
    let verdict = if m.nonfinite > 0 {
        Verdict::Nonfinite
    } else if n > 0 && out_all_zero && !ref_all_zero {
        Verdict::Zeros
    } else if differing > 0 {
        Verdict::Mismatch
    } else {
        Verdict::Ok
    };
    let detail = match first {
        Some(i) => format!(
            "{differing} of {n} elements differ; first at {i}: bits {:#x}, expected {:#x}",
            out.bits(i),
            r.bits(i)
        ),
        None => String::new(),
    };
    Verification {
        verdict,
        metrics: m,
        detail,
    }
}

fn verify_normal(out: &HostData, mean: f64, std: f64, sigmas: f64, mut m: Metrics) -> Verification {
    let n = out.len();
    let mut sum = 0.0;
    let mut finite = 0usize;
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for i in 0..n {
        let v = out.get_f64(i);
        if v.is_finite() {
            sum += v;
            finite += 1;
            lo = lo.min(v);
            hi = hi.max(v);
        } else {
            m.nonfinite += 1;
        }
    }
    let got_mean = sum / finite.max(1) as f64;
    let var = (0..n)
        .map(|i| out.get_f64(i))
        .filter(|v| v.is_finite())
        .map(|v| (v - got_mean).powi(2))
        .sum::<f64>()
        / (finite.max(2) - 1) as f64;
    let got_std = var.sqrt();
    m.max_abs_err = (got_mean - mean).abs();
    m.max_rel_err = if std > 0.0 {
        (got_std - std).abs() / std
    } else {
        0.0
    };
    m.rms_err = (got_std - std).abs();
    // Standard errors of the sample mean and sample standard deviation of a normal sample.
    let nf = finite.max(1) as f64;
    let se_mean = std / nf.sqrt();
    let se_std = std / (2.0 * (nf - 1.0).max(1.0)).sqrt();
    let (verdict, detail) = if m.nonfinite > 0 {
        (
            Verdict::Nonfinite,
            format!("{} of {n} samples are NaN or Inf", m.nonfinite),
        )
    } else if n > 0 && m.zero_frac == 1.0 && !(mean == 0.0 && std == 0.0) {
        (Verdict::Zeros, format!("all {n} samples are zero"))
    } else if n > 1 && lo == hi && std > 0.0 {
        (Verdict::Mismatch, format!("all {n} samples equal {lo}"))
    } else if (got_mean - mean).abs() > sigmas * se_mean + 1e-12 {
        (
            Verdict::Mismatch,
            format!("sample mean {got_mean:.5} is more than {sigmas} standard errors from {mean}"),
        )
    } else if (got_std - std).abs() > sigmas * se_std + 1e-12 {
        (
            Verdict::Mismatch,
            format!("sample std {got_std:.5} is more than {sigmas} standard errors from {std}"),
        )
    } else {
        (Verdict::Ok, String::new())
    };
    Verification {
        verdict,
        metrics: m,
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    fn tol() -> Tolerance {
        Tolerance {
            rtol: 0.01,
            atol_rms: 0.001,
        }
    }

    /// Reference [3, 4] has rms sqrt(12.5); the bound on element 1 is 0.01*4 + 0.001*rms.
    fn bound1() -> f64 {
        0.01 * 4.0 + 0.001 * 12.5f64.sqrt()
    }

    fn f32s(v: &[f64]) -> HostData {
        HostData::F32(v.iter().map(|&x| x as f32).collect())
    }

    #[test]
    fn exactly_at_the_bound_is_ok_and_just_past_it_is_a_mismatch() {
        let r = Reference::Values(vec![3.0, 4.0]);
        // f32 cannot hold 4 + bound exactly, so check with a reference that sits on the f32 value.
        let at = (4.0 + bound1()) as f32 as f64;
        let r_at = Reference::Values(vec![3.0, at - bound1() * (1.0 - 1e-9)]);
        let v = verify(&f32s(&[3.0, at]), &r_at, Check::Close(tol()));
        assert_eq!(v.verdict, Verdict::Ok, "{}", v.detail);
        let past = (4.0 + bound1() * 1.01) as f32 as f64;
        let v = verify(&f32s(&[3.0, past]), &r, Check::Close(tol()));
        assert_eq!(v.verdict, Verdict::Mismatch);
        assert!(v.detail.starts_with("element 1:"), "{}", v.detail);
        assert!((v.metrics.max_abs_err - (past - 4.0)).abs() < 1e-12);
    }

    #[test]
    fn tolerance_edge_exact_in_f64_storage_terms() {
        // Outputs of 0.5 and reference 0.5 - bound: representable exactly, so the edge is exact.
        let t = Tolerance {
            rtol: 0.0,
            atol_rms: 0.25,
        };
        // rms of [0.25, 0.25] is 0.25; bound = 0.0625.
        let r = Reference::Values(vec![0.25, 0.25]);
        assert_eq!(
            verify(&f32s(&[0.3125, 0.1875]), &r, Check::Close(t)).verdict,
            Verdict::Ok
        );
        let just_past = 0.3125f32.next_up() as f64;
        assert_eq!(
            verify(&f32s(&[just_past, 0.25]), &r, Check::Close(t)).verdict,
            Verdict::Mismatch
        );
    }

    #[test]
    fn pieces_name_the_lowest_bad_element_and_give_the_same_metrics_on_any_thread_count() {
        // Over several pieces, with bad elements in the third piece and the last one.
        let n = 3 * PIECE + 123;
        let want: Vec<f64> = (0..n).map(|i| ((i % 97) as f64 - 48.0) / 7.0).collect();
        let mut got: Vec<f64> = want.iter().map(|w| w * (1.0 + 1e-4)).collect();
        let (first, last) = (2 * PIECE + 5, n - 1);
        got[first] += 1.0;
        got[last] -= 2.0;
        let (out, r) = (f32s(&got), Reference::Values(want));
        let on = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| verify(&out, &r, Check::Close(tol())))
        };
        let one = on(1);
        assert_eq!(one.verdict, Verdict::Mismatch);
        assert!(
            one.detail.starts_with(&format!("element {first}:")),
            "{}",
            one.detail
        );
        assert_eq!(one, on(4), "the verdict and every metric, to the last bit");
        assert!((one.metrics.max_abs_err - 2.0).abs() < 1e-3);
    }

    #[test]
    fn all_zero_output_is_zeros_not_mismatch() {
        let r = Reference::Values(vec![1.0, -2.0, 0.5]);
        let v = verify(&f32s(&[0.0, 0.0, 0.0]), &r, Check::Close(tol()));
        assert_eq!(v.verdict, Verdict::Zeros);
        assert_eq!(v.metrics.zero_frac, 1.0);
        // An all-zero reference makes an all-zero output correct.
        let rz = Reference::Values(vec![0.0, 0.0, 0.0]);
        assert_eq!(
            verify(&f32s(&[0.0, 0.0, 0.0]), &rz, Check::Close(tol())).verdict,
            Verdict::Ok
        );
    }

    #[test]
    fn nan_and_inf_are_nonfinite_and_counted() {
        let r = Reference::Values(vec![1.0, 2.0, 3.0, 4.0]);
        let out = HostData::F32(vec![1.0, f32::NAN, f32::INFINITY, 4.0]);
        let v = verify(&out, &r, Check::Close(tol()));
        assert_eq!(v.verdict, Verdict::Nonfinite);
        assert_eq!(v.metrics.nonfinite, 2);
        // NaN where the reference is NaN too is not the backend's fault.
        let rn = Reference::Values(vec![f64::NAN, 1.0]);
        let v = verify(
            &HostData::F32(vec![f32::NAN, 1.0]),
            &rn,
            Check::Close(tol()),
        );
        assert_eq!(v.verdict, Verdict::Ok);
    }

    #[test]
    fn length_mismatch_is_reported_not_a_panic() {
        let r = Reference::Values(vec![1.0, 2.0]);
        let v = verify(&f32s(&[1.0]), &r, Check::Close(tol()));
        assert_eq!(v.verdict, Verdict::Mismatch);
        assert!(v.detail.contains("1 elements, reference 2"));
    }

    #[test]
    fn bit_exact_sees_one_ulp_and_accepts_any_nan() {
        let r = HostData::Bf16(vec![bf16::from_f32(1.0), bf16::NAN, bf16::from_f32(-2.0)]);
        let same = HostData::Bf16(vec![
            bf16::from_f32(1.0),
            bf16::from_bits(0x7fc1),
            bf16::from_f32(-2.0),
        ]);
        assert_eq!(
            verify(&same, &Reference::Data(r.clone()), Check::BitExact).verdict,
            Verdict::Ok
        );
        let ulp = HostData::Bf16(vec![
            bf16::from_bits(0x3f81),
            bf16::NAN,
            bf16::from_f32(-2.0),
        ]);
        let v = verify(&ulp, &Reference::Data(r.clone()), Check::BitExact);
        assert_eq!(v.verdict, Verdict::Mismatch);
        assert!(v.detail.contains("first at 0"), "{}", v.detail);
        let zeros = HostData::Bf16(vec![bf16::ZERO; 3]);
        assert_eq!(
            verify(&zeros, &Reference::Data(r), Check::BitExact).verdict,
            Verdict::Zeros
        );
        let wrong_type = HostData::F16(vec![f16::ONE]);
        let v = verify(
            &wrong_type,
            &Reference::Data(HostData::Bf16(vec![bf16::ONE])),
            Check::BitExact,
        );
        assert_eq!(v.verdict, Verdict::Mismatch);
    }

    fn normal_sample(n: usize, mean: f32, std: f32) -> HostData {
        use rand::SeedableRng;
        use rand_distr::Distribution;
        let mut g = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        let d = rand_distr::Normal::new(mean, std).unwrap();
        HostData::F32((0..n).map(|_| d.sample(&mut g)).collect())
    }

    #[test]
    fn statistical_check_of_normal_samples() {
        let check = Check::Normal {
            mean: 0.0,
            std: 1.0,
            sigmas: 5.0,
        };
        let none = Reference::Values(Vec::new());
        assert_eq!(
            verify(&normal_sample(100_000, 0.0, 1.0), &none, check).verdict,
            Verdict::Ok
        );
        assert_eq!(
            verify(&normal_sample(100_000, 0.1, 1.0), &none, check).verdict,
            Verdict::Mismatch
        );
        let v = verify(&normal_sample(100_000, 0.0, 1.1), &none, check);
        assert_eq!(v.verdict, Verdict::Mismatch);
        assert!(v.detail.contains("sample std"), "{}", v.detail);
        assert_eq!(
            verify(&HostData::F32(vec![0.0; 1000]), &none, check).verdict,
            Verdict::Zeros
        );
        let v = verify(&HostData::F32(vec![0.25; 1000]), &none, check);
        assert_eq!(v.verdict, Verdict::Mismatch);
        assert!(v.detail.contains("all 1000 samples equal"), "{}", v.detail);
    }

    #[test]
    fn reduction_tolerance_grows_with_length_and_narrow_types() {
        let short = Tolerance::for_reduction(16, DType::F32, DType::F32, DType::F32);
        let long = Tolerance::for_reduction(16_384, DType::F32, DType::F32, DType::F32);
        assert!((long.atol_rms / short.atol_rms) > 20.0);
        let bf = Tolerance::for_reduction(16, DType::Bf16, DType::F32, DType::Bf16);
        assert_eq!(bf.rtol, 2.0 * DType::Bf16.unit_roundoff());
        let tf32 = Tolerance::for_reduction(16, DType::Tf32, DType::F32, DType::F32);
        assert!(tf32.atol_rms > 100.0 * short.atol_rms);
    }
}

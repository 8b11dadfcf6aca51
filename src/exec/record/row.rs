//! A unit's results.csv row, made from its outcome: the fixed columns in
//! `results::csv::FIXED_COLUMNS` order, then the op's parameters.

use crate::exec::worker::unit::Outcome;
use crate::op::Case;

/// Everything that identifies a unit besides its outcome.
pub struct UnitKey<'a> {
    pub unit_id: &'a str,
    pub case: &'a Case,
    pub solver: &'a str,
    pub backend: &'a str,
    pub device: &'a str,
    /// The device slot (`--devices`), empty without.
    pub device_index: &'a str,
    pub env: &'a str,
    /// The ROCm tree's label in a run over several trees, else empty.
    pub rocm: &'a str,
}

fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.6e}")
    } else {
        v.to_string()
    }
}

fn ms(v: Option<f64>) -> String {
    v.map(|s| format!("{:.6}", s * 1e3)).unwrap_or_default()
}

/// One CSV record for a unit and its outcome.
pub fn record(key: &UnitKey, out: &Outcome) -> Vec<String> {
    let p = &key.case.problem;
    let (flops, bytes) = (p.flops(), p.bytes());
    let st = out.stats.as_ref();
    let tele = out.telemetry.as_ref();
    let m = out.verification.as_ref().map(|v| &v.metrics);
    let rate = |work: f64, scale: f64| match st {
        Some(s) if s.median > 0.0 && work > 0.0 => format!("{:.3}", work / s.median / scale),
        _ => String::new(),
    };
    let mut r = vec![
        key.unit_id.to_string(),
        key.case.id.clone(),
        p.kind().name().to_string(),
        key.backend.to_string(),
        key.device.to_string(),
        key.device_index.to_string(),
        key.solver.to_string(),
        key.env.to_string(),
        key.rocm.to_string(),
        out.status.name().to_string(),
        out.phase.clone(),
        one_line(&out.error),
        out.reference.clone(),
        m.map(|m| num(m.max_abs_err)).unwrap_or_default(),
        m.map(|m| num(m.max_rel_err)).unwrap_or_default(),
        m.map(|m| num(m.rms_err)).unwrap_or_default(),
        m.map(|m| format!("{:.6}", m.zero_frac)).unwrap_or_default(),
        m.map(|m| m.nonfinite.to_string()).unwrap_or_default(),
        ms(out.first_call_s),
        ms(out.compile_s),
        ms(out.compile_warm_s),
        ms(st.map(|s| s.median)),
        ms(st.map(|s| s.p10)),
        ms(st.map(|s| s.p90)),
        ms(st.map(|s| s.mean)),
        ms(st.map(|s| s.stdev)),
        st.map(|s| s.samples.to_string()).unwrap_or_default(),
        out.timing_method.clone(),
        out.cache.clone(),
        match out.trials {
            0 => String::new(),
            n => n.to_string(),
        },
        out.trial_medians
            .iter()
            .map(|m| format!("{:.6}", m * 1e3))
            .collect::<Vec<_>>()
            .join(";"),
        trial_spread(&out.trial_medians)
            .map(|v| format!("{v:.4}"))
            .unwrap_or_default(),
        ms(out.call_stats.as_ref().map(|s| s.median)),
        ms(out.call_stats.as_ref().map(|s| s.p10)),
        ms(out.call_stats.as_ref().map(|s| s.p90)),
        tele.and_then(|t| t.clock_mhz())
            .map(|v| format!("{v:.0}"))
            .unwrap_or_default(),
        tele.and_then(|t| t.temp_c())
            .map(|v| format!("{v:.0}"))
            .unwrap_or_default(),
        tele.and_then(|t| t.clock_drop()).unwrap_or_default(),
        rate(flops, 1e9),
        rate(bytes, 1e9),
        out.workspace_bytes.to_string(),
        one_line(&out.chosen),
        out.stable.clone(),
        one_line(&out.unstable),
        format!("{flops:.0}"),
        format!("{bytes:.0}"),
        format!("{:.3}", out.wall_s * 1e3),
    ];
    r.extend(key.case.values.iter().map(|v| v.to_string()));
    r
}

/// (max - min) / median of the trials' medians, with at least two of them.
pub fn trial_spread(medians: &[f64]) -> Option<f64> {
    if medians.len() < 2 {
        return None;
    }
    let mut v = medians.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v[(v.len() - 1) / 2];
    (mid > 0.0).then(|| (v[v.len() - 1] - v[0]) / mid)
}

/// Errors can carry newlines (library messages, stderr tails); a CSV cell stays one line.
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " | ")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::results::csv::{FIXED_COLUMNS, header};
    use crate::results::status::Status;

    /// An 8x16x4 f32 GEMM case, as a sweep file makes it.
    pub(crate) fn gemm_case() -> Case {
        let sweep = crate::spec::load_str(
            "t.toml",
            "name = \"t\"\nop = \"gemm\"\n[axes]\nm = [8]\nn = [16]\nk = [4]\n",
            &[],
        );
        let sweep = match sweep {
            Ok(s) => s,
            Err(e) => panic!("the test sweep loads: {e}"),
        };
        match sweep.cases().next() {
            Some(Ok(case)) => case,
            _ => panic!("the test sweep has a case"),
        }
    }

    #[test]
    fn a_row_has_one_cell_per_column_and_keeps_an_error_on_one_line() {
        let case = gemm_case();
        let key = UnitKey {
            unit_id: "u1",
            case: &case,
            solver: "default",
            backend: "cpu",
            device: "cpu",
            device_index: "",
            env: "",
            rocm: "",
        };
        let mut out = Outcome::failed(Status::Crash, "run", "line one\nline two");
        out.trials = 2;
        out.trial_medians = vec![1e-3, 3e-3];
        let row = record(&key, &out);
        let head = header(case.problem.kind());
        assert_eq!(row.len(), head.len());
        assert_eq!(&head[..FIXED_COLUMNS.len()], FIXED_COLUMNS);
        let cell = |name: &str| {
            let i = head.iter().position(|c| c == name).unwrap_or(usize::MAX);
            row.get(i).cloned().unwrap_or_default()
        };
        assert_eq!(cell("error"), "line one | line two");
        assert_eq!(cell("status"), "crash");
        assert_eq!(cell("trials"), "2");
        assert_eq!(cell("trial_ms"), "1.000000;3.000000");
        // (max - min) / median, the lower median of an even count.
        assert_eq!(cell("trial_spread"), "2.0000");
        assert_eq!([cell("m"), cell("n"), cell("k")], ["8", "16", "4"]);
    }
}

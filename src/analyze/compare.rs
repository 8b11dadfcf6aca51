//! `rocsweep compare RUN_A RUN_B`: the same sweep run twice (two ROCm releases, two drivers, two
//! machines), matched unit by unit. Pure functions build a [`Comparison`] from two loaded runs
//! and render it; [`command`] only loads, writes files and picks the exit code.

use super::rundata::{Row, RunData};
use crate::error::CmdError;
use crate::exit;
use crate::results::status::Status;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub use super::compare_render::{csv_text, markdown};

/// Changes smaller than this (5 %) are never called faster or slower: on real GPUs, clocks and
/// thermals move medians by a few percent between runs of the same binary.
pub const SAME_THRESHOLD: f64 = 0.05;

/// How B's throughput compares with A's for one unit timed in both runs.
///
/// With `r = median_ms(A) / median_ms(B)` (B's throughput over A's), the size of the change
/// `c = max(r, 1/r) - 1`, and each run's relative spread `s = (p90_ms - p10_ms) / median_ms`
/// (the width of the middle 80 % of its samples):
/// - `faster` / `slower`: `c` is larger than both runs' spreads and larger than
///   [`SAME_THRESHOLD`]; `r > 1` is faster.
/// - `same`: `c` is at most [`SAME_THRESHOLD`] and at most the larger spread, so the difference
///   is small and could be noise.
/// - `ambiguous`: anything else: a large change hidden in the noise of one run, or a change that
///   is real (beyond both spreads) but below the threshold.
///
/// A run without p10/p90 counts as infinitely noisy. Like nvbench's compare (FAST / SLOW / SAME /
/// ????), the verdict comes from the measured spreads, not from the ratio alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    Faster,
    Slower,
    Same,
    Ambiguous,
}

impl Verdict {
    pub const ALL: [Verdict; 4] = [
        Verdict::Faster,
        Verdict::Slower,
        Verdict::Same,
        Verdict::Ambiguous,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::Same => "same",
            Verdict::Ambiguous => "ambiguous",
        }
    }
}

/// The rule of [`Verdict`], as compare.md states it.
pub const VERDICT_RULE: &str = "ratio = median_ms(A) / median_ms(B) (B's throughput over A's; \
above 1 is faster). Each run's spread is (p90_ms - p10_ms) / median_ms. A unit is **faster** or \
**slower** when the change (ratio or 1/ratio, minus 1) is larger than both runs' spreads and \
larger than 5 %; **same** when the change is at most 5 % and at most the larger spread; \
**ambiguous** otherwise (a large change inside the noise, or a real change below 5 %).";

/// Median and spread of one unit's timed samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timing {
    pub median_ms: f64,
    /// (p90 - p10) / median, when both percentiles were recorded.
    pub spread: Option<f64>,
}

impl Timing {
    pub fn of(row: &Row) -> Option<Timing> {
        let m = row.median_ms.filter(|m| *m > 0.0 && m.is_finite())?;
        let spread = match (row.p10_ms, row.p90_ms) {
            (Some(lo), Some(hi)) if hi >= lo => Some((hi - lo) / m),
            _ => None,
        };
        Some(Timing {
            median_ms: m,
            spread,
        })
    }
}

/// The ratio (B's throughput over A's) and its verdict; see [`Verdict`] for the rule.
pub fn verdict(a: Timing, b: Timing) -> (f64, Verdict) {
    let r = a.median_ms / b.median_ms;
    let change = r.max(1.0 / r) - 1.0;
    let noise = match (a.spread, b.spread) {
        (Some(x), Some(y)) => x.max(y),
        _ => f64::INFINITY,
    };
    let v = if change > noise && change > SAME_THRESHOLD {
        if r > 1.0 {
            Verdict::Faster
        } else {
            Verdict::Slower
        }
    } else if change <= SAME_THRESHOLD && change <= noise {
        Verdict::Same
    } else {
        Verdict::Ambiguous
    };
    (r, v)
}

/// One side of a unit's comparison.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub status: Status,
    pub phase: String,
    pub error: String,
    pub timing: Option<Timing>,
}

/// One unit_id, in either or both runs.
#[derive(Clone, Debug)]
pub struct UnitCmp {
    pub unit_id: String,
    pub op: String,
    pub params: String,
    pub solver: String,
    pub env: String,
    pub a: Option<Outcome>,
    pub b: Option<Outcome>,
    /// Timed in both runs: B over A and its verdict.
    pub ratio: Option<(f64, Verdict)>,
}

impl UnitCmp {
    /// `ok->hang` when the status changed, `only-in-a` / `only-in-b` when unmatched, else empty.
    pub fn transition(&self) -> String {
        match (&self.a, &self.b) {
            (Some(a), Some(b)) if a.status != b.status => format!("{}->{}", a.status, b.status),
            (Some(_), Some(_)) => String::new(),
            (Some(_), None) => "only-in-a".into(),
            (None, _) => "only-in-b".into(),
        }
    }

    /// Worse in B: a failure that A did not have, or slower beyond the noise. A failure a
    /// boundary search inferred (`inferred-fail`) counts like a measured one, so a bisect run
    /// compares with a full grid; the transition (`ok->inferred-fail`) says it was inferred.
    pub fn regressed(&self) -> bool {
        let failed = matches!((&self.a, &self.b), (Some(a), Some(b)) if b.status.predicts_failure() && !a.status.predicts_failure());
        failed || matches!(self.ratio, Some((_, Verdict::Slower)))
    }

    /// Failed in A and not in B (measured or inferred, as in `regressed`).
    pub fn fixed(&self) -> bool {
        matches!((&self.a, &self.b), (Some(a), Some(b)) if a.status.predicts_failure() && !b.status.predicts_failure())
    }
}

/// What a run was, for the header of compare.md.
#[derive(Clone, Debug)]
pub struct RunInfo {
    /// The run directory's name (not its full path, so reports do not depend on where it lies).
    pub label: String,
    pub sweep: String,
    pub sha256: String,
    pub overrides: Vec<String>,
    pub backend: String,
    pub devices: Vec<String>,
    pub started_at: String,
    pub rocsweep: String,
    pub units: usize,
}

impl RunInfo {
    pub fn of(run: &RunData) -> RunInfo {
        let m = &run.manifest;
        RunInfo {
            label: dir_label(&run.dir),
            sweep: m.sweep.name.clone(),
            sha256: m.sweep.sha256.clone(),
            overrides: m.sweep.overrides.clone(),
            backend: m.backend.backend.clone(),
            devices: m.backend.devices.clone(),
            started_at: m.started_at.clone(),
            rocsweep: format!("{} (git {})", m.rocsweep_version, m.git_commit),
            units: run.rows.len(),
        }
    }
}

/// The last component of a run directory, resolving `.` and `..` when it has none.
pub fn dir_label(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .or_else(|| {
            dir.canonicalize()
                .ok()?
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| dir.display().to_string())
}

#[derive(Clone, Debug)]
pub struct Comparison {
    pub a: RunInfo,
    pub b: RunInfo,
    /// Why the two runs are not the same sweep (set only when compared anyway with --force).
    pub sweep_mismatch: Option<String>,
    /// A's rows in order, then units only in B in B's order.
    pub units: Vec<UnitCmp>,
}

/// `Err` with the reason when the runs come from different sweeps (name or SHA-256 differ).
pub fn check_same_sweep(a: &RunData, b: &RunData) -> Result<(), String> {
    let (sa, sb) = (&a.manifest.sweep, &b.manifest.sweep);
    let mut why = Vec::new();
    if sa.name != sb.name {
        why.push(format!(
            "sweep names differ: `{}` vs `{}`",
            sa.name, sb.name
        ));
    }
    if sa.sha256 != sb.sha256 {
        why.push(format!(
            "sweep file SHA-256 differ: {} ({}) vs {} ({})",
            short(&sa.sha256),
            sa.path,
            short(&sb.sha256),
            sb.path
        ));
    }
    if why.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} and {} are runs of different sweeps: {}",
            a.dir.display(),
            b.dir.display(),
            why.join("; ")
        ))
    }
}

pub(super) fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

fn outcome(row: &Row) -> Outcome {
    Outcome {
        status: row.status,
        phase: row.phase.clone(),
        error: row.error.clone(),
        timing: if row.status == Status::Ok {
            Timing::of(row)
        } else {
            None
        },
    }
}

pub fn compare(a: &RunData, b: &RunData) -> Comparison {
    let in_b: HashMap<&str, &Row> = b.rows.iter().map(|r| (r.unit_id.as_str(), r)).collect();
    let in_a: HashMap<&str, &Row> = a.rows.iter().map(|r| (r.unit_id.as_str(), r)).collect();
    let mut units = Vec::with_capacity(a.rows.len());
    let unit = |row: &Row, ra: Option<&Row>, rb: Option<&Row>| {
        let (oa, ob) = (ra.map(outcome), rb.map(outcome));
        let ratio = match (
            oa.as_ref().and_then(|o| o.timing),
            ob.as_ref().and_then(|o| o.timing),
        ) {
            (Some(ta), Some(tb)) => Some(verdict(ta, tb)),
            _ => None,
        };
        UnitCmp {
            unit_id: row.unit_id.clone(),
            op: row.op.clone(),
            params: row.params_text(),
            solver: row.solver.clone(),
            env: row.env.clone(),
            a: oa,
            b: ob,
            ratio,
        }
    };
    for ra in &a.rows {
        units.push(unit(ra, Some(ra), in_b.get(ra.unit_id.as_str()).copied()));
    }
    for rb in &b.rows {
        if !in_a.contains_key(rb.unit_id.as_str()) {
            units.push(unit(rb, None, Some(rb)));
        }
    }
    Comparison {
        a: RunInfo::of(a),
        b: RunInfo::of(b),
        sweep_mismatch: check_same_sweep(a, b).err(),
        units,
    }
}

/// Counts over a set of units, for the headline and the per-op/solver table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    pub matched: usize,
    pub regressed_status: usize,
    pub fixed: usize,
    pub changed_status: usize,
    pub verdicts: BTreeMap<Verdict, usize>,
    /// Sum of ln(ratio) and count, for the geometric mean.
    log_sum: f64,
    timed: usize,
}

impl Tally {
    fn add(&mut self, u: &UnitCmp) {
        if let (Some(a), Some(b)) = (&u.a, &u.b) {
            self.matched += 1;
            if a.status != b.status {
                self.changed_status += 1;
            }
            if b.status.predicts_failure() && !a.status.predicts_failure() {
                self.regressed_status += 1;
            }
        }
        if u.fixed() {
            self.fixed += 1;
        }
        if let Some((r, v)) = u.ratio {
            *self.verdicts.entry(v).or_default() += 1;
            self.log_sum += r.ln();
            self.timed += 1;
        }
    }

    pub fn count(&self, v: Verdict) -> usize {
        self.verdicts.get(&v).copied().unwrap_or(0)
    }

    pub fn geomean(&self) -> Option<f64> {
        (self.timed > 0).then(|| (self.log_sum / self.timed as f64).exp())
    }
}

impl Comparison {
    pub fn tally(&self) -> Tally {
        let mut t = Tally::default();
        self.units.iter().for_each(|u| t.add(u));
        t
    }

    /// Tallies per (op, solver), in name order.
    pub fn by_op_solver(&self) -> BTreeMap<(String, String), Tally> {
        let mut m: BTreeMap<(String, String), Tally> = BTreeMap::new();
        for u in &self.units {
            m.entry((u.op.clone(), u.solver.clone()))
                .or_default()
                .add(u);
        }
        m
    }

    pub fn only_in(&self, side_a: bool) -> Vec<&UnitCmp> {
        self.units
            .iter()
            .filter(|u| if side_a { u.b.is_none() } else { u.a.is_none() })
            .collect()
    }

    pub fn regressions(&self) -> usize {
        self.units.iter().filter(|u| u.regressed()).count()
    }

    /// One line: what changed from A to B.
    pub fn headline(&self) -> String {
        let t = self.tally();
        let mut s = format!(
            "{} -> {}: {} units matched, {} newly failing, {} fixed, {} other status changes; \
             timed in both: {} faster, {} slower, {} same, {} ambiguous",
            self.a.label,
            self.b.label,
            t.matched,
            t.regressed_status,
            t.fixed,
            t.changed_status
                .saturating_sub(t.regressed_status + t.fixed),
            t.count(Verdict::Faster),
            t.count(Verdict::Slower),
            t.count(Verdict::Same),
            t.count(Verdict::Ambiguous),
        );
        if let Some(g) = t.geomean() {
            let _ = write!(s, "; geometric-mean throughput B/A {g:.3}");
        }
        let (oa, ob) = (self.only_in(true).len(), self.only_in(false).len());
        if oa + ob > 0 {
            let _ = write!(s, "; {oa} only in A, {ob} only in B");
        }
        s
    }
}

/// The exit code: 3 with `fail_on_regression` when any unit regressed, else 0.
pub fn exit_code(c: &Comparison, fail_on_regression: bool) -> i32 {
    if fail_on_regression && c.regressions() > 0 {
        exit::UNITS_FAILED
    } else {
        exit::OK
    }
}

pub fn default_out(run_a: &Path, run_b: &Path) -> PathBuf {
    run_b.join(format!("compare-{}", dir_label(run_a)))
}

pub fn command(
    run_a: &Path,
    run_b: &Path,
    out: Option<&Path>,
    force: bool,
    fail_on_regression: bool,
) -> Result<i32, CmdError> {
    let a = RunData::load(run_a)?;
    let b = RunData::load(run_b)?;
    if let Err(why) = check_same_sweep(&a, &b)
        && !force
    {
        return Err(CmdError::BadInput(format!(
            "{why}; pass --force to compare them anyway (units are matched by id)"
        )));
    }
    let c = compare(&a, &b);
    let dir = out.map_or_else(|| default_out(run_a, run_b), Path::to_path_buf);
    std::fs::create_dir_all(&dir)
        .map_err(|e| CmdError::Failure(format!("{}: {e}", dir.display())))?;
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(|e| CmdError::Failure(format!("{}: {e}", p.display())))
    };
    write("compare.csv", &csv_text(&c)?)?;
    let ratios: Vec<f64> = c
        .units
        .iter()
        .filter_map(|u| u.ratio.map(|r| r.0))
        .collect();
    let plot = if ratios.is_empty() {
        None
    } else {
        match super::ratio_plot::draw(&dir.join("ratio.png"), &ratios) {
            Ok(()) => Some("ratio.png"),
            Err(e) => {
                eprintln!("warning: the ratio plot was not drawn: {e}");
                None
            }
        }
    };
    write("compare.md", &markdown(&c, plot))?;
    println!("{}", c.headline());
    println!("written: {}", dir.join("compare.md").display());
    Ok(exit_code(&c, fail_on_regression))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(median: f64, p10: f64, p90: f64) -> Timing {
        Timing {
            median_ms: median,
            spread: Some((p90 - p10) / median),
        }
    }

    #[test]
    fn verdict_rule() {
        // 2x faster with 10 % spreads: faster.
        assert_eq!(
            verdict(t(2.0, 1.9, 2.1), t(1.0, 0.95, 1.05)).1,
            Verdict::Faster
        );
        assert_eq!(
            verdict(t(1.0, 0.95, 1.05), t(2.0, 1.9, 2.1)).1,
            Verdict::Slower
        );
        // Identical: same.
        assert_eq!(verdict(t(1.0, 0.9, 1.1), t(1.0, 0.9, 1.1)).1, Verdict::Same);
        // 30 % change inside a 50 % spread: ambiguous.
        assert_eq!(
            verdict(t(1.3, 1.0, 1.65), t(1.0, 0.99, 1.01)).1,
            Verdict::Ambiguous
        );
        // 3 % change with 0.2 % spreads: real but below the threshold.
        assert_eq!(
            verdict(t(1.03, 1.029, 1.031), t(1.0, 0.999, 1.001)).1,
            Verdict::Ambiguous
        );
        // No spread known: only a small change counts, as same.
        let bare = Timing {
            median_ms: 1.0,
            spread: None,
        };
        assert_eq!(verdict(bare, bare).1, Verdict::Same);
        assert_eq!(verdict(t(2.0, 1.9, 2.1), bare).1, Verdict::Ambiguous);
    }
}

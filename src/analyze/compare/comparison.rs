//! A [`Comparison`] of two runs of one sweep, matched unit by unit: each unit's outcome on
//! either side, the noise-aware verdict of its time, and the counts over them. Pure: built from
//! two runs' rows, rendered by `render`.

use crate::analyze::noise;
use crate::results::rundata::{Row, RunData, Text};
use crate::results::status::Status;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

pub use crate::analyze::noise::{RULE as VERDICT_RULE, Timing, Verdict};

/// One side of a unit's comparison.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub status: Status,
    pub phase: Text,
    pub error: Text,
    pub timing: Option<Timing>,
    /// What the library picked where the solver left it the choice (`chosen`).
    pub chosen: Text,
}

/// One unit_id, in either or both runs.
#[derive(Clone, Debug)]
pub struct UnitCmp {
    pub unit_id: Text,
    pub op: Text,
    pub params: String,
    pub solver: Text,
    pub env: Text,
    pub a: Option<Outcome>,
    pub b: Option<Outcome>,
    /// Timed in both runs: B over A and its verdict.
    pub ratio: Option<(f64, Verdict)>,
    /// Timed in both runs and moved by more than `noise::FAR_FACTOR` times the noise.
    pub far: bool,
    /// The calls the unit's case stands for in a sweep imported from a model (1 without).
    pub weight: f64,
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

use crate::results::rundir::dir_label;

#[derive(Clone, Debug)]
pub struct Comparison {
    pub a: RunInfo,
    pub b: RunInfo,
    /// Why the two runs are not the same sweep (set only when compared anyway with --force).
    pub sweep_mismatch: Option<String>,
    /// A's rows in order, then units only in B in B's order.
    pub units: Vec<UnitCmp>,
    /// Each run's noise floor (noise.rs), where its units have trials.
    pub floors: (Option<f64>, Option<f64>),
    /// Whether the geometric means are weighted by a model's calls (`rocsweep import`).
    pub weighted: bool,
    /// The library files section (`compare_libs`): what the two sides' workers mapped.
    pub libraries: String,
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
        timing: Timing::of(row),
        chosen: row.chosen.clone(),
    }
}

pub fn compare(a: &RunData, b: &RunData) -> Comparison {
    fn rows(run: &RunData) -> impl Iterator<Item = Result<Row, std::convert::Infallible>> + '_ {
        run.rows.iter().cloned().map(Ok)
    }
    match compare_rows((a, rows(a)), (b, rows(b))) {
        Ok(c) => c,
        Err(never) => match never {},
    }
}

/// The comparison of two runs whose rows come one at a time (`RunData::open`): only the units'
/// outcomes are kept, not the rows, so two runs of 10^6 units compare in a few hundred MB.
pub fn compare_rows<E>(
    (a, rows_a): (&RunData, impl Iterator<Item = Result<Row, E>>),
    (b, rows_b): (&RunData, impl Iterator<Item = Result<Row, E>>),
) -> Result<Comparison, E> {
    let weights = crate::results::weights::of(b).or_else(|| crate::results::weights::of(a));
    let mut g = Gather {
        weights: weights.as_ref(),
        ..Gather::default()
    };
    for row in rows_a {
        g.add_a(row?);
    }
    for row in rows_b {
        g.add_b(row?);
    }
    let floors = (noise::median(g.spreads.0), noise::median(g.spreads.1));
    let floor = floors.0.unwrap_or(0.0).max(floors.1.unwrap_or(0.0));
    let mut units = g.units;
    units.append(&mut g.only_b);
    for u in &mut units {
        let timings = (
            u.a.as_ref().and_then(|o| o.timing),
            u.b.as_ref().and_then(|o| o.timing),
        );
        if let (Some(ta), Some(tb)) = timings {
            u.ratio = Some(noise::verdict(ta, tb, floor));
            u.far = noise::far(ta, tb, floor);
        }
    }
    let info = |run: &RunData, units: usize| RunInfo {
        units,
        ..RunInfo::of(run)
    };
    Ok(Comparison {
        a: info(a, g.rows.0),
        b: info(b, g.rows.1),
        sweep_mismatch: check_same_sweep(a, b).err(),
        units,
        floors,
        weighted: weights.is_some(),
        libraries: super::libs::section(a, b),
    })
}

/// The units of a comparison as the rows come: A's in order, then B's matched into them or
/// kept apart when A has no such unit.
#[derive(Default)]
struct Gather<'w> {
    weights: Option<&'w HashMap<String, crate::spec::Weight>>,
    units: Vec<UnitCmp>,
    only_b: Vec<UnitCmp>,
    /// Where each unit id of A is in `units`, and every place of an id A has more than once.
    index: HashMap<Text, u32>,
    again: HashMap<Text, Vec<u32>>,
    /// The trial spreads of each side's timed units, for its noise floor.
    spreads: (Vec<f64>, Vec<f64>),
    rows: (usize, usize),
}

impl Gather<'_> {
    fn unit(&self, row: &Row, a: Option<Outcome>, b: Option<Outcome>) -> UnitCmp {
        UnitCmp {
            unit_id: row.unit_id.clone(),
            op: row.op.clone(),
            params: row.params_text(),
            solver: row.solver.clone(),
            env: row.env.clone(),
            a,
            b,
            ratio: None,
            far: false,
            weight: self
                .weights
                .and_then(|w| w.get(row.case_id.as_str()))
                .map_or(1.0, |w| w.calls),
        }
    }

    fn add_a(&mut self, row: Row) {
        self.rows.0 += 1;
        let o = outcome(&row);
        self.spreads.0.extend(o.timing.and_then(|t| t.spread));
        let u = self.unit(&row, Some(o), None);
        let at = u32::try_from(self.units.len()).unwrap_or(u32::MAX);
        match self.index.entry(row.unit_id) {
            Entry::Vacant(e) => {
                e.insert(at);
            }
            Entry::Occupied(e) => {
                let first = *e.get();
                let places = self.again.entry(e.key().clone()).or_insert(vec![first]);
                places.push(at);
            }
        }
        self.units.push(u);
    }

    /// B's row of a unit: into A's units of that id (the last such row, when B has it twice),
    /// else apart.
    fn add_b(&mut self, row: Row) {
        self.rows.1 += 1;
        let o = outcome(&row);
        self.spreads.1.extend(o.timing.and_then(|t| t.spread));
        let id = row.unit_id.as_str();
        let places = match (self.again.get(id), self.index.get(id)) {
            (Some(all), _) => all.clone(),
            (None, Some(&first)) => vec![first],
            (None, None) => {
                let u = self.unit(&row, None, Some(o));
                self.only_b.push(u);
                return;
            }
        };
        for i in places {
            if let Some(u) = self.units.get_mut(i as usize) {
                u.b = Some(o.clone());
            }
        }
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
    /// Sum of weight x ln(ratio), the weights and the count, for the (weighted) geometric mean.
    log_sum: f64,
    weight_sum: f64,
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
            if v == Verdict::Unstable {
                return;
            }
            self.log_sum += u.weight * r.ln();
            self.weight_sum += u.weight;
            self.timed += 1;
        }
    }

    pub fn count(&self, v: Verdict) -> usize {
        self.verdicts.get(&v).copied().unwrap_or(0)
    }

    pub fn geomean(&self) -> Option<f64> {
        (self.timed > 0 && self.weight_sum > 0.0).then(|| (self.log_sum / self.weight_sum).exp())
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
            m.entry((u.op.to_string(), u.solver.to_string()))
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
        let unstable = t.count(Verdict::Unstable);
        if unstable > 0 {
            let _ = write!(
                s,
                "; {unstable} unstable (their processes disagreed: neither faster nor slower)"
            );
        }
        if let Some(g) = t.geomean() {
            let how = if self.weighted {
                " (weighted by calls)"
            } else {
                ""
            };
            let _ = write!(s, "; geometric-mean throughput B/A{how} {g:.3}");
        }
        let (oa, ob) = (self.only_in(true).len(), self.only_in(false).len());
        if oa + ob > 0 {
            let _ = write!(s, "; {oa} only in A, {ob} only in B");
        }
        s
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn timing(trials: &[f64]) -> Timing {
        Timing {
            median_ms: trials[trials.len() / 2],
            spread: noise::spread(trials),
            trials: trials.len(),
            unstable: false,
        }
    }

    fn outcome(status: Status, trials: &[f64]) -> Outcome {
        Outcome {
            status,
            phase: "".into(),
            error: "".into(),
            timing: (status == Status::Ok).then(|| timing(trials)),
            chosen: "".into(),
        }
    }

    /// `quiet` units timed alike in both runs, `slower` units 8.4 % slower in B (called slower
    /// against 3 % spreads, but not far), `doubled` units twice as slow (far), and `hang` units
    /// that newly hang.
    pub(crate) fn comparison(
        quiet: usize,
        slower: usize,
        doubled: usize,
        hang: usize,
    ) -> Comparison {
        let info = RunInfo {
            label: String::new(),
            sweep: String::new(),
            sha256: String::new(),
            overrides: vec![],
            backend: String::new(),
            devices: vec![],
            started_at: String::new(),
            rocsweep: String::new(),
            units: 0,
        };
        let base = [1.0, 1.015, 1.03];
        let kinds = std::iter::repeat_n(base, quiet)
            .chain(std::iter::repeat_n([1.09, 1.1, 1.11], slower))
            .chain(std::iter::repeat_n([2.0, 2.01, 2.02], doubled));
        let mut units: Vec<UnitCmp> = kinds
            .enumerate()
            .map(|(i, b)| {
                let (ta, tb) = (timing(&base), timing(&b));
                UnitCmp {
                    unit_id: format!("u{i}").into(),
                    op: "gemm".into(),
                    params: String::new(),
                    solver: "default".into(),
                    env: "".into(),
                    a: Some(outcome(Status::Ok, &base)),
                    b: Some(outcome(Status::Ok, &b)),
                    ratio: Some(noise::verdict(ta, tb, 0.0)),
                    far: noise::far(ta, tb, 0.0),
                    weight: 1.0,
                }
            })
            .collect();
        for i in 0..hang {
            units.push(UnitCmp {
                unit_id: format!("h{i}").into(),
                a: Some(outcome(Status::Ok, &base)),
                b: Some(outcome(Status::Hang, &[])),
                ratio: None,
                far: false,
                ..units[0].clone()
            });
        }
        Comparison {
            a: info.clone(),
            b: info,
            sweep_mismatch: None,
            units,
            floors: (None, None),
            weighted: false,
            libraries: String::new(),
        }
    }
}

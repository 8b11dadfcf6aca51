//! What every report file says about a run, computed once: status colours and order, env
//! combinations and their short labels, which parameters vary, counts, failures, fastest solvers.

use crate::results::rundata::{Row, RunData};
use crate::results::status::Status;
use plotters::style::RGBColor;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

mod env;
pub use env::{env_devices, short_env_labels, with_devices};

/// Fixed per status so that every report of every run reads the same way.
pub fn color(s: Status) -> RGBColor {
    match s {
        Status::Ok => RGBColor(0x4c, 0xaf, 0x50),
        Status::Mismatch => RGBColor(0xff, 0x98, 0x00),
        Status::Zeros => RGBColor(0xf2, 0xd0, 0x24),
        Status::Nonfinite => RGBColor(0x9c, 0x27, 0xb0),
        Status::Hang => RGBColor(0xd3, 0x2f, 0x2f),
        Status::Crash => RGBColor(0x21, 0x21, 0x21),
        Status::Error => RGBColor(0xec, 0x6f, 0xa8),
        Status::Unsupported => RGBColor(0xbd, 0xbd, 0xbd),
        Status::Skipped => RGBColor(0x90, 0xca, 0xf9),
        Status::Interrupted => RGBColor(0x8d, 0x6e, 0x63),
        // The colour of what they stand for; plots hatch them (`is_inferred`) to tell them apart.
        Status::InferredOk => color(Status::Ok),
        Status::InferredFail => color(Status::Hang),
    }
}

/// A cell that no unit of the run covers (e.g. a dropped combination).
pub const NO_UNIT: RGBColor = RGBColor(0xf5, 0xf5, 0xf5);

pub fn hex(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// The letter drawn in a heatmap cell, so the map reads without colour vision too.
pub fn code(s: Status) -> &'static str {
    match s {
        Status::Ok => "",
        Status::Mismatch => "M",
        Status::Zeros => "Z",
        Status::Nonfinite => "N",
        Status::Hang => "H",
        Status::Crash => "C",
        Status::Error => "E",
        Status::Unsupported => "U",
        Status::Skipped => "S",
        Status::Interrupted => "I",
        Status::InferredOk => "",
        Status::InferredFail => "F",
    }
}

/// Statuses whose phase is the interesting part (where the machine or worker went down).
pub fn shows_phase(s: Status) -> bool {
    matches!(s, Status::Hang | Status::Crash | Status::Interrupted)
}

/// The order `Status::severity` gives (what costs a user most wins a cell; a cell is `ok` only
/// when every unit in it is), as the heatmap's subtitle states it.
pub fn severity_text() -> String {
    let mut all = Status::ALL.to_vec();
    all.sort_by_key(|s| std::cmp::Reverse(s.severity()));
    all.iter().map(|s| s.name()).collect::<Vec<_>>().join(" > ")
}

/// What "throughput" and "problem size" mean for the run's op.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Metric {
    Flops,
    Bytes,
}

impl Metric {
    pub fn for_op(op: &str) -> Metric {
        match op {
            "copy" | "cast" | "rng" => Metric::Bytes,
            _ => Metric::Flops,
        }
    }
    pub fn size(self, r: &Row) -> Option<f64> {
        match self {
            Metric::Flops => r.flops,
            Metric::Bytes => r.bytes,
        }
    }
    pub fn rate(self, r: &Row) -> Option<f64> {
        match self {
            Metric::Flops => r.gflops,
            Metric::Bytes => r.gbps,
        }
    }
    pub fn size_name(self) -> &'static str {
        match self {
            Metric::Flops => "FLOPs per execution",
            Metric::Bytes => "bytes per execution",
        }
    }
    pub fn rate_unit(self) -> &'static str {
        match self {
            Metric::Flops => "GFLOP/s",
            Metric::Bytes => "GB/s",
        }
    }
}

/// The fastest `ok` unit of one case (over solvers and env combinations).
pub struct Fastest<'a> {
    pub best: &'a Row,
    /// The next fastest, when there is a choice to make.
    pub runner_up: Option<&'a Row>,
    pub timed: usize,
}

pub struct Facts<'a> {
    pub run: &'a RunData,
    /// Env combination keys (the CSV's `env` text), manifest order first.
    pub envs: Vec<String>,
    /// Parallel to `envs`: only the variables that differ between combinations.
    pub env_labels: Vec<String>,
    /// Solvers in the order they first appear.
    pub solvers: Vec<String>,
    /// Parameters with more than one value in the run, in CSV order.
    pub varying: Vec<String>,
    /// `varying` grouped by `leaders`.
    pub groups: Vec<(String, Vec<String>)>,
    pub metric: Metric,
    /// Each unit's status, to colour an inferred unit as the measured one it stands for.
    status_of: HashMap<&'a str, Status>,
    /// The model's share of calls per env combination (`model_lines`), for weighted sweeps.
    model: Option<Vec<(String, String)>>,
}

impl<'a> Facts<'a> {
    pub fn new(run: &'a RunData) -> Facts<'a> {
        let mut envs: Vec<String> = Vec::new();
        let seen_in_rows: BTreeSet<&str> = run.rows.iter().map(|r| r.env.as_str()).collect();
        for combo in &run.manifest.env_combos {
            let key = combo.context_key();
            if seen_in_rows.contains(key.as_str()) && !envs.contains(&key) {
                envs.push(key);
            }
        }
        for r in &run.rows {
            if !envs.iter().any(|e| *e == r.env) {
                envs.push(r.env.to_string());
            }
        }
        let env_labels = with_devices(short_env_labels(&envs), &env_devices(run, &envs));
        let mut solvers: Vec<String> = Vec::new();
        for r in &run.rows {
            if !solvers.iter().any(|s| *s == r.solver) {
                solvers.push(r.solver.to_string());
            }
        }
        let varying = run
            .param_names
            .iter()
            .filter(|name| {
                let values: BTreeSet<&str> = run
                    .rows
                    .iter()
                    .map(|r| r.param(name).unwrap_or(""))
                    .collect();
                values.len() > 1
            })
            .cloned()
            .collect();
        let mut f = Facts {
            run,
            envs,
            env_labels,
            solvers,
            varying,
            groups: Vec::new(),
            metric: Metric::for_op(&run.manifest.sweep.op),
            status_of: run
                .rows
                .iter()
                .map(|r| (r.unit_id.as_str(), r.status))
                .collect(),
            model: None,
        };
        f.groups = f.leaders(&f.varying);
        f.model = f.model_shares();
        f
    }

    /// Groups `params` so that a parameter equal to an earlier one in every row (conv2d `w`
    /// following `h`, gemm `out_dtype` following `dtype`) is listed under it instead of
    /// repeating its values: (leader, followers), in the order of `params`.
    pub fn leaders(&self, params: &[String]) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for p in params {
            let same = |q: &str| self.rows().iter().all(|r| r.param(p) == r.param(q));
            match out.iter_mut().find(|(lead, _)| same(lead)) {
                Some((_, followers)) => followers.push(p.clone()),
                None => out.push((p.clone(), Vec::new())),
            }
        }
        out
    }

    /// The status whose colour a unit is drawn in: its own, except that an inferred failure
    /// takes the colour of the measured failure it was inferred from (a crash stays crash-dark,
    /// a hang hang-red), named last in its error text as `[unit ID]`.
    pub fn shade(&self, r: &Row) -> Status {
        if r.status != Status::InferredFail {
            return r.status;
        }
        r.error
            .rfind("[unit ")
            .and_then(|at| r.error[at + "[unit ".len()..].split(']').next())
            .and_then(|id| self.status_of.get(id))
            .copied()
            .filter(|s| s.is_failure())
            .unwrap_or(Status::InferredFail)
    }

    /// The parameter that is the problem's size (`h` for conv2d, `m` for gemm, `size`, `count`
    /// or `bytes` for the others) when it varies, else the first numeric one that does: the
    /// heatmap's x axis, and what a throughput line runs along.
    pub fn size_param(&self) -> Option<String> {
        let f = self;
        let op = f.run.manifest.sweep.op.as_str();
        let preferred = crate::op::OpKind::parse(op).map_or(&[][..], |o| o.size_params());
        if let Some(p) = preferred.iter().find(|p| f.varying.iter().any(|v| v == *p)) {
            return Some(p.to_string());
        }
        f.varying
            .iter()
            .find(|name| {
                f.rows()
                    .iter()
                    .all(|r| r.param_f64(name).is_some_and(f64::is_finite))
            })
            .cloned()
    }

    pub fn rows(&self) -> &'a [Row] {
        &self.run.rows
    }

    pub fn env_index(&self, key: &str) -> usize {
        self.envs.iter().position(|e| e == key).unwrap_or(0)
    }

    pub fn env_label(&self, key: &str) -> &str {
        self.env_labels
            .get(self.env_index(key))
            .map_or("", String::as_str)
    }

    /// The devices the rows ran on (each row's device is what its own worker reported, so an
    /// env variable that changes the device shows here), else what the manifest recorded.
    pub fn device(&self) -> String {
        let from_rows: BTreeSet<&str> = self
            .rows()
            .iter()
            .map(|r| r.device.as_str())
            .filter(|d| !d.is_empty())
            .collect();
        if !from_rows.is_empty() {
            return from_rows.into_iter().collect::<Vec<_>>().join(", ");
        }
        let devices = &self.run.manifest.backend.devices;
        if devices.is_empty() {
            "(no device recorded)".to_string()
        } else {
            devices.join(", ")
        }
    }

    /// Units per status (in `Status::ALL` order), for one env combination or all.
    /// For a sweep weighted by a model's calls (`rocsweep import`): per env combination, its
    /// label and what share of the calls falls in each status (`results::weights`).
    pub fn model_lines(&self) -> Option<&[(String, String)]> {
        self.model.as_deref()
    }

    fn model_shares(&self) -> Option<Vec<(String, String)>> {
        let shares = crate::results::weights::shares(self.run, &self.envs)?;
        let label = |r: &Row| self.case_label(r);
        Some(
            shares
                .iter()
                .zip(&self.env_labels)
                .map(|(s, l)| (l.clone(), s.sentence(&label)))
                .collect(),
        )
    }

    pub fn counts(&self, env: Option<&str>) -> [u64; Status::COUNT] {
        let mut out = [0u64; Status::COUNT];
        for r in self.rows() {
            if env.is_none_or(|e| e == r.env)
                && let Some(i) = Status::ALL.iter().position(|s| *s == r.status)
            {
                out[i] += 1;
            }
        }
        out
    }

    /// The parameters that tell this case apart from the others in the run, equal ones
    /// written once (`m=n=k=64 dtype=out_dtype=f32`).
    pub fn case_label(&self, r: &Row) -> String {
        if self.groups.is_empty() {
            return r.params_text().replace(';', " ");
        }
        self.groups
            .iter()
            .map(|(lead, followers)| {
                let mut names = vec![lead.as_str()];
                names.extend(followers.iter().map(String::as_str));
                format!("{}={}", names.join("="), r.param(lead).unwrap_or(""))
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Every unit that ran (or was skipped) and did not end `ok`, most severe status first,
    /// then in run order. Inferred units are left to `inferred_note`: a bisect run has hundreds.
    pub fn not_ok(&self) -> Vec<&'a Row> {
        let mut v: Vec<&Row> = self
            .rows()
            .iter()
            .filter(|r| r.status != Status::Ok && !r.status.is_inferred())
            .collect();
        v.sort_by_key(|r| std::cmp::Reverse(r.status.severity()));
        v
    }

    /// A sentence on the units a boundary search inferred instead of running, if any.
    pub fn inferred_note(&self) -> Option<String> {
        let ok = self
            .rows()
            .iter()
            .filter(|r| r.status == Status::InferredOk)
            .count();
        let fail = self
            .rows()
            .iter()
            .filter(|r| r.status == Status::InferredFail)
            .count();
        (ok + fail > 0).then(|| {
            format!(
                "{} units were inferred by the boundary search instead of run ({ok} inferred-ok, {fail} inferred-fail); \
                 the heatmap hatches them, and each row's error column names the measured units it was inferred from.",
                ok + fail
            )
        })
    }

    /// For each case with at least one timed `ok` unit, the fastest one; cases in run order.
    pub fn fastest(&self) -> Vec<Fastest<'a>> {
        let mut by_case: BTreeMap<&str, Vec<&Row>> = BTreeMap::new();
        let mut order: Vec<&str> = Vec::new();
        let mut seen: HashSet<&str> = HashSet::new();
        for r in self.rows() {
            if seen.insert(&r.case_id) {
                order.push(&r.case_id);
            }
            let entry = by_case.entry(&r.case_id).or_default();
            if r.status == Status::Ok && r.median_ms.is_some_and(|m| m > 0.0) {
                entry.push(r);
            }
        }
        order
            .into_iter()
            .filter_map(|case| {
                let mut rows = by_case.remove(case)?;
                rows.sort_by(|a, b| {
                    a.median_ms
                        .partial_cmp(&b.median_ms)
                        .unwrap_or(Ordering::Equal)
                });
                Some(Fastest {
                    best: rows.first().copied()?,
                    runner_up: rows.get(1).copied(),
                    timed: rows.len(),
                })
            })
            .collect()
    }

    /// The boundary table of the run along its ordered axis (`analyze::boundary`), with the
    /// axis's name; None when no line has two values to compare.
    /// The boundary table along the run's ordered axis, or where no line fails, the one
    /// sentence that says so (a table of "never" rows tells nothing more).
    pub fn boundary_table(&self) -> Option<(String, Result<crate::markup::table::Table, String>)> {
        use crate::analyze::{boundary, boundary_render};
        let axes = boundary::Axes::of(self.run);
        let along = axes.along.clone()?;
        let lines = boundary::boundaries(self.rows(), &axes, &self.envs);
        if !boundary::worth_a_table(&lines) {
            return None;
        }
        if lines.iter().all(|l| l.fails_from().is_none()) {
            return Some((
                along.clone(),
                Err(format!(
                    "No line fails: each of the {} lines was ok at every {along} it ran.",
                    lines.len()
                )),
            ));
        }
        let label = |e: &str| self.env_label(e).to_string();
        let show = boundary_render::Show::for_lines(&lines, &label);
        Some((along, Ok(boundary_render::table(&lines, &axes, &show))))
    }

    /// The run directory as written in the report: absolute when it can be.
    pub fn dir_text(&self) -> String {
        std::fs::canonicalize(&self.run.dir)
            .unwrap_or_else(|_| self.run.dir.clone())
            .display()
            .to_string()
    }
}

/// `32 units: ok 25, hang 6, crash 1` (statuses with no units left out).
pub fn counts_line(counts: &[u64; Status::COUNT]) -> String {
    let total: u64 = counts.iter().sum();
    let parts: Vec<String> = Status::ALL
        .iter()
        .zip(counts)
        .filter(|(_, n)| **n > 0)
        .map(|(s, n)| format!("{s} {n}"))
        .collect();
    let unit_word = if total == 1 { "unit" } else { "units" };
    if parts.is_empty() {
        format!("{total} {unit_word}")
    } else {
        format!("{total} {unit_word}: {}", parts.join(", "))
    }
}

/// Engineering notation for axis ticks and tables: 65.5k, 4.19M, 1.2G.
pub fn si(v: f64) -> String {
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e12 {
        (v / 1e12, "T")
    } else if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let text = if scaled.abs() >= 100.0 || scaled.fract() == 0.0 {
        format!("{scaled:.0}")
    } else if scaled.abs() >= 10.0 {
        format!("{scaled:.1}")
    } else {
        format!("{scaled:.2}")
    };
    format!("{text}{suffix}")
}

/// Milliseconds with enough digits to compare fast units.
pub fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_line_lists_present_statuses_in_order() {
        let mut c = [0u64; Status::COUNT];
        c[0] = 25;
        c[4] = 6;
        c[5] = 1;
        assert_eq!(counts_line(&c), "32 units: ok 25, hang 6, crash 1");
        assert_eq!(counts_line(&[0; Status::COUNT]), "0 units");
    }

    #[test]
    fn severity_orders_every_status_differently() {
        let s: BTreeSet<u8> = Status::ALL.iter().map(|s| s.severity()).collect();
        assert_eq!(s.len(), Status::COUNT);
        assert!(Status::Hang.severity() > Status::Mismatch.severity());
        assert!(Status::Hang.severity() > Status::InferredFail.severity());
        assert!(Status::InferredFail.severity() > Status::Mismatch.severity());
        assert!(Status::InferredOk.severity() > Status::Ok.severity());
        assert!(Status::Unsupported.severity() > Status::Ok.severity());
    }

    #[test]
    fn si_is_short() {
        assert_eq!(si(65536.0), "65.5k");
        assert_eq!(si(4194304.0), "4.19M");
        assert_eq!(si(512.0), "512");
        assert_eq!(si(2e9), "2G");
    }
}

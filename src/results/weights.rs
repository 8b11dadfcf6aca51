//! The model's weights in a run's answers: a sweep imported from a model's logs
//! (`rocsweep import`) gives each case the calls (and traced time) it stands for, and the report,
//! summary and recommend say what share of the model's calls falls in each status. A case counts
//! under the worst status of the units that ran it (solvers that could not run it, `unsupported`,
//! do not count against it unless none could): with `solver = "all"` a Find or a tuned pick may
//! land on any of them.

use crate::results::rundata::{Row, RunData};
use crate::results::status::Status;
use crate::spec::Weight;
use std::collections::{BTreeMap, HashMap};

/// The weight of each case of the run, by case id; `None` when its sweep has no weights.
pub fn of(run: &RunData) -> Option<HashMap<String, Weight>> {
    let s = &run.manifest.sweep;
    crate::spec::load_str(&s.path, &s.text, &s.overrides)
        .ok()?
        .case_weights()
}

/// One case under one env combination: the row whose status it counts under, and its weight.
#[derive(Clone, Debug)]
pub struct Case<'a> {
    pub row: &'a Row,
    pub weight: Weight,
}

/// The model's calls under one env combination, by status.
#[derive(Clone, Debug)]
pub struct Share<'a> {
    pub calls: f64,
    /// Traced time in all, when every case has one.
    pub traced_ms: Option<f64>,
    /// Per status present: its cases, heaviest first.
    pub by_status: BTreeMap<Status, Vec<Case<'a>>>,
}

impl Share<'_> {
    pub fn calls_in(&self, s: Status) -> f64 {
        self.by_status
            .get(&s)
            .map_or(0.0, |c| c.iter().map(|c| c.weight.calls).sum())
    }

    pub fn ms_in(&self, s: Status) -> Option<f64> {
        self.traced_ms?;
        Some(
            self.by_status
                .get(&s)
                .map_or(0.0, |c| c.iter().filter_map(|c| c.weight.traced_ms).sum()),
        )
    }

    /// "97.0% of the model's calls (95.1% of its traced time) ran ok; 3.0% hang: 2 shapes (...)".
    pub fn sentence(&self, label: &dyn Fn(&Row) -> String) -> String {
        let pct = |x: f64, of: f64| if of > 0.0 { 100.0 * x / of } else { 0.0 };
        let part = |s: Status, whose: &str| {
            let calls = format!("{:.1}%", pct(self.calls_in(s), self.calls));
            let time = match (self.ms_in(s), self.traced_ms) {
                (Some(ms), Some(all)) if all > 0.0 => {
                    format!(" ({:.1}% of {whose}traced time)", pct(ms, all))
                }
                _ => String::new(),
            };
            (calls, time)
        };
        let (ok, ok_time) = part(Status::Ok, "its ");
        let mut out = vec![format!("{ok} of the model's calls{ok_time} ran ok")];
        let mut worst: Vec<(&Status, &Vec<Case>)> = self
            .by_status
            .iter()
            .filter(|(s, _)| **s != Status::Ok)
            .collect();
        worst.sort_by_key(|(s, _)| std::cmp::Reverse(s.severity()));
        for (s, cases) in worst {
            let shapes: Vec<String> = cases
                .iter()
                .take(3)
                .map(|c| format!("{} ({} calls)", label(c.row), c.weight.calls))
                .collect();
            let more = if cases.len() > 3 {
                format!(" and {} more", cases.len() - 3)
            } else {
                String::new()
            };
            let (calls, time) = part(*s, "");
            out.push(format!(
                "{calls}{time} {}: {} shape{} ({}{more})",
                s.name(),
                cases.len(),
                if cases.len() == 1 { "" } else { "s" },
                shapes.join("; ")
            ));
        }
        out.join("; ")
    }
}

/// The shares per env combination, in the order the env keys come; `None` without weights.
pub fn shares<'a>(run: &'a RunData, envs: &[String]) -> Option<Vec<Share<'a>>> {
    let weights = of(run)?;
    // env -> case id -> its rows.
    let mut by_env: HashMap<&str, BTreeMap<&str, Vec<&Row>>> = HashMap::new();
    for r in &run.rows {
        by_env
            .entry(r.env.as_str())
            .or_default()
            .entry(r.case_id.as_str())
            .or_default()
            .push(r);
    }
    let all_traced = weights.values().all(|w| w.traced_ms.is_some());
    let empty = BTreeMap::new();
    let share = |env: &String| {
        let mut by_status: BTreeMap<Status, Vec<Case>> = BTreeMap::new();
        for (id, rows) in by_env.get(env.as_str()).unwrap_or(&empty) {
            let Some(w) = weights.get(*id) else { continue };
            if let Some(row) = worst(rows) {
                by_status
                    .entry(row.status)
                    .or_default()
                    .push(Case { row, weight: *w });
            }
        }
        for v in by_status.values_mut() {
            v.sort_by(|a, b| b.weight.calls.total_cmp(&a.weight.calls));
        }
        let counted = by_status.values().flatten();
        let calls = counted.clone().map(|c| c.weight.calls).sum();
        let traced_ms = all_traced.then(|| counted.filter_map(|c| c.weight.traced_ms).sum());
        Share {
            calls,
            traced_ms,
            by_status,
        }
    };
    Some(envs.iter().map(share).collect())
}

/// The row a case counts under: the worst of those that ran it, or of all when none could.
fn worst<'a>(rows: &[&'a Row]) -> Option<&'a Row> {
    let ran = rows.iter().filter(|r| r.status != Status::Unsupported);
    ran.max_by_key(|r| r.status.severity())
        .or_else(|| rows.iter().max_by_key(|r| r.status.severity()))
        .copied()
}

//! `run --strategy prune|bisect`: the run loop for strategies. It expands every case
//! (enumerating `solver = "all"` first), groups units into lines along the `--along` axis (per
//! env combination), and lets `strategy.rs` choose what to run, in rounds: each round measures
//! the next position of every unfinished line as one batch through the device pool(s)
//! (`pool::execute`: journal, watchdog, health probe, results.csv row, exactly as in a grid
//! run) and learns what it found from the run's events (the recorder's rows). Then
//! `--confirm N` runs N inferred units for real and writes confirm.csv; then the rows of units
//! not run (inferred, predicted) are written.
//!
//! Resume: the plan is recomputed from the rows measured so far. Inferred rows and `skipped`
//! rows are taken out of results.csv when a run resumes (run.rs), and a unit the search asks for
//! that already has a measured row is read from it instead of run again, so the search replays
//! to where it stopped and goes on from there without redoing any measured unit.

use crate::exec::book::Shared;
use crate::exec::plan::confirm::{self, ConfirmRow, Confirmation};
use crate::exec::plan::strategy::{self, Evidence, Kind, Measured, Search, Verdict};
use crate::exec::plan::strategy_plan::Plan;
use crate::exec::pool::{self, Entry, Listing, Params, Slot};
use crate::exec::record::events::{Stop, Unit};
use crate::exec::record::recorder::{Place, lock};
use crate::exec::supervise::supervisor::Env;
use crate::exec::worker::unit::Outcome;
use crate::op::{Case, canonical_text, unit_id};
use crate::results::status::Status;
use std::collections::HashSet;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::Ordering;

/// A unit of the plan: an entry's case (index into the run's cases) and one solver.
struct PlanUnit {
    env: usize,
    case: usize,
    solver: String,
    id: String,
}

/// One line and its search: `units[pos]` is the unit at position `pos` (sorted by value).
struct Line {
    units: Vec<usize>,
    search: Search,
}

/// An inferred row waiting for the end of the run (the confirmation pass may run it instead).
struct Pending {
    unit: usize,
    status: Status,
    phase: String,
    detail: String,
}

/// Runs the plan's `entries` (env combination, env key, case; already limited to the shard)
/// by the strategy: rounds of one measurement per unfinished line, each round a batch for the
/// device pool(s), then the confirmation pass, then the rows of units not run. What each round
/// measured comes back as the run's events (the recorder's `rows`); `dir` is the run directory
/// (confirm.csv is written to it). Returns why the run stopped early, if it did, and the
/// confirmation's disagreements.
pub(super) fn run(
    slots: &mut [Slot],
    entries: Vec<Entry>,
    shared: &Mutex<Shared>,
    p: &Params,
    plan: &Plan,
    dir: &Path,
    quiet: bool,
) -> std::io::Result<(Option<Stop>, usize)> {
    let mut r = Runner {
        slots,
        shared,
        p,
        plan,
        keys: entries.iter().map(|e| (e.0, e.1.clone())).collect(),
        cases: Vec::with_capacity(entries.len()),
        units: Vec::new(),
        stopped: None,
    };
    let mut lines = r.expand(entries)?;
    if r.stopped.is_none() {
        r.rounds(&mut lines)?;
    }
    // Verdicts of every finished line: prune's skips, bisect's inferences.
    let mut pending = Vec::new();
    for l in &lines {
        r.decide(l, &mut pending)?;
    }
    if r.stopped == Some(Stop::DeviceUnhealthy) {
        // As in a grid run: every unit without a row or a verdict is recorded `skipped`.
        let decided: HashSet<usize> = pending.iter().map(|d| d.unit).collect();
        for u in 0..r.units.len() {
            if !decided.contains(&u) && !r.has_row(u) {
                r.write(u, Outcome::failed(Status::Skipped, "", "device-unhealthy"))?;
            }
        }
    }
    let mut disagreements = 0;
    if r.stopped.is_none() && plan.kind == Kind::Bisect && plan.confirm > 0 {
        let c = r.confirm(&pending)?;
        confirm::write_csv(dir, &c)?;
        let text = c.render(&plan.along.name);
        disagreements = c.disagreements();
        if disagreements > 0 {
            crate::console::note(&text);
        } else if !quiet {
            lock(r.shared).rec.progress.println(text.trim_end());
        }
    }
    // Inferred rows last: a unit the confirmation pass ran has its measured row instead.
    for d in pending {
        if !r.has_row(d.unit) {
            r.write(d.unit, Outcome::failed(d.status, &d.phase, d.detail))?;
        }
    }
    Ok((r.stopped, disagreements))
}

struct Runner<'r, 'a> {
    slots: &'r mut [Slot],
    shared: &'r Mutex<Shared>,
    p: &'r Params<'a>,
    plan: &'r Plan,
    /// Per case: (env combination index, env key).
    keys: Vec<(usize, String)>,
    cases: Vec<Case>,
    units: Vec<PlanUnit>,
    stopped: Option<Stop>,
}

impl Runner<'_, '_> {
    fn interrupted(&self) -> bool {
        self.p.interrupts.load(Ordering::SeqCst) > 0
    }

    fn has_row(&self, unit: usize) -> bool {
        lock(self.shared).book.has_row(&self.units[unit].id)
    }

    /// What the unit's row says, if it has one (from an earlier session or this one).
    fn measured(&self, unit: usize) -> Option<Measured> {
        lock(self.shared).book.measured(&self.units[unit].id)
    }

    /// Writes a unit's row that no worker produced (inferred, predicted, skipped).
    fn write(&self, unit: usize, out: Outcome) -> std::io::Result<()> {
        let u = &self.units[unit];
        self.write_row(&u.id, u.case, &u.solver, out)
    }

    /// Writes a row through the recorder (journal, CSV, summary, progress), as every row is.
    fn write_row(&self, id: &str, case: usize, solver: &str, out: Outcome) -> std::io::Result<()> {
        let unit = Unit {
            id,
            case: &self.cases[case],
            solver,
            env_key: &self.keys[case].1,
        };
        let place = self.slots.first().map_or(
            Place {
                label: "",
                reported: None,
                fallback: "",
                info: None,
            },
            |s| s.place(false),
        );
        lock(self.shared).finish(unit, place, self.p.backend, &out, 0)
    }

    fn add_unit(&mut self, env: usize, case: usize, key: &str, solver: String) {
        self.units.push(PlanUnit {
            env,
            case,
            id: unit_id(&self.cases[case].id, &solver, key),
            solver,
        });
    }

    /// Expands the entries into units (enumerating `solver = "all"`; a failed enumeration is
    /// one row with solver `all`, as in a grid run) and groups them into lines per env
    /// combination.
    fn expand(&mut self, entries: Vec<Entry>) -> std::io::Result<Vec<Line>> {
        for (ci, (env, key, case)) in entries.into_iter().enumerate() {
            self.cases.push(case);
            if self.stopped.is_none() && self.interrupted() {
                self.stopped = Some(Stop::Interrupted);
            }
            if self.stopped == Some(Stop::Interrupted) {
                continue;
            }
            // With the device unhealthy, a `solver = "all"` case is one unit (solver `all`) that
            // is recorded `skipped`, as in a grid run.
            if self.stopped == Some(Stop::DeviceUnhealthy) {
                let solver = self.cases[ci].solver.clone();
                if solver == "all" {
                    let e = Env::of(env, 1, &self.p.combos[env]);
                    pool::expanded(self.shared, self.p, &e, &self.cases[ci], 1)?;
                }
                self.add_unit(env, ci, &key, solver);
                continue;
            }
            let e = Env::of(env, 1, &self.p.combos[env]);
            let listed = match self.slots.first_mut() {
                Some(slot) => {
                    pool::list_solvers(slot, self.shared, self.p, e, &self.cases[ci], &key)?
                }
                None => Listing::Failed(Box::new(Outcome::failed(
                    Status::Error,
                    "",
                    "no device pool",
                ))),
            };
            match listed {
                Listing::Solvers(solvers) => {
                    for solver in solvers {
                        self.add_unit(env, ci, &key, solver);
                    }
                }
                Listing::Recorded => {}
                Listing::Failed(out) => {
                    let fault = matches!(out.status, Status::Hang | Status::Crash);
                    let all_id = unit_id(&self.cases[ci].id, "all", &key);
                    self.write_row(&all_id, ci, "all", *out)?;
                    let healthy = !fault
                        || match self.slots.first_mut() {
                            Some(s) => {
                                let ok = s.sup.health_probe(e).is_ok();
                                pool::spawn_failed(&mut s.sup)?;
                                ok
                            }
                            None => false,
                        };
                    if !healthy {
                        self.stopped = Some(Stop::DeviceUnhealthy);
                    }
                }
            }
        }
        let along = &self.plan.along;
        let points: Vec<(String, f64)> = self
            .units
            .iter()
            .map(|u| {
                let case = &self.cases[u.case];
                (
                    format!("{}\u{1f}{}", u.env, along.line_key(case, &u.solver)),
                    along.value(case),
                )
            })
            .collect();
        Ok(strategy::lines(&points)
            .into_iter()
            .map(|units| Line {
                search: Search::new(self.plan.kind, units.iter().map(|&u| points[u].1).collect()),
                units,
            })
            .collect())
    }

    /// Runs `batch` (unit indices) on the device pool(s) and reads their rows back.
    fn measure(&mut self, batch: &[usize]) -> std::io::Result<()> {
        let entries: Vec<Entry> = batch
            .iter()
            .map(|&u| {
                let u = &self.units[u];
                let (env, key) = self.keys[u.case].clone();
                let mut case = self.cases[u.case].clone();
                case.solver = u.solver.clone();
                (env, key, case)
            })
            .collect();
        let ended = pool::execute(
            self.slots,
            entries.into_iter().map(|e| (1, e)),
            self.shared,
            self.p,
        )?;
        if ended.is_some() {
            self.stopped = ended;
        } else if batch.iter().all(|&u| !self.has_row(u)) {
            // Nothing came back (a second Ctrl-C leaves units unfinished): stop, never spin.
            self.stopped = Some(Stop::Interrupted);
        }
        Ok(())
    }

    /// Rounds until every line's search is over: each round feeds every search what is known
    /// and measures the next position of every line that needs one, as one batch.
    fn rounds(&mut self, lines: &mut [Line]) -> std::io::Result<()> {
        loop {
            let mut batch = Vec::new();
            for l in lines.iter_mut() {
                while let Some(pos) = l.search.next() {
                    let unit = l.units[pos];
                    match self.measured(unit) {
                        Some(m) => l.search.observe(pos, m),
                        None => {
                            batch.push(unit);
                            break;
                        }
                    }
                }
            }
            if batch.is_empty() || self.stopped.is_some() {
                return Ok(());
            }
            if self.interrupted() {
                self.stopped = Some(Stop::Interrupted);
                return Ok(());
            }
            // Env combination first, so each env's warm worker runs its units together.
            batch.sort_by_key(|&u| (self.units[u].env, u));
            self.measure(&batch)?;
        }
    }

    /// Turns a finished line's verdicts into rows: prune's skips at once, bisect's inferences
    /// into `pending`.
    fn decide(&self, l: &Line, pending: &mut Vec<Pending>) -> std::io::Result<()> {
        let axis = &self.plan.along.name;
        let value_text = |pos: usize| -> String {
            let v = self
                .plan
                .along
                .value(&self.cases[self.units[l.units[pos]].case]);
            if v.fract() == 0.0 && v.abs() < 1e15 {
                format!("{}", v as i64)
            } else {
                format!("{v}")
            }
        };
        let measured = |pos: usize| l.search.measured().iter().find(|(p, _)| *p == pos);
        for (pos, verdict) in l.search.verdicts() {
            let unit = l.units[pos];
            match verdict {
                Verdict::Predicted { after, failure } => {
                    let value = value_text(after);
                    let ev = Evidence {
                        value: &value,
                        status: failure.status,
                        unit_id: &self.units[l.units[after]].id,
                    };
                    let detail = strategy::predicted_detail(axis, &ev, &failure.phase);
                    if !self.has_row(unit) {
                        self.write(unit, Outcome::failed(Status::Skipped, "", detail))?;
                    }
                }
                Verdict::Inferred { status, safe, fail } => {
                    let evidence = |p: Option<usize>| {
                        let p = p?;
                        let (_, m) = measured(p)?;
                        Some((value_text(p), m.status, self.units[l.units[p]].id.clone()))
                    };
                    let (se, fe) = (evidence(safe), evidence(fail));
                    let detail = strategy::inferred_detail(
                        axis,
                        se.as_ref().map(as_evidence).as_ref(),
                        fe.as_ref().map(as_evidence).as_ref(),
                    );
                    let phase = match (status, fail) {
                        (Status::InferredFail, Some(p)) => measured(p)
                            .map(|(_, m)| m.phase.clone())
                            .unwrap_or_default(),
                        _ => String::new(),
                    };
                    pending.push(Pending {
                        unit,
                        status,
                        phase,
                        detail,
                    });
                }
            }
        }
        Ok(())
    }

    /// Runs the chosen inferred units for real, as one batch, and compares.
    fn confirm(&mut self, pending: &[Pending]) -> std::io::Result<Confirmation> {
        let ids: Vec<String> = pending
            .iter()
            .map(|d| self.units[d.unit].id.clone())
            .collect();
        let chosen: HashSet<String> = strategy::pick(&ids, self.plan.confirm, self.plan.seed)
            .into_iter()
            .collect();
        let picked: Vec<&Pending> = pending
            .iter()
            .filter(|d| chosen.contains(&self.units[d.unit].id))
            .collect();
        let batch: Vec<usize> = picked
            .iter()
            .map(|d| d.unit)
            .filter(|&u| !self.has_row(u))
            .collect();
        if !batch.is_empty() && !self.interrupted() {
            self.measure(&batch)?;
        } else if self.interrupted() {
            self.stopped = Some(Stop::Interrupted);
        }
        let mut c = Confirmation {
            seed: self.plan.seed,
            asked: self.plan.confirm,
            pool: ids.len(),
            rows: Vec::new(),
            complete: true,
        };
        for d in picked {
            let u = &self.units[d.unit];
            let Some(m) = self.measured(d.unit) else {
                c.complete = false;
                continue;
            };
            let case = &self.cases[u.case];
            c.rows.push(ConfirmRow {
                unit_id: u.id.clone(),
                case_id: case.id.clone(),
                params: canonical_text(case.problem.kind(), &case.values),
                solver: u.solver.clone(),
                env: self.keys[u.case].1.clone(),
                inferred: d.status,
                inferred_from: d.detail.clone(),
                measured: m.status,
                phase: m.phase.clone(),
                agrees: strategy::agrees(d.status, m.status),
            });
        }
        Ok(c)
    }
}

fn as_evidence((value, status, unit_id): &(String, Status, String)) -> Evidence<'_> {
    Evidence {
        value,
        status: *status,
        unit_id,
    }
}

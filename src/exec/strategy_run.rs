//! `run --strategy prune|bisect`: the run loop for strategies. It expands every case
//! (enumerating `solver = "all"` first), groups units into lines along the `--along` axis (per
//! env combination), and lets `strategy.rs` choose what to run, in rounds: each round measures
//! the next position of every unfinished line as one batch through the device pool(s)
//! (`pool::execute`: journal, watchdog, health probe, results.csv row, exactly as in a grid
//! run) and reads the rows back. Then `--confirm N` runs N inferred units for real and writes
//! confirm.csv; then the rows of units not run (inferred, predicted) are written.
//!
//! Resume: the plan is recomputed from the rows measured so far. Inferred rows and `skipped`
//! rows are taken out of results.csv when a run resumes (run.rs), and a unit the search asks for
//! that already has a measured row is read from it instead of run again, so the search replays
//! to where it stopped and goes on from there without redoing any measured unit.

use super::pool::{self, Entry, Params, Shared, Slot, describe_unit};
use super::run::{CmdError, RunOptions, Stop};
use super::strategy::{self, Along, Evidence, Kind, Measured, Search, StrategyInfo, Verdict};
use super::supervisor::Env;
use super::unit::Outcome;
use crate::op::{Case, canonical_text, unit_id};
use crate::results::csv::{self as rcsv, UnitKey};
use crate::results::status::Status;
use crate::spec::Sweep;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard};

/// Where a run directory records its strategy (absent: grid), so `--resume` replays it.
pub const STRATEGY_FILE: &str = "strategy.json";
/// The confirmation pass's table: one row per inferred unit run for real.
pub const CONFIRM_FILE: &str = "confirm.csv";

/// A strategy other than grid, resolved against the sweep.
#[derive(Clone, Debug)]
pub struct Plan {
    pub kind: Kind,
    pub along: Along,
    pub confirm: u64,
    pub seed: u64,
}

impl Plan {
    pub fn info(&self) -> StrategyInfo {
        StrategyInfo {
            name: self.kind.name().to_string(),
            along: self.along.name.clone(),
            confirm: self.confirm,
            seed: self.seed,
        }
    }
}

/// The strategy of a new run (from the options) or of a resumed one (from its strategy.json);
/// `None` is grid. A bad combination of options or axis is bad input (exit code 2).
pub fn resolve(opts: &RunOptions, sweep: &Sweep) -> Result<Option<Plan>, CmdError> {
    if let Some(dir) = &opts.resume {
        let path = dir.join(STRATEGY_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(CmdError::BadInput(format!("{}: {e}", path.display()))),
        };
        let bad = |what: String| CmdError::BadInput(format!("{}: {what}", path.display()));
        let info: StrategyInfo =
            serde_json::from_str(&text).map_err(|e| bad(format!("malformed: {e}")))?;
        let kind = Kind::parse(&info.name)
            .ok_or_else(|| bad(format!("unknown strategy `{}`", info.name)))?;
        if kind == Kind::Grid {
            return Ok(None);
        }
        let along = Along::choose(sweep, Some(&info.along)).map_err(bad)?;
        return Ok(Some(Plan {
            kind,
            along,
            confirm: info.confirm,
            seed: info.seed,
        }));
    }
    match opts.strategy {
        Kind::Grid => {
            if let Some(a) = &opts.along {
                return Err(CmdError::BadInput(format!(
                    "--along {a} needs --strategy prune or bisect (grid runs every unit)"
                )));
            }
            if opts.confirm > 0 {
                return Err(CmdError::BadInput(
                    "--confirm needs --strategy bisect (only bisect infers units)".into(),
                ));
            }
            Ok(None)
        }
        kind => {
            if kind == Kind::Prune && opts.confirm > 0 {
                return Err(CmdError::BadInput(
                    "--confirm needs --strategy bisect (prune infers nothing: its skipped units would hang)"
                        .into(),
                ));
            }
            let along = Along::choose(sweep, opts.along.as_deref()).map_err(CmdError::BadInput)?;
            Ok(Some(Plan {
                kind,
                along,
                confirm: opts.confirm,
                seed: opts.confirm_seed.unwrap_or_else(clock_seed),
            }))
        }
    }
}

/// A seed nobody chose: the clock's nanoseconds. It is recorded, so the pick can be repeated.
fn clock_seed() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    now.as_secs()
        .wrapping_mul(1_000_000_007)
        .wrapping_add(u64::from(now.subsec_nanos()))
        % 1_000_000_000
}

/// Writes strategy.json (temp file + rename).
pub fn record(dir: &Path, plan: &Plan) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(&plan.info()).map_err(std::io::Error::other)?;
    let tmp = dir.join(format!("{STRATEGY_FILE}.tmp"));
    std::fs::write(&tmp, format!("{text}\n"))?;
    std::fs::rename(&tmp, dir.join(STRATEGY_FILE))
}

/// One inferred unit run for real.
#[derive(Clone, Debug)]
pub struct ConfirmRow {
    pub unit_id: String,
    pub case_id: String,
    pub params: String,
    pub solver: String,
    pub env: String,
    pub inferred: Status,
    pub inferred_from: String,
    pub measured: Status,
    pub phase: String,
    /// None: the measurement said nothing (skipped).
    pub agrees: Option<bool>,
}

/// What the confirmation pass found.
#[derive(Clone, Debug, Default)]
pub struct Confirmation {
    pub seed: u64,
    pub asked: u64,
    /// Inferred units there were to choose from.
    pub pool: usize,
    pub rows: Vec<ConfirmRow>,
    /// False when the run stopped (Ctrl-C, unhealthy device) before every chosen unit ran.
    pub complete: bool,
}

impl Confirmation {
    pub fn disagreements(&self) -> usize {
        self.rows.iter().filter(|r| r.agrees == Some(false)).count()
    }

    /// The end-of-run lines: one when all agree, a loud list when some do not.
    pub fn render(&self, axis: &str) -> String {
        let mut s = String::new();
        let n = self.disagreements();
        let ran = self.rows.len();
        let head = format!(
            "{ran} of {} inferred units run for real (--confirm {}, seed {}, along {axis})",
            self.pool, self.asked, self.seed
        );
        if n == 0 {
            let _ = writeln!(s, "confirm: {head}: no disagreement");
        } else {
            let _ = writeln!(
                s,
                "CONFIRM: {n} DISAGREEMENT{} among {head}: the map's monotone assumption does not hold here",
                if n == 1 { "" } else { "S" }
            );
            for r in self.rows.iter().filter(|r| r.agrees == Some(false)) {
                let phase = if r.phase.is_empty() {
                    String::new()
                } else {
                    format!(" in {}", r.phase)
                };
                let env = if r.env.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", r.env)
                };
                let _ = writeln!(
                    s,
                    "  {} {} solver={}{env}: inferred {}, measured {}{phase}",
                    r.unit_id, r.params, r.solver, r.inferred, r.measured
                );
            }
        }
        if !self.complete {
            let _ = writeln!(
                s,
                "confirm: stopped before every chosen unit ran; --resume finishes it"
            );
        }
        s
    }
}

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

/// Reads rows appended to results.csv since the last call: what the pool just measured.
struct Tail {
    path: PathBuf,
    offset: u64,
    id: usize,
    status: usize,
    phase: usize,
}

impl Tail {
    /// Reads every row there is into `known` and remembers where the file ends.
    fn open(path: &Path, known: &mut HashMap<String, Measured>) -> std::io::Result<Tail> {
        let bytes = std::fs::read(path)?;
        let mut rdr = csv::ReaderBuilder::new().from_reader(bytes.as_slice());
        let header: Vec<String> = rdr
            .headers()
            .map_err(std::io::Error::other)?
            .iter()
            .map(String::from)
            .collect();
        let col = |name: &str| {
            header
                .iter()
                .position(|h| h == name)
                .ok_or_else(|| std::io::Error::other(format!("results.csv has no {name} column")))
        };
        let mut t = Tail {
            path: path.to_path_buf(),
            offset: 0,
            id: col("unit_id")?,
            status: col("status")?,
            phase: col("phase")?,
        };
        let header_end = bytes.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1);
        t.offset = header_end as u64;
        t.read_new(known)?;
        Ok(t)
    }

    fn read_new(&mut self, known: &mut HashMap<String, Measured>) -> std::io::Result<()> {
        let mut f = File::open(&self.path)?;
        f.seek(SeekFrom::Start(self.offset))?;
        let mut buf = Vec::new();
        f.read_to_end(&mut buf)?;
        // Only whole lines: every row is flushed with its newline.
        let whole = buf.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let mut rdr = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(&buf[..whole]);
        for rec in rdr.records() {
            let rec = rec.map_err(std::io::Error::other)?;
            let (Some(id), Some(status)) = (
                rec.get(self.id),
                rec.get(self.status).and_then(Status::parse),
            ) else {
                continue;
            };
            let phase = rec.get(self.phase).unwrap_or("").to_string();
            known.insert(id.to_string(), Measured { status, phase });
        }
        self.offset += whole as u64;
        Ok(())
    }
}

/// Runs the plan's `entries` (env combination, env key, case; already limited to the shard)
/// by the strategy: rounds of one measurement per unfinished line, each round a batch for the
/// device pool(s), then the confirmation pass, then the rows of units not run. `dir` is the run
/// directory (results.csv is read back from it, confirm.csv written to it).
pub(super) fn run(
    slots: &mut [Slot],
    entries: Vec<Entry>,
    shared: &Mutex<Shared>,
    p: &Params,
    plan: &Plan,
    dir: &Path,
    quiet: bool,
) -> std::io::Result<Option<Stop>> {
    let mut known = HashMap::new();
    let tail = Tail::open(&dir.join("results.csv"), &mut known)?;
    let mut r = Runner {
        slots,
        shared,
        p,
        plan,
        keys: entries.iter().map(|e| (e.0, e.1.clone())).collect(),
        cases: Vec::with_capacity(entries.len()),
        units: Vec::new(),
        known,
        tail,
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
    if r.stopped.is_none() && plan.kind == Kind::Bisect && plan.confirm > 0 {
        let c = r.confirm(&pending)?;
        write_confirm_csv(dir, &c)?;
        let text = c.render(&plan.along.name);
        if c.disagreements() > 0 {
            eprint!("{text}");
        } else if !quiet {
            lock(r.shared).progress.println(text.trim_end());
        }
    }
    // Inferred rows last: a unit the confirmation pass ran has its measured row instead.
    for d in pending {
        if !r.has_row(d.unit) {
            r.write(d.unit, Outcome::failed(d.status, &d.phase, d.detail))?;
        }
    }
    Ok(r.stopped)
}

fn lock(m: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    m.lock().unwrap_or_else(|e| e.into_inner())
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
    /// Measured outcomes by unit id: rows of earlier sessions, then each round's.
    known: HashMap<String, Measured>,
    tail: Tail,
    stopped: Option<Stop>,
}

impl Runner<'_, '_> {
    fn interrupted(&self) -> bool {
        self.p.interrupts.load(Ordering::SeqCst) > 0
    }

    fn has_row(&self, unit: usize) -> bool {
        lock(self.shared).done.contains(&self.units[unit].id)
    }

    /// Writes a unit's row that no worker produced (inferred, predicted, skipped, or a failed
    /// enumeration), through the same journal, CSV, summary and progress as every row.
    fn write(&self, unit: usize, out: Outcome) -> std::io::Result<()> {
        let u = &self.units[unit];
        self.write_row(&u.id, u.case, &u.solver, out)
    }

    fn write_row(&self, id: &str, case: usize, solver: &str, out: Outcome) -> std::io::Result<()> {
        let env_key = &self.keys[case].1;
        let case = &self.cases[case];
        let (device, label) = self
            .slots
            .first()
            .map_or(("", ""), |s| (s.device.as_str(), s.label.as_str()));
        let mut sh = lock(self.shared);
        // What this env combination's worker reported, where one ran.
        let reported = sh.env_devices.get(env_key).cloned();
        let device = reported.as_deref().unwrap_or(device);
        let key = UnitKey {
            unit_id: id,
            case,
            solver,
            backend: self.p.backend,
            device,
            device_index: label,
            env: env_key,
        };
        let row = rcsv::record(&key, &out);
        sh.journal.finished(id, out.status, &row)?;
        sh.csv.append(&row)?;
        sh.done.insert(id.to_string());
        let describe = || describe_unit(case, solver, env_key);
        sh.summary.add(out.status, id, describe, &out.error);
        sh.progress
            .unit_done(out.status, || describe_unit(case, solver, env_key));
        Ok(())
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
            let case = &self.cases[ci];
            // With the device unhealthy, a `solver = "all"` case is one unit (solver `all`) that
            // is recorded `skipped`, as in a grid run.
            let unhealthy = self.stopped == Some(Stop::DeviceUnhealthy);
            let solvers = if case.solver != "all" || unhealthy {
                vec![case.solver.clone()]
            } else {
                let all_id = unit_id(&case.id, "all", &key);
                if lock(self.shared).done.contains(&all_id) {
                    // Enumeration failed in an earlier session and that is recorded.
                    continue;
                }
                let e = Env {
                    index: env,
                    trial: 1,
                    vars: &self.p.combos[env].vars,
                };
                let listed = match self.slots.first_mut() {
                    Some(slot) => slot.sup.enumerate(e, &case.problem),
                    None => Err(Outcome::failed(Status::Error, "", "no device pool")),
                };
                match listed {
                    Ok(s) => {
                        lock(self.shared).progress.expand_one(s.len() as u64);
                        s
                    }
                    Err(out) => {
                        let fault = matches!(out.status, Status::Hang | Status::Crash);
                        self.write_row(&all_id, ci, "all", out)?;
                        let healthy = !fault
                            || self
                                .slots
                                .first_mut()
                                .is_some_and(|s| s.sup.health_probe(e));
                        if !healthy {
                            self.stopped = Some(Stop::DeviceUnhealthy);
                        }
                        continue;
                    }
                }
            };
            for solver in solvers {
                self.units.push(PlanUnit {
                    env,
                    case: ci,
                    id: unit_id(&self.cases[ci].id, &solver, &key),
                    solver,
                });
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
        self.tail.read_new(&mut self.known)?;
        if ended.is_some() {
            self.stopped = ended;
        } else if batch
            .iter()
            .all(|&u| !self.known.contains_key(&self.units[u].id))
        {
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
                    match self.known.get(&self.units[unit].id) {
                        Some(m) => l.search.observe(pos, m.clone()),
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
            .filter(|&u| !self.known.contains_key(&self.units[u].id))
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
            let Some(m) = self.known.get(&u.id) else {
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

/// Disagreements in a run directory's confirm.csv (0 when it has none): `main` turns them into
/// exit code 7.
pub fn disagreements(dir: &Path) -> usize {
    let Ok((header, rows)) = rcsv::read(&dir.join(CONFIRM_FILE)) else {
        return 0;
    };
    let Some(col) = header.iter().position(|h| h == "agrees") else {
        return 0;
    };
    rows.iter()
        .filter(|r| r.get(col).map(String::as_str) == Some("no"))
        .count()
}

/// confirm.csv: one row per inferred unit run for real (temp file + rename).
fn write_confirm_csv(dir: &Path, c: &Confirmation) -> std::io::Result<()> {
    let tmp = dir.join(format!("{CONFIRM_FILE}.tmp"));
    {
        let mut w = csv::Writer::from_path(&tmp).map_err(std::io::Error::other)?;
        w.write_record([
            "unit_id",
            "case_id",
            "solver",
            "env",
            "params",
            "inferred",
            "measured",
            "phase",
            "agrees",
            "seed",
            "inferred_from",
        ])
        .map_err(std::io::Error::other)?;
        for r in &c.rows {
            let agrees = match r.agrees {
                Some(true) => "yes",
                Some(false) => "no",
                None => "unknown",
            };
            w.write_record([
                r.unit_id.as_str(),
                &r.case_id,
                &r.solver,
                &r.env,
                &r.params,
                r.inferred.name(),
                r.measured.name(),
                &r.phase,
                agrees,
                &c.seed.to_string(),
                &r.inferred_from,
            ])
            .map_err(std::io::Error::other)?;
        }
        w.flush()?;
    }
    std::fs::rename(&tmp, dir.join(CONFIRM_FILE))
}

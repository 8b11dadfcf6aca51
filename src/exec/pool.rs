//! Runs the plan on one or more device slots at once. Each slot is a supervisor (with its own
//! warm workers and, for `--devices`, its own device variables) on its own thread, taking
//! (env combination, case) entries from one shared queue; units are independent, so any slot
//! may run any entry. Journal, results.csv, summary and progress are shared behind one lock:
//! a unit's row is journaled and written as it finishes, whichever slot ran it. Without
//! `--devices` there is one slot and this is the plain sequential run.
//!
//! A slot whose device fails its health probe leaves, handing the rest of its case back to the
//! queue, while another slot is still working; the last one left records everything that
//! remains as `skipped` (device-unhealthy), as a single-device run does.
//!
//! With trials (`[timing] trials`, `--trials`), the plan comes once per trial (plan::passes)
//! and every trial runs in a worker of its own; an ok trial that is not the unit's last is
//! journaled and kept, and the last trial (or the first that is not ok) writes the row
//! (trials::combine).

use super::journal::Journal;
use super::progress::Progress;
use super::run::Stop;
use super::supervisor::{Env, Supervisor};
use super::unit::{Outcome, Policies};
use crate::op::{Case, unit_id};
use crate::results::csv::{self as rcsv, ResultsWriter, UnitKey};
use crate::results::status::Status;
use crate::results::summary::Summary;
use crate::spec::expand::EnvCombo;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// One worker pool: a supervisor and what its rows say about where they ran.
pub struct Slot {
    pub sup: Supervisor,
    /// The `device_index` column: the `--devices` index, empty without.
    pub label: String,
    /// The `device` column: the device this slot's worker reported.
    pub device: String,
}

/// What every slot writes to, behind one lock.
pub struct Shared {
    pub journal: Journal,
    pub csv: ResultsWriter,
    pub summary: Summary,
    pub progress: Progress,
    /// Units that have their row.
    pub done: HashSet<String>,
    /// Units started in an earlier session and never finished, with the last phase seen.
    pub unfinished: HashMap<String, String>,
    /// Ok trials of units that have no row yet: (trial, outcome).
    pub trials: HashMap<String, Vec<(u32, Outcome)>>,
    /// The device each env combination's worker reported (env key -> device).
    pub env_devices: BTreeMap<String, String>,
}

/// The run's fixed facts, read by every slot.
pub struct Params<'a> {
    pub combos: &'a [EnvCombo],
    pub backend: &'a str,
    pub policies: &'a Policies,
    pub retry_interrupted: bool,
    pub interrupts: &'a AtomicUsize,
    /// Trials per unit (1: every unit's first run is its row).
    pub trials: u32,
}

/// A plan entry: (env combination index, env key, case).
pub type Entry = (usize, String, Case);

/// An entry to run; `solvers` is set when it is what a failed slot left of a case.
struct Work {
    trial: u32,
    env_index: usize,
    env_key: String,
    case: Case,
    solvers: Option<Vec<String>>,
}

struct Queue<I> {
    returned: VecDeque<Work>,
    plan: I,
    /// Slots that are healthy and still taking work.
    working: usize,
}

impl<I: Iterator<Item = (u32, Entry)>> Queue<I> {
    fn next(&mut self) -> Option<Work> {
        self.returned.pop_front().or_else(|| {
            self.plan
                .next()
                .map(|(trial, (env_index, env_key, case))| Work {
                    trial,
                    env_index,
                    env_key,
                    case,
                    solvers: None,
                })
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A slot that panicked has already failed the run; its data is still consistent enough to
    // write what the others finish.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs every (trial, entry) of `plan` on `slots` (concurrently when there are several) and
/// says why the run stopped early, if it did. The first I/O error stops every slot and is
/// returned.
pub fn execute<I>(
    slots: &mut [Slot],
    plan: I,
    shared: &Mutex<Shared>,
    p: &Params,
) -> std::io::Result<Option<Stop>>
where
    I: Iterator<Item = (u32, Entry)> + Send,
{
    let queue = Mutex::new(Queue {
        returned: VecDeque::new(),
        plan,
        working: slots.len(),
    });
    let all_down = AtomicBool::new(false);
    let failed = AtomicBool::new(false);
    let single = slots.len() == 1;
    let results: Vec<std::io::Result<Option<Stop>>> = std::thread::scope(|s| {
        let handles: Vec<_> = slots
            .iter_mut()
            .map(|slot| {
                let (queue, all_down, failed) = (&queue, &all_down, &failed);
                s.spawn(move || {
                    let mut r = Runner {
                        slot,
                        queue,
                        shared,
                        p,
                        all_down,
                        failed,
                        single,
                        state: State::Healthy,
                        probe_failed: false,
                    };
                    let res = r.run();
                    if res.is_err() {
                        failed.store(true, Ordering::SeqCst);
                    }
                    res
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(std::io::Error::other("a device pool's thread panicked"))
                })
            })
            .collect()
    });
    let mut stopped = None;
    for r in results {
        if r? == Some(Stop::Interrupted) {
            stopped = Some(Stop::Interrupted);
        }
    }
    if stopped.is_none() && all_down.load(Ordering::SeqCst) {
        stopped = Some(Stop::DeviceUnhealthy);
    }
    Ok(stopped)
}

#[derive(Clone, Copy, PartialEq)]
enum State {
    Healthy,
    /// The device failed its health probe; other slots take the work.
    Left,
    /// The device failed its health probe and no healthy slot is left: every remaining unit is
    /// recorded `skipped`.
    Draining,
}

/// What to do after a plan entry.
enum Flow {
    Continue,
    Stop(Option<Stop>),
}

/// One unit as a slot sees it.
struct UnitRef<'a> {
    trial: u32,
    id: &'a str,
    case: &'a Case,
    solver: &'a str,
    env_key: &'a str,
    env: Env<'a>,
}

struct Runner<'a, I> {
    slot: &'a mut Slot,
    queue: &'a Mutex<Queue<I>>,
    shared: &'a Mutex<Shared>,
    p: &'a Params<'a>,
    all_down: &'a AtomicBool,
    failed: &'a AtomicBool,
    single: bool,
    state: State,
    /// Set by a failed health probe; acted on between units (see `leave`).
    probe_failed: bool,
}

impl<I: Iterator<Item = (u32, Entry)>> Runner<'_, I> {
    fn interrupted(&self) -> bool {
        self.p.interrupts.load(Ordering::SeqCst) > 0
    }

    fn run(&mut self) -> std::io::Result<Option<Stop>> {
        loop {
            if self.interrupted() {
                return Ok(Some(Stop::Interrupted));
            }
            if self.failed.load(Ordering::SeqCst) {
                return Ok(None);
            }
            if self.probe_failed && self.state == State::Healthy && !self.leave(None) {
                return Ok(None);
            }
            let work = {
                let mut q = lock(self.queue);
                match q.next() {
                    Some(w) => w,
                    None => {
                        if self.state == State::Healthy {
                            q.working -= 1;
                        }
                        return Ok(None);
                    }
                }
            };
            if let Flow::Stop(stop) = self.work(work)? {
                return Ok(stop);
            }
        }
    }

    /// After a failed health probe: hands `rest` (what remains of the current case) to the
    /// other slots and returns false, or, when no healthy slot is left, keeps it and returns
    /// true: this slot then records everything that remains as `skipped`. One lock covers both
    /// the count and the hand-back, so a slot that finds the queue empty cannot miss `rest`.
    fn leave(&mut self, rest: Option<Work>) -> bool {
        let mut q = lock(self.queue);
        q.working -= 1;
        let sh = lock(self.shared);
        if q.working > 0 {
            if let Some(w) = rest {
                q.returned.push_back(w);
            }
            self.state = State::Left;
            sh.progress.println(&format!(
                "error: device {} failed its health probe; the other devices take its remaining units",
                self.slot.label
            ));
            false
        } else {
            self.state = State::Draining;
            self.all_down.store(true, Ordering::SeqCst);
            if self.single {
                sh.progress.println("error: the device failed its health probe; recording the remaining units as skipped");
            } else {
                sh.progress.println(&format!(
                    "error: device {} failed its health probe and no other device is taking units; recording the remaining units as skipped",
                    self.slot.label
                ));
            }
            true
        }
    }

    fn work(&mut self, w: Work) -> std::io::Result<Flow> {
        let Work {
            trial,
            env_index,
            env_key,
            case,
            solvers,
        } = w;
        let env = Env {
            index: env_index,
            trial,
            vars: &self.p.combos[env_index].vars,
        };
        let solvers = match solvers {
            Some(s) => s,
            None if case.solver != "all" => vec![case.solver.clone()],
            None if self.state == State::Draining => vec!["all".to_string()],
            None => {
                let all_id = unit_id(&case.id, "all", &env_key);
                if lock(self.shared).done.contains(&all_id) {
                    // Enumeration failed in an earlier session and that is recorded; do not retry it.
                    return Ok(Flow::Continue);
                }
                match self.slot.sup.enumerate(env, &case.problem) {
                    Ok(s) => {
                        lock(self.shared).progress.expand_one(s.len() as u64);
                        s
                    }
                    Err(out) => {
                        // The enumeration itself failed: one row for the case with solver `all`.
                        let u = UnitRef {
                            trial,
                            id: &all_id,
                            case: &case,
                            solver: "all",
                            env_key: &env_key,
                            env,
                        };
                        self.record(&u, out)?;
                        return Ok(Flow::Continue);
                    }
                }
            }
        };
        for (i, solver) in solvers.iter().enumerate() {
            if self.interrupted() {
                return Ok(Flow::Stop(Some(Stop::Interrupted)));
            }
            if self.probe_failed && self.state == State::Healthy {
                let rest = Work {
                    trial,
                    env_index,
                    env_key: env_key.clone(),
                    case: case.clone(),
                    solvers: Some(solvers[i..].to_vec()),
                };
                if !self.leave(Some(rest)) {
                    return Ok(Flow::Stop(None));
                }
            }
            let id = unit_id(&case.id, solver, &env_key);
            let u = UnitRef {
                trial,
                id: &id,
                case: &case,
                solver,
                env_key: &env_key,
                env,
            };
            self.unit(&u)?;
        }
        Ok(Flow::Continue)
    }

    fn unit(&mut self, u: &UnitRef) -> std::io::Result<()> {
        {
            let mut sh = lock(self.shared);
            if sh.done.contains(u.id)
                || sh
                    .trials
                    .get(u.id)
                    .is_some_and(|v| v.iter().any(|(t, _)| *t == u.trial))
            {
                return Ok(());
            }
            if let Some(phase) = sh.unfinished.get(u.id).cloned()
                && !self.p.retry_interrupted
            {
                let phase = if phase.is_empty() {
                    "init".to_string()
                } else {
                    phase
                };
                let out = Outcome::failed(
                    Status::Interrupted,
                    &phase,
                    "started and never finished: the supervisor, its worker or the machine went down (rerun with --retry-interrupted)",
                );
                return self.write(&mut sh, u, out);
            }
            if self.state == State::Draining {
                let out = Outcome::failed(Status::Skipped, "", "device-unhealthy");
                return self.write(&mut sh, u, out);
            }
            sh.journal.started(u.id)?;
        }
        let shared = self.shared;
        let limits = &self.p.policies.limits;
        let slot = self.slot.label.as_str();
        {
            let first = if self.slot.sup.is_warm(u.env) {
                "alloc"
            } else {
                "init"
            };
            let what = describe_unit(u.case, u.solver, u.env_key);
            let limit = limits.for_phase(first);
            lock(shared).progress.unit_started(slot, what, first, limit);
        }
        let mut on_phase = |p: &str| {
            let mut sh = lock(shared);
            let _ = sh.journal.phase(u.id, p);
            sh.progress.phase(slot, p, limits.for_phase(p));
        };
        let out = self.slot.sup.run_unit(
            u.id,
            u.case,
            u.solver,
            self.p.policies,
            u.env,
            &mut on_phase,
        );
        self.record(u, out)
    }

    /// Writes the row, journals it, and after a hang or crash checks the device's health.
    fn record(&mut self, u: &UnitRef, out: Outcome) -> std::io::Result<()> {
        let fault = matches!(out.status, Status::Hang | Status::Crash);
        if out.status == Status::Interrupted && self.p.interrupts.load(Ordering::SeqCst) >= 2 {
            // Left started-and-unfinished in the journal: a resume decides what to do with it.
            return Ok(());
        }
        {
            let mut sh = lock(self.shared);
            let kept = sh.trials.get(u.id).map_or(0, Vec::len) as u32;
            if out.status == Status::Ok && u.trial < self.p.trials && kept + 1 < self.p.trials {
                sh.journal.trial(u.id, u.trial, &out)?;
                sh.trials
                    .entry(u.id.to_string())
                    .or_default()
                    .push((u.trial, out));
                sh.progress.trial_done();
            } else {
                self.write(&mut sh, u, out)?;
            }
        }
        if fault
            && self.state == State::Healthy
            && !self.probe_failed
            && !self.slot.sup.health_probe(u.env)
        {
            self.probe_failed = true;
        }
        Ok(())
    }

    /// Writes the unit's row: `out` combined with the unit's earlier ok trials.
    fn write(&self, sh: &mut Shared, u: &UnitRef, out: Outcome) -> std::io::Result<()> {
        let earlier = sh.trials.remove(u.id).unwrap_or_default();
        let out = super::trials::combine(earlier, u.trial, out, self.p.trials);
        // The device as this unit's own worker reported it (an env variable can change it);
        // a unit that never reached a worker takes what its env combination's worker said.
        let reported = self.slot.sup.info.as_ref().and_then(|i| i.devices.first());
        let device = match reported {
            Some(d) if out.status != Status::Skipped => {
                sh.env_devices.insert(u.env_key.to_string(), d.clone());
                d.clone()
            }
            _ => sh
                .env_devices
                .get(u.env_key)
                .unwrap_or(&self.slot.device)
                .clone(),
        };
        let key = UnitKey {
            unit_id: u.id,
            case: u.case,
            solver: u.solver,
            backend: self.p.backend,
            device: &device,
            device_index: &self.slot.label,
            env: u.env_key,
        };
        let row = rcsv::record(&key, &out);
        sh.journal.finished(u.id, out.status, &row)?;
        sh.csv.append(&row)?;
        sh.done.insert(u.id.to_string());
        let describe = || describe_unit(u.case, u.solver, u.env_key);
        sh.summary.add(out.status, u.id, describe, &out.error);
        let label = &self.slot.label;
        // Trials this unit will not run (it failed early) are not waited for.
        sh.progress
            .skip_trials(u64::from(self.p.trials.saturating_sub(u.trial)));
        sh.progress.unit_done(out.status, || {
            let time = out
                .stats
                .as_ref()
                .map(|s| format!("{:.3} ms", s.median * 1e3))
                .unwrap_or_default();
            let phase = if out.phase.is_empty() {
                String::new()
            } else {
                format!(" [{}]", out.phase)
            };
            let device = if label.is_empty() {
                String::new()
            } else {
                format!(" (device {label})")
            };
            format!(
                "{}{phase} {time}{device}",
                describe_unit(u.case, u.solver, u.env_key)
            )
        });
        Ok(())
    }
}

pub fn describe_unit(case: &Case, solver: &str, env_key: &str) -> String {
    let params = crate::op::canonical_text(case.problem.kind(), &case.values);
    let env = if env_key.is_empty() {
        String::new()
    } else {
        format!(" [{env_key}]")
    };
    format!("{params} solver={solver}{env}")
}

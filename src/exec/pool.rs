//! Runs the plan on one or more device slots at once. Each slot is a supervisor (with its own
//! warm workers and, for `--devices`, its own device variables) on its own thread, taking
//! (env combination, case) entries from one shared queue; units are independent, so any slot
//! may run any entry. The slots emit the run's events (exec/record/events.rs) to one recorder behind
//! one lock (exec/record/recorder.rs): a unit's row is journaled and written as it finishes, whichever
//! slot ran it. Without `--devices` there is one slot and this is the plain sequential run.
//!
//! A slot whose device fails its health probe leaves, handing the rest of its case back to the
//! queue, while another slot is still working; the last one left records everything that
//! remains as `skipped` (device-unhealthy), as a single-device run does.
//!
//! With trials (`[timing] trials`, `--trials`), the plan comes once per trial (plan::passes)
//! and every trial runs in a worker of its own; an ok trial that is not the unit's last is
//! journaled and kept, and the last trial (or the first that is not ok) writes the row
//! (trials::combine).

use crate::exec::book::Shared;
use crate::exec::record::events::{Event, Stop, Unit};
use crate::exec::record::recorder::lock;
pub use crate::exec::supervise::slots::Slot;
use crate::exec::supervise::supervisor::{Env, Health, SpawnFailed, Supervisor, Watch};
use crate::exec::worker::unit::Outcome;
use crate::op::{Case, unit_id};
use crate::results::status::Status;
use crate::spec::expand::EnvCombo;
use crate::spec::policy::Policies;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The run's fixed facts, read by every slot.
pub struct Params<'a> {
    pub combos: &'a [EnvCombo],
    pub backend: &'a str,
    pub policies: &'a Policies,
    pub retry_interrupted: bool,
    pub interrupts: &'a AtomicUsize,
    /// Trials per unit (1: every unit's first run is its row).
    pub trials: u32,
    /// Whether the plan counted a `solver = "all"` case as its backend's fixed solver list
    /// (`units::planned`); a shard's count takes each as one.
    pub all_counted_up_front: bool,
}

impl Params<'_> {
    /// The units the plan counted for one `solver = "all"` case in `env`.
    fn counted_for_all(&self, env: &Env, op: crate::op::OpKind) -> u64 {
        if self.all_counted_up_front {
            crate::exec::plan::units::counted_for_all(env.backend.unwrap_or(self.backend), op)
        } else {
            1
        }
    }
}

/// Says that a `solver = "all"` case is `listed` units, against what the plan counted for it
/// (once, in the first pass: later passes list it again).
pub fn expanded(
    shared: &Mutex<Shared>,
    p: &Params,
    env: &Env,
    case: &Case,
    listed: u64,
) -> std::io::Result<()> {
    let counted = p.counted_for_all(env, case.problem.kind());
    if env.trial != 1 || listed == counted {
        return Ok(());
    }
    lock(shared).emit(&Event::Expanded { listed, counted })
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

/// What becomes of a unit before any worker sees it.
enum Before {
    /// It has its row, or this trial is kept: nothing to do.
    Done,
    /// It gets this row without running (interrupted in an earlier session, device unhealthy).
    Record(Box<Outcome>),
    Run,
}

/// What to do after a plan entry.
enum Flow {
    Continue,
    Stop(Option<Stop>),
}

/// One unit as a slot sees it.
struct UnitRef<'a> {
    trial: u32,
    unit: Unit<'a>,
    env: Env<'a>,
}

struct Runner<'a, I> {
    slot: &'a mut Slot,
    queue: &'a Mutex<Queue<I>>,
    shared: &'a Mutex<Shared>,
    p: &'a Params<'a>,
    all_down: &'a AtomicBool,
    failed: &'a AtomicBool,
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
            if self.probe_failed && self.state == State::Healthy && !self.leave(None)? {
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
    fn leave(&mut self, rest: Option<Work>) -> std::io::Result<bool> {
        let mut q = lock(self.queue);
        q.working -= 1;
        let others_continue = q.working > 0;
        if others_continue {
            if let Some(w) = rest {
                q.returned.push_back(w);
            }
            self.state = State::Left;
        } else {
            self.state = State::Draining;
            self.all_down.store(true, Ordering::SeqCst);
        }
        lock(self.shared).emit(&Event::Stopped {
            slot: &self.slot.label,
            others_continue,
        })?;
        Ok(!others_continue)
    }

    fn work(&mut self, w: Work) -> std::io::Result<Flow> {
        let Work {
            trial,
            env_index,
            env_key,
            case,
            solvers,
        } = w;
        let env = Env::of(env_index, trial, &self.p.combos[env_index]);
        let solvers = match solvers {
            Some(s) => s,
            None if self.state == State::Draining && case.solver == "all" => {
                expanded(self.shared, self.p, &env, &case, 1)?;
                vec!["all".to_string()]
            }
            None => match list_solvers(self.slot, self.shared, self.p, env, &case, &env_key)? {
                Listing::Solvers(s) => s,
                Listing::Recorded => return Ok(Flow::Continue),
                Listing::Failed(out) => {
                    // The enumeration itself failed: one row for the case with solver `all`.
                    let out = *out;
                    let all_id = unit_id(&case.id, "all", &env_key);
                    let u = UnitRef {
                        trial,
                        unit: Unit {
                            id: &all_id,
                            case: &case,
                            solver: "all",
                            env_key: &env_key,
                        },
                        env,
                    };
                    self.record(&u, out)?;
                    return Ok(Flow::Continue);
                }
            },
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
                if !self.leave(Some(rest))? {
                    return Ok(Flow::Stop(None));
                }
            }
            let id = unit_id(&case.id, solver, &env_key);
            let u = UnitRef {
                trial,
                unit: Unit {
                    id: &id,
                    case: &case,
                    solver,
                    env_key: &env_key,
                },
                env,
            };
            self.unit(&u)?;
        }
        Ok(Flow::Continue)
    }

    /// What becomes of a unit before any worker sees it.
    fn before(&self, sh: &Shared, u: &UnitRef) -> Before {
        let id = u.unit.id;
        let kept = |v: &Vec<(u32, Outcome)>| v.iter().any(|(t, _)| *t == u.trial);
        if sh.book.has_row(id) || sh.book.trials.get(id).is_some_and(kept) {
            return Before::Done;
        }
        if let Some(phase) = sh.book.unfinished.get(id)
            && !self.p.retry_interrupted
        {
            let phase = if phase.is_empty() { "init" } else { phase };
            return Before::Record(Box::new(Outcome::failed(
                Status::Interrupted,
                phase,
                "started and never finished: the supervisor, its worker or the machine went down (rerun with --retry-interrupted)",
            )));
        }
        if self.state == State::Draining {
            return Before::Record(Box::new(Outcome::failed(
                Status::Skipped,
                "",
                "device-unhealthy",
            )));
        }
        if let Some(why) = sh.book.cannot_start.get(&u.env.index) {
            return Before::Record(Box::new(Outcome::failed(
                Status::Error,
                "init",
                format!(
                    "no worker starts in this env combination (the device answered in another): {why}"
                ),
            )));
        }
        Before::Run
    }

    fn unit(&mut self, u: &UnitRef) -> std::io::Result<()> {
        let first = if self.slot.sup.is_warm(u.env) {
            "alloc"
        } else {
            "init"
        };
        let limits = &self.p.policies.limits;
        let slot = self.slot.label.as_str();
        {
            let mut sh = lock(self.shared);
            match self.before(&sh, u) {
                Before::Done => return Ok(()),
                Before::Record(out) => return self.write(&mut sh, u, *out, false),
                Before::Run => {}
            }
        }
        // Started only once its worker process exists: a worker that cannot be started (the
        // executable deleted by a rebuild) stops the run with the unit unrecorded, so a resume
        // runs it.
        self.slot
            .sup
            .spawn_worker(u.env)
            .map_err(|why| std::io::Error::other(SpawnFailed(why)))?;
        {
            let mut sh = lock(self.shared);
            sh.emit(&Event::Started {
                unit: u.unit,
                trial: u.trial,
                slot,
                phase: first,
                limit_s: limits.for_phase(first),
            })?;
        }
        let shared = self.shared;
        let mut failed: Option<std::io::Error> = None;
        let mut watch = |w: Watch| {
            let mut sh = lock(shared);
            let r = match w {
                Watch::Phase(phase) => sh.emit(&Event::Phase {
                    unit: u.unit,
                    slot,
                    phase,
                    limit_s: limits.for_phase(phase),
                }),
                Watch::Beat { silent_s } => sh.emit(&Event::Heartbeat { slot, silent_s }),
            };
            if let Err(e) = r {
                failed.get_or_insert(e);
            }
        };
        let (id, case, solver) = (u.unit.id, u.unit.case, u.unit.solver);
        let out = self
            .slot
            .sup
            .run_unit(id, case, solver, self.p.policies, u.env, &mut watch);
        if let Some(e) = failed {
            return Err(e);
        }
        self.record(u, out)
    }

    /// Keeps an ok trial that is not the unit's last, or writes the row; after a hang or crash
    /// checks the device's health.
    fn record(&mut self, u: &UnitRef, out: Outcome) -> std::io::Result<()> {
        let fault = matches!(out.status, Status::Hang | Status::Crash);
        if out.status == Status::Interrupted && self.p.interrupts.load(Ordering::SeqCst) >= 2 {
            // Left started-and-unfinished in the journal: a resume decides what to do with it.
            return Ok(());
        }
        {
            let mut sh = lock(self.shared);
            let kept = sh.book.trials.get(u.unit.id).map_or(0, Vec::len) as u32;
            if out.status == Status::Ok && u.trial < self.p.trials && kept + 1 < self.p.trials {
                sh.emit(&Event::TrialKept {
                    unit: u.unit,
                    trial: u.trial,
                    outcome: &out,
                })?;
            } else {
                self.write(&mut sh, u, out, true)?;
            }
        }
        if fault && self.state == State::Healthy && !self.probe_failed {
            let others: Vec<Env> = self
                .p
                .combos
                .iter()
                .enumerate()
                .map(|(index, c)| Env::of(index, u.trial, c))
                .collect();
            let health = self.slot.sup.check_health(u.env, &others);
            spawn_failed(&mut self.slot.sup)?;
            match health {
                Health::Healthy => {}
                Health::Unhealthy => self.probe_failed = true,
                Health::CannotStart(why) => {
                    lock(self.shared).book.cannot_start.insert(u.env.index, why);
                }
            }
        }
        Ok(())
    }

    /// Writes the unit's row: `out` combined with the unit's earlier ok trials. `ran`: whether
    /// the slot's worker produced it (else it is recorded without running: interrupted,
    /// skipped, or its combination cannot start), so that the worker last started, maybe of
    /// another combination and tree, is not taken for the row's device or tree.
    fn write(&self, sh: &mut Shared, u: &UnitRef, out: Outcome, ran: bool) -> std::io::Result<()> {
        let earlier = sh.book.trials.remove(u.unit.id).unwrap_or_default();
        // `--processes`: whether the unit's processes agreed, judged before the trials become one row.
        let stable = if self.p.policies.timing.processes > 0 {
            let all: Vec<&Outcome> = earlier.iter().map(|(_, o)| o).chain([&out]).collect();
            crate::exec::plan::trials::stability(&all)
        } else {
            None
        };
        let mut out = crate::exec::plan::trials::combine(earlier, u.trial, out, self.p.trials);
        if let Some((stable, why)) = stable {
            (out.stable, out.unstable) = (stable.into(), why);
        }
        let left = u64::from(self.p.trials.saturating_sub(u.trial));
        sh.finish(u.unit, self.slot.place(ran), self.p.backend, &out, left)
    }
}

/// What listing a case's solvers gave.
pub enum Listing {
    /// The units to run: the case's own solver, or what the worker listed for `all`.
    Solvers(Vec<String>),
    /// The listing failed in an earlier session and its row says so: nothing to run.
    Recorded,
    /// The listing failed now (the caller records it as the case's `all` unit).
    Failed(Box<Outcome>),
}

/// The solvers of `case` on `slot`: its own, or for `solver = "all"` those the slot's worker
/// lists (the progress total grows by them).
pub fn list_solvers(
    slot: &mut Slot,
    shared: &Mutex<Shared>,
    p: &Params,
    env: Env,
    case: &Case,
    env_key: &str,
) -> std::io::Result<Listing> {
    if case.solver != "all" {
        return Ok(Listing::Solvers(vec![case.solver.clone()]));
    }
    let (recorded, cannot_start) = {
        let sh = lock(shared);
        let recorded = sh.book.has_row(&unit_id(&case.id, "all", env_key));
        (recorded, sh.book.cannot_start.contains_key(&env.index))
    };
    if recorded {
        // The case's one `all` row (its listing failed in an earlier session).
        expanded(shared, p, &env, case, 1)?;
        return Ok(Listing::Recorded);
    }
    if cannot_start {
        // No worker to ask: the case's `all` unit records why.
        expanded(shared, p, &env, case, 1)?;
        return Ok(Listing::Solvers(vec!["all".to_string()]));
    }
    let listed = slot.sup.enumerate(env, &case.problem);
    spawn_failed(&mut slot.sup)?;
    Ok(match listed {
        Ok(s) => {
            expanded(shared, p, &env, case, s.len() as u64)?;
            Listing::Solvers(s)
        }
        Err(out) => {
            expanded(shared, p, &env, case, 1)?;
            Listing::Failed(Box::new(out))
        }
    })
}

/// The run stops (an I/O-kind error whose source is [`SpawnFailed`]) when `sup` could not
/// start a worker process since it was last asked.
pub fn spawn_failed(sup: &mut Supervisor) -> std::io::Result<()> {
    match sup.take_spawn_error() {
        Some(why) => Err(std::io::Error::other(SpawnFailed(why))),
        None => Ok(()),
    }
}

#[cfg(test)]
#[path = "pool_tests.rs"]
mod tests;

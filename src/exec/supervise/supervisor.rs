//! The supervisor: owns worker processes (one warm worker per env combination at a time), sends
//! requests, enforces per-phase time limits, and turns every way a worker can fail into an
//! outcome. It knows nothing about GPUs: only processes, phases and messages.

// Failures travel as `Outcome`s (the row they become); they are the cold path.
#![allow(clippy::result_large_err)]

use crate::backend::BackendInfo;
pub use crate::exec::supervise::handle::Env;
use crate::exec::supervise::handle::{Recv, WorkerHandle, WorkerSpec, describe_exit};
use crate::exec::worker::protocol::{Event, PROTOCOL_VERSION, Request};
use crate::exec::worker::unit::Outcome;
use crate::op::{Case, Problem};
use crate::results::status::Status;
use crate::spec::policy::Limits;
use crate::spec::policy::Policies;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

impl<'a> Env<'a> {
    /// The context of env combination `index` of a run, for `trial`.
    pub fn of(index: usize, trial: u32, c: &'a crate::spec::expand::EnvCombo) -> Env<'a> {
        Env {
            index,
            trial,
            vars: &c.vars,
            backend: c.backend.as_deref(),
            rocm: c.rocm.as_ref().map(|t| t.path.as_str()),
        }
    }
}

/// A worker process could not be started at all: the machine's failure, never a unit's result.
/// It travels as the source of an `io::Error` and stops the run (see `pool::spawn_failed`).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SpawnFailed(pub String);

/// What a health check after a hang or crash found.
#[derive(Debug, PartialEq)]
pub enum Health {
    Healthy,
    /// The device failed its probe in every environment tried.
    Unhealthy,
    /// No worker starts in the combination's own environment (why), while the device answers
    /// in another combination's.
    CannotStart(String),
}

/// Health-probe attempts after a hang or crash before the device is declared unhealthy.
pub const PROBE_TRIES: u32 = 3;
/// How often a wait wakes to look at Ctrl-C.
const POLL: Duration = Duration::from_millis(50);
/// How often a wait says how long its worker has been silent ([`Watch::Beat`]).
const BEAT: Duration = Duration::from_secs(1);
/// Bytes of a worker's log attached to a failure.
const TAIL: u64 = 1500;

/// What a wait on a worker sees while a request runs.
pub enum Watch<'a> {
    /// The worker entered this phase (its clock against the phase's limit restarts).
    Phase(&'a str),
    /// About once a second: seconds since the worker last said anything (it sends a heartbeat
    /// every half second, so more than a second means the process itself is stuck or stopped).
    Beat { silent_s: f64 },
}

pub struct Supervisor {
    spec: WorkerSpec,
    logs: PathBuf,
    limits: Limits,
    current: Option<((usize, u32), WorkerHandle)>,
    /// Whether the current worker has said it is ready (its handshake is done).
    ready: bool,
    /// Why a worker process could not be started (see `spawn_worker`).
    spawn_error: Option<String>,
    spawned: u64,
    /// Ctrl-C presses so far (set by the signal handler).
    interrupts: Arc<AtomicUsize>,
    pub info: Option<BackendInfo>,
}

impl Supervisor {
    pub fn new(
        spec: WorkerSpec,
        logs: PathBuf,
        limits: Limits,
        interrupts: Arc<AtomicUsize>,
    ) -> Supervisor {
        Supervisor {
            spec,
            logs,
            limits,
            current: None,
            ready: false,
            spawn_error: None,
            spawned: 0,
            interrupts,
            info: None,
        }
    }

    fn grace(&self) -> Duration {
        Duration::from_secs_f64(self.limits.grace)
    }

    fn limit(&self, phase: &str) -> Duration {
        Duration::from_secs_f64(self.limits.for_phase(phase))
    }

    /// Starts the worker process for `env` unless it is the current one (no handshake yet).
    /// An error here is the machine's, not a unit's: the executable is gone or the system
    /// cannot start a process. It is kept for [`Supervisor::take_spawn_error`].
    pub fn spawn_worker(&mut self, env: Env) -> Result<(), String> {
        let key = (env.index, env.trial);
        if self.current.as_ref().is_some_and(|(k, _)| *k != key)
            && let Some((_, w)) = self.current.take()
        {
            w.shutdown(self.grace());
        }
        if self.current.is_some() {
            return Ok(());
        }
        self.spawned += 1;
        let log = self.logs.join(format!(
            "worker-{}{:04}-env{}.log",
            self.spec.tag, self.spawned, env.index
        ));
        match WorkerHandle::spawn(&self.spec, &env, &log) {
            Ok(w) => {
                self.current = Some((key, w));
                self.ready = false;
                self.info = None;
                Ok(())
            }
            Err(e) => {
                let why = format!("cannot start worker {}: {e}", self.spec.exe.display());
                self.spawn_error = Some(why.clone());
                Err(why)
            }
        }
    }

    /// Why the last worker could not be started, once (see [`Supervisor::spawn_worker`]).
    pub fn take_spawn_error(&mut self) -> Option<String> {
        self.spawn_error.take()
    }

    /// The warm worker for `env`, started (and handshaken) if needed.
    fn worker(&mut self, env: Env) -> Result<&mut WorkerHandle, Outcome> {
        self.spawn_worker(env)
            .map_err(|why| Outcome::failed(Status::Error, "init", why))?;
        if !self.ready {
            let ready =
                self.await_event("init", &mut |_| {}, |e| matches!(e, Event::Ready { .. }))?;
            if let Event::Ready { protocol, info, .. } = ready {
                if protocol != PROTOCOL_VERSION {
                    self.discard();
                    return Err(Outcome::failed(
                        Status::Error,
                        "init",
                        format!("worker speaks protocol {protocol}, supervisor {PROTOCOL_VERSION}"),
                    ));
                }
                let available = info.available;
                let missing = info.missing.clone().unwrap_or_default();
                // Kept either way: what a backend that cannot run found is what `probe` shows.
                self.info = Some(*info);
                if !available {
                    self.discard();
                    return Err(Outcome::failed(Status::Error, "init", missing));
                }
            }
            self.ready = true;
        }
        match self.current.as_mut() {
            Some((_, w)) => Ok(w),
            None => Err(Outcome::failed(Status::Error, "init", "worker vanished")),
        }
    }

    /// Whether a unit for `env` would go to a running worker (else one starts, in `init`).
    pub fn is_warm(&self, env: Env) -> bool {
        self.ready
            && self
                .current
                .as_ref()
                .is_some_and(|(k, _)| *k == (env.index, env.trial))
    }

    /// Kills the current worker (after a fault or when it cannot be trusted).
    fn discard(&mut self) {
        self.ready = false;
        if let Some((_, mut w)) = self.current.take() {
            w.kill(self.grace());
        }
    }

    /// Waits for the reply `want` accepts, following phase changes and enforcing each phase's
    /// limit. Any way the worker fails becomes an `Outcome` (and the worker is gone).
    fn await_event(
        &mut self,
        first_phase: &str,
        watch: &mut dyn FnMut(Watch),
        want: impl Fn(&Event) -> bool,
    ) -> Result<Event, Outcome> {
        let mut phase = first_phase.to_string();
        let mut phase_start = Instant::now();
        let mut garbage: Option<String> = None;
        let grace = self.grace();
        let (mut heard, mut beat) = (Instant::now(), Instant::now());
        loop {
            if beat.elapsed() >= BEAT {
                beat = Instant::now();
                watch(Watch::Beat {
                    silent_s: heard.elapsed().as_secs_f64(),
                });
            }
            let limit = self.limit(&phase);
            let Some((_, w)) = self.current.as_mut() else {
                return Err(Outcome::failed(Status::Error, &phase, "no worker"));
            };
            if self.interrupts.load(Ordering::SeqCst) >= 2 {
                self.discard();
                let how = match crate::exec::record::events::stop_cause() {
                    "Ctrl-C" => "stopped by a second Ctrl-C".to_string(),
                    other => format!("stopped by {other}"),
                };
                return Err(Outcome::failed(Status::Interrupted, &phase, &how));
            }
            let deadline = (phase_start + limit).min(Instant::now() + POLL);
            let got = w.recv(deadline);
            if matches!(got, Recv::Event(_) | Recv::Garbage(_)) {
                heard = Instant::now();
            }
            match got {
                Recv::Event(Event::Phase { phase: p }) => {
                    watch(Watch::Phase(&p));
                    phase = p;
                    phase_start = Instant::now();
                }
                Recv::Event(Event::Heartbeat) => {}
                Recv::Event(Event::Fatal { message }) => {
                    let failed = fatal(w, &phase, &message);
                    self.discard();
                    return Err(failed);
                }
                Recv::Event(ev) if want(&ev) => return Ok(ev),
                Recv::Event(_) => {}
                Recv::Garbage(line) => garbage = Some(line),
                Recv::Timeout => {
                    if phase_start.elapsed() >= limit {
                        let failed = hung(w, &phase, limit);
                        self.discard();
                        return Err(failed);
                    }
                }
                Recv::Closed => {
                    let failed = crashed(w, &phase, garbage.as_deref(), grace);
                    w.kill_group();
                    self.current = None;
                    return Err(failed);
                }
            }
        }
    }

    /// Starts (or reuses) the worker for an env combination and returns the backend's info.
    pub fn start(&mut self, env: Env) -> Result<BackendInfo, Outcome> {
        self.worker(env)?;
        Ok(self.info.clone().unwrap_or_default())
    }

    /// Like `start`, but a backend that answered and cannot run here is an answer too: Ok with
    /// `available == false` and why. Err only when the worker itself failed (did not start,
    /// crashed or hung before it answered).
    pub fn handshake(&mut self, env: Env) -> Result<BackendInfo, Outcome> {
        match self.worker(env) {
            Ok(_) => Ok(self.info.clone().unwrap_or_default()),
            Err(o) => match self.info.clone() {
                Some(i) if !i.available => Ok(i),
                _ => Err(o),
            },
        }
    }

    pub fn run_unit(
        &mut self,
        unit_id: &str,
        case: &Case,
        solver: &str,
        policies: &Policies,
        env: Env,
        watch: &mut dyn FnMut(Watch),
    ) -> Outcome {
        let started = Instant::now();
        let req = Request::Unit {
            unit_id: unit_id.to_string(),
            case: Box::new(case.clone()),
            solver: solver.to_string(),
            policies: Box::new(policies.clone()),
        };
        let mut out = match self.request(env, &req, "alloc", watch, |e| {
            matches!(e, Event::Result { .. })
        }) {
            Ok(Event::Result { outcome, .. }) => *outcome,
            Ok(_) => Outcome::failed(Status::Error, "run", "unexpected reply"),
            Err(o) => o,
        };
        if out.wall_s == 0.0 {
            out.wall_s = started.elapsed().as_secs_f64();
        }
        out
    }

    pub fn enumerate(&mut self, env: Env, problem: &Problem) -> Result<Vec<String>, Outcome> {
        let req = Request::Enumerate {
            problem: Box::new(problem.clone()),
        };
        match self.request(env, &req, "enumerate", &mut |_| {}, |e| {
            matches!(e, Event::Solvers { .. })
        })? {
            Event::Solvers { solvers } => Ok(solvers),
            _ => Err(Outcome::failed(
                Status::Error,
                "enumerate",
                "unexpected reply",
            )),
        }
    }

    fn request(
        &mut self,
        env: Env,
        req: &Request,
        first_phase: &str,
        watch: &mut dyn FnMut(Watch),
        want: impl Fn(&Event) -> bool,
    ) -> Result<Event, Outcome> {
        let grace = self.grace();
        let w = self.worker(env)?;
        if let Err(e) = w.send(req) {
            // The worker died between requests: its exit says why.
            let st = w.wait_for(grace);
            let tail = w.log_tail(TAIL);
            self.current = None;
            return Err(Outcome::failed(
                Status::Crash,
                first_phase,
                format!(
                    "cannot send to worker ({e}); worker {}{}",
                    describe_exit(st),
                    with_tail(&tail)
                ),
            ));
        }
        self.await_event(first_phase, watch, want)
    }

    /// After a hang or crash: a known-good unit in a fresh worker, up to `PROBE_TRIES` times.
    /// Ok when the device answered correctly, else the last failure (its phase says whether
    /// the worker even started).
    pub fn health_probe(&mut self, env: Env) -> Result<(), Box<Outcome>> {
        self.probe_tries(env, PROBE_TRIES)
    }

    fn probe_tries(&mut self, env: Env, tries: u32) -> Result<(), Box<Outcome>> {
        let mut last = Outcome::failed(Status::Error, "init", "not probed");
        for _ in 0..tries {
            self.discard();
            if self.interrupts.load(Ordering::SeqCst) >= 2 {
                return Err(Box::new(last));
            }
            match self.request(env, &Request::Probe, "alloc", &mut |_| {}, |e| {
                matches!(e, Event::Result { .. })
            }) {
                Ok(Event::Result { outcome, .. }) if outcome.status == Status::Ok => return Ok(()),
                Ok(Event::Result { outcome, .. }) => last = *outcome,
                Ok(_) => {}
                Err(o) => last = o,
            }
            self.discard();
        }
        Err(Box::new(last))
    }

    /// After a hang or crash in `env`: is the device healthy? The probe runs in the
    /// combination's own environment first. When the worker dies there before it is ready (a
    /// crash or an error in `init`, not a hang, which is the device's mark), one probe runs in
    /// each other combination's environment (`others`: every context of the run); if the device
    /// answers in one, the own environment is tried once more (a device that was recovering
    /// is not blamed on the combination), and only when that fails in `init` again is the
    /// combination's environment the cause.
    pub fn check_health(&mut self, env: Env, others: &[Env]) -> Health {
        let failed = match self.health_probe(env) {
            Ok(()) => return Health::Healthy,
            Err(o) => o,
        };
        if failed.phase != "init" || failed.status == Status::Hang {
            return Health::Unhealthy;
        }
        for other in others {
            if other.index == env.index {
                continue;
            }
            let other = Env {
                trial: env.trial,
                ..*other
            };
            if self.probe_tries(other, 1).is_ok() {
                return match self.probe_tries(env, 1) {
                    Ok(()) => Health::Healthy,
                    Err(again) if again.phase == "init" && again.status != Status::Hang => {
                        Health::CannotStart(failed.error)
                    }
                    Err(_) => Health::Unhealthy,
                };
            }
        }
        Health::Unhealthy
    }

    /// Where its workers' per-combination caches go from now on; a running worker (started
    /// with the old place in its environment) is ended.
    pub fn set_cache_root(&mut self, root: Option<PathBuf>) {
        self.spec.cache_root = root;
        self.shutdown();
    }

    /// The run directory was renamed into place: worker logs now live under `logs`.
    pub fn logs_moved_to(&mut self, logs: PathBuf) {
        if let Some((_, w)) = self.current.as_mut()
            && let Some(name) = w.log.file_name()
        {
            w.log = logs.join(name);
        }
        self.logs = logs;
    }

    /// Ends the current worker politely.
    pub fn shutdown(&mut self) {
        if let Some((_, w)) = self.current.take() {
            w.shutdown(self.grace());
        }
    }

    pub fn workers_spawned(&self) -> u64 {
        self.spawned
    }
}

/// The worker reported a fatal error in `phase`: its message and its log's tail. The caller
/// kills the worker.
fn fatal(w: &WorkerHandle, phase: &str, message: &str) -> Outcome {
    let tail = w.log_tail(TAIL);
    Outcome::failed(
        Status::Error,
        phase,
        format!("worker: {message}{}", with_tail(&tail)),
    )
}

/// The worker made no progress in `phase` within its limit: a hang, with the pid and the log's
/// tail. The caller kills the worker.
fn hung(w: &WorkerHandle, phase: &str, limit: Duration) -> Outcome {
    let tail = w.log_tail(TAIL);
    let pid = w.pid;
    Outcome::failed(
        Status::Hang,
        phase,
        format!(
            "no progress in phase {phase} for {:.1} s (limit); worker {pid} killed{}",
            limit.as_secs_f64(),
            with_tail(&tail)
        ),
    )
}

/// The worker closed its end: a crash, with how it exited (waited for up to `grace` and a
/// second), the last line it printed that was not the protocol, and the log's tail. The caller
/// drops the worker.
fn crashed(w: &mut WorkerHandle, phase: &str, garbage: Option<&str>, grace: Duration) -> Outcome {
    let st = w.wait_for(grace + Duration::from_secs(1));
    let tail = w.log_tail(TAIL);
    let mut msg = format!("worker {}", describe_exit(st));
    if let Some(g) = garbage {
        msg.push_str(&format!("; last non-protocol line: {g}"));
    }
    Outcome::failed(Status::Crash, phase, format!("{msg}{}", with_tail(&tail)))
}

fn with_tail(tail: &str) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!("\n--- worker log tail ---\n{tail}")
    }
}

#[cfg(test)]
#[path = "supervisor_tests.rs"]
pub(crate) mod tests;

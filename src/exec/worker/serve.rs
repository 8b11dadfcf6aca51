//! The worker process (`rocsweep worker`, hidden): opens the backend once, then runs units sent
//! by the supervisor, reporting phases, heartbeats and results over the protocol.
//!
//! The protocol goes out on a private duplicate of the original stdout; fd 1 is pointed at
//! stderr (the worker's log file), so a vendor library printing to stdout cannot corrupt it.

use crate::backend::{self, ChildFault, PhaseSink};
use crate::exec::worker::fault::{self, Faults};
use crate::exec::worker::protocol::{Event, PROTOCOL_VERSION, Request, encode};
use crate::exec::worker::unit::{self, ReferenceCache};
use crate::op::value::Value;
use crate::op::{Case, OpKind, Problem, canonical_text};
use crate::spec::policy::Policies;
use std::fs::File;
use std::io::{BufRead, Write};
use std::os::fd::FromRawFd;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Seconds between heartbeats.
pub const HEARTBEAT: Duration = Duration::from_millis(500);

type Out = Arc<Mutex<File>>;

fn send(out: &Out, ev: &Event) -> bool {
    let line = encode(ev);
    match out.lock() {
        Ok(mut f) => f.write_all(line.as_bytes()).and_then(|_| f.flush()).is_ok(),
        Err(_) => false,
    }
}

/// Moves the protocol off fd 1. Returns the protocol's file.
fn private_stdout() -> std::io::Result<File> {
    // SAFETY: dup/dup2 on the process's own standard descriptors; the new fd is owned by the File.
    unsafe {
        let fd = libc::dup(1);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::dup2(2, 1) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(File::from_raw_fd(fd))
    }
}

struct Phases<'a> {
    out: &'a Out,
    faults: &'a Faults,
    target: String,
    /// Where the backend's calls run in a child process: the mailbox that hands it the faults
    /// to carry out there (`Backend::child_fault`).
    child: Option<ChildFault>,
}

impl PhaseSink for Phases<'_> {
    fn phase(&mut self, phase: &'static str) {
        send(
            self.out,
            &Event::Phase {
                phase: phase.to_string(),
            },
        );
        // Output faults act on the read-back output (`before_verify`), whatever the backend.
        if let Some(a) = self
            .faults
            .action(&self.target, phase)
            .filter(|a| !a.corrupts_output())
        {
            if let Some(child) = &self.child {
                child.put(a.name());
            } else {
                fault::trigger(a);
            }
        }
    }

    fn before_verify(&mut self, output: &mut crate::tensor::HostData) {
        if let Some(a) = self.faults.action(&self.target, "verify")
            && a.corrupts_output()
        {
            fault::corrupt(&a, output);
        }
    }
}

/// Ends the worker's whole process group (the worker leads it: the supervisor starts each worker
/// in a group of its own), so nothing it started outlives it.
fn orphaned() -> ! {
    crate::noteln!("worker: the supervisor is gone; ending the worker's process group");
    crate::reaper::end_children(true);
    // SAFETY: getpgrp/getpid have no preconditions; the signal goes to our own group, and only
    // when this worker leads it (a worker started by hand shares its shell's job group).
    unsafe {
        if libc::getpgrp() == libc::getpid() {
            libc::kill(0, libc::SIGKILL);
        }
    }
    std::process::exit(1)
}

/// The handshake: protocol version, pid, and what the backend says about itself.
fn ready(out: &Out, info: backend::BackendInfo) -> bool {
    send(
        out,
        &Event::Ready {
            protocol: PROTOCOL_VERSION,
            pid: std::process::id(),
            info: Box::new(info),
        },
    )
}

/// The health probe's known-good units, in order: a copy device -> host of a buffer uploaded
/// through the checked path (an allocation and a copy each way, verified), then, where the
/// backend can compile its own kernels, a cast through one of them (verified bit for bit). They
/// check the device, never a math library: a tree without rocBLAS's or hipBLASLt's kernels, or
/// without MIOpen's db, has a healthy device (issue 40).
pub fn probe_cases(compiles_kernels: bool) -> Vec<Case> {
    let mut cases = Vec::new();
    let copy = [
        ("direction", Value::Str("d2h".into())),
        ("memory", Value::Str("pageable".into())),
        ("bytes", Value::Int(PROBE_ELEMENTS as i64 * 4)),
        ("pin_memory", Value::Bool(false)),
        ("sharing_strategy", Value::Str("default".into())),
    ];
    cases.extend(probe_unit(OpKind::Copy, &copy));
    if compiles_kernels {
        let cast = [
            ("from", Value::Str("f32".into())),
            ("to", Value::Str("f16".into())),
            ("count", Value::Int(PROBE_ELEMENTS as i64)),
        ];
        cases.extend(probe_unit(OpKind::Cast, &cast));
    }
    cases
}

/// Elements the probe moves and converts: small enough to cost nothing, more than one block.
const PROBE_ELEMENTS: usize = 4096;

/// A case of `op` with every parameter in `set` (None when one is missing or invalid).
fn probe_unit(op: OpKind, set: &[(&str, Value)]) -> Option<Case> {
    let values = op
        .params()
        .iter()
        .map(|p| {
            set.iter()
                .find(|(n, _)| *n == p.name)
                .map(|(_, v)| v.clone())
        })
        .collect::<Option<Vec<Value>>>()?;
    Case::new(op, values, "default".into()).ok()
}

pub fn main(backend_name: &str) -> i32 {
    let out: Out = match private_stdout() {
        Ok(f) => Arc::new(Mutex::new(f)),
        Err(e) => {
            crate::noteln!("worker: cannot set up the protocol stream: {e}");
            return 1;
        }
    };
    // Helpers that leave the process group are this worker's to end (see `crate::reaper`).
    crate::reaper::become_subreaper();
    crate::reaper::end_children_on_sigterm();
    watch_supervisor(&out);
    let backend = match open(&out, backend_name) {
        Ok(b) => b,
        Err(code) => {
            crate::reaper::end_children(false);
            return code;
        }
    };
    let mut w = Worker {
        out,
        faults: Faults::from_env(),
        backend,
        name: backend_name.to_string(),
        cache: ReferenceCache::default(),
        prior: Default::default(),
    };
    let code = w.serve();
    // The backend (the torch worker's Python) ends first, then whatever it left behind.
    drop(w);
    crate::reaper::end_children(false);
    code
}

/// Heartbeats on a thread of their own. A worker whose supervisor is gone (killed with any
/// signal: the worker is then reparented, and its protocol pipe breaks) ends itself and
/// everything it started, within a heartbeat, even while a unit hangs in a library call.
fn watch_supervisor(out: &Out) {
    let hb = Arc::clone(out);
    // SAFETY: getppid has no preconditions.
    let parent = unsafe { libc::getppid() };
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(HEARTBEAT);
            // SAFETY: getppid has no preconditions.
            if unsafe { libc::getppid() } != parent || !send(&hb, &Event::Heartbeat) {
                orphaned();
            }
        }
    });
}

/// Opens the backend in phase `init` and answers the handshake; Err is the exit code of a
/// worker that cannot go on (the backend cannot run here, or the env combination is bad).
fn open(out: &Out, backend_name: &str) -> Result<Box<dyn backend::Backend>, i32> {
    send(
        out,
        &Event::Phase {
            phase: "init".into(),
        },
    );
    // A device pool's variables (`run --devices`), so each log says which device it drove.
    let device: String = [
        crate::exec::worker::protocol::INDEX_VAR,
        "HIP_VISIBLE_DEVICES",
        "CUDA_VISIBLE_DEVICES",
    ]
    .iter()
    .filter_map(|k| std::env::var(k).ok().map(|v| format!(" {k}={v}")))
    .collect();
    crate::noteln!(
        "rocsweep worker pid {} backend {backend_name}{device}",
        std::process::id()
    );
    if let Err(msg) = check_env_combo() {
        send(out, &Event::Fatal { message: msg });
        return Err(2);
    }
    match backend::registry::open_explained(backend_name) {
        Ok((b, picked)) => {
            if !ready(out, backend::BackendInfo { picked, ..b.info() }) {
                return Err(1);
            }
            Ok(b)
        }
        Err(info) => {
            // What the backend found, and why it cannot run: the supervisor (or `probe`)
            // reports it; this worker is done.
            ready(out, *info);
            Err(1)
        }
    }
}

/// A worker with its backend open, answering requests until stdin ends or `shutdown`.
struct Worker {
    out: Out,
    faults: Faults,
    backend: Box<dyn backend::Backend>,
    /// The backend as the worker was told to open it (`--backend`, e.g. `auto`): what fault
    /// rules' `backend=` condition names.
    name: String,
    cache: ReferenceCache,
    /// Units of each op this process has run so far (fault rules' `prior_OP` conditions).
    prior: std::collections::BTreeMap<&'static str, u64>,
}

impl Worker {
    fn serve(&mut self) -> i32 {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { break };
            if line.trim().is_empty() {
                continue;
            }
            let req: Request = match serde_json::from_str(&line) {
                Ok(r) => r,
                Err(e) => {
                    self.fatal(format!("cannot parse request: {e}"));
                    return 2;
                }
            };
            match req {
                Request::Unit {
                    unit_id,
                    case,
                    solver,
                    policies,
                } => self.unit(unit_id, &case, &solver, &policies),
                Request::Enumerate { problem } => self.enumerate(&problem),
                Request::Probe => {
                    if let Err(code) = self.probe() {
                        return code;
                    }
                }
                Request::Shutdown => break,
            }
        }
        0
    }

    fn fatal(&self, message: String) {
        send(&self.out, &Event::Fatal { message });
    }

    fn phase(&self, phase: &str) {
        send(
            &self.out,
            &Event::Phase {
                phase: phase.into(),
            },
        );
    }

    /// Runs one unit (through the test faults, when set) and answers with its outcome.
    fn unit(&mut self, unit_id: String, case: &Case, solver: &str, policies: &Policies) {
        let mut target = format!(
            "{};solver={solver};backend={}",
            canonical_text(case.problem.kind(), &case.values),
            self.name
        );
        for op in OpKind::ALL {
            let n = self.prior.get(op.name()).copied().unwrap_or(0);
            target.push_str(&format!(";prior_{}={n}", op.name()));
        }
        *self.prior.entry(case.problem.kind().name()).or_default() += 1;
        if self.faults.action(&target, "run") == Some(fault::Action::GpuHang) {
            self.phase("run");
            let r = self.backend.test_never_ending_kernel();
            crate::noteln!("test kernel returned: {r:?}");
            fault::trigger(fault::Action::Hang);
        }
        let mut phases = Phases {
            out: &self.out,
            faults: &self.faults,
            target,
            child: self.backend.child_fault(),
        };
        let outcome = unit::run_unit(
            self.backend.as_mut(),
            case,
            solver,
            policies,
            &mut self.cache,
            &mut phases,
        );
        // A fault left for the backend's child that no request carried belongs to this unit.
        if let Some(child) = &phases.child {
            child.take();
        }
        send(
            &self.out,
            &Event::Result {
                unit_id,
                outcome: Box::new(outcome),
            },
        );
    }

    /// Lists the backend's solvers for a problem (`solver = "all"`).
    fn enumerate(&mut self, problem: &Problem) {
        self.phase("enumerate");
        if !self.faults.is_empty() {
            // Match enumerate faults against the problem's parameters as a case would.
            let text = serde_json::to_string(problem).unwrap_or_default();
            let canonical = format!("{};backend={}", canonical_from_json(&text), self.name);
            if let Some(a) = self.faults.action(&canonical, "enumerate") {
                fault::trigger(a);
            }
        }
        let solvers = self.backend.solvers(problem);
        send(&self.out, &Event::Solvers { solvers });
    }

    /// The health probe's known-good units (`probe_cases`), untimed; the answer is the first
    /// failure's outcome, else the last unit's.
    fn probe(&mut self) -> Result<(), i32> {
        let cases = probe_cases(self.backend.compiles_kernels());
        if cases.is_empty() {
            self.fatal("the probe cases are invalid".into());
            return Err(2);
        }
        let mut policies = Policies::default();
        policies.timing.enabled = false;
        let mut last = None;
        for case in &cases {
            let mut phases = Phases {
                out: &self.out,
                faults: &self.faults,
                target: "probe".into(),
                child: self.backend.child_fault(),
            };
            let outcome = unit::run_unit(
                self.backend.as_mut(),
                case,
                "default",
                &policies,
                &mut self.cache,
                &mut phases,
            );
            crate::noteln!(
                "health probe: {} {}",
                canonical_text(case.problem.kind(), &case.values),
                outcome.status
            );
            let ok = outcome.status == crate::results::status::Status::Ok;
            last = Some(outcome);
            if !ok {
                break;
            }
        }
        if let Some(outcome) = last {
            send(
                &self.out,
                &Event::Result {
                    unit_id: "probe".into(),
                    outcome: Box::new(outcome),
                },
            );
        }
        Ok(())
    }
}

/// `k=v` pairs of a problem's JSON, flattened, so enumerate faults can match parameters.
fn canonical_from_json(text: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
    let mut parts = Vec::new();
    flatten(&v, &mut parts);
    parts.join(";")
}

fn flatten(v: &serde_json::Value, out: &mut Vec<String>) {
    if let serde_json::Value::Object(m) = v {
        for (k, x) in m {
            match x {
                serde_json::Value::Object(_) => flatten(x, out),
                serde_json::Value::String(s) => out.push(format!("{k}={s}")),
                other => out.push(format!("{k}={other}")),
            }
        }
    }
}

/// The supervisor names the env combination it meant to give this worker in `ENV_COMBO`, as a
/// JSON list of [name, value] pairs (values may hold any character, `;` included); each must be
/// what this process actually has.
pub const ENV_COMBO: &str = "ROCSWEEP_ENV_COMBO";

fn check_env_combo() -> Result<(), String> {
    let Ok(text) = std::env::var(ENV_COMBO) else {
        return Ok(());
    };
    let vars: Vec<(String, String)> = serde_json::from_str(&text)
        .map_err(|e| format!("{ENV_COMBO} is not the supervisor's JSON ({e})"))?;
    // As the run directory writes them: a credential's value is its label (the log is a file
    // of the run directory).
    let mut key: Vec<String> = vars
        .iter()
        .map(|(k, v)| format!("{k}={}", crate::results::manifest::sweep_value_shown(k, v)))
        .collect();
    key.sort();
    crate::noteln!(
        "env combination: {}",
        if key.is_empty() {
            "(none)".to_string()
        } else {
            key.join(";")
        }
    );
    for (name, want) in &vars {
        match std::env::var(name) {
            Ok(got) if got == *want => {}
            other => {
                let shown =
                    |v: &str| crate::results::manifest::sweep_value_shown(name, v).into_owned();
                return Err(format!(
                    "worker environment has {name}={:?}, the env combination says {:?}",
                    other.ok().map(|v| shown(&v)),
                    shown(want)
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_checks_a_copy_each_way_and_a_kernel_and_no_library() {
        let kinds = |c: &[Case]| c.iter().map(|c| c.problem.kind()).collect::<Vec<_>>();
        assert_eq!(kinds(&probe_cases(true)), [OpKind::Copy, OpKind::Cast]);
        // Without a compiler (no NVRTC or hipRTC), the copies alone.
        assert_eq!(kinds(&probe_cases(false)), [OpKind::Copy]);
        let text = canonical_text(OpKind::Copy, &probe_cases(false)[0].values);
        assert_eq!(text, "copy;direction=d2h;memory=pageable;bytes=16384");
    }
}

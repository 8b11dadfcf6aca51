//! A worker process seen from the supervisor: spawned in its own process group with exactly its
//! env combination (no shell), stdout read by a thread into a channel, stderr into a log file.

use crate::exec::worker::protocol::{Event, Request, encode};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// An env combination as the supervisor sees it: which warm worker, and its variables. Each
/// trial of a unit runs in a worker of its own: a change of `trial`, like a change of `index`,
/// starts a new worker.
#[derive(Clone, Copy, Debug)]
pub struct Env<'a> {
    pub index: usize,
    /// 1-based trial (see `TimingPolicy::trials`).
    pub trial: u32,
    pub vars: &'a [(String, String)],
    /// The backend of this context's workers when the run names several (else the spec's).
    pub backend: Option<&'a str>,
    /// The ROCm tree (the path given to its workers) when the run names several.
    pub rocm: Option<&'a str>,
}

/// Reads (of up to 8 KiB) of what a worker wrote before it ended; a helper it forked that
/// keeps writing to the pipe is not followed further.
const DRAIN_READS: usize = 128;

/// How often `recv` asks whether the worker ended, where the kernel has no pidfds.
const EXIT_POLL: Duration = Duration::from_millis(50);

use crate::pipewatch::{Readable, pidfd_open};

pub enum Recv {
    Event(Event),
    /// A line that is not protocol (kept for the failure text).
    Garbage(String),
    Timeout,
    /// The worker closed its end: it exited or is about to.
    Closed,
}

pub struct WorkerHandle {
    child: Child,
    stdin: Option<ChildStdin>,
    /// The worker's protocol stream, read directly with poll(2): no reader thread, so an event
    /// costs no extra context switches.
    stdout: ChildStdout,
    buf: Vec<u8>,
    eof: bool,
    /// Readable once the worker process has ended (pidfd_open(2)): its end is seen from the
    /// process itself, not from its pipe, which a forked helper can hold open after the worker
    /// died. None where the kernel has no pidfds (before 5.3): then `recv` polls `try_wait`.
    pidfd: Option<std::os::fd::OwnedFd>,
    /// Set once the group got its SIGKILL after the worker ended: never sent twice, so a pid
    /// reused later is not signalled.
    group_killed: bool,
    pub pid: u32,
    pub log: PathBuf,
}

/// How to start workers: which executable, which backend, extra environment.
#[derive(Clone, Debug, Default)]
pub struct WorkerSpec {
    pub exe: PathBuf,
    pub backend: String,
    /// Set in every worker of this spec, under the env combination (a device slot's variables).
    pub extra_env: Vec<(String, String)>,
    /// Prefix of this spec's worker log names (`dev1-`), so several pools share `workers/`.
    pub tag: String,
    /// Per-combination cache directories: each (VAR, subdir) is set to
    /// `cache_root/<hash of the combination>/<subdir>` unless the combination sets VAR itself,
    /// so combinations do not share (and leak through) a library's on-disk caches.
    pub cache_root: Option<PathBuf>,
    pub cache_vars: Vec<(String, String)>,
}

/// The cache directory of one worker context for one variable (see `WorkerSpec::cache_root`):
/// by the env combination, and by the backend and the ROCm tree where the run names several.
fn combo_cache_dir(root: &Path, env: &Env, subdir: &str) -> PathBuf {
    let text = serde_json::to_string(env.vars).unwrap_or_default();
    let key = match (env.backend, env.rocm) {
        (None, None) if env.vars.is_empty() => "default".to_string(),
        (None, None) => crate::op::short_hash(text.as_bytes()),
        (b, t) => {
            let whole = format!("{}|{}|{text}", b.unwrap_or(""), t.unwrap_or(""));
            format!(
                "{}-{}",
                b.unwrap_or("ctx"),
                crate::op::short_hash(whole.as_bytes())
            )
        }
    };
    root.join(key).join(subdir)
}

/// The (variable, directory) pairs of one worker context's caches (see
/// `WorkerSpec::cache_root`); variables the combination sets itself are left to it. A context
/// with its own backend isolates that backend's cache variables.
fn cache_env(spec: &WorkerSpec, env: &Env) -> Vec<(String, PathBuf)> {
    let Some(root) = &spec.cache_root else {
        return Vec::new();
    };
    let vars: Vec<(String, String)> = match env.backend {
        None => spec.cache_vars.clone(),
        Some(b) => crate::backend::registry::isolated_cache_vars(b)
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    };
    vars.into_iter()
        .filter(|(var, _)| !env.vars.iter().any(|(k, _)| k == var))
        .map(|(var, sub)| {
            let dir = combo_cache_dir(root, env, &sub);
            (var, dir)
        })
        .collect()
}

/// The file beside a worker context's cache directories that names the context (its
/// variables, backend and ROCm tree): what reads the caches later (`tune`'s MIOpen find-db)
/// knows whose they are.
pub const CONTEXT_FILE: &str = "context.json";

/// Creates the cache directories of one worker context (the run does it once the run
/// directory exists, before any unit runs), and its [`CONTEXT_FILE`].
pub fn create_cache_dirs(spec: &WorkerSpec, env: &Env) -> std::io::Result<()> {
    let mut context = None;
    for (_, dir) in cache_env(spec, env) {
        // The run directory's caches/ and below: never through a planted link.
        if let Some(run_dir) = spec.cache_root.as_deref().and_then(Path::parent) {
            crate::results::atomic::refuse_links(run_dir, &dir)?;
        }
        std::fs::create_dir_all(&dir)?;
        context = dir.parent().map(|d| d.join(CONTEXT_FILE));
    }
    if let Some(file) = context {
        // As the `env` column shows them: a credential's value is never written.
        let vars: Vec<(&str, std::borrow::Cow<str>)> = env
            .vars
            .iter()
            .map(|(k, v)| (k.as_str(), crate::spec::secret::sweep_value_shown(k, v)))
            .collect();
        let text = serde_json::json!({
            "vars": vars,
            "backend": env.backend,
            "rocm": env.rocm,
        });
        crate::results::atomic::write(&file, format!("{text:#}\n"))?;
    }
    Ok(())
}

/// `cmd.spawn()`, tried again while the executable is busy (ETXTBSY). Another thread of this
/// process that forks while it has the file open for writing (a test writing its worker script,
/// a build replacing the binary) makes exec fail for as long as that child lives, which ends at
/// its own exec: a passing state, not a missing worker. Any other error is returned at once.
fn spawn_retrying_busy(cmd: &mut Command) -> std::io::Result<Child> {
    let mut wait = Duration::from_millis(1);
    spawn_while_busy(cmd, 12, || {
        std::thread::sleep(wait);
        wait = (wait * 2).min(Duration::from_millis(200));
    })
}

/// `cmd.spawn()`, with `between()` before each of up to `retries` new tries after ETXTBSY.
fn spawn_while_busy(
    cmd: &mut Command,
    retries: u32,
    mut between: impl FnMut(),
) -> std::io::Result<Child> {
    for _ in 0..retries {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => between(),
            other => return other,
        }
    }
    cmd.spawn()
}

impl WorkerHandle {
    /// Starts a worker of the context `env`: its env combination, and its backend and ROCm
    /// tree where the run names several (else the spec's backend and the inherited tree).
    pub fn spawn(spec: &WorkerSpec, env: &Env, log: &Path) -> std::io::Result<WorkerHandle> {
        let log_file = crate::results::atomic::open_append(log).map_err(|e| {
            std::io::Error::other(format!("cannot open its log {}: {e}", log.display()))
        })?;
        let mut cmd = Command::new(&spec.exe);
        cmd.arg("worker")
            .arg("--backend")
            .arg(env.backend.unwrap_or(&spec.backend))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log_file))
            // Own process group: a terminal's Ctrl-C does not reach workers, and a kill reaches
            // everything a worker started.
            .process_group(0);
        for (k, v) in &spec.extra_env {
            cmd.env(k, v);
        }
        for (var, dir) in cache_env(spec, env) {
            cmd.env(var, dir);
        }
        if let Some(tree) = env.rocm {
            cmd.env(crate::rocm_tree::discover::ROCM_ENV, tree);
        }
        for (k, v) in env.vars {
            cmd.env(k, v);
        }
        let combo = serde_json::to_string(env.vars).map_err(std::io::Error::other)?;
        cmd.env(crate::exec::worker::serve::ENV_COMBO, combo);
        // Which trial (process) of the unit this worker runs: informational, and what a test
        // fault names to act in one process only (`env.ROCSWEEP_TRIAL=2`).
        cmd.env(
            crate::exec::worker::protocol::TRIAL_VAR,
            env.trial.to_string(),
        );
        let mut child = spawn_retrying_busy(&mut cmd)?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("worker has no stdout"))?;
        Ok(WorkerHandle {
            pidfd: pidfd_open(child.id()),
            group_killed: false,
            pid: child.id(),
            stdin: child.stdin.take(),
            child,
            stdout,
            buf: Vec::with_capacity(4096),
            eof: false,
            log: log.to_path_buf(),
        })
    }

    /// The next complete line already read, if any.
    fn take_line(&mut self) -> Option<String> {
        let nl = self.buf.iter().position(|&b| b == b'\n')?;
        let line: Vec<u8> = self.buf.drain(..=nl).collect();
        Some(String::from_utf8_lossy(&line[..nl]).into_owned())
    }

    pub fn send(&mut self, req: &Request) -> std::io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::other("worker stdin closed"))?;
        stdin.write_all(encode(req).as_bytes())?;
        stdin.flush()
    }

    /// Waits for the next message until `deadline`. `Closed` once the worker process has
    /// ended (whatever still holds its pipe) and everything it wrote has been read.
    pub fn recv(&mut self, deadline: Instant) -> Recv {
        loop {
            if let Some(line) = self.take_line() {
                return match serde_json::from_str::<Event>(&line) {
                    Ok(ev) => Recv::Event(ev),
                    Err(_) => Recv::Garbage(line),
                };
            }
            if self.eof {
                return Recv::Closed;
            }
            let wait = deadline.saturating_duration_since(Instant::now());
            match self.wait_readable(wait) {
                Readable::Data => {
                    self.read_some();
                }
                Readable::Exited => {
                    // What the worker wrote before it ended is in the pipe: read it all, then
                    // it is closed, even if a helper it forked still holds the write end.
                    // Bounded: a helper that keeps writing must not keep this reading.
                    for _ in 0..DRAIN_READS {
                        if !matches!(self.poll_fds(0), Readable::Data) || !self.read_some() {
                            break;
                        }
                    }
                    self.eof = true;
                }
                Readable::Nothing => {
                    if Instant::now() >= deadline {
                        return Recv::Timeout;
                    }
                }
            }
        }
    }

    /// Reads what the pipe has; false at its end or on an error (then `eof`).
    fn read_some(&mut self) -> bool {
        let mut chunk = [0u8; 8192];
        match self.stdout.read(&mut chunk) {
            Ok(0) => self.eof = true,
            Ok(k) => {
                self.buf.extend_from_slice(&chunk[..k]);
                return true;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => return true,
            Err(_) => self.eof = true,
        }
        false
    }

    /// Waits up to `wait` for data on the pipe or the worker's end. Without a pidfd, wakes
    /// every [`EXIT_POLL`] to ask the process.
    fn wait_readable(&mut self, wait: Duration) -> Readable {
        let slice = if self.pidfd.is_some() {
            wait
        } else {
            wait.min(EXIT_POLL)
        };
        let got = self.poll_fds(slice.as_millis().min(i32::MAX as u128) as i32);
        if matches!(got, Readable::Nothing)
            && self.pidfd.is_none()
            && matches!(self.child.try_wait(), Ok(Some(_)))
        {
            return Readable::Exited;
        }
        got
    }

    /// One poll(2) over the pipe and the pidfd; data on the pipe comes first.
    fn poll_fds(&mut self, ms: i32) -> Readable {
        match crate::pipewatch::poll(self.stdout.as_raw_fd(), self.pidfd.as_ref(), ms) {
            Ok(r) => r,
            Err(_) => {
                self.eof = true;
                Readable::Nothing
            }
        }
    }

    /// SIGKILL to what is left of the worker's process group once the worker has ended: the
    /// helpers a library forked (compilers, ...) must not outlive their worker.
    pub fn kill_group(&mut self) {
        if self.group_killed {
            return;
        }
        self.group_killed = true;
        // SAFETY: signalling our own child's process group (pgid == child pid via
        // process_group(0)), right after the worker ended: the pgid stays taken while any
        // member (a helper) lives, so it names only this worker's group.
        unsafe { libc::kill(-(self.pid as i32), libc::SIGKILL) };
    }

    /// SIGTERM to the worker's process group, `grace` to go, then SIGKILL. Returns its status.
    pub fn kill(&mut self, grace: Duration) -> Option<ExitStatus> {
        let pgid = self.pid as i32;
        // SAFETY: signalling our own child's process group (pgid == child pid via process_group(0)).
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
        if let Some(st) = self.wait_for(grace) {
            // Reap anything else left in the group too.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
            return Some(st);
        }
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        self.wait_for(Duration::from_secs(5))
    }

    /// Polls for exit up to `limit`.
    pub fn wait_for(&mut self, limit: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + limit;
        loop {
            match self.child.try_wait() {
                Ok(Some(st)) => return Some(st),
                Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(2)),
                _ => return None,
            }
        }
    }

    /// Asks the worker to exit; kills it if it does not within `grace`.
    pub fn shutdown(mut self, grace: Duration) {
        let _ = self.send(&Request::Shutdown);
        self.stdin = None;
        if self.wait_for(grace).is_none() {
            self.kill(grace);
        }
        self.kill_group();
    }

    /// The last `bytes` of the worker's log, for failure reports.
    pub fn log_tail(&self, bytes: u64) -> String {
        log_tail(&self.log, bytes)
    }
}

impl Drop for WorkerHandle {
    fn drop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            self.kill_group();
        } else {
            // SAFETY: as in kill(); a handle dropped without shutdown must not leave a process behind.
            unsafe { libc::kill(-(self.pid as i32), libc::SIGKILL) };
            // Bounded: a worker stuck in a driver call (uninterruptible sleep) never dies, and
            // the supervisor must not hang with it.
            if self.wait_for(Duration::from_secs(2)).is_none() {
                crate::noteln!(
                    "warning: worker {} did not exit after SIGKILL (stuck in the driver?); leaving it",
                    self.pid
                );
            }
        }
    }
}

pub fn log_tail(path: &Path, bytes: u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    if f.seek(SeekFrom::Start(len.saturating_sub(bytes))).is_err() {
        return String::new();
    }
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).trim().to_string()
}

/// `SIGSEGV`, `SIGABRT`, ... for a signal number.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}

/// Words for how a worker ended: `killed by SIGSEGV` or `exited with code 17`.
pub fn describe_exit(st: Option<ExitStatus>) -> String {
    match st {
        Some(st) => match st.signal() {
            Some(sig) => format!("killed by {}", signal_name(sig)),
            None => format!("exited with code {}", st.code().unwrap_or(-1)),
        },
        None => "did not exit".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// An executable that this process holds open for writing cannot be exec'd (ETXTBSY) until
    /// the writer closes it: the spawn is tried again after each refusal, and gives up with the
    /// system's own error only after its retries.
    #[test]
    fn a_busy_executable_is_tried_again_until_its_writer_closes_it() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let exe = dir.path().join("w.sh");
        let mut writer = File::create(&exe).unwrap_or_else(|e| panic!("{e}"));
        writer
            .write_all(b"#!/bin/sh\nexit 7\n")
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755))
            .unwrap_or_else(|e| panic!("{e}"));

        let mut refusals = 0;
        let err = spawn_while_busy(&mut Command::new(&exe), 2, || refusals += 1)
            .err()
            .unwrap_or_else(|| panic!("exec'd a file open for writing"));
        assert_eq!((err.raw_os_error(), refusals), (Some(libc::ETXTBSY), 2));

        // Closed after the first refusal. Another test thread forking meanwhile can hold the
        // file a moment longer (the very race this retries), so later refusals may follow.
        let mut writer = Some(writer);
        let mut refusals = 0;
        let mut child = spawn_while_busy(&mut Command::new(&exe), 12, || {
            refusals += 1;
            if writer.take().is_none() {
                std::thread::sleep(Duration::from_millis(20));
            }
        })
        .unwrap_or_else(|e| panic!("not started once its writer closed: {e}"));
        let status = child.wait().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(status.code(), Some(7));
        assert!(
            refusals >= 1,
            "the first try, with the writer open, was not refused"
        );
    }
}

//! The Python side of the torch backend: `python/rocsweep_torch.py` (carried in this binary)
//! run by the user's Python as a child of the worker, and the framing of its pipe (see that
//! file's docs). A child that dies takes the worker with it the same way (the same signal or
//! exit code), so the supervisor records the crash, hang or exit as it would a library's.

use crate::backend::{ChildFault, UnitError};
use serde_json::Value as Json;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};

/// The worker's Python source, carried in the binary so that nothing needs installing.
pub const SOURCE: &str = include_str!("../../../python/rocsweep_torch.py");

/// The variable through which `run --python` reaches the worker.
pub const PYTHON_VAR: &str = "ROCSWEEP_PYTHON";

/// The protocol version both sides speak (PROTOCOL in the Python file).
const PROTOCOL: u64 = 1;

/// The Python that runs the torch worker, and why that one: `--python` (through
/// ROCSWEEP_PYTHON), else the active environment's ($VIRTUAL_ENV, $CONDA_PREFIX), else the
/// `python3` on PATH.
pub fn choose_python() -> (PathBuf, String) {
    if let Some(p) = std::env::var_os(PYTHON_VAR).filter(|p| !p.is_empty()) {
        return (PathBuf::from(p), "--python".into());
    }
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(root) = std::env::var_os(var).filter(|p| !p.is_empty()) {
            for name in ["bin/python3", "bin/python"] {
                let p = PathBuf::from(&root).join(name);
                if p.is_file() {
                    return (p, format!("${var}"));
                }
            }
        }
    }
    (PathBuf::from("python3"), "the python3 on PATH".into())
}

/// The most one JSON line from the Python side may hold (the hello, an answer's head; blobs
/// come apart): a Python that writes more before a line end is not the torch worker, and what
/// it wrote is not kept (issue 40, D1).
const MAX_LINE: usize = 1 << 20;

/// Bytes of the Python's stderr kept for a failure to start (issue 40, D3).
const STDERR_TAIL: usize = 2048;

/// Run before the worker file: `python -c` puts the working directory first on `sys.path`, so a
/// `json.py` where rocsweep was started would be imported by the worker (issue 40, S6). Removed
/// as `-P` would (which Pythons before 3.11 do not have); site-packages, the user's included,
/// stay.
const SAFE_PATH: &str =
    "import sys\nif sys.path and sys.path[0] in (\"\", \".\"):\n    del sys.path[0]\n";

/// The Python child and its pipe.
pub struct Conn {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// Readable once the Python process has ended: its end is seen from the process itself,
    /// not from its pipe, which a process it forked can hold open (issue 40, D2).
    pidfd: Option<OwnedFd>,
    /// The end of what the Python wrote to stderr (also copied to the worker's log).
    stderr: Tail,
    /// The blobs of the last `prepare` the Python side received: it keeps them, so that the
    /// next unit of the same case (another solver) need not send hundreds of MB again.
    pub last_inputs: Option<Vec<Vec<u8>>>,
    /// The worker's test fault for the Python side, sent with the next request (see
    /// `ChildFault`); the backend hands a copy to the worker's phase sink.
    pub fault: ChildFault,
}

/// One answer: its JSON object and the bytes that followed it.
pub struct Answer {
    pub head: Json,
    pub blob: Vec<u8>,
}

/// Why a read from the Python side got nothing.
enum ReadErr {
    /// Its output ended, or the process did.
    Ended,
    /// A line longer than [`MAX_LINE`].
    TooLong,
    /// A line that is not JSON: the error and the line (cut).
    Unreadable(String, String),
    Io(std::io::Error),
}

impl std::fmt::Display for ReadErr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadErr::Ended => write!(f, "its output ended"),
            ReadErr::TooLong => write!(
                f,
                "it wrote more than {} MiB without a line end",
                MAX_LINE >> 20
            ),
            ReadErr::Unreadable(e, line) => {
                write!(
                    f,
                    "it wrote a line that is not the torch worker's ({e}): {line:?}"
                )
            }
            ReadErr::Io(e) => write!(f, "cannot read its answer: {e}"),
        }
    }
}

/// The first `n` characters of `text`, with "..." where it was cut.
fn cut(text: &str, n: usize) -> String {
    match text.char_indices().nth(n) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text.to_string(),
    }
}

impl Conn {
    /// Starts the worker file under `python` and reads its hello. Err says why the backend
    /// cannot run (no such Python, no torch in it, a protocol it does not speak), with the end
    /// of what the Python wrote to stderr.
    pub fn start(python: &std::path::Path, fault: ChildFault) -> Result<(Conn, Json), String> {
        let mut child = Command::new(python)
            .arg("-c")
            .arg(format!("{SAFE_PATH}{SOURCE}"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", python.display()))?;
        let (Some(stdin), Some(stdout), Some(err)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("the torch worker's pipes could not be set up".into());
        };
        let pidfd = crate::pipewatch::pidfd_open(child.id());
        let mut conn = Conn {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            pidfd,
            stderr: Tail::copy(err),
            last_inputs: None,
            fault,
        };
        let hello = match conn.read_head() {
            Ok(h) => h,
            Err(why) => return Err(conn.no_hello(python, &why)),
        };
        if hello.get("ok").and_then(Json::as_bool) != Some(true) {
            let msg = hello
                .get("message")
                .and_then(Json::as_str)
                .unwrap_or("the torch worker could not start");
            return Err(msg.to_string());
        }
        let proto = hello.get("protocol").and_then(Json::as_u64);
        if proto != Some(PROTOCOL) {
            return Err(format!(
                "the torch worker speaks protocol {proto:?}, this rocsweep {PROTOCOL}"
            ));
        }
        Ok((conn, hello))
    }

    /// The Python process's id (for the worker log).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Why the Python gave no hello, once it is gone: it is ended at once where it still runs
    /// (it may be waiting for a request on the stdin this process holds), then reaped.
    fn no_hello(&mut self, python: &std::path::Path, why: &ReadErr) -> String {
        // Its output ended: it is ending (give it a second to); else it is ended now.
        let wait = match why {
            ReadErr::Ended => std::time::Duration::from_secs(1),
            _ => std::time::Duration::ZERO,
        };
        let ended_itself = self.exits_within(wait);
        if !ended_itself {
            let _ = self.child.kill();
        }
        let status = match self.child.wait() {
            Ok(s) if ended_itself => format!(" ({s})"),
            Ok(_) => " (ended by rocsweep)".to_string(),
            Err(_) => String::new(),
        };
        let tail = self.stderr.text();
        let stderr = if tail.is_empty() {
            String::new()
        } else {
            format!("; its stderr ends: {tail}")
        };
        format!("{} gave no hello: {why}{status}{stderr}", python.display())
    }

    /// Whether the Python process ends within `wait` (seen on its pidfd, else asked every 10 ms).
    fn exits_within(&mut self, wait: std::time::Duration) -> bool {
        let end = std::time::Instant::now() + wait;
        loop {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return true;
            }
            let left = end.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            match &self.pidfd {
                // No pipe (-1 is ignored by poll): the pidfd alone.
                Some(_) => {
                    let ms = left.as_millis().min(i32::MAX as u128) as i32;
                    let _ = crate::pipewatch::poll(-1, self.pidfd.as_ref(), ms);
                }
                None => std::thread::sleep(left.min(std::time::Duration::from_millis(10))),
            }
        }
    }

    /// Waits until a read of the pipe will not block; Err when the Python process ended with
    /// nothing left to read.
    fn wait_data(&mut self) -> Result<(), ReadErr> {
        use crate::pipewatch::Readable;
        use std::os::fd::AsRawFd;
        if !self.stdout.buffer().is_empty() {
            return Ok(());
        }
        let fd = self.stdout.get_ref().as_raw_fd();
        loop {
            // Without a pidfd (kernels before 5.3), ask the process every 50 ms.
            let ms = if self.pidfd.is_some() { -1 } else { 50 };
            match crate::pipewatch::poll(fd, self.pidfd.as_ref(), ms).map_err(ReadErr::Io)? {
                Readable::Data => return Ok(()),
                Readable::Exited => return Err(ReadErr::Ended),
                Readable::Nothing => {
                    if self.pidfd.is_none() && matches!(self.child.try_wait(), Ok(Some(_))) {
                        return Err(ReadErr::Ended);
                    }
                }
            }
        }
    }

    /// One line of JSON, at most [`MAX_LINE`] bytes.
    fn read_head(&mut self) -> Result<Json, ReadErr> {
        let mut line = Vec::new();
        loop {
            self.wait_data()?;
            let buf = self.stdout.fill_buf().map_err(ReadErr::Io)?;
            if buf.is_empty() {
                return Err(ReadErr::Ended);
            }
            let (take, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            if line.len() + take > MAX_LINE {
                return Err(ReadErr::TooLong);
            }
            line.extend_from_slice(&buf[..take]);
            self.stdout.consume(take);
            if done {
                break;
            }
        }
        serde_json::from_slice(&line).map_err(|e| {
            let text = String::from_utf8_lossy(&line);
            ReadErr::Unreadable(e.to_string(), cut(text.trim_end(), 200))
        })
    }

    /// `n` bytes that follow an answer's head.
    fn read_blob(&mut self, n: usize) -> Result<Vec<u8>, ReadErr> {
        let mut blob = vec![0u8; n];
        let mut at = 0;
        while at < n {
            self.wait_data()?;
            match self.stdout.read(&mut blob[at..]) {
                Ok(0) => return Err(ReadErr::Ended),
                Ok(k) => at += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ReadErr::Io(e)),
            }
        }
        Ok(blob)
    }

    /// Sends one request (and its blobs), forwards `phase` notes to `phase`, and returns the
    /// final answer. A child that died ends this process the same way (see the module docs).
    pub fn ask(
        &mut self,
        mut head: Json,
        blobs: &[&[u8]],
        phase: &mut dyn FnMut(&str),
    ) -> Result<Answer, UnitError> {
        if let Some(a) = self.fault.take() {
            head["fault"] = Json::from(a);
        }
        head["blobs"] = Json::from(blobs.iter().map(|b| b.len()).collect::<Vec<_>>());
        let mut line = head.to_string();
        line.push('\n');
        let sent = self.stdin.write_all(line.as_bytes()).and_then(|_| {
            for b in blobs {
                self.stdin.write_all(b)?;
            }
            self.stdin.flush()
        });
        if sent.is_err() {
            self.died();
        }
        loop {
            let head = match self.read_head() {
                Ok(h) => h,
                Err(why) => {
                    crate::noteln!("worker: reading the torch worker (Python): {why}");
                    self.died()
                }
            };
            if let Some(p) = head.get("phase").and_then(Json::as_str) {
                phase(p);
                continue;
            }
            let n = head.get("blob").and_then(Json::as_u64).unwrap_or(0) as usize;
            let Ok(blob) = self.read_blob(n) else {
                self.died();
            };
            if head.get("ok").and_then(Json::as_bool) == Some(true) {
                return Ok(Answer { head, blob });
            }
            return Err(unit_error(&head));
        }
    }

    /// The child is gone: this worker ends as it did (its signal, or its exit code), so that
    /// the row says crash or exit, with the phase the worker last reported.
    fn died(&mut self) -> ! {
        let status = self.child.wait();
        crate::noteln!("worker: the torch worker (Python) ended: {status:?}");
        // What it started and left behind (a helper in a session of its own) ends with it.
        crate::reaper::end_children(false);
        let status = status.ok();
        if let Some(sig) = status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s)) {
            // SAFETY: signal(2) and raise(2) on our own process, with the default action, so
            // the worker ends by the child's signal.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
                libc::raise(sig);
            }
        }
        std::process::exit(status.and_then(|s| s.code()).unwrap_or(1))
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let _ = self.stdin.write_all(b"{\"cmd\":\"shutdown\"}\n");
        let _ = self.stdin.flush();
        let _ = self.child.wait();
    }
}

fn unit_error(head: &Json) -> UnitError {
    let text = |k: &str| head.get(k).and_then(Json::as_str).unwrap_or("").to_string();
    if text("kind") == "unsupported" {
        UnitError::Unsupported(text("message"))
    } else {
        UnitError::Library {
            library: "torch".into(),
            code: text("code"),
            message: text("message"),
        }
    }
}

/// The end of a child's stderr, copied line by line to this process's stderr (the worker's
/// log) by a thread of its own as it comes.
struct Tail {
    kept: Arc<Mutex<Vec<u8>>>,
    copier: Option<std::thread::JoinHandle<()>>,
}

impl Tail {
    fn copy(mut from: std::process::ChildStderr) -> Tail {
        let kept = Arc::new(Mutex::new(Vec::new()));
        let k = Arc::clone(&kept);
        let copier = std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match from.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        crate::console::note(&String::from_utf8_lossy(&buf[..n]));
                        if let Ok(mut t) = k.lock() {
                            t.extend_from_slice(&buf[..n]);
                            let over = t.len().saturating_sub(STDERR_TAIL);
                            t.drain(..over);
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        });
        Tail {
            kept,
            copier: Some(copier),
        }
    }

    /// What was kept, on one line (` | ` between lines), once the copy has ended (up to a
    /// second: a process the child forked may hold its stderr).
    fn text(&mut self) -> String {
        if let Some(c) = self.copier.take() {
            let end = std::time::Instant::now() + std::time::Duration::from_secs(1);
            while !c.is_finished() && std::time::Instant::now() < end {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            if c.is_finished() {
                let _ = c.join();
            }
        }
        let kept = self.kept.lock().map(|t| t.clone()).unwrap_or_default();
        String::from_utf8_lossy(&kept)
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" | ")
    }
}

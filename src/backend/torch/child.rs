//! The Python side of the torch backend: `python/rocsweep_torch.py` (carried in this binary)
//! run by the user's Python as a child of the worker, and the framing of its pipe (see that
//! file's docs). A child that dies takes the worker with it the same way (the same signal or
//! exit code), so the supervisor records the crash, hang or exit as it would a library's.

use crate::backend::UnitError;
use serde_json::Value as Json;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

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

/// The Python child and its pipe.
pub struct Conn {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// The blobs of the last `prepare` the Python side received: it keeps them, so that the
    /// next unit of the same case (another solver) need not send hundreds of MB again.
    pub last_inputs: Option<Vec<Vec<u8>>>,
}

/// One answer: its JSON object and the bytes that followed it.
pub struct Answer {
    pub head: Json,
    pub blob: Vec<u8>,
}

impl Conn {
    /// Starts the worker file under `python` and reads its hello. Err says why the backend
    /// cannot run (no such Python, no torch in it, a protocol it does not speak).
    pub fn start(python: &std::path::Path) -> Result<(Conn, Json), String> {
        let mut child = Command::new(python)
            .arg("-c")
            .arg(SOURCE)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", python.display()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("the torch worker's pipes could not be set up".into());
        };
        let mut conn = Conn {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            last_inputs: None,
        };
        let hello = match conn.read_line() {
            Ok(h) => h,
            Err(why) => {
                let status = conn
                    .child
                    .wait()
                    .map(|s| format!(" ({s})"))
                    .unwrap_or_default();
                return Err(format!("{} gave no hello: {why}{status}", python.display()));
            }
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

    fn read_line(&mut self) -> Result<Json, String> {
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(0) => Err("its output ended".into()),
            Ok(_) => serde_json::from_str(&line).map_err(|e| format!("unreadable answer ({e})")),
            Err(e) => Err(format!("cannot read its answer: {e}")),
        }
    }

    /// Sends one request (and its blobs), forwards `phase` notes to `phase`, and returns the
    /// final answer. A child that died ends this process the same way (see the module docs).
    pub fn ask(
        &mut self,
        mut head: Json,
        blobs: &[&[u8]],
        phase: &mut dyn FnMut(&str),
    ) -> Result<Answer, UnitError> {
        if let Some(a) = crate::exec::fault::take_deferred() {
            head["fault"] = Json::from(a.name());
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
            let head = match self.read_line() {
                Ok(h) => h,
                Err(_) => self.died(),
            };
            if let Some(p) = head.get("phase").and_then(Json::as_str) {
                phase(p);
                continue;
            }
            let n = head.get("blob").and_then(Json::as_u64).unwrap_or(0) as usize;
            let mut blob = vec![0u8; n];
            if self.stdout.read_exact(&mut blob).is_err() {
                self.died();
            }
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

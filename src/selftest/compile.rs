//! The offline half of `selftest --backend rocm`: the kernels compiled by the real hipRTC for
//! each target, each in a child process of its own (`rocsweep compile-check ARCH`), because a
//! compiler can crash or hang on a target it does not know (Debian's hipRTC 5.2 aborts on
//! gfx1100) and that must cost one line, not the whole selftest.

use crate::exec::supervise::handle::describe_exit;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one target's compile may take before it is called a hang.
pub const LIMIT: Duration = Duration::from_secs(180);
const POLL: Duration = Duration::from_millis(20);

/// One target's verdict.
pub enum Verdict {
    Passed(String),
    /// No HIP runtime or hipRTC here: nothing could be checked.
    Unavailable(String),
    Failed(String),
}

/// One target's verdict, from a child process of its own.
pub fn check(exe: &Path, arch: &str) -> Verdict {
    match run(exe, arch) {
        Ok(v) => v,
        Err(why) => Verdict::Failed(why),
    }
}

fn run(exe: &Path, arch: &str) -> Result<Verdict, String> {
    let mut child = Command::new(exe)
        .args(["compile-check", arch])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let (mut out, mut err) = (child.stdout.take(), child.stderr.take());
    // Readers drain both pipes, so a chatty compiler cannot block on a full one.
    let read = |p: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut p) = p {
                let _ = p.read_to_string(&mut s);
            }
            s
        })
    };
    let out_t = read(out.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let err_t = read(err.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if start.elapsed() < LIMIT => std::thread::sleep(POLL),
            _ => {
                // SAFETY: kill(2) on the child's own process group.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                let _ = child.wait();
                break None;
            }
        }
    };
    let stdout = out_t.join().unwrap_or_default();
    let stderr = err_t.join().unwrap_or_default();
    let said = stdout.trim();
    let first = said.lines().next().unwrap_or("").to_string();
    Ok(match status {
        Some(st) if st.success() => Verdict::Passed(first),
        Some(st) if st.code() == Some(crate::exit::BACKEND_UNAVAILABLE) => {
            Verdict::Unavailable(first)
        }
        Some(st) if st.code().is_some() => Verdict::Failed(first),
        Some(st) => Verdict::Failed(format!(
            "the compiler process was {}{}",
            describe_exit(Some(st)),
            last_line(&stderr)
        )),
        None => Verdict::Failed(format!("hang: no answer in {} s (killed)", LIMIT.as_secs())),
    })
}

fn last_line(s: &str) -> String {
    s.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| format!(": {}", l.trim()))
        .unwrap_or_default()
}

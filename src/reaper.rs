//! The worker as the reaper of everything it started (issue 40). The supervisor ends a worker
//! by signalling its process group, which reaches what a library or the torch worker's Python
//! started, unless a helper left the group (`setsid`, `start_new_session=True`): such a helper
//! outlived the run. The worker makes itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER),
//! so a helper whose parent died becomes the worker's child, and ends its children before it
//! ends: at a normal end, when its Python child died, when its supervisor is gone, and on
//! SIGTERM (the watchdog's first signal), after which it dies of SIGTERM as before.

use std::time::{Duration, Instant};

/// How long `end_children(true)` keeps looking for children that are still being reparented
/// to the worker (a helper whose parent is dying at the same moment).
const SETTLE: Duration = Duration::from_millis(100);

/// Makes this process the reaper of its orphaned descendants; false where the kernel cannot.
pub fn become_subreaper() -> bool {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes one integer argument.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 }
}

/// The pids whose parent is this process (from /proc).
pub fn children() -> Vec<i32> {
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| parent_of(pid) == Some(me))
        .collect()
}

/// The parent of `pid` from /proc/PID/stat (the fields after the command name's `)`).
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// SIGKILL to every child, reaped, until none is left; with `settle`, until none has appeared
/// for a moment (a helper is reparented here only once its own parent has died, which may be
/// happening now). Without it, one look: for when every parent this process knows is reaped
/// already, so their orphans are here (a worker's normal end costs no wait).
pub fn end_children(settle: bool) {
    let start = Instant::now();
    let settle = if settle { SETTLE } else { Duration::ZERO };
    loop {
        let kids = children();
        for &pid in &kids {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        // SAFETY: reaping our own children, never blocking.
        while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
        if kids.is_empty() && start.elapsed() >= settle {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// On SIGTERM: end the children, then die of SIGTERM as without this handler.
pub fn end_children_on_sigterm() {
    let Ok(mut signals) = signal_hook::iterator::Signals::new([libc::SIGTERM]) else {
        return;
    };
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            end_children(true);
            let _ = signal_hook::low_level::emulate_default_handler(libc::SIGTERM);
            std::process::exit(128 + libc::SIGTERM);
        }
    });
}

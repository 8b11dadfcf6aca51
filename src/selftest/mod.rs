//! `rocsweep selftest`: does this backend work on this machine? First the checks that need no
//! GPU (ROCm: the kernels compiled by the real hipRTC for each target), then one tiny case of
//! every op and every library the backend loads, run in workers under the watchdog exactly as
//! a sweep's units are. One line per check, a verdict, and what to send when one fails.

mod cases;
mod compile;

use crate::exec::supervise::handle::WorkerSpec;
use crate::exec::supervise::supervisor::{Env, Supervisor};
use crate::exec::worker::unit::Outcome;
use crate::exit;
use crate::results::status::Status;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

/// A check's verdict as printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Pass,
    /// The library says it cannot run the case here (not a failure of the backend).
    Unsupported,
    /// What the check needs is not installed here: nothing was checked.
    Unavailable,
    Fail,
}

impl Verdict {
    fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Unsupported => "UNSUPPORTED",
            Verdict::Unavailable => "UNAVAILABLE",
            Verdict::Fail => "FAIL",
        }
    }
}

fn line(v: Verdict, what: &str, detail: &str) {
    crate::sayln!("{:<11} {what}  {detail}", v.word());
}

pub fn command(backend: &str, archs: &[String]) -> i32 {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            crate::noteln!("error: cannot find the rocsweep executable: {e}");
            return exit::FAILURE;
        }
    };
    let mut failed = 0;
    if backend == "rocm" {
        failed += compile_checks(&exe, archs);
    }
    // A new directory of an unpredictable name: a link planted at a predictable one
    // (`rocsweep-selftest-<pid>`) would have taken the worker logs elsewhere.
    let logs_dir = match tempfile::Builder::new()
        .prefix("rocsweep-selftest-")
        .tempdir()
    {
        Ok(d) => d,
        Err(e) => {
            crate::noteln!(
                "error: {}: a directory for the worker logs: {e}",
                std::env::temp_dir().display()
            );
            return exit::FAILURE;
        }
    };
    let logs = logs_dir.path().to_path_buf();
    let unavailable = match device_checks(&exe, backend, &logs) {
        Ok(n) => {
            failed += n;
            false
        }
        Err(why) => {
            crate::sayln!("selftest: the {backend} backend cannot run here: {why}");
            true
        }
    };
    // A failed check outranks a missing device: it is what a bug report is about.
    let code = if failed > 0 {
        crate::sayln!("selftest: {failed} check(s) failed");
        exit::UNITS_FAILED
    } else if unavailable {
        exit::BACKEND_UNAVAILABLE
    } else {
        crate::sayln!("selftest: every check passed");
        exit::OK
    };
    if failed == 0 {
        drop(logs_dir);
    } else {
        // Kept for the report: the logs say what failed.
        let logs = logs_dir.keep();
        crate::sayln!(
            "To report it, send this output, `rocsweep probe --backend {backend}`, and the worker logs in {}",
            logs.display()
        );
    }
    code
}

/// `rocsweep compile-check ARCH` (internal, the child process of one compile check): prints one
/// line, exits 0 (passed), 5 (no HIP runtime or hipRTC here) or 1 (failed).
pub fn compile_check_command(arch: &str) -> i32 {
    use crate::backend::rocm::{CompileCheckError, compile_check};
    let (text, code) = match compile_check(arch) {
        Ok(what) => (what, exit::OK),
        Err(CompileCheckError::Missing(why)) => (why, exit::BACKEND_UNAVAILABLE),
        Err(CompileCheckError::Failed(why)) => (why, exit::FAILURE),
    };
    crate::sayln!("{text}");
    code
}

/// Prints one line per target; returns how many failed.
fn compile_checks(exe: &Path, archs: &[String]) -> usize {
    let mut failed = 0;
    for arch in archs.iter().map(|a| a.trim()).filter(|a| !a.is_empty()) {
        let what = format!("compile kernels for {arch} (hipRTC, no GPU needed)");
        match compile::check(exe, arch) {
            compile::Verdict::Passed(detail) => line(Verdict::Pass, &what, &detail),
            compile::Verdict::Unavailable(why) => line(Verdict::Unavailable, &what, &why),
            compile::Verdict::Failed(why) => {
                failed += 1;
                line(Verdict::Fail, &what, &why);
            }
        }
    }
    failed
}

/// Opens the backend in a worker (its handshake says whether it can run here) and runs every
/// tiny case there. Err when the backend cannot run.
fn device_checks(exe: &Path, backend: &str, logs: &Path) -> Result<usize, String> {
    let spec = WorkerSpec {
        exe: exe.to_path_buf(),
        backend: backend.to_string(),
        ..WorkerSpec::default()
    };
    let checks = cases::all(backend)?;
    let limits = checks
        .first()
        .map(|c| c.policies.limits.clone())
        .unwrap_or_default();
    let mut sup = Supervisor::new(
        spec,
        PathBuf::from(logs),
        limits,
        Arc::new(AtomicUsize::new(0)),
    );
    let env = Env {
        index: 0,
        trial: 1,
        vars: &[],
        backend: None,
        rocm: None,
    };
    let info = sup.start(env).map_err(|o| o.error)?;
    for d in &info.devices {
        crate::sayln!("device: {d}");
    }
    for (lib, v) in &info.versions {
        crate::sayln!("  {lib}: {v}");
    }
    let mut failed = 0;
    for (i, c) in checks.iter().enumerate() {
        let o = sup.run_unit(
            &format!("selftest-{i}"),
            &c.case,
            &c.case.solver,
            &c.policies,
            env,
            &mut |_| {},
        );
        let v = verdict(&o);
        failed += usize::from(v == Verdict::Fail);
        line(v, &c.label, &detail(&o));
    }
    sup.shutdown();
    Ok(failed)
}

fn verdict(o: &Outcome) -> Verdict {
    match o.status {
        Status::Ok => Verdict::Pass,
        Status::Unsupported => Verdict::Unsupported,
        _ => Verdict::Fail,
    }
}

fn detail(o: &Outcome) -> String {
    let first = o.error.lines().next().unwrap_or("").trim();
    match (o.status, &o.stats) {
        (Status::Ok, Some(s)) => format!("ok, median {:.4} ms", s.median * 1e3),
        (Status::Ok, None) => "ok".into(),
        (st, _) if o.phase.is_empty() => format!("{}: {first}", st.name()),
        (st, _) => format!("{} in {}: {first}", st.name(), o.phase),
    }
}

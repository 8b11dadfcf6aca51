//! What the user's Python does before and around the torch worker, with the real Python and
//! PyTorch (issue 40, D1-D3 and S6): a `sitecustomize` that prints to stdout or writes without
//! end, a helper process that holds the worker's stdout after Python crashed, a Python that
//! cannot start at all, and a `json.py` in the directory rocsweep was started from.

#[path = "common/torch_python.rs"]
mod torch_python;
use torch_python::python;

use std::path::Path;
use std::process::{Command, Output};

/// A one-unit (two with `m`) torch GEMM sweep in `dir`.
fn sweep(dir: &Path, ms: &str) -> std::path::PathBuf {
    let p = dir.join("s.toml");
    std::fs::write(
        &p,
        format!(
            "name = \"t\"\nbackend = \"torch\"\nop = \"gemm\"\n[axes]\nm = {ms}\n\
             [limits]\ninit = 600\nrun = 600\n\
             [timing]\nwarmup = 0\nmin_samples = 1\nmax_time = 0.02\n"
        ),
    )
    .unwrap();
    p
}

/// `rocsweep run` of `sweep` from `cwd` with `env` added.
fn run(py: &Path, sweep: &Path, cwd: &Path, env: &[(&str, &str)], fault: &str) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rocsweep"));
    c.env_remove("ROCSWEEP_TEST_FAULT")
        .env_remove("ROCSWEEP_PYTHON")
        .env_remove("VIRTUAL_ENV")
        .env_remove("CONDA_PREFIX")
        .env_remove("PYTHONPATH")
        .current_dir(cwd)
        .arg("--python")
        .arg(py)
        .arg("run")
        .arg(sweep)
        .args(["--trials", "1", "--quiet", "--no-report", "--out"])
        .arg(cwd.join("run"));
    if !fault.is_empty() {
        c.env("ROCSWEEP_TEST_FAULT", fault);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A directory with `sitecustomize.py` holding `code`, for PYTHONPATH.
fn site(dir: &Path, code: &str) -> String {
    let site = dir.join("site");
    std::fs::create_dir_all(&site).unwrap();
    std::fs::write(site.join("sitecustomize.py"), code).unwrap();
    site.display().to_string()
}

/// D1: a line on stdout before the hello ends the start at once (the init limit is 600 s
/// here) with exit 2, the line quoted; so does output without a line end, cut at 1 MiB.
#[test]
fn a_python_that_writes_before_its_hello_is_refused_at_once_quoting_what_it_wrote() {
    let Some(py) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path(), "32");
    let pp = site(tmp.path(), "print('hello from sitecustomize')\n");
    let o = run(&py, &s, tmp.path(), &[("PYTHONPATH", &pp)], "");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("gave no hello: it wrote a line that is not the torch worker's")
            && err.contains("\"hello from sitecustomize\""),
        "{err}"
    );
    assert!(!tmp.path().join("run").exists(), "no run directory is left");
    // `probe` says the same.
    let o = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .args(["probe", "--backend", "torch", "--python"])
        .arg(&py)
        .env("PYTHONPATH", &pp)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("\"hello from sitecustomize\""), "{out}");

    // 8 MiB without a line end: refused once 1 MiB is read.
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path(), "32");
    let pp = site(tmp.path(), "import os\nos.write(1, b'x' * (8 << 20))\n");
    let o = run(&py, &s, tmp.path(), &[("PYTHONPATH", &pp)], "");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("it wrote more than 1 MiB without a line end"),
        "{err}"
    );
}

/// Whether process `pid` still runs (not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| !r.trim_start().starts_with('Z'))
    })
}

/// Every helper whose pid the sitecustomize wrote to `pids` has ended (at least one started).
fn assert_helpers_ended(pids: &Path, what: &str) {
    let started: Vec<u32> = std::fs::read_to_string(pids)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert!(!started.is_empty());
    for pid in started {
        assert!(!alive(pid), "{what}: helper {pid} outlived the run");
    }
}

/// D2: Python starts a helper that inherits its stdout, then dies of SIGSEGV: a `crash` row
/// (the run limit is 600 s here), and the helper does not outlive the unit.
#[test]
fn a_python_crash_is_a_crash_while_its_helper_holds_the_pipe() {
    let Some(py) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path(), "[32, 64]");
    let pids = tmp.path().join("helpers");
    let pp = site(
        tmp.path(),
        &format!(
            "import subprocess\n\
             p = subprocess.Popen(['sleep', '600'], stdin=subprocess.DEVNULL)\n\
             open({:?}, 'a').write(str(p.pid) + '\\n')\n",
            pids.display().to_string()
        ),
    );
    let o = run(&py, &s, tmp.path(), &[("PYTHONPATH", &pp)], "m=32:segv@run");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let (header, rows) = rocsweep::results::csv::read(&tmp.path().join("run/results.csv")).unwrap();
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let by_m: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| {
            (
                r[col("m")].clone(),
                r[col("status")].clone(),
                r[col("error")].clone(),
            )
        })
        .collect();
    let m32 = by_m.iter().find(|r| r.0 == "32").unwrap();
    assert_eq!(m32.1, "crash", "{by_m:?}");
    assert!(m32.2.contains("SIGSEGV"), "{by_m:?}");
    assert_eq!(
        by_m.iter().find(|r| r.0 == "64").unwrap().1,
        "ok",
        "{by_m:?}"
    );
    assert_helpers_ended(&pids, "");
}

/// D3: a Python that cannot start says why: its own fatal message is quoted.
#[test]
fn a_python_that_cannot_start_is_quoted() {
    let Some(py) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path(), "32");
    let o = run(&py, &s, tmp.path(), &[("PYTHONHOME", "/nonexistent")], "");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("gave no hello: its output ended (exit status: 1); its stderr ends:")
            && err.contains("No module named 'encodings'"),
        "{err}"
    );
    // No run directory, and the worker's log is kept where the message says.
    assert!(!tmp.path().join("run").exists());
    let kept = err
        .split("the workers' logs are kept in ")
        .nth(1)
        .map(|t| std::path::PathBuf::from(t.trim_end()))
        .unwrap_or_else(|| panic!("{err}"));
    let logs: Vec<String> = std::fs::read_dir(&kept)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert!(
        logs.iter().any(|l| l.contains("Fatal Python error")),
        "{logs:?}"
    );
    std::fs::remove_dir_all(&kept).unwrap();
}

/// S6: a `json.py` where rocsweep was started is not what the torch worker imports.
#[test]
fn a_module_in_the_working_directory_is_not_imported_by_the_worker() {
    let Some(py) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path(), "32");
    let marker = tmp.path().join("PWNED");
    std::fs::write(
        tmp.path().join("json.py"),
        format!(
            "open({:?}, 'w').write('ran')\nraise SystemExit(3)\n",
            marker.display().to_string()
        ),
    )
    .unwrap();
    let o = run(&py, &s, tmp.path(), &[], "");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!marker.exists(), "json.py from the working directory ran");
    let (header, rows) = rocsweep::results::csv::read(&tmp.path().join("run/results.csv")).unwrap();
    let st = header.iter().position(|h| h == "status").unwrap();
    assert_eq!(rows[0][st], "ok");
}

/// Issue 40, minor: a helper the Python starts in a session of its own (`setsid`, out of
/// the worker's process group) does not outlive the run, whether the worker ends normally or
/// its unit hangs and the watchdog ends it.
#[test]
fn a_helper_in_a_session_of_its_own_does_not_outlive_the_run() {
    let Some(py) = python() else { return };
    for (fault, limits) in [
        ("", "init = 600\nrun = 600"),
        ("m=32:hang@run", "run = 2\ngrace = 1"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path().join("s.toml");
        std::fs::write(
            &s,
            format!(
                "name = \"t\"\nbackend = \"torch\"\nop = \"gemm\"\n[axes]\nm = [32, 64]\n\
                 [limits]\n{limits}\n[timing]\nwarmup = 0\nmin_samples = 1\nmax_time = 0.02\n"
            ),
        )
        .unwrap();
        let pids = tmp.path().join("helpers");
        let pp = site(
            tmp.path(),
            &format!(
                "import subprocess\n\
                 p = subprocess.Popen(['sleep', '600'], stdin=subprocess.DEVNULL, \
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)\n\
                 open({:?}, 'a').write(str(p.pid) + '\\n')\n",
                pids.display().to_string()
            ),
        );
        let o = run(&py, &s, tmp.path(), &[("PYTHONPATH", &pp)], fault);
        assert_eq!(o.status.code(), Some(0), "{fault}: {}", stderr(&o));
        assert_helpers_ended(&pids, fault);
    }
}

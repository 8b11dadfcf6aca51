//! The third reliability pass (issue 30), with real processes: a closed or full stdout, a worker
//! executable deleted mid-run, an env combination whose worker aborts as it starts (a real
//! LD_PRELOAD'ed library), and a crash while a helper forked by a preloaded library holds the
//! worker's pipe open.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rocsweep"));
    c.env_remove("ROCSWEEP_TEST_FAULT");
    c
}

/// A copy sweep over `bytes` (fast units whose parameter the fault rules can name).
fn sweep(dir: &Path, extra: &str) -> PathBuf {
    let text = format!(
        "name = \"rel\"\nop = \"copy\"\nbackend = \"cpu\"\n[axes]\nbytes = [64, 128, 256, 512, 1024]\n{extra}"
    );
    let p = dir.join("rel.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// Compiles `source` (C) into a shared library with the system's C compiler.
fn shared_library(dir: &Path, name: &str, source: &str) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    let so = dir.join(format!("{name}.so"));
    std::fs::write(&c, source).unwrap();
    let o = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&so)
        .arg(&c)
        .output()
        .expect("a C compiler (cc) is needed to build the preloaded test library");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    so
}

/// Rows of results.csv, each as column -> value.
fn rows(out: &Path) -> Vec<HashMap<String, String>> {
    let (header, rows) = rocsweep::results::csv::read(&out.join("results.csv")).unwrap();
    rows.into_iter()
        .map(|r| header.iter().cloned().zip(r).collect())
        .collect()
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Whether `pid` is a live process (a zombie counts as gone).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

#[test]
fn a_run_whose_stdout_closes_keeps_running_and_finishes_its_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path(), "");
    let out = tmp.path().join("run");
    let mut child = bin()
        .args(["run", "--trials", "1"])
        .arg(&s)
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `| head -1`: one line read, then the reading end is gone.
    let mut first = String::new();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    reader.read_line(&mut first).unwrap();
    drop(reader);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("panicked"),
        "{}",
        text(&o)
    );
    assert_eq!(rows(&out).len(), 5, "every unit has its row");
    let m = rocsweep::results::manifest::read(&out).unwrap();
    assert!(m.finished_at.is_some(), "the manifest is finished");
}

#[test]
fn commands_whose_output_cannot_be_written_fail_cleanly_without_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path(), "");
    let out = tmp.path().join("run");
    let o = bin()
        .args(["run", "--trials", "1", "--quiet"])
        .arg(&s)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let unit = rows(&out)[0]["unit_id"].clone();
    let run = out.to_str().unwrap();
    for args in [
        vec!["list-ops"],
        vec!["report", run],
        vec!["repro", run, &unit],
        vec![
            "recommend",
            run,
            "--out",
            tmp.path().join("rec").to_str().unwrap(),
        ],
        vec![
            "compare",
            run,
            run,
            "--out",
            tmp.path().join("cmp").to_str().unwrap(),
        ],
        vec!["probe", "--backend", "cpu"],
    ] {
        let full = std::fs::File::options()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = bin().args(&args).stdout(full).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", text(&o));
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(err.contains("stdout"), "{args:?} names stdout: {err}");
    }
}

#[test]
fn a_worker_executable_deleted_mid_run_stops_the_run_and_resume_runs_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    // A copy of the binary that the test can delete, as a rebuild in place does.
    let exe = tmp.path().join("rocsweep");
    std::fs::copy(env!("CARGO_BIN_EXE_rocsweep"), &exe).unwrap();
    let s = sweep(tmp.path(), "[limits]\nrun = 2\ngrace = 0.2\n");
    let out = tmp.path().join("run");
    let mut child = Command::new(&exe)
        .args(["run", "--trials", "1", "--quiet"])
        .arg(&s)
        .arg("--out")
        .arg(&out)
        .env("ROCSWEEP_TEST_FAULT", "bytes=256:hang@run")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Deleted while bytes=256 hangs: the next worker (the health probe's) cannot start.
    loop {
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        let journal = std::fs::read_to_string(out.join("journal.ndjson")).unwrap_or_default();
        if journal.contains("\"phase\":\"run\"") && journal.matches("\"finished\"").count() >= 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    std::fs::remove_file(&exe).unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(err.contains("cannot start worker"), "{err}");
    assert!(err.contains("rocsweep run --resume"), "{err}");
    let before = rows(&out);
    assert!(
        before.iter().all(|r| !r["error"].contains("cannot start")),
        "no unit is blamed for the missing executable: {before:?}"
    );
    assert_eq!(before.len(), 3, "64, 128 ok and 256 hang; the rest not run");
    // The binary is back (the rebuild finished): a plain resume runs what is left.
    std::fs::copy(env!("CARGO_BIN_EXE_rocsweep"), &exe).unwrap();
    let o = Command::new(&exe)
        .args(["run", "--quiet", "--resume"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let after = rows(&out);
    assert_eq!(after.len(), 5, "{after:?}");
    for r in &after {
        let want = if r["bytes"] == "256" { "hang" } else { "ok" };
        assert_eq!(r["status"], want, "{r:?}");
    }
}

const ABORT_AT_START: &str =
    "#include <stdlib.h>\n__attribute__((constructor)) static void die(void) { abort(); }\n";

/// A sweep whose env axis LD_PRELOADs, in one of its two values, a library that aborts every
/// process it is loaded into before main.
fn check_broken_combination(bad_first: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let so = shared_library(tmp.path(), "abort", ABORT_AT_START);
    let bad = so.to_str().unwrap().to_string();
    let values = if bad_first {
        format!("[\"{bad}\", \"\"]")
    } else {
        format!("[\"\", \"{bad}\"]")
    };
    let s = sweep(
        tmp.path(),
        &format!("[limits]\ninit = 20\n[env_axes]\nLD_PRELOAD = {values}\n"),
    );
    let out = tmp.path().join("run");
    let o = bin()
        .args(["run", "--trials", "1", "--quiet"])
        .arg(&s)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let all = rows(&out);
    assert_eq!(all.len(), 10, "{all:?}");
    let (broken, good): (Vec<_>, Vec<_>) = all.iter().partition(|r| r["env"].contains("abort"));
    assert_eq!(good.len(), 5);
    assert!(good.iter().all(|r| r["status"] == "ok"), "{good:?}");
    assert_eq!(broken.len(), 5);
    let first = broken.iter().find(|r| r["bytes"] == "64").unwrap();
    assert_eq!(
        (first["status"].as_str(), first["phase"].as_str()),
        ("crash", "init"),
        "{first:?}"
    );
    assert!(first["error"].contains("SIGABRT"), "{first:?}");
    for r in broken.iter().filter(|r| r["bytes"] != "64") {
        assert_eq!(r["status"], "error", "{r:?}");
        assert!(
            r["error"].contains("no worker starts in this env combination"),
            "{r:?}"
        );
    }
}

#[test]
fn an_env_combination_whose_worker_cannot_start_fails_alone_bad_value_first() {
    check_broken_combination(true);
}

#[test]
fn an_env_combination_whose_worker_cannot_start_fails_alone_bad_value_last() {
    check_broken_combination(false);
}

const FORK_A_HELPER: &str = r#"#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
/* As MIOpen of ROCm 5.x compiling through child processes: a helper that inherits the
   worker's descriptors (its protocol pipe among them) and outlives nothing on its own. */
__attribute__((constructor)) static void fork_helper(void) {
    const char *path = getenv("HELPER_PIDS");
    if (!path) return;
    if (fork() == 0) {
        FILE *f = fopen(path, "a");
        if (f) { fprintf(f, "%d\n", (int)getpid()); fclose(f); }
        sleep(600);
        _exit(0);
    }
}
"#;

#[test]
fn a_crash_is_seen_from_the_process_while_a_forked_helper_holds_the_pipe() {
    let tmp = tempfile::tempdir().unwrap();
    let so = shared_library(tmp.path(), "forker", FORK_A_HELPER);
    let pids = tmp.path().join("helpers.txt");
    // A run limit far above what a crash takes: were the crash seen only at the pipe's end,
    // the unit would be a hang after 60 s.
    let s = sweep(
        tmp.path(),
        &format!(
            "[limits]\nrun = 60\n[env]\nLD_PRELOAD = \"{}\"\nHELPER_PIDS = \"{}\"\n",
            so.display(),
            pids.display()
        ),
    );
    let out = tmp.path().join("run");
    let o = bin()
        .args(["run", "--trials", "1", "--quiet"])
        .arg(&s)
        .arg("--out")
        .arg(&out)
        .env(
            "ROCSWEEP_TEST_FAULT",
            "bytes=128:segv@run;bytes=512:abort@verify",
        )
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    for r in rows(&out) {
        let (status, error) = (r["status"].as_str(), r["error"].as_str());
        match r["bytes"].as_str() {
            "128" => assert!(status == "crash" && error.contains("SIGSEGV"), "{r:?}"),
            "512" => assert!(status == "crash" && error.contains("SIGABRT"), "{r:?}"),
            _ => assert_eq!(status, "ok", "{r:?}"),
        }
    }
    let helpers: Vec<i32> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert!(
        helpers.len() >= 2,
        "every worker forked a helper: {helpers:?}"
    );
    let left: Vec<i32> = helpers.into_iter().filter(|p| alive(*p)).collect();
    assert!(left.is_empty(), "helpers outlived their workers: {left:?}");
}

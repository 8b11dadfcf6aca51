//! Sequences (issue 43) with real worker processes on the CPU backend: steps replayed in order
//! in one process, a failure that needs earlier steps found and shrunk to them (minimal.toml
//! reproducing it), a failure that is not the sequence's reported without a search, a hang
//! inside the search costing one candidate, and a hang in the sequence leaving the rest of its
//! process `skipped`. Faults come from ROCSWEEP_TEST_FAULT's `prior_OP` conditions (how many
//! units of an op the worker process ran before).

use std::path::Path;
use std::process::{Command, Output};

/// Two GEMMs then a conv2d, twice over; `run` is the per-phase limit in seconds.
fn sequence(dir: &Path, run: u32) -> std::path::PathBuf {
    let text = format!(
        r#"name = "seq"
backend = "cpu"

[sequence]
repeat = 2

[timing]
warmup = 1
min_samples = 2
max_time = 0.02

[limits]
run = {run}
grace = 1

[[step]]
op = "gemm"
m = 32
k = 32

[[step]]
op = "gemm"
m = 64
n = 32
k = 32

[[step]]
op = "conv2d"
c_in = 64
c_out = 64
h = 8
"#
    );
    let p = dir.join("seq.toml");
    std::fs::write(&p, text).unwrap();
    p
}

fn rocsweep(args: &[&str], fault: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .args(args)
        .env("ROCSWEEP_TEST_FAULT", fault)
        .output()
        .unwrap()
}

fn run(file: &Path, out: &Path, fault: &str) -> String {
    let o = rocsweep(
        &[
            "run",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        fault,
    );
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{:?}\n{stdout}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    stdout
}

/// (order, position, iteration, status, alone, needs) of each row.
fn rows(out: &Path) -> Vec<[String; 6]> {
    let mut r = csv::Reader::from_path(out.join("results.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let col = |n: &str| h.iter().position(|x| x == n).unwrap();
    r.records()
        .map(|x| {
            let x = x.unwrap();
            ["order", "position", "iteration", "status", "alone", "needs"]
                .map(|n| x[col(n)].to_string())
        })
        .collect()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

const AFTER_TWO_GEMMS: &str = "prior_gemm>=2&c_in=64:zeros@verify";

#[test]
fn a_sequence_runs_its_steps_in_order_in_one_process_with_a_row_each() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let stdout = run(&sequence(tmp.path(), 30), &out, "");
    assert!(
        stdout.contains("6 steps run in 1 env combination(s), 0 failed"),
        "{stdout}"
    );
    let r = rows(&out);
    let places: Vec<(&str, &str, &str, &str)> = r
        .iter()
        .map(|x| (x[0].as_str(), x[1].as_str(), x[2].as_str(), x[3].as_str()))
        .collect();
    assert_eq!(
        places,
        vec![
            ("1", "1", "1", "ok"),
            ("2", "2", "1", "ok"),
            ("3", "3", "1", "ok"),
            ("4", "1", "2", "ok"),
            ("5", "2", "2", "ok"),
            ("6", "3", "2", "ok"),
        ]
    );
    // One worker process ran them all; each step journaled as it finished.
    let logs: Vec<_> = std::fs::read_dir(out.join("workers")).unwrap().collect();
    assert_eq!(logs.len(), 1);
    let journal = read(&out.join("journal.ndjson"));
    assert_eq!(
        journal.matches("\"ev\":\"finished\"").count(),
        6,
        "{journal}"
    );
    assert!(!out.join("minimal.toml").exists());
}

#[test]
fn a_failure_that_needs_earlier_steps_is_shrunk_to_them_and_minimal_toml_reproduces_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let stdout = run(&sequence(tmp.path(), 30), &out, AFTER_TWO_GEMMS);
    assert!(
        stdout.contains("step at run order 3 returns zeros only after run order 1, 2 ran in the same process; it passes alone (3 fresh processes searched)"),
        "{stdout}"
    );
    let r = rows(&out);
    assert_eq!(r[2][3..], ["zeros", "passes", "1;2"]);
    assert_eq!(
        r[5][3], "zeros",
        "the second pass fails too, after four gemms"
    );
    let summary = read(&out.join("summary.md"));
    assert!(
        summary.contains("returns zeros only after step 1 (iteration 1), gemm m=32")
            && summary.contains("and step 2 (iteration 1), gemm m=64"),
        "{summary}"
    );
    // minimal.toml is a runnable sequence of the two gemms and the conv, and it fails the same way.
    let minimal = out.join("minimal.toml");
    assert_eq!(read(&minimal).matches("[[step]]").count(), 3);
    let again = tmp.path().join("again");
    let stdout = run(&minimal, &again, AFTER_TWO_GEMMS);
    assert!(
        stdout.contains("3 steps run in 1 env combination(s), 1 failed"),
        "{stdout}"
    );
    assert_eq!(rows(&again)[2][3], "zeros");
    // repro names the steps it needs and minimal.toml; another step comes back as a sequence
    // file of its own that loads; report and compare know a sequence run.
    let ids: Vec<String> = {
        let mut r = csv::Reader::from_path(out.join("results.csv")).unwrap();
        r.records().map(|x| x.unwrap()[0].to_string()).collect()
    };
    let repro = |unit: &str| {
        let o = rocsweep(&["repro", out.to_str().unwrap(), unit], "");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let said = repro(&ids[2]);
    assert!(
        said.contains("It fails only after steps 1, 2 (run order) ran in the same process")
            && said.contains("minimal.toml"),
        "{said}"
    );
    let said = repro(&ids[0]);
    let file = &said[said.find("name = ").unwrap()..];
    let seq = rocsweep::spec::sequence::load_str("r.toml", file, &[]).unwrap();
    assert_eq!(seq.steps.len(), 1);
    assert_eq!(seq.steps[0].case.values[0].to_string(), "32", "{said}");
    let o = rocsweep(&["report", out.to_str().unwrap()], "");
    assert!(String::from_utf8_lossy(&o.stdout).contains("a sequence run"));
    assert!(out.join("report.html").is_file());
    let o = rocsweep(
        &["compare", out.to_str().unwrap(), out.to_str().unwrap()],
        "",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is a sequence run"));
    // Without the fault it passes: the failure is the fault's, not the file's.
    let clean = tmp.path().join("clean");
    let stdout = run(&minimal, &clean, "");
    assert!(stdout.contains("0 failed"), "{stdout}");
}

#[test]
fn a_step_that_fails_alone_too_is_an_ordinary_failure_without_a_search() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let stdout = run(&sequence(tmp.path(), 30), &out, "c_in=64:zeros@verify");
    assert!(
        stdout.contains("step at run order 3 returns zeros alone in a fresh process too"),
        "{stdout}"
    );
    let r = rows(&out);
    assert_eq!(r[2][3..], ["zeros", "fails", ""]);
    assert!(!out.join("minimal.toml").exists());
    // One process for the sequence, one for the step alone: nothing searched.
    assert_eq!(std::fs::read_dir(out.join("workers")).unwrap().count(), 2);
}

#[test]
fn a_hang_inside_the_search_costs_one_candidate() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    // The m=64 gemm hangs when it is the process's first gemm: never in the sequence, once in
    // the search (the candidate that keeps only it).
    let fault = format!("{AFTER_TWO_GEMMS};m=64&prior_gemm=0:hang@run");
    let stdout = run(&sequence(tmp.path(), 2), &out, &fault);
    assert!(
        stdout.contains("(3 fresh processes searched, 1 ended early by a hang or crash)"),
        "{stdout}"
    );
    assert_eq!(rows(&out)[2][3..], ["zeros", "passes", "1;2"]);
}

#[test]
fn a_hang_in_the_sequence_leaves_the_rest_of_its_process_skipped_and_is_shrunk() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    // The m=64 gemm hangs after one gemm: step 2 of the sequence, and alone it passes.
    let stdout = run(&sequence(tmp.path(), 2), &out, "m=64&prior_gemm=1:hang@run");
    assert!(
        stdout.contains("step at run order 2 hangs only after run order 1 ran in the same process"),
        "{stdout}"
    );
    let r = rows(&out);
    let statuses: Vec<&str> = r.iter().map(|x| x[3].as_str()).collect();
    assert_eq!(
        statuses,
        ["ok", "hang", "skipped", "skipped", "skipped", "skipped"]
    );
    let mut csv = csv::Reader::from_path(out.join("results.csv")).unwrap();
    let h = csv.headers().unwrap().clone();
    let err = h.iter().position(|x| x == "error").unwrap();
    let third = csv.records().nth(2).unwrap().unwrap();
    assert!(
        third[err].contains("the sequence's worker process ended at step 2 (iteration 1): hang"),
        "{third:?}"
    );
}

#[test]
fn a_dry_run_lists_the_steps_in_run_order_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = rocsweep(
        &[
            "run",
            sequence(tmp.path(), 30).to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--dry-run",
        ],
        "",
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    assert!(
        stdout.contains("    4  step 1 (iteration 2), gemm m=32"),
        "{stdout}"
    );
    assert!(
        stdout.contains("3 steps x 2 iteration(s) = 6 steps in run order"),
        "{stdout}"
    );
    assert!(!out.exists());
}

#[test]
fn a_killed_sequence_resumes_from_the_step_after_the_last_finished() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let file = sequence(tmp.path(), 600);
    // Step 5 (the m=64 gemm of the second pass, after three gemms) hangs; the supervisor is
    // killed with SIGKILL once it has started, with steps 1-4 journaled.
    let mut child = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .args([
            "run",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "-q",
        ])
        .env("ROCSWEEP_TEST_FAULT", "prior_gemm=3&m=64:hang@run")
        .spawn()
        .unwrap();
    let journal = out.join("journal.ndjson");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let text = std::fs::read_to_string(&journal).unwrap_or_default();
        if text.matches("\"ev\":\"started\"").count() == 5 {
            assert_eq!(text.matches("\"ev\":\"finished\"").count(), 4, "{text}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "step 5 never started: {text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !out.join("results.csv").exists(),
        "killed before any combination ended"
    );
    let o = rocsweep(&["run", "--resume", out.to_str().unwrap()], "");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.contains("6 steps run in 1 env combination(s), 0 failed"),
        "{stdout}"
    );
    let r = rows(&out);
    assert_eq!(r.len(), 6);
    assert!(r.iter().all(|x| x[3] == "ok"), "{r:?}");
    // Steps 1-4 were kept, not run again: two more starts (steps 5 and 6), in a second log.
    let text = read(&journal);
    assert_eq!(text.matches("\"ev\":\"started\"").count(), 7, "{text}");
    assert_eq!(std::fs::read_dir(out.join("workers")).unwrap().count(), 2);
    let summary = read(&out.join("summary.md"));
    assert!(
        summary.contains("Resumed: run order 1-4 finished in an earlier worker process; the replay picked up at run order 5"),
        "{summary}"
    );
}

#[test]
fn a_sequence_in_several_processes_flags_the_step_that_differs_between_them() {
    let tmp = tempfile::tempdir().unwrap();
    let file = sequence(tmp.path(), 30);
    let text = read(&file).replace("repeat = 2", "repeat = 2\nprocesses = 3");
    std::fs::write(&file, text).unwrap();
    let out = tmp.path().join("run");
    // In the sequence's third process, the m=64 gemm's output has one bit flipped.
    run(&file, &out, "env.ROCSWEEP_TRIAL=3&m=64:jitter@verify");
    let mut csv = csv::Reader::from_path(out.join("results.csv")).unwrap();
    let h = csv.headers().unwrap().clone();
    let col = |n: &str| h.iter().position(|x| x == n).unwrap();
    let flags: Vec<(String, String, String)> = csv
        .records()
        .map(|r| {
            let r = r.unwrap();
            (
                r[col("order")].to_string(),
                r[col("status")].to_string(),
                r[col("stable")].to_string(),
            )
        })
        .collect();
    let flagged: Vec<&str> = flags
        .iter()
        .filter(|f| f.2 == "no")
        .map(|f| f.0.as_str())
        .collect();
    assert_eq!(flagged, ["2", "5"], "{flags:?}");
    assert!(
        flags
            .iter()
            .all(|f| f.1 == "ok" && (f.2 == "yes" || f.2 == "no"))
    );
    let summary = read(&out.join("summary.md"));
    assert!(
        summary.contains("- step 2 (iteration 1), gemm m=64")
            && summary.contains("output bits differ: 2 distinct outputs in 3 processes"),
        "{summary}"
    );
    // Without the fault, three processes of the same sequence agree.
    let again = tmp.path().join("again");
    run(&file, &again, "");
    let mut csv = csv::Reader::from_path(again.join("results.csv")).unwrap();
    let st = csv
        .headers()
        .unwrap()
        .iter()
        .position(|x| x == "stable")
        .unwrap();
    assert!(csv.records().all(|r| &r.unwrap()[st] == "yes"));
}

#[test]
fn options_that_plan_a_grid_are_refused_for_a_sequence_and_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let file = sequence(tmp.path(), 30);
    let out = tmp.path().join("run");
    for (args, flag) in [
        (&["--strategy", "bisect"][..], "--strategy"),
        (&["--shard", "1/2"][..], "--shard"),
        (&["--devices", "0"][..], "--devices"),
        (&["--axis", "m=3"][..], "--axis m=3"),
    ] {
        let mut all = vec![
            "run",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        all.extend_from_slice(args);
        let o = rocsweep(&all, "");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(flag) && err.contains("seq.toml"), "{err}");
        assert!(!out.exists());
    }
}

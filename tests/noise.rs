//! Issue 13's noise model end to end, with real worker processes on the CPU backend: identical
//! runs compare as unchanged, a placebo env axis is never exported, and an env axis with a real
//! effect (RAYON_NUM_THREADS on a CPU GEMM) is found in the right direction.
//!
//! The tests of this file run one at a time (a lock), so none of them slows another's timing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn repo(p: &str) -> String {
    format!("{}/{p}", env!("CARGO_MANIFEST_DIR"))
}

fn rocsweep(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(o: &Output) -> String {
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "exit {:?}\n{stdout}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    stdout
}

fn run(sweep: &str, out: &Path) {
    ok(&rocsweep(&[
        "run",
        &repo(sweep),
        "--out",
        out.to_str().unwrap(),
        "--no-report",
        "-q",
    ]));
}

fn read(p: PathBuf) -> String {
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Runs `sweep`, then `recommend` on it: the profile and recommend.md.
fn run_and_recommend(sweep: &str) -> (String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    run(sweep, &dir);
    let rec = tmp.path().join("rec");
    ok(&rocsweep(&[
        "recommend",
        dir.to_str().unwrap(),
        "--out",
        rec.to_str().unwrap(),
    ]));
    (
        read(rec.join("rocsweep-env.sh")),
        read(rec.join("recommend.md")),
    )
}

#[test]
fn two_identical_runs_compare_as_unchanged() {
    let _g = serial();
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    run("sweeps/quickstart.toml", &a);
    run("sweeps/quickstart.toml", &b);
    // Each unit ran 3 trials, and its row keeps each trial's median.
    let (header, rows) = rocsweep::results::csv::read(&a.join("results.csv")).unwrap();
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    for r in &rows {
        assert_eq!(r[col("trials")], "3", "{r:?}");
        assert_eq!(r[col("trial_ms")].split(';').count(), 3, "{r:?}");
        assert!(r[col("chosen")].starts_with("im2col threads="), "{r:?}");
    }
    let out = tmp.path().join("cmp");
    let o = rocsweep(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--fail-on",
        "regression",
    ]);
    // The gate does not fail, and no more units are called either way than the rule's false
    // calls explain (a few among 72 may be: its rate, docs/backends.md).
    let stdout = ok(&o);
    assert!(
        stdout.contains("72 units matched, 0 newly failing, 0 fixed, 0 other status changes"),
        "{stdout}"
    );
    let called = |verdict: &str| -> usize {
        let at = stdout
            .find(&format!(" {verdict},"))
            .unwrap_or_else(|| panic!("{stdout}"));
        let digits = stdout[..at].rsplit(' ').next().unwrap_or_default();
        digits.parse().unwrap_or_else(|_| panic!("{stdout}"))
    };
    for verdict in ["faster", "slower"] {
        assert!(
            !rocsweep::analyze::effect::beyond_chance(72, called(verdict)),
            "{verdict}: {stdout}"
        );
    }
    let md = read(out.join("compare.md"));
    assert!(md.contains("Noise floors (median trial spread"), "{md}");
}

#[test]
fn a_placebo_env_axis_has_no_measurable_effect_and_is_not_exported() {
    let _g = serial();
    let (profile, md) = run_and_recommend("tests/fixtures/noise/placebo.toml");
    assert!(!profile.contains("export PLACEBO"), "{profile}");
    assert!(
        profile.contains("# PLACEBO: no measurable effect"),
        "{profile}"
    );
    assert!(md.contains("### PLACEBO: no measurable effect"), "{md}");
    assert!(md.contains("**Set nothing**"), "{md}");
    // Every pair of values was compared over all 16 units, and the library's choice never moved.
    for pair in [
        "PLACEBO=a -> PLACEBO=b",
        "PLACEBO=a -> PLACEBO=c",
        "PLACEBO=b -> PLACEBO=c",
    ] {
        let line = md
            .lines()
            .find(|l| l.starts_with(&format!("- {pair}:")))
            .unwrap_or_else(|| panic!("no line for {pair}\n{md}"));
        assert!(
            line.contains("16 paired units; status changed in 0")
                && line.contains("library choice changed in 0 of 16"),
            "{line}"
        );
    }
}

#[test]
#[cfg_attr(rocsweep_missing_two_cores, ignore = "needs two cores")]
/// What the noise model must say of a real thread-count axis whatever else the machine is
/// doing: two threads are never called slower than one (a false direction), the profile never
/// recommends one thread for speed, and the `chosen` column's change is found. Whether the
/// speed-up itself is found needs a quiet machine: that is the committed noise report's to
/// show (reports/h200/noise/), not a test's, so that the suite passes on a busy machine.
fn a_thread_count_axis_is_never_found_in_the_wrong_direction() {
    let _g = serial();
    let (profile, md) = run_and_recommend("tests/fixtures/noise/threads.toml");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores < 2 {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs two cores for this test"
        );
        return;
    }
    assert!(
        !profile.contains("RAYON_NUM_THREADS=1: faster than =2"),
        "{profile}"
    );
    assert!(
        !profile.contains("\nexport RAYON_NUM_THREADS=1\n"),
        "{profile}"
    );
    let found = profile.contains("RAYON_NUM_THREADS=2: faster than =1 in ");
    let none = md.contains("RAYON_NUM_THREADS") && !found;
    assert!(found || none, "{profile}\n{md}");
    assert!(
        md.contains("library choice changed in 4 of 4"),
        "the CPU names its thread count: {md}"
    );
}

#[test]
fn an_interrupted_run_with_trials_resumes_without_rerunning_kept_trials() {
    let _g = serial();
    let tmp = tempfile::tempdir().unwrap();
    let sweep = tmp.path().join("t.toml");
    std::fs::write(
        &sweep,
        "name = \"t\"\nop = \"copy\"\n[axes]\nbytes = [64, 128, 256, 512]\n\
         [timing]\nwarmup = 0\nmin_samples = 3\nmax_samples = 1000000\nmax_time = 0.2\ntarget_noise = 0\n",
    )
    .unwrap();
    let out = tmp.path().join("run");
    let mut child = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .args([
            "run",
            sweep.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .args(["--trials", "3", "--quiet", "--no-report"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the second pass has begun (a unit's trial 1 kept and another trial started).
    let journal = out.join("journal.ndjson");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let text = std::fs::read_to_string(&journal).unwrap_or_default();
        let kept = text.matches("\"ev\":\"trial\"").count();
        if kept >= 5 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no trials kept: {text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: signals the child we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let before = read(journal.clone());
    let started_before = before.matches("\"ev\":\"started\"").count();
    ok(&rocsweep(&[
        "run",
        "--resume",
        out.to_str().unwrap(),
        "--quiet",
        "--no-report",
    ]));
    let after = read(journal);
    // 4 units x 3 trials in all: the resume ran only what the first session had not.
    let started_after = after.matches("\"ev\":\"started\"").count();
    assert_eq!(started_after, 12, "{after}");
    assert!((5..12).contains(&started_before), "{before}");
    let (header, rows) = rocsweep::results::csv::read(&out.join("results.csv")).unwrap();
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    assert_eq!(rows.len(), 4);
    for r in &rows {
        assert_eq!(
            (r[col("status")].as_str(), r[col("trials")].as_str()),
            ("ok", "3"),
            "{r:?}"
        );
        assert_eq!(r[col("trial_ms")].split(';').count(), 3, "{r:?}");
    }
}

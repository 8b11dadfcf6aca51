//! `run --strategy prune|bisect` with real worker processes: the CPU backend and the test-only
//! fault switch make workers really hang on seed 004's RDNA1 table (16->32 channels above
//! 32x32, 32->64 above 48x48, 64->128 above 64x64; 3->16 never), under a 0.5 s run limit.
//!
//! The tests take turns (`serial`): a hanging worker spins a core until it is killed, and
//! several runs at once on a small machine could starve a unit that works past its limit.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

fn serial() -> MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Seed 004's table as fault rules.
const SEED_004: &str = "c_in=16&h>32:hang@run;c_in=32&h>48:hang@run;c_in=64&h>64:hang@run";

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rocsweep"));
    c.env_remove("ROCSWEEP_TEST_FAULT");
    c
}

/// 4 channel pairs x 12 sizes (8..=96): 1x1 convolutions, batch 1, no timing, so every unit
/// that does not hang takes milliseconds.
fn sweep(dir: &Path) -> PathBuf {
    let text = "name = \"s004\"\nop = \"conv2d\"\nbackend = \"cpu\"\n\
                [axes]\nn = 1\nkernel = 1\npad = 0\nh = \"range(8..=96, step=8)\"\n\
                [zip.channels]\nc_in = [3, 16, 32, 64]\nc_out = [16, 32, 64, 128]\n\
                [timing]\nenabled = false\n[limits]\nrun = 0.5\ngrace = 0.2\n";
    let p = dir.join("s004.toml");
    std::fs::write(&p, text).unwrap();
    p
}

fn run(sweep: &Path, out: &Path, fault: &str, args: &[&str]) -> Output {
    bin()
        .arg("run")
        .arg(sweep)
        .arg("--out")
        .arg(out)
        .args(["--quiet", "--no-report"])
        .args(args)
        .env("ROCSWEEP_TEST_FAULT", fault)
        .output()
        .unwrap()
}

fn ok(o: &Output) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Rows of results.csv as name -> value maps.
fn rows(dir: &Path) -> Vec<HashMap<String, String>> {
    let (header, rows) = rocsweep::results::csv::read(&dir.join("results.csv")).unwrap();
    rows.into_iter()
        .map(|r| header.iter().cloned().zip(r).collect())
        .collect()
}

fn count(rows: &[HashMap<String, String>], status: &str) -> usize {
    rows.iter().filter(|r| r["status"] == status).count()
}

/// The safe-region map: unit id -> ok | fail, whether measured or inferred.
fn map(rows: &[HashMap<String, String>]) -> HashMap<String, &'static str> {
    rows.iter()
        .map(|r| {
            let class = match r["status"].as_str() {
                "ok" | "inferred-ok" => "ok",
                "hang" | "crash" | "interrupted" | "inferred-fail" => "fail",
                other => panic!("unexpected status {other}"),
            };
            (r["unit_id"].clone(), class)
        })
        .collect()
}

/// Seed 004's table itself: does this (c_in, h) hang?
fn hangs(c_in: u32, h: u32) -> bool {
    matches!((c_in, h), (16, h) if h > 32)
        || matches!((c_in, h), (32, h) if h > 48)
        || matches!((c_in, h), (64, h) if h > 64)
}

fn num(r: &HashMap<String, String>, k: &str) -> u32 {
    r[k].parse().unwrap()
}

/// The full grid's map, run once for the tests that compare with it. It must be the model's.
fn grid_map() -> &'static HashMap<String, &'static str> {
    static GRID: OnceLock<HashMap<String, &'static str>> = OnceLock::new();
    GRID.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let s = sweep(tmp.path());
        let grid = tmp.path().join("grid");
        ok(&run(&s, &grid, SEED_004, &[]));
        let g = rows(&grid);
        assert_eq!(g.len(), 48);
        assert_eq!(
            count(&g, "hang"),
            18,
            "the grid hangs on every cell of the table"
        );
        for r in &g {
            let (c, h) = (num(r, "c_in"), num(r, "h"));
            assert_eq!(r["status"] == "hang", hangs(c, h), "grid: c_in={c} h={h}");
        }
        map(&g)
    })
}

#[test]
fn prune_records_predicted_hangs_and_no_hang_beyond_the_first_of_a_line() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path());
    let out = tmp.path().join("prune");
    ok(&run(&s, &out, SEED_004, &["--strategy", "prune"]));
    let rows = rows(&out);
    assert_eq!(rows.len(), 48, "every unit has a row");
    assert_eq!(count(&rows, "hang"), 3, "one hang per failing line");
    for r in &rows {
        let (c, h) = (num(r, "c_in"), num(r, "h"));
        match r["status"].as_str() {
            "ok" => assert!(!hangs(c, h), "c_in={c} h={h}"),
            "hang" => {
                assert!(
                    hangs(c, h) && !hangs(c, h - 8),
                    "the first hang of its line: c_in={c} h={h}"
                )
            }
            "skipped" => {
                assert!(
                    r["error"].starts_with("predicted-hang"),
                    "reason: {}",
                    r["error"]
                );
                assert!(
                    hangs(c, h) && hangs(c, h - 8),
                    "only after the line's first hang"
                );
                assert_eq!(r["wall_ms"], "0.000", "never ran");
            }
            other => panic!("unexpected status {other}"),
        }
    }
    assert_eq!(count(&rows, "skipped"), 18 - 3);
    let info = std::fs::read_to_string(out.join("strategy.json")).unwrap();
    assert!(
        info.contains("\"along\": \"h\""),
        "h is the default axis: {info}"
    );
}

#[test]
fn bisect_reproduces_the_grid_map_with_a_third_of_its_hangs_and_confirm_agrees() {
    let _serial = serial();
    let grid = grid_map();
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path());
    let bis = tmp.path().join("bisect");
    let o = run(
        &s,
        &bis,
        SEED_004,
        &[
            "--strategy",
            "bisect",
            "--confirm",
            "20",
            "--confirm-seed",
            "5",
        ],
    );
    ok(&o);
    let b = rows(&bis);
    assert_eq!(b.len(), 48);
    let confirm = rocsweep::results::csv::read(&bis.join("confirm.csv")).unwrap();
    assert_eq!(confirm.1.len(), 20, "20 inferred units run for real");
    let agrees = confirm.0.iter().position(|h| h == "agrees").unwrap();
    assert!(
        confirm.1.iter().all(|r| r[agrees] == "yes"),
        "{:?}",
        confirm.1
    );
    let confirmed: HashSet<String> = confirm.1.iter().map(|r| r[0].clone()).collect();
    // Hangs of the search alone: the confirmation pass re-runs some inferred failures too.
    let search_hangs = b
        .iter()
        .filter(|r| r["status"] == "hang" && !confirmed.contains(&r["unit_id"]))
        .count();
    assert!(
        search_hangs * 3 <= 18,
        "bisect hung {search_hangs} times, the grid 18"
    );
    assert_eq!(&map(&b), grid, "the same safe-region map");
    assert!(count(&b, "inferred-ok") > 0 && count(&b, "inferred-fail") > 0);
    for r in b.iter().filter(|r| r["status"].starts_with("inferred")) {
        assert!(
            r["error"].starts_with("inferred from h="),
            "names its evidence: {}",
            r["error"]
        );
    }
    // The report draws and lists them.
    rocsweep::report::write(&bis).unwrap();
    let svg = std::fs::read_to_string(bis.join("heatmap.svg")).unwrap();
    assert!(svg.contains("hatched: inferred, not run"));
}

#[test]
fn confirm_reports_a_disagreement_on_a_model_that_is_not_monotone() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path());
    let out = tmp.path().join("nonmono");
    // 3->16 also hangs at h=16 alone, below sizes that work: bisect never probes it.
    let fault = format!("{SEED_004};c_in=3&h=16:hang@run");
    let o = run(
        &s,
        &out,
        &fault,
        &["--strategy", "bisect", "--confirm", "1000"],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(7), "{stderr}");
    assert!(stderr.contains("CONFIRM: 1 DISAGREEMENT"), "{stderr}");
    assert!(stderr.contains("h=16"), "{stderr}");
    let (header, rows) = rocsweep::results::csv::read(&out.join("confirm.csv")).unwrap();
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let bad: Vec<&Vec<String>> = rows.iter().filter(|r| r[col("agrees")] == "no").collect();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0][col("inferred")], "inferred-ok");
    assert_eq!(bad[0][col("measured")], "hang");
    assert!(bad[0][col("params")].contains("c_in=3;c_out=16;h=16"));
    // The seed the clock chose is recorded and picks the same units again.
    let info = std::fs::read_to_string(out.join("strategy.json")).unwrap();
    assert!(info.contains("\"seed\""), "{info}");
}

#[test]
fn along_must_be_a_numeric_axis_of_the_sweep() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path());
    let out = tmp.path().join("x");
    for (args, says) in [
        (vec!["--along", "nope"], "`nope` is not an axis"),
        (
            vec!["--along", "dtype", "--axis", "dtype=f32,f16"],
            "`dtype` is not a numeric axis",
        ),
        (vec!["--along", "n"], "`n` has a single value"),
    ] {
        let mut all = vec!["--strategy", "bisect", "--dry-run"];
        all.extend(args);
        let o = run(&s, &out, "", &all);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{all:?}: {stderr}");
        assert!(stderr.contains(says), "{all:?}: {stderr}");
    }
    let o = run(&s, &out, "", &["--along", "h", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2), "--along without a strategy");
    let o = run(
        &s,
        &out,
        "",
        &["--strategy", "prune", "--confirm", "3", "--dry-run"],
    );
    assert_eq!(o.status.code(), Some(2), "--confirm needs bisect");
    assert!(!out.exists(), "nothing was written");
}

/// Journal `started` records per unit: a unit measured once has one.
fn starts(dir: &Path) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for line in std::fs::read_to_string(dir.join("journal.ndjson"))
        .unwrap()
        .lines()
    {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if v["ev"] == "started" {
            *m.entry(v["unit"].as_str().unwrap().to_string())
                .or_default() += 1;
        }
    }
    m
}

fn data_rows(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("results.csv"))
        .map(|t| t.lines().count().saturating_sub(1))
        .unwrap_or(0)
}

/// Kills what a SIGKILLed supervisor left behind: its workers (each in its own process group,
/// named in its log), which may be spinning in a hang nobody will time out now.
fn kill_orphaned_workers(dir: &Path) {
    let Ok(logs) = std::fs::read_dir(dir.join("workers")) else {
        return;
    };
    for log in logs.flatten() {
        let text = std::fs::read_to_string(log.path()).unwrap_or_default();
        for pid in text
            .lines()
            .filter_map(|l| l.strip_prefix("rocsweep worker pid "))
            .filter_map(|l| l.split_whitespace().next()?.parse::<i32>().ok())
        {
            // SAFETY: a process group this test's child started.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
    }
}

#[test]
fn an_interrupted_or_killed_strategy_run_resumes_without_measuring_any_unit_twice() {
    let _serial = serial();
    let want = grid_map();
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path());
    let trials = [
        ("bisect", 2, libc::SIGINT),
        ("bisect", 9, libc::SIGINT),
        ("bisect", 5, libc::SIGKILL),
        ("prune", 12, libc::SIGINT),
    ];
    for (strategy, stop_after, signal) in trials {
        let what = format!("{strategy} stopped by signal {signal} after {stop_after} rows");
        let out = tmp.path().join(format!("{strategy}-{stop_after}-{signal}"));
        let mut child = bin()
            .arg("run")
            .arg(&s)
            .arg("--out")
            .arg(&out)
            .args(["--quiet", "--no-report", "--strategy", strategy])
            .env("ROCSWEEP_TEST_FAULT", SEED_004)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t = Instant::now();
        while data_rows(&out) < stop_after && t.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(2));
        }
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, signal) };
        let status = child.wait().unwrap();
        if signal == libc::SIGKILL {
            kill_orphaned_workers(&out);
        } else {
            assert_eq!(status.code(), Some(130), "{what}: Ctrl-C's exit code");
        }
        let before: HashMap<String, String> = rows(&out)
            .into_iter()
            .map(|r| (r["unit_id"].clone(), r["status"].clone()))
            .collect();
        assert!(before.len() < 48, "{what}: stopped before the end");
        // A unit the kill cut short was never measured: it may run again, and only it.
        let o = bin()
            .args([
                "run",
                "--quiet",
                "--no-report",
                "--retry-interrupted",
                "--resume",
            ])
            .arg(&out)
            .env("ROCSWEEP_TEST_FAULT", SEED_004)
            .output()
            .unwrap();
        ok(&o);
        let after = rows(&out);
        assert_eq!(after.len(), 48, "{what}: one row per unit");
        let ids: HashSet<&String> = after.iter().map(|r| &r["unit_id"]).collect();
        assert_eq!(ids.len(), 48, "{what}: no unit twice");
        let measured_before: HashSet<&String> = before
            .iter()
            .filter(|(_, st)| !st.starts_with("inferred") && *st != "skipped")
            .map(|(id, _)| id)
            .collect();
        for r in &after {
            if measured_before.contains(&r["unit_id"]) {
                assert_eq!(
                    r["status"], before[&r["unit_id"]],
                    "{what}: a measured row is kept"
                );
            }
        }
        for (id, n) in starts(&out) {
            if measured_before.contains(&id) {
                assert_eq!(n, 1, "{what}: measured unit {id} was started {n} times");
            }
        }
        if strategy == "bisect" {
            assert_eq!(&map(&after), want, "{what}: the grid's map after resume");
        } else {
            assert_eq!(
                count(&after, "hang"),
                3,
                "{what}: prune still hangs once per line"
            );
        }
    }
}

#[test]
fn an_unhealthy_device_stops_a_bisect_run_and_a_resume_finishes_the_map() {
    let _serial = serial();
    let grid = grid_map();
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path());
    let out = tmp.path().join("unhealthy");
    // The first hang's health probe segfaults: the device is declared unhealthy.
    let fault = format!("{SEED_004};probe:segv@run");
    let o = run(&s, &out, &fault, &["--strategy", "bisect"]);
    assert_eq!(
        o.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = rows(&out);
    assert_eq!(r.len(), 48, "every unit has a row");
    assert_eq!(count(&r, "hang"), 1);
    assert!(count(&r, "skipped") > 0);
    assert!(
        r.iter()
            .filter(|r| r["status"] == "skipped")
            .all(|r| r["error"] == "device-unhealthy")
    );
    let o = bin()
        .args(["run", "--quiet", "--no-report", "--resume"])
        .arg(&out)
        .env("ROCSWEEP_TEST_FAULT", SEED_004)
        .output()
        .unwrap();
    ok(&o);
    assert_eq!(
        &map(&rows(&out)),
        grid,
        "the grid's map once the device is back"
    );
}

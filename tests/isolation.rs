//! Worker isolation with real processes: units that really hang, segfault, abort and exit inside
//! the worker (through the test-only ROCSWEEP_TEST_FAULT switch), kill -9 of the supervisor at
//! random moments followed by resume, torn rows, the run lock, and Ctrl-C.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rocsweep"));
    c.env_remove("ROCSWEEP_TEST_FAULT");
    c
}

/// The names of a directory's entries.
fn names_in(dir: &Path) -> Vec<std::ffi::OsString> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect()
}

/// A copy sweep over `bytes` (fast units whose parameter the fault rules can name).
fn sweep(dir: &Path, extra: &str) -> PathBuf {
    let text = format!(
        "name = \"iso\"\nop = \"copy\"\n[axes]\nbytes = [64, 128, 256, 512, 1024]\n{extra}"
    );
    let p = dir.join("iso.toml");
    std::fs::write(&p, text).unwrap();
    p
}

// The run mechanics tested here (watchdog, journal, resume, signals) are those of one trial:
// every unit's first run makes its row at once. Trials have their own tests (tests/noise.rs).
fn run_with_fault(sweep: &Path, out: &Path, fault: &str) -> Output {
    bin()
        .args(["run", "--trials", "1"])
        .arg(sweep)
        .arg("--out")
        .arg(out)
        .env("ROCSWEEP_TEST_FAULT", fault)
        .output()
        .unwrap()
}

struct Rows {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Rows {
    fn read(dir: &Path) -> Rows {
        let (header, rows) = rocsweep::results::csv::read(&dir.join("results.csv")).unwrap();
        Rows { header, rows }
    }
    fn col(&self, name: &str) -> usize {
        self.header.iter().position(|h| h == name).unwrap()
    }
    /// The row whose `param` column equals `value`.
    fn by(&self, param: &str, value: &str) -> HashMap<String, String> {
        let c = self.col(param);
        let r = self
            .rows
            .iter()
            .find(|r| r[c] == value)
            .unwrap_or_else(|| panic!("no row {param}={value}"));
        self.header.iter().cloned().zip(r.iter().cloned()).collect()
    }
    fn ids(&self) -> Vec<String> {
        let c = self.col("unit_id");
        self.rows.iter().map(|r| r[c].clone()).collect()
    }
}

#[test]
fn a_hanging_unit_is_killed_within_its_limit_plus_grace_and_recorded_in_its_phase() {
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path(), "[limits]\ncompile = 1.0\ngrace = 0.5\n");
    let out = tmp.path().join("run");
    let o = run_with_fault(&s, &out, "bytes=256:hang@compile");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rows = Rows::read(&out);
    assert_eq!(rows.rows.len(), 5, "the sweep goes on after the hang");
    let hang = rows.by("bytes", "256");
    assert_eq!(hang["status"], "hang");
    assert_eq!(hang["phase"], "compile");
    assert!(
        hang["error"].contains("no progress in phase compile for 1.0 s"),
        "{}",
        hang["error"]
    );
    let wall: f64 = hang["wall_ms"].parse().unwrap();
    assert!(wall >= 1000.0, "waited for the limit: {wall} ms");
    for b in ["64", "128", "512", "1024"] {
        assert_eq!(rows.by("bytes", b)["status"], "ok", "bytes={b}");
    }
}

#[test]
fn segfault_abort_and_exit_are_crashes_with_the_signal_and_phase() {
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path(), "");
    let out = tmp.path().join("run");
    let o = run_with_fault(
        &s,
        &out,
        "bytes=128:segv@run;bytes=512:abort@verify;bytes=1024:exit@alloc",
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rows = Rows::read(&out);
    let segv = rows.by("bytes", "128");
    assert_eq!(
        (segv["status"].as_str(), segv["phase"].as_str()),
        ("crash", "run")
    );
    assert!(
        segv["error"].contains("killed by SIGSEGV"),
        "{}",
        segv["error"]
    );
    assert!(
        segv["error"].contains("worker log tail"),
        "stderr tail attached: {}",
        segv["error"]
    );
    let abort = rows.by("bytes", "512");
    assert_eq!(
        (abort["status"].as_str(), abort["phase"].as_str()),
        ("crash", "verify")
    );
    assert!(
        abort["error"].contains("killed by SIGABRT"),
        "{}",
        abort["error"]
    );
    let exit = rows.by("bytes", "1024");
    assert_eq!(
        (exit["status"].as_str(), exit["phase"].as_str()),
        ("crash", "alloc")
    );
    assert!(
        exit["error"].contains("exited with code 17"),
        "{}",
        exit["error"]
    );
    for b in ["64", "256"] {
        assert_eq!(rows.by("bytes", b)["status"], "ok");
    }
    // Each fault replaced the worker: 1 + 3 replacements + 3 health probes' fresh workers.
    let logs = std::fs::read_dir(out.join("workers")).unwrap().count();
    assert!(
        logs >= 4,
        "workers were replaced after faults ({logs} logs)"
    );
}

#[test]
fn a_device_that_fails_its_health_probe_stops_the_run_and_skips_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path(), "[limits]\nrun = 0.5\ngrace = 0.2\n");
    let out = tmp.path().join("run");
    let o = run_with_fault(&s, &out, "bytes=128:segv@run;probe:hang@run");
    assert_eq!(o.status.code(), Some(4), "exit code 4: device unhealthy");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("stayed unhealthy after 3 health probes"),
        "{err}"
    );
    let rows = Rows::read(&out);
    assert_eq!(rows.rows.len(), 5, "every unit has a row");
    assert_eq!(rows.by("bytes", "64")["status"], "ok");
    assert_eq!(rows.by("bytes", "128")["status"], "crash");
    for b in ["256", "512", "1024"] {
        let r = rows.by("bytes", b);
        assert_eq!(
            (r["status"].as_str(), r["error"].as_str()),
            ("skipped", "device-unhealthy")
        );
    }
    let m = rocsweep::results::manifest::read(&out).unwrap();
    assert_eq!(
        m.stopped.as_deref(),
        Some("device unhealthy after a hang or crash")
    );
    // Once the device is back, a resume runs the skipped units (and only those).
    let o = resume(&out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = Rows::read(&out);
    assert_eq!(rows.rows.len(), 5, "replaced, not duplicated");
    for b in ["256", "512", "1024"] {
        assert_eq!(rows.by("bytes", b)["status"], "ok", "bytes={b}");
    }
    assert_eq!(
        rows.by("bytes", "128")["status"],
        "crash",
        "finished units are kept"
    );
}

#[test]
fn a_hang_while_enumerating_solvers_is_recorded_for_the_case() {
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(
        tmp.path(),
        "solver = \"all\"\n[limits]\nenumerate = 0.5\ngrace = 0.2\n",
    );
    let text = std::fs::read_to_string(&s)
        .unwrap()
        .replace("solver = \"all\"\n[limits]", "[limits]")
        .replace("[axes]\n", "[axes]\nsolver = \"all\"\n");
    std::fs::write(&s, text).unwrap();
    let out = tmp.path().join("run");
    let o = run_with_fault(&s, &out, "bytes=64:hang@enumerate");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rows = Rows::read(&out);
    let r = rows.by("bytes", "64");
    assert_eq!(
        (
            r["status"].as_str(),
            r["phase"].as_str(),
            r["solver"].as_str()
        ),
        ("hang", "enumerate", "all")
    );
    assert_eq!(
        rows.by("bytes", "128")["solver"],
        "memcpy",
        "other cases enumerate to the CPU's solver"
    );
}

#[test]
fn each_env_combination_reaches_its_worker_without_a_shell() {
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(
        tmp.path(),
        "[env]\nFIXED = \"yes\"\n[env_axes]\nFOO = [\"a\", \"b c && $(echo no) | `id`\"]\n",
    );
    let out = tmp.path().join("run");
    let o = run_with_fault(&s, &out, "");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut logs = String::new();
    for e in std::fs::read_dir(out.join("workers")).unwrap() {
        logs.push_str(&std::fs::read_to_string(e.unwrap().path()).unwrap());
    }
    assert!(
        logs.contains("env combination: FIXED=yes;FOO=a\n"),
        "{logs}"
    );
    assert!(
        logs.contains("env combination: FIXED=yes;FOO=b c && $(echo no) | `id`\n"),
        "verbatim: {logs}"
    );
    let rows = Rows::read(&out);
    assert_eq!(rows.rows.len(), 10);
    let env_col = rows.col("env");
    let envs: HashSet<&str> = rows.rows.iter().map(|r| r[env_col].as_str()).collect();
    assert_eq!(envs.len(), 2);
    let st = rows.col("status");
    assert!(
        rows.rows.iter().all(|r| r[st] == "ok"),
        "every unit ran in its combination, `&&`, `$(...)` and backquotes included: {:?}",
        rows.rows
            .iter()
            .map(|r| (&r[env_col], &r[st]))
            .collect::<Vec<_>>()
    );
}

/// A slower sweep: 24 units of a few tens of milliseconds each.
fn slow_sweep(dir: &Path) -> PathBuf {
    let text = "name = \"slow\"\nop = \"gemm\"\n[axes]\nm = [48, 64, 80, 96, 112, 128]\ndtype = [\"f32\", \"bf16\"]\ntrans_a = [false, true]\n\
                [timing]\nwarmup = 0\nmin_samples = 3\nmax_time = 0.02\ntarget_noise = 0\n";
    let p = dir.join("slow.toml");
    std::fs::write(&p, text).unwrap();
    p
}

fn resume(out: &Path, extra: &[&str]) -> Output {
    bin()
        .args(["run", "--resume"])
        .arg(out)
        .args(extra)
        .arg("--quiet")
        .output()
        .unwrap()
}

/// Waits until the run's journal records satisfy `seen` (the run's own record of where it is:
/// signals are placed on it, not after a fixed sleep).
fn wait_for_journal(child: &mut Child, out: &Path, seen: impl Fn(&[serde_json::Value]) -> bool) {
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            panic!("the run ended ({st}) before its journal showed what the test waits for");
        }
        if let Ok(text) = std::fs::read_to_string(out.join("journal.ndjson")) {
            let records: Vec<serde_json::Value> = text
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            if seen(&records) {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A unit has finished and the next one has reached `phase`.
fn next_unit_in(phase: &'static str) -> impl Fn(&[serde_json::Value]) -> bool {
    move |r| {
        r.iter()
            .position(|v| v["ev"] == "finished")
            .is_some_and(|i| {
                r[i..]
                    .iter()
                    .any(|v| v["ev"] == "phase" && v["phase"] == phase)
            })
    }
}

fn spawn_run(sweep: &Path, out: &Path, fault: &str) -> Child {
    bin()
        .args(["run", "--trials", "1"])
        .arg(sweep)
        .arg("--out")
        .arg(out)
        .arg("--quiet")
        .env("ROCSWEEP_TEST_FAULT", fault)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn rows_by_id(out: &Path) -> HashMap<String, Vec<String>> {
    let path = out.join("results.csv");
    if !path.exists() {
        return HashMap::new();
    }
    // Read only whole lines: the supervisor may have died mid-row.
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let whole = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(whole.as_bytes());
    let mut m = HashMap::new();
    for r in rdr.records().flatten() {
        if r.len() > 30 {
            m.insert(r[0].to_string(), r.iter().map(String::from).collect());
        }
    }
    m
}

#[test]
fn kill_9_at_random_moments_then_resume_keeps_every_result_exactly_once() {
    let tmp = tempfile::tempdir().unwrap();
    let s = slow_sweep(tmp.path());
    // How long an undisturbed run takes, to spread the kills over it.
    let full = tmp.path().join("full");
    let t = Instant::now();
    let o = bin()
        .args(["run"])
        .arg(&s)
        .arg("--out")
        .arg(&full)
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(o.status.success());
    let span = t.elapsed().as_millis() as u64;
    let all_ids: HashSet<String> = Rows::read(&full).ids().into_iter().collect();
    assert_eq!(all_ids.len(), 24);

    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut interrupted_seen = 0;
    for trial in 0..20 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let delay = (seed >> 33) % span.max(1);
        let out = tmp.path().join(format!("trial{trial}"));
        let mut child = spawn_run(&s, &out, "");
        std::thread::sleep(Duration::from_millis(delay));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        let _ = child.wait();
        let before = rows_by_id(&out);
        if !out.exists() {
            // Killed while the run directory was still being staged: nothing ran, nothing is lost.
            continue;
        }
        assert!(
            out.join("manifest.json").exists() && out.join("results.csv").exists(),
            "trial {trial}: a run directory is never half-made"
        );
        let o = resume(&out, &[]);
        assert!(
            o.status.success(),
            "trial {trial} (kill at {delay} ms): {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let rows = Rows::read(&out);
        let ids = rows.ids();
        let unique: HashSet<String> = ids.iter().cloned().collect();
        assert_eq!(
            ids.len(),
            unique.len(),
            "trial {trial}: a unit appears twice"
        );
        assert_eq!(unique, all_ids, "trial {trial}: every unit has a result");
        let after = rows_by_id(&out);
        for (id, row) in &before {
            assert_eq!(
                after.get(id),
                Some(row),
                "trial {trial}: a finished result changed or was lost"
            );
        }
        let st = rows.col("status");
        interrupted_seen += rows.rows.iter().filter(|r| r[st] == "interrupted").count();
        assert!(
            rows.rows
                .iter()
                .all(|r| r[st] == "ok" || r[st] == "interrupted"),
            "trial {trial}"
        );
    }
    eprintln!("units recorded interrupted over 20 trials: {interrupted_seen}");
}

#[test]
fn a_torn_last_row_is_repaired_and_interrupted_units_rerun_on_request() {
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path(), "");
    let out = tmp.path().join("run");
    assert!(run_with_fault(&s, &out, "").status.success());
    // Simulate a power cut while the last row was being written: half a row, no journal entry.
    let csv_path = out.join("results.csv");
    let text = std::fs::read_to_string(&csv_path).unwrap();
    let cut = text.trim_end().rfind('\n').unwrap() + 1 + 20;
    std::fs::write(&csv_path, &text[..cut]).unwrap();
    let journal = out.join("journal.ndjson");
    let j = std::fs::read_to_string(&journal).unwrap();
    let last_finished = j.rfind("{\"ev\":\"finished\"").unwrap();
    std::fs::write(&journal, &j[..last_finished]).unwrap();

    let o = resume(&out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = Rows::read(&out);
    assert_eq!(rows.rows.len(), 5);
    let last = rows.by("bytes", "1024");
    // The journal's last phase for it was timing (`run`): that is where it is said to have stopped.
    assert_eq!(
        (last["status"].as_str(), last["phase"].as_str()),
        ("interrupted", "run")
    );

    // Run it again when asked to: the `interrupted` row is replaced by the unit's new result.
    let o = resume(&out, &["--retry-interrupted"]);
    assert!(o.status.success());
    let rows = Rows::read(&out);
    assert_eq!(rows.rows.len(), 5, "replaced, not duplicated");
    assert_eq!(rows.by("bytes", "1024")["status"], "ok");
}

#[test]
fn a_row_lost_from_results_csv_is_restored_from_the_journal() {
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path(), "");
    let out = tmp.path().join("run");
    assert!(run_with_fault(&s, &out, "").status.success());
    let csv_path = out.join("results.csv");
    let text = std::fs::read_to_string(&csv_path).unwrap();
    // The journal's fsynced `finished` line holds the row; results.csv lost it (page cache).
    let without_last = &text[..text.trim_end().rfind('\n').unwrap() + 1];
    std::fs::write(&csv_path, without_last).unwrap();
    let o = resume(&out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        std::fs::read_to_string(&csv_path).unwrap(),
        text,
        "the very same row is back"
    );
}

#[test]
fn a_run_directory_in_use_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path(), "");
    let out = tmp.path().join("run");
    assert!(run_with_fault(&s, &out, "").status.success());
    let lock = std::fs::File::options()
        .write(true)
        .open(out.join("run.lock"))
        .unwrap();
    lock.try_lock().unwrap();
    let o = resume(&out, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is in use by another rocsweep run"));
    drop(lock);
    assert!(resume(&out, &[]).status.success());
}

#[test]
fn first_ctrl_c_finishes_the_running_unit_and_the_run_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    // Five units of at least 0.3 s of timed samples each.
    let s2 = tmp.path().join("slow.toml");
    std::fs::write(
        &s2,
        "name = \"slow\"\nop = \"gemm\"\n[axes]\nm = [200, 210, 220, 230, 240]\n\
         [timing]\nwarmup = 0\nmin_samples = 3\nmax_samples = 1000000\nmax_time = 0.3\ntarget_noise = 0\n",
    )
    .unwrap();
    let out = tmp.path().join("run");
    let mut child = spawn_run(&s2, &out, "");
    // Once a unit has finished and the second one is timing its samples.
    wait_for_journal(&mut child, &out, next_unit_in("run"));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(130));
    let rows = Rows::read(&out);
    assert!(
        !rows.rows.is_empty() && rows.rows.len() < 5,
        "stopped early: {} rows",
        rows.rows.len()
    );
    let st_col = rows.col("status");
    assert!(
        rows.rows.iter().all(|r| r[st_col] == "ok"),
        "the running unit finished, not killed"
    );
    let m = rocsweep::results::manifest::read(&out).unwrap();
    assert_eq!(m.stopped.as_deref(), Some("interrupted by Ctrl-C"));
    let o = resume(&out, &[]);
    assert!(o.status.success());
    assert_eq!(Rows::read(&out).rows.len(), 5);
}

#[test]
fn second_ctrl_c_kills_a_hanging_worker_and_leaves_a_resumable_run() {
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path(), "[limits]\nrun = 600\n");
    let out = tmp.path().join("run");
    let mut child = spawn_run(&s, &out, "bytes=128:hang@run");
    // The second unit is in its `run` phase, where it hangs.
    wait_for_journal(&mut child, &out, next_unit_in("run"));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    // The second press after the first was seen (two signals sent at once can merge into one).
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("Ctrl-C: finishing the running unit") {
        line.clear();
        assert!(
            std::io::BufRead::read_line(&mut err, &mut line).unwrap() > 0,
            "stderr ended before the first Ctrl-C was seen"
        );
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    // Ends although the unit would hang for its whole 600 s limit.
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(130));
    assert_eq!(
        Rows::read(&out).rows.len(),
        1,
        "only the unit before the hang"
    );
    let o = resume(&out, &[]);
    assert!(o.status.success());
    let rows = Rows::read(&out);
    assert_eq!(rows.rows.len(), 5);
    assert_eq!(rows.by("bytes", "128")["status"], "interrupted");
}

/// Issue 40, minor: SIGTERM (a scheduler's stop) stops at once like a second Ctrl-C, and is
/// named as SIGTERM, not as Ctrl-C, in the message, the row and the manifest.
#[test]
fn sigterm_is_named_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path(), "[limits]\nrun = 600\n");
    let out = tmp.path().join("run");
    let mut child = spawn_run(&s, &out, "bytes=128:hang@run");
    wait_for_journal(&mut child, &out, next_unit_in("run"));
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(130), "{err}");
    assert!(err.contains("stopped by SIGTERM; continue with"), "{err}");
    assert!(!err.contains("Ctrl-C"), "{err}");
    let m = rocsweep::results::manifest::read(&out).unwrap();
    assert_eq!(m.stopped.as_deref(), Some("interrupted by SIGTERM"));
    let o = resume(&out, &[]);
    assert!(o.status.success());
    let rows = Rows::read(&out);
    assert_eq!(rows.by("bytes", "128")["status"], "interrupted");
}

#[test]
fn a_worker_that_cannot_start_leaves_no_run_directory_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path(), "");
    let out = tmp.path().join("run");
    let opts = rocsweep::exec::run::RunOptions {
        sweep: Some(s),
        out: Some(out.clone()),
        quiet: true,
        max_units: 1000,
        worker_exe: Some(tmp.path().join("no-such-program")),
        ..Default::default()
    };
    let err = rocsweep::exec::run::run(&opts)
        .err()
        .expect("the run fails");
    assert!(err.to_string().contains("worker did not start"), "{err}");
    let left = names_in(tmp.path());
    assert_eq!(
        left,
        vec![std::ffi::OsString::from("iso.toml")],
        "no run or staging directory"
    );
}

/// The pid of the first worker the run in `out` started (its log's first line), once it exists.
fn first_worker_pid(out: &Path, deadline: Instant) -> i32 {
    loop {
        let logs = std::fs::read_dir(out.join("workers")).into_iter().flatten();
        for e in logs.flatten() {
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            if let Some(pid) = text
                .split_whitespace()
                .skip_while(|w| *w != "pid")
                .nth(1)
                .and_then(|p| p.parse().ok())
            {
                return pid;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no worker log in {}",
            out.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` is still a live process (a zombie waiting for its reaper counts as gone).
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

/// Waits until the journal says the second unit (bytes=128, the hanging one: units run in the
/// sweep's order) is in its run phase.
fn wait_for_hang(out: &Path, deadline: Instant) {
    loop {
        let j = std::fs::read_to_string(out.join("journal.ndjson")).unwrap_or_default();
        let finished = j.lines().filter(|l| l.contains("\"finished\"")).count();
        let last = j.lines().last().unwrap_or("");
        if finished == 1 && last.contains("\"phase\":\"run\"") {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the hanging unit never started:\n{j}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Issue 14: a worker outlived its supervisor (kill -9, SIGTERM, SIGHUP) and spun on with parent
/// pid 1. Now the worker ends itself when its supervisor is gone, TERM and HUP stop the run at
/// once (exit 130, like a second Ctrl-C), and a resume records the hanging unit `interrupted`.
#[test]
fn no_worker_outlives_its_supervisor_whatever_the_signal() {
    for sig in [libc::SIGKILL, libc::SIGTERM, libc::SIGHUP] {
        let tmp = tempfile::tempdir().unwrap();
        let s = sweep(tmp.path(), "[limits]\nrun = 600\n");
        let out = tmp.path().join("run");
        let mut child = spawn_run(&s, &out, "bytes=128:hang@run");
        let deadline = Instant::now() + Duration::from_secs(60);
        wait_for_hang(&out, deadline);
        let worker = first_worker_pid(&out, deadline);
        assert!(
            alive(worker),
            "signal {sig}: the worker runs the hanging unit"
        );
        unsafe { libc::kill(child.id() as i32, sig) };
        let st = child.wait().unwrap();
        if sig != libc::SIGKILL {
            assert_eq!(
                st.code(),
                Some(130),
                "signal {sig} stops the run like Ctrl-C"
            );
        }
        while alive(worker) {
            assert!(
                Instant::now() < deadline,
                "signal {sig}: worker {worker} outlived its supervisor"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let o = resume(&out, &[]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let rows = Rows::read(&out);
        assert_eq!(rows.rows.len(), 5, "signal {sig}");
        assert_eq!(
            rows.by("bytes", "128")["status"],
            "interrupted",
            "signal {sig}"
        );
    }
}

/// Seconds shown after `prefix` in a terminal capture, each time the line was drawn.
fn seconds_after(capture: &str, prefix: &str) -> Vec<u64> {
    capture
        .match_indices(prefix)
        .filter_map(|(i, _)| {
            let rest = &capture[i + prefix.len()..];
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            rest[digits.len()..]
                .starts_with("s (limit 4 s)")
                .then(|| digits.parse().ok())
                .flatten()
        })
        .collect()
}

#[test]
#[cfg_attr(rocsweep_missing_script, ignore = "needs util-linux script")]
fn the_terminal_shows_the_running_unit_its_phase_and_its_seconds_while_it_hangs() {
    // A real terminal (a pty made by util-linux `script`): the progress bar and, under it, the
    // running unit with its phase and the seconds spent in it, redrawn every second.
    let present = Command::new("script").arg("--version").output().is_ok();
    if !present {
        assert!(
            std::env::var("CI").is_err(),
            "util-linux `script` is missing, but CI has it"
        );
        eprintln!("skipped: no `script` (util-linux) to make a terminal");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path(), "[limits]\nrun = 4\n");
    let out = tmp.path().join("run");
    let capture = tmp.path().join("typescript");
    let cmd = format!(
        "{} run --trials 1 --no-report {} --out {}",
        env!("CARGO_BIN_EXE_rocsweep"),
        s.display(),
        out.display()
    );
    let o = Command::new("script")
        .args(["-q", "-f", "-e", "-c", &cmd])
        .arg(&capture)
        .env("ROCSWEEP_TEST_FAULT", "bytes=256:hang@run")
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let text = String::from_utf8_lossy(&std::fs::read(&capture).unwrap()).into_owned();
    let hanging = "bytes=256 solver=default: run ";
    let shown = seconds_after(&text, hanging);
    assert!(
        shown.iter().any(|s| *s >= 1),
        "the hanging unit's line ticks (seconds seen: {shown:?}): {text}"
    );
    // The count moved past the units done before the hang while it hung, and the hang was
    // counted as it happened.
    assert!(text.contains(" 2/5 ["), "{text}");
    assert!(text.contains("1 hang"), "{text}");
    assert_eq!(Rows::read(&out).by("bytes", "256")["status"], "hang");
}

#[test]
fn ctrl_c_stops_the_count_of_a_huge_forced_sweep_with_nothing_written() {
    use std::io::BufRead;
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("huge.toml");
    std::fs::write(
        &s,
        "name = \"huge\"\nop = \"gemm\"\nbackend = \"cpu\"\n[axes]\n\
         m = \"range(1..=1000000)\"\nn = \"range(1..=1000000)\"\nk = 8\n",
    )
    .unwrap();
    let out = tmp.path().join("run");
    let mut child = bin()
        .arg("run")
        .arg(&s)
        .args(["--force", "--out"])
        .arg(&out)
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    // The count announces itself (10^12 combinations) once Ctrl-C is handled.
    while !line.contains("counting the sweep's 1000000000000 combinations") {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "stderr ended early");
    }
    // SAFETY: kill on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(130), "{rest}");
    assert!(rest.contains("nothing was written"), "{rest}");
    let left = names_in(tmp.path());
    assert_eq!(
        left,
        vec![std::ffi::OsString::from("huge.toml")],
        "no run or staging directory"
    );
}

#[test]
fn a_run_killed_before_it_published_leaves_nothing_the_next_run_does_not_remove() {
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path(), "");
    let out = tmp.path().join("run");
    let staging = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().contains(".run.staging-"))
            .collect()
    };
    // Kill -9 as soon as the staging directory exists (before the first worker answers, the
    // run is unpublished); if the run was quicker than the poll, the test still checks that a
    // second run leaves no staging behind.
    let mut child = bin()
        .args(["run", "--trials", "1", "--quiet"])
        .arg(&s)
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let killed_staged = loop {
        if !staging(tmp.path()).is_empty() {
            // SAFETY: kill on our own child's pid.
            unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
            break true;
        }
        if child.try_wait().unwrap().is_some() {
            break false;
        }
        std::thread::yield_now();
    };
    let _ = child.wait();
    if killed_staged && !out.exists() {
        assert_eq!(
            staging(tmp.path()).len(),
            1,
            "the killed run's staging is left"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
    let o = bin()
        .args(["run", "--trials", "1", "--quiet", "--no-report"])
        .arg(&s)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(staging(tmp.path()).is_empty(), "{:?}", staging(tmp.path()));
}

#[test]
fn out_dot_in_an_empty_directory_is_refused_with_nothing_written() {
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path(), "");
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = bin()
        .args(["run", "--trials", "1", "--quiet"])
        .arg(&s)
        .args(["--out", "."])
        .current_dir(&empty)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("is the current directory"), "{err}");
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
    let names = names_in(tmp.path());
    assert_eq!(names.len(), 2, "{names:?}");
}

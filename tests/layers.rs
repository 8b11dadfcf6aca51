//! Several backends in one sweep, side by side, with real worker processes: each backend runs in
//! workers of its own, rows carry their own backend, unit ids tell the backends apart (and stay
//! what they were in a one-backend run), resume sees every unit, and the which-layer verdicts
//! come out of output faults (`zeros`, `nan`) that the test-only fault switch puts on one
//! backend only.
//!
//! No torch here: the sweep runs `cpu` and `auto` (the CPU backend too, on a machine without a
//! GPU; on one with a GPU, `auto` is that GPU's backend and the test means the same), and the
//! which-layer table is asked with `auto` standing for the PyTorch layer (its backend name is
//! the table's parameter, `layers::PYTORCH_LAYER` = `torch` in reports). The cpu+torch version
//! of this test belongs to the torch backend.

use rocsweep::analyze::layers::{self, Verdict};
use rocsweep::results::rundata::RunData;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rocsweep"));
    c.env_remove("ROCSWEEP_TEST_FAULT");
    c
}

/// A gemm sweep over `m` (a parameter the fault rules name) on `backend` (TOML text).
fn sweep(dir: &Path, backend: &str) -> PathBuf {
    let text = format!(
        "name = \"layers\"\nop = \"gemm\"\nbackend = {backend}\n[axes]\nm = [16, 32, 48, 64]\nn = 16\nk = 16\n[timing]\nenabled = false\n"
    );
    let p = dir.join("layers.toml");
    std::fs::write(&p, text).unwrap();
    p
}

fn run(args: &[&str], sweep: &Path, out: &Path, fault: &str) -> Output {
    bin()
        .args(["run", "--trials", "1", "--quiet"])
        .arg(sweep)
        .arg("--out")
        .arg(out)
        .args(args)
        .env("ROCSWEEP_TEST_FAULT", fault)
        .output()
        .unwrap()
}

/// m=64: only `auto` returns zeros; m=32: only `cpu` returns NaN; m=48: both return zeros;
/// m=16: neither fails.
const FAULTS: &str = "backend=auto&m=64:zeros@verify;backend=cpu&m=32:nan@verify;m=48:zeros@verify";

fn m_of(r: &rocsweep::results::rundata::Row) -> &str {
    r.param("m").unwrap_or("")
}

#[test]
fn two_backends_run_side_by_side_and_the_verdict_names_the_failing_layer() {
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path(), "[\"cpu\", \"auto\"]");
    let out = tmp.path().join("run");
    let o = run(&[], &s, &out, FAULTS);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let data = RunData::load(&out).unwrap();
    assert_eq!(data.rows.len(), 8, "4 cases x 2 backends");
    // Each row carries its own backend, as the sweep names it, and its own status.
    let status = |b: &str, m: &str| {
        data.rows
            .iter()
            .find(|r| r.backend == b && m_of(r) == m)
            .map(|r| r.status.name())
    };
    assert_eq!(status("cpu", "64"), Some("ok"));
    assert_eq!(status("auto", "64"), Some("zeros"));
    assert_eq!(status("cpu", "32"), Some("nonfinite"));
    assert_eq!(status("auto", "32"), Some("ok"));
    assert_eq!(status("cpu", "48"), Some("zeros"));
    assert_eq!(status("auto", "48"), Some("zeros"));
    // Same cases on both backends, different units.
    let ids: std::collections::HashSet<&str> =
        data.rows.iter().map(|r| r.unit_id.as_str()).collect();
    assert_eq!(ids.len(), 8);
    let cases: std::collections::HashSet<&str> =
        data.rows.iter().map(|r| r.case_id.as_str()).collect();
    assert_eq!(cases.len(), 4);
    // Each backend ran in workers of its own: its worker logs are named by its context.
    let logs: Vec<String> = std::fs::read_dir(out.join("workers"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(logs.iter().any(|l| l.ends_with("-env0.log")), "{logs:?}");
    assert!(logs.iter().any(|l| l.ends_with("-env1.log")), "{logs:?}");
    // The manifest keeps each backend's handshake.
    let backends: Vec<&str> = data
        .manifest
        .backends
        .iter()
        .map(|b| b.backend.as_str())
        .collect();
    assert_eq!(backends.len(), 2, "{backends:?}");

    // With `auto` standing for the PyTorch layer and `cpu` the direct library:
    let pairs = layers::pairs(&data.rows, "auto");
    let verdict = |m: &str| {
        pairs
            .iter()
            .find(|p| p.any_row().is_some_and(|r| m_of(r) == m))
            .map(|p| p.verdict)
    };
    assert_eq!(pairs.len(), 4);
    assert_eq!(verdict("64"), Some(Verdict::Pytorch));
    assert_eq!(verdict("32"), Some(Verdict::LibraryOnly));
    assert_eq!(verdict("48"), Some(Verdict::Library));
    assert_eq!(verdict("16"), Some(Verdict::Neither));
    let t = layers::table(&pairs, "RUN", &|r| format!("m={}", m_of(r)), false);
    let md = rocsweep::markup::markdown::table(&t, usize::MAX);
    let line = md.lines().find(|l| l.contains("m=64")).unwrap_or_default();
    assert!(line.contains("cpu: ok") && line.contains("zeros") && line.contains("pytorch"));
    assert_eq!(line.matches("rocsweep repro RUN").count(), 2, "{line}");

    // The report's own table is for the `torch` layer: this run has none.
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(!summary.contains("Which layer"), "{summary}");

    // A resume finds a row for every unit of both backends.
    let again = bin().args(["run", "--resume"]).arg(&out).output().unwrap();
    assert_eq!(again.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("nothing to do"),
        "{}",
        String::from_utf8_lossy(&again.stdout)
    );
}

#[test]
fn a_backend_list_on_the_command_line_wins_and_one_backend_keeps_its_unit_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let s = sweep(tmp.path(), "\"cpu\"");
    let one = tmp.path().join("one");
    assert!(run(&[], &s, &one, "").status.success());
    let one = RunData::load(&one).unwrap();
    // A one-backend run's ids are those of every earlier version: no backend in them.
    for r in &one.rows {
        assert_eq!(r.unit_id, rocsweep::op::unit_id(&r.case_id, &r.solver, ""));
        assert_eq!(r.backend, "cpu");
    }
    let two = tmp.path().join("two");
    let o = run(
        &["--backend", "cpu,auto"],
        &s,
        &two,
        "backend=cpu&m=16:nan@verify",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let two = RunData::load(&two).unwrap();
    assert_eq!(two.rows.len(), 8);
    let csv = std::fs::read_to_string(tmp.path().join("two/results.csv")).unwrap();
    assert!(
        csv.lines().skip(1).all(|l| !l.contains("backend=")),
        "the env column stays the env"
    );
    for r in &two.rows {
        let ctx = format!("backend={}", r.backend);
        assert_eq!(
            r.unit_id,
            rocsweep::op::unit_id(&r.case_id, &r.solver, &ctx)
        );
        let bad = r.backend == "cpu" && m_of(r) == "16";
        assert_eq!(
            r.status.name(),
            if bad { "nonfinite" } else { "ok" },
            "{r:?}"
        );
    }
}

//! `run --processes N` (issue 43, point 3) with real workers on the CPU backend: each unit in N
//! fresh processes, a unit whose processes disagree flagged (`stable` = `no`, with what
//! differed), identical processes never flagged, and compare calling a flagged unit unstable
//! rather than faster or slower.

use std::path::Path;
use std::process::{Command, Output};

fn rocsweep(args: &[&str], fault: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .args(args)
        .env("ROCSWEEP_TEST_FAULT", fault)
        .output()
        .unwrap()
}

fn ok(o: Output) -> String {
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{:?}\n{stdout}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    stdout
}

/// (unit_id, status, stable, unstable) of each row.
fn rows(dir: &Path) -> Vec<[String; 4]> {
    let mut r = csv::Reader::from_path(dir.join("results.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let col = |n: &str| h.iter().position(|x| x == n).unwrap();
    r.records()
        .map(|x| {
            let x = x.unwrap();
            ["unit_id", "status", "stable", "unstable"].map(|n| x[col(n)].to_string())
        })
        .collect()
}

fn gemms(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("gemm.toml");
    std::fs::write(
        &p,
        r#"name = "gemms"
op = "gemm"
backend = "cpu"

[axes]
m = [16, 32, 48, 64]

[timing]
warmup = 1
min_samples = 3
max_time = 0.02
"#,
    )
    .unwrap();
    p
}

#[test]
fn the_quickstart_in_three_processes_flags_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let sweep = format!("{}/sweeps/quickstart.toml", env!("CARGO_MANIFEST_DIR"));
    ok(rocsweep(
        &[
            "run",
            &sweep,
            "--processes",
            "3",
            "--out",
            out.to_str().unwrap(),
            "-q",
        ],
        "",
    ));
    let r = rows(&out);
    assert_eq!(r.len(), 72);
    assert!(r.iter().all(|x| x[2] == "yes" && x[3].is_empty()), "{r:?}");
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(!summary.contains("Unstable between processes"));
}

#[test]
fn a_unit_whose_processes_disagree_is_flagged_and_compare_calls_it_unstable() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = gemms(tmp.path());
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    // Without --processes the column is empty, whatever the trials.
    ok(rocsweep(
        &[
            "run",
            sweep.to_str().unwrap(),
            "--out",
            a.to_str().unwrap(),
            "-q",
            "--no-report",
        ],
        "",
    ));
    assert!(rows(&a).iter().all(|x| x[2].is_empty()));
    // In process 2 of 3 the m=32 output's lowest bit flips: verified ok, but not the same bits.
    ok(rocsweep(
        &[
            "run",
            sweep.to_str().unwrap(),
            "--processes",
            "3",
            "--out",
            b.to_str().unwrap(),
            "-q",
        ],
        "env.ROCSWEEP_TRIAL=2&m=32:jitter@verify",
    ));
    let r = rows(&b);
    let flagged: Vec<&[String; 4]> = r.iter().filter(|x| x[2] == "no").collect();
    assert_eq!(flagged.len(), 1, "{r:?}");
    assert_eq!(flagged[0][1], "ok");
    assert_eq!(
        flagged[0][3],
        "output bits differ: 2 distinct outputs in 3 processes"
    );
    assert_eq!(r.iter().filter(|x| x[2] == "yes").count(), 3);
    let summary = std::fs::read_to_string(b.join("summary.md")).unwrap();
    assert!(
        summary.contains("## Unstable between processes")
            && summary.contains("output bits differ: 2 distinct outputs in 3 processes"),
        "{summary}"
    );
    let cmp = tmp.path().join("cmp");
    let stdout = ok(rocsweep(
        &[
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--out",
            cmp.to_str().unwrap(),
        ],
        "",
    ));
    assert!(
        stdout.contains("; 1 unstable (their processes disagreed: neither faster nor slower)"),
        "{stdout}"
    );
    let md = std::fs::read_to_string(cmp.join("compare.md")).unwrap();
    assert!(md.contains("| unstable | 1 |"), "{md}");
}

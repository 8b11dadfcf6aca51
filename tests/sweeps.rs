//! Every sweep in sweeps/ loads, and every CPU sweep runs through the binary with the statuses
//! it is meant to show.

use std::path::Path;
use std::process::Command;

fn sweeps() -> Vec<std::path::PathBuf> {
    let dir = format!("{}/sweeps", env!("CARGO_MANIFEST_DIR"));
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    v
}

/// Runs a file from sweeps/ with `args`, which must exit 0; its results.csv.
fn run(p: &Path, args: &[&str]) -> (tempfile::TempDir, Vec<String>, Vec<Vec<String>>) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .arg("run")
        .arg(p)
        .arg("--out")
        .arg(&out)
        .args(args)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}: {}",
        p.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    let (header, rows) = rocsweep::results::csv::read(&out.join("results.csv")).unwrap();
    (tmp, header, rows)
}

#[test]
fn every_ready_sweep_loads() {
    let all = sweeps();
    assert!(all.len() >= 6);
    for p in all {
        let text = std::fs::read_to_string(&p).unwrap();
        let loaded = if rocsweep::spec::sequence::is_sequence(&text) {
            rocsweep::spec::sequence::load_str(&p.display().to_string(), &text, &[]).map(|_| ())
        } else {
            rocsweep::spec::load(&p, &[]).map(|_| ())
        };
        if let Err(e) = loaded {
            panic!("{}", e.render());
        }
    }
}

/// sweeps/ holds sequences too (`[[step]]`): each CPU one runs, every step ok.
#[test]
fn every_cpu_sequence_runs_and_verifies() {
    let mut ran = 0;
    for p in sweeps() {
        let text = std::fs::read_to_string(&p).unwrap();
        if !rocsweep::spec::sequence::is_sequence(&text) {
            continue;
        }
        let seq = rocsweep::spec::sequence::load_str("s", &text, &[]).unwrap();
        if seq.sweep.backend != "cpu" {
            continue;
        }
        let (_tmp, header, rows) = run(&p, &["--quiet", "--fail-on-failure"]);
        let st = header.iter().position(|h| h == "status").unwrap();
        assert_eq!(rows.len(), seq.order().len());
        assert!(
            rows.iter().all(|r| r[st] == "ok"),
            "{}: {rows:?}",
            p.display()
        );
        ran += 1;
    }
    assert!(ran >= 1, "no CPU sequence in sweeps/");
}

#[test]
fn every_cpu_sweep_runs_and_verifies() {
    for p in sweeps() {
        let text = std::fs::read_to_string(&p).unwrap();
        if rocsweep::spec::sequence::is_sequence(&text) {
            continue; // every_cpu_sequence_runs_and_verifies
        }
        let sweep = rocsweep::spec::load(&p, &[]).unwrap();
        if sweep.backend != "cpu" || sweep.name == "quickstart" {
            continue; // quickstart has its own end-to-end test
        }
        let (_tmp, header, rows) = run(&p, &["--quiet", "--no-report", "--fail-on-failure"]);
        let st = header.iter().position(|h| h == "status").unwrap();
        let compute = header.iter().position(|h| h == "compute");
        for r in &rows {
            let expected = match compute {
                Some(c) if r[c] == "f16" => "unsupported",
                _ => "ok",
            };
            assert_eq!(r[st], expected, "{}: {r:?}", p.display());
        }
        assert!(!rows.is_empty(), "{}", p.display());
    }
}

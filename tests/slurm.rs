//! The Slurm recipe for real: tests/slurm/run-slurm-test.sh starts munged, slurmctld and slurmd
//! on this machine, submits sweeps/slurm/array.sbatch as a 4-task array, merges the tasks' run
//! directories and checks them against an unsharded run. Needs Debian's slurm-wlm and munge
//! (.ci/run installs them) and root; without them the test says it was skipped, except under
//! CI=true, where a skip would hide a broken recipe and the test fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// PATH with the sbin directories, where Debian puts the daemons.
fn search_path() -> String {
    let path = std::env::var("PATH").unwrap_or_default();
    format!("{path}:/usr/local/sbin:/usr/sbin:/sbin")
}

fn find(tool: &str) -> Option<PathBuf> {
    search_path()
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.is_file())
}

fn statuses(dir: &Path) -> BTreeMap<String, String> {
    let (header, rows) = rocsweep::results::csv::read(&dir.join("results.csv")).unwrap();
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let (id, st) = (col("unit_id"), col("status"));
    let m: BTreeMap<String, String> = rows
        .iter()
        .map(|r| (r[id].clone(), r[st].clone()))
        .collect();
    assert_eq!(
        m.len(),
        rows.len(),
        "{}: unit ids are unique",
        dir.display()
    );
    m
}

#[test]
#[cfg_attr(
    rocsweep_missing_slurm,
    ignore = "needs slurm-wlm and munge (apt-get install slurm-wlm munge) and root"
)]
fn a_slurm_array_job_merged_equals_the_unsharded_run() {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let missing: Vec<&str> = ["sbatch", "slurmctld", "slurmd", "munged", "python3"]
        .into_iter()
        .filter(|t| find(t).is_none())
        .collect();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let why = if !missing.is_empty() {
        Some(format!(
            "{} not found (apt-get install slurm-wlm munge)",
            missing.join(", ")
        ))
    } else if !root {
        Some("not root (slurmd runs the jobs as root here)".to_string())
    } else {
        None
    };
    if let Some(why) = why {
        assert!(
            !ci,
            "CI=true and the Slurm test cannot run: {why}; .ci/run installs slurm-wlm and munge as root"
        );
        eprintln!("skipped: the Slurm array test needs {why}");
        return;
    }

    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("slurm");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slurm/run-slurm-test.sh");
    let o = Command::new("bash")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_rocsweep"))
        .arg(&work)
        .env("PATH", search_path())
        .env_remove("ROCSWEEP_TEST_FAULT")
        .env_remove("SLURM_CONF")
        .output()
        .unwrap();
    let out = format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{out}");
    assert!(out.contains("merged from 4 Slurm array tasks"), "{out}");

    // The script's own check, once more through the crate's CSV reader.
    let merged = statuses(&work.join("merged"));
    assert_eq!(merged, statuses(&work.join("full")));
    assert_eq!(merged.len(), 24, "12 GEMM cases x 2 env combinations");
    let m = rocsweep::results::manifest::read(&work.join("merged")).unwrap();
    let info = m.merge.unwrap();
    assert_eq!(info.shard_count, 4);
    for s in &info.shards {
        let shard = rocsweep::results::manifest::read(Path::new(&s.dir))
            .unwrap()
            .shard
            .unwrap();
        assert!(
            shard.from.starts_with("SLURM_ARRAY_TASK_ID="),
            "{}",
            shard.from
        );
    }
}

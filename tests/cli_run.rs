//! The quickstart sweep through the real binary: run directory, CSV rows, manifest, dry-run.

use std::path::Path;
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rocsweep"))
}

fn repo(p: &str) -> String {
    format!("{}/{p}", env!("CARGO_MANIFEST_DIR"))
}

fn read_csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    rocsweep::results::csv::read(path).unwrap_or_else(|e| panic!("{e}"))
}

fn col(header: &[String], name: &str) -> usize {
    header
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name}"))
}

#[test]
fn quickstart_runs_and_writes_one_verified_row_per_unit() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = bin()
        .args(["run", &repo("sweeps/quickstart.toml"), "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "exit {:?}\n{stdout}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("units: 72 (72 ok)"), "{stdout}");

    let (header, rows) = read_csv(&out.join("results.csv"));
    for c in rocsweep::results::csv::FIXED_COLUMNS {
        assert!(header.iter().any(|h| h == c), "missing column {c}");
    }
    // 3 channel pairs x 3 sizes x 3 dtypes x 3 directions, minus bwd_weights at h=32 (9 cases).
    assert_eq!(rows.len(), 72);
    let ids: std::collections::HashSet<&String> =
        rows.iter().map(|r| &r[col(&header, "unit_id")]).collect();
    assert_eq!(ids.len(), rows.len(), "unit ids are unique");
    for r in &rows {
        assert_eq!(r[col(&header, "status")], "ok", "{r:?}");
        assert_eq!(r[col(&header, "reference")], "cpu-f64");
        assert_eq!(
            r[col(&header, "solver")],
            "im2col",
            "solver = all expands to the CPU's solver"
        );
        let gflops: f64 = r[col(&header, "gflops")].parse().unwrap();
        assert!(gflops > 0.0);
        let samples: u32 = r[col(&header, "samples")].parse().unwrap();
        assert!(samples >= 3, "min_samples = 3 in the sweep");
        let p10: f64 = r[col(&header, "p10_ms")].parse().unwrap();
        let med: f64 = r[col(&header, "median_ms")].parse().unwrap();
        let p90: f64 = r[col(&header, "p90_ms")].parse().unwrap();
        assert!(p10 <= med && med <= p90);
        let err: f64 = r[col(&header, "max_rel_err")].parse().unwrap();
        assert!(
            err < 1e-2,
            "f32 accumulation is close to the f64 reference: {err}"
        );
    }
    let dtypes: std::collections::BTreeSet<&str> = rows
        .iter()
        .map(|r| r[col(&header, "dtype")].as_str())
        .collect();
    assert_eq!(
        dtypes.into_iter().collect::<Vec<_>>(),
        vec!["bf16", "f16", "f32"]
    );
    assert!(
        !rows
            .iter()
            .any(|r| r[col(&header, "direction")] == "bwd_weights" && r[col(&header, "h")] == "32"),
        "drop filter"
    );

    let m = rocsweep::results::manifest::read(&out).unwrap();
    assert_eq!(m.sweep.name, "quickstart");
    assert_eq!(m.units_planned, 72);
    assert_eq!(m.counts.get("ok"), Some(&72));
    assert!(m.finished_at.is_some());
    assert_eq!(m.backend.backend, "cpu");
    assert_eq!(m.sweep.sha256.len(), 64);
    assert!(m.environment.contains_key("PATH"));
    assert!(
        m.command_line
            .iter()
            .any(|a| a.ends_with("quickstart.toml"))
    );
}

#[test]
fn dry_run_lists_cases_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = bin()
        .args([
            "run",
            &repo("sweeps/quickstart.toml"),
            "--dry-run",
            "--axis",
            "dtype=f32",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success());
    let stdout = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    // The CPU lists its solvers up front: `all` is counted, and the total is final.
    assert_eq!(
        lines.last().copied(),
        Some("24 cases x 1 env combination(s) = 24 units (0 invalid combinations dropped)")
    );
    assert_eq!(lines.len(), 25);
    // A backend whose solvers a worker lists (the libraries say): the count grows at run time.
    let o = bin()
        .args([
            "run",
            &repo("sweeps/quickstart.toml"),
            "--dry-run",
            "--axis",
            "dtype=f32",
            "--backend",
            "rocm",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.trim_end().ends_with(
            "24 units (0 invalid combinations dropped); solver = \"all\" expands further at run time"
        ),
        "{stdout}"
    );
    assert!(
        lines[0].contains("conv2d;direction=fwd;n=2;c_in=3;c_out=16;h=8;w=8;"),
        "{}",
        lines[0]
    );
    assert!(!out.exists(), "dry-run creates no run directory");
}

#[test]
fn existing_run_directory_is_refused_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("results.csv"), "precious").unwrap();
    let o = bin()
        .args(["run", &repo("sweeps/quickstart.toml"), "--out"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("already exists and is not empty"), "{err}");
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("results.csv")).unwrap(),
        "precious"
    );
}

#[test]
fn product_over_the_cap_needs_force() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = bin()
        .args([
            "run",
            &repo("sweeps/quickstart.toml"),
            "--max-units",
            "10",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("more than the cap of 10"));
    assert!(!out.exists());
}

#[test]
fn devices_the_cpu_does_not_have_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = bin()
        .env_remove("ROCSWEEP_TEST_CPU_DEVICES")
        .args([
            "run",
            &repo("sweeps/quickstart.toml"),
            "--devices",
            "0,1",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--devices: device 1 does not exist; the cpu backend has 1 device(s) (0)"),
        "{err}"
    );
    assert!(!out.exists(), "nothing written");
}

#[test]
fn a_backend_that_cannot_run_here_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = bin()
        .args([
            "run",
            &repo("sweeps/quickstart.toml"),
            "--backend",
            "rocm",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    // No AMD GPU on the machines this runs on: either Debian's HIP runtime loads and finds no
    // device, or no HIP runtime is installed at all. Both are named; nothing is written.
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no AMD GPU is present")
            || err.contains("HIP runtime (libamdhip64) not found; looked for"),
        "{err}"
    );
    // ... with the backends that do run here.
    assert!(
        err.contains("hint: on this machine, run the sweep's cases with --backend cuda,torch (an NVIDIA GPU) or --backend cpu,torch"),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn list_ops_and_probe_describe_the_build() {
    let o = bin().arg("list-ops").output().unwrap();
    let s = String::from_utf8_lossy(&o.stdout);
    for op in ["conv2d", "gemm", "rng", "copy", "cast", "graph"] {
        assert!(
            s.lines().any(|l| l.starts_with(&format!("{op}:"))),
            "{op} listed"
        );
    }
    assert!(s.contains("default same as h"));
    // Every backend's solvers, torch's among them (with its BLAS preferences for gemm).
    for line in [
        "torch: torch-default torch-benchmark",
        "torch: torch-matmul torch-linear torch-matmul+BLAS torch-linear+BLAS (BLAS: cublas cublaslt hipblaslt ck)",
        "torch: torch-to torch-to-nonblocking",
    ] {
        assert!(s.lines().any(|l| l.trim() == line), "{line}\n{s}");
    }
    let o = bin().arg("probe").output().unwrap();
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("cpu: available"), "{s}");
    assert!(s.contains("rocm: unavailable"), "{s}");
}

#[test]
fn each_row_names_the_device_its_own_env_combination_saw() {
    // RAYON_NUM_THREADS changes what the CPU backend is: the =2 rows ran on 2 threads.
    let tmp = tempfile::tempdir().unwrap();
    let sweep = tmp.path().join("threads.toml");
    std::fs::write(
        &sweep,
        "name = \"threads\"\nop = \"gemm\"\nbackend = \"cpu\"\n[axes]\nm = 16\nn = 16\nk = 16\n\
         [env_axes]\nRAYON_NUM_THREADS = [\"1\", \"2\"]\n",
    )
    .unwrap();
    let out = tmp.path().join("run");
    let o = bin()
        .arg("run")
        .arg(&sweep)
        .arg("--out")
        .arg(&out)
        .args(["--quiet", "--trials", "1"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let (h, rows) = read_csv(&out.join("results.csv"));
    let (env, device) = (col(&h, "env"), col(&h, "device"));
    assert_eq!(rows.len(), 2);
    for r in &rows {
        let n = r[env].trim_start_matches("RAYON_NUM_THREADS=");
        assert!(
            r[device].ends_with(&format!("({n} threads)")),
            "{} ran on {}",
            r[env],
            r[device]
        );
    }
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    let by_env = &m["env_devices"];
    assert!(
        by_env["RAYON_NUM_THREADS=2"]
            .as_str()
            .is_some_and(|d| d.ends_with("(2 threads)")),
        "{by_env}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("(1 threads), ") && html.contains("(2 threads)"),
        "the report names both"
    );
}

/// Issue 40, S1: before its first unit, a run says which variables its sweep sets that make a
/// process load or run code (a credential's value masked), also under --quiet; a sweep that
/// sets none says nothing.
#[test]
fn a_sweep_that_sets_code_loading_variables_is_named_before_the_first_unit() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = tmp.path().join("s.toml");
    std::fs::write(
        &sweep,
        "name = \"s\"\nop = \"copy\"\n[axes]\nbytes = 64\n\
         [env]\nPYTHONWARNINGS = \"ignore\"\nBROWSER = \"sh -c id\"\nMY_FLAG = \"1\"\n\
         [env_axes]\nLD_PRELOAD_TOKEN = [\"a\", \"b\"]\n",
    )
    .unwrap();
    let o = bin()
        .arg("run")
        .arg(&sweep)
        .arg("--out")
        .arg(tmp.path().join("run"))
        .args(["--quiet", "--no-report", "--backend", "cpu"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("warning: the sweep sets variables"))
        .unwrap_or_else(|| panic!("{err}"));
    assert_eq!(
        line,
        "warning: the sweep sets variables that make its workers load or run code: \
         PYTHONWARNINGS=ignore, BROWSER='sh -c id', LD_PRELOAD_TOKEN='<masked>'; a sweep file \
         is code, like a Makefile: run only sweep files you trust"
    );
    assert!(!err.contains("MY_FLAG"), "{err}");
    let plain = tmp.path().join("plain.toml");
    std::fs::write(&plain, "name = \"p\"\nop = \"copy\"\n[axes]\nbytes = 64\n").unwrap();
    let o = bin()
        .arg("run")
        .arg(&plain)
        .arg("--out")
        .arg(tmp.path().join("run2"))
        .args(["--quiet", "--no-report", "--backend", "cpu"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&o.stderr).contains("warning: the sweep sets"));
}

/// Issue 40, minor: `--python` on a directory or a link loop, and a run directory that is a
/// link loop, say what they are (not "no such file").
#[test]
fn a_directory_or_a_link_loop_is_named_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    let quick = repo("sweeps/quickstart.toml");
    let err = |args: &[&std::ffi::OsStr]| {
        let o = bin().args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2));
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let e = err(&[
        "--python".as_ref(),
        tmp.path().as_os_str(),
        "run".as_ref(),
        quick.as_ref(),
        "--dry-run".as_ref(),
    ]);
    assert!(
        e.contains(&format!(
            "--python {}: a directory, not a Python executable (e.g. {}/bin/python)",
            tmp.path().display(),
            tmp.path().display()
        )),
        "{e}"
    );
    let e = err(&[
        "--python".as_ref(),
        a.as_os_str(),
        "run".as_ref(),
        quick.as_ref(),
        "--dry-run".as_ref(),
    ]);
    assert!(
        e.contains(&format!("--python {}: a symbolic link loop", a.display())),
        "{e}"
    );
    for cmd in ["report", "recommend"] {
        let e = err(&[cmd.as_ref(), a.as_os_str()]);
        assert!(
            e.contains(&format!(
                "{}: not a run directory (a symbolic link loop)",
                a.display()
            )),
            "{cmd}: {e}"
        );
    }
}

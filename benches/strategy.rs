//! Hangs and wall time of `run --strategy grid|prune|bisect` on the fake ROCm's RDNA1 model
//! (seed 004: 16->32 channels hang above 32x32, 32->64 above 48x48, 64->128 above 64x64), with
//! real worker processes on the ROCm backend loading tests/fake-rocm. Before timing, one run of each prints its hang
//! count, whether its map equals the grid's, and a 20-unit confirmation of bisect.
//!
//! Target: bisect reproduces the grid's map with at most 1/3 of its hangs, and a confirmation
//! pass over 20 inferred units finds no disagreement.
//!
//! The model is one function (`model`): swap it for another fault model (e.g. the CPU backend
//! with ROCSWEEP_TEST_FAULT rules) and everything else stays.

use criterion::{Criterion, criterion_group, criterion_main};
use rocsweep::exec::plan::strategy::Kind;
use rocsweep::exec::run::{RunOptions, run};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A fault model: a sweep and the environment that makes its units fail.
struct Model {
    name: &'static str,
    sweep: String,
    env: Vec<(&'static str, String)>,
    /// The axis bisect and prune go along.
    along: &'static str,
}

/// Builds the fake ROCm library (tests/fake-rocm) once and makes a directory that looks like a
/// ROCm 5.7 lib/ (symlinks with ROCm's sonames pointing at it).
fn fake_rocm_lib_dir(tmp: &Path) -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_rocsweep"));
    let target = exe
        .parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("the binary lives in <target>/<profile>/"))
        .join("fake-rocm-build");
    let o = std::process::Command::new(env!("CARGO"))
        .args(["build", "--release", "-p", "fake-rocm", "--target-dir"])
        .arg(&target)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lib = target.join("release/libfake_rocm.so");
    let dir = tmp.join("rocm57-lib");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    for n in [
        "libamdhip64.so.5",
        "libMIOpen.so.1",
        "libhipblaslt.so.0",
        "librocblas.so.3",
        "libhiprand.so.1",
    ] {
        std::os::unix::fs::symlink(&lib, dir.join(n)).unwrap_or_else(|e| panic!("{e}"));
    }
    dir
}

/// Seed 004's table as the fake ROCm's RDNA1 model (tests/fake-rocm/models/rdna1-rocm57.toml:
/// MIOpen's find hangs, as a real infinite loop, for 16->32 above 32x32, 32->64 above 48x48,
/// 64->128 above 64x64) under sweeps/rocm-rdna1-conv.toml (4 channel pairs x 11 sizes), through
/// the ROCm backend's real dlopen path. Limits are cut to 0.3 s so only hangs take time.
fn model(tmp: &Path) -> Model {
    let root = env!("CARGO_MANIFEST_DIR");
    let text = std::fs::read_to_string(format!("{root}/sweeps/rocm-rdna1-conv.toml"))
        .unwrap_or_else(|e| panic!("{e}"))
        .replace("compile = 20", "compile = 0.3\ngrace = 0.2");
    Model {
        name: "fake-rocm rdna1-rocm57 (seed 004)",
        sweep: text,
        env: vec![
            (
                "FAKE_ROCM_MODEL",
                format!("{root}/tests/fake-rocm/models/rdna1-rocm57.toml"),
            ),
            (
                "ROCSWEEP_ROCM_LIB_DIR",
                fake_rocm_lib_dir(tmp).display().to_string(),
            ),
        ],
        along: "h",
    }
}

fn opts(sweep: &Path, out: PathBuf, kind: Kind, along: &str, confirm: u64) -> RunOptions {
    RunOptions {
        sweep: Some(sweep.to_path_buf()),
        out: Some(out),
        quiet: true,
        max_units: u64::MAX,
        worker_exe: Some(PathBuf::from(env!("CARGO_BIN_EXE_rocsweep"))),
        strategy: kind,
        along: (kind != Kind::Grid).then(|| along.to_string()),
        confirm,
        confirm_seed: Some(2026),
        ..RunOptions::default()
    }
}

/// unit id -> (status, ok|fail|other) from a run directory.
fn statuses(dir: &Path) -> Vec<(String, String)> {
    let (header, rows) =
        rocsweep::results::csv::read(&dir.join("results.csv")).unwrap_or_else(|e| panic!("{e}"));
    let col = |n: &str| {
        header
            .iter()
            .position(|h| h == n)
            .unwrap_or_else(|| panic!("no column {n}"))
    };
    let (id, st) = (col("unit_id"), col("status"));
    rows.iter()
        .map(|r| (r[id].clone(), r[st].clone()))
        .collect()
}

fn class(status: &str) -> &'static str {
    match status {
        "ok" | "inferred-ok" => "ok",
        "hang" | "crash" | "interrupted" | "inferred-fail" => "fail",
        "skipped" => "skipped",
        _ => "other",
    }
}

struct Outcome {
    hangs: usize,
    measured: usize,
    wall: Duration,
    map: HashMap<String, &'static str>,
    disagreements: Option<usize>,
    confirmed_hangs: usize,
}

fn once(m: &Model, sweep: &Path, out: PathBuf, kind: Kind, confirm: u64) -> Outcome {
    let t = Instant::now();
    let r = run(&opts(sweep, out.clone(), kind, m.along, confirm));
    let wall = t.elapsed();
    assert!(r.is_ok(), "{} run failed", kind.name());
    let rows = statuses(&out);
    let confirm_csv = rocsweep::results::csv::read(&out.join("confirm.csv")).ok();
    let confirmed: Vec<String> = confirm_csv
        .as_ref()
        .map(|(_, rows)| rows.iter().map(|r| r[0].clone()).collect())
        .unwrap_or_default();
    let hang = |(id, s): &&(String, String)| s == "hang" && !confirmed.contains(id);
    Outcome {
        hangs: rows.iter().filter(hang).count(),
        confirmed_hangs: rows
            .iter()
            .filter(|(id, s)| s == "hang" && confirmed.contains(id))
            .count(),
        measured: rows
            .iter()
            .filter(|(_, s)| !s.starts_with("inferred") && s != "skipped")
            .count(),
        wall,
        map: rows.iter().map(|(id, s)| (id.clone(), class(s))).collect(),
        disagreements: confirm_csv.map(|(header, rows)| {
            let col = header.iter().position(|h| h == "agrees").unwrap_or(0);
            rows.iter().filter(|r| r[col] == "no").count()
        }),
    }
}

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let m = model(tmp.path());
    for (k, v) in &m.env {
        // SAFETY: set before any thread of this bench reads the environment; workers inherit it.
        unsafe { std::env::set_var(k, v) };
    }
    let sweep = tmp.path().join("model.toml");
    std::fs::write(&sweep, &m.sweep).unwrap_or_else(|e| panic!("{e}"));

    // One run of each, for the figures the target is about.
    let grid = once(&m, &sweep, tmp.path().join("grid"), Kind::Grid, 0);
    println!("model {}: {} units", m.name, grid.map.len());
    println!(
        "{:<20} {:>6} {:>9} {:>9} {:>13}",
        "strategy", "hangs", "measured", "wall s", "map == grid"
    );
    let line = |name: &str, o: &Outcome| {
        // prune's skipped cells say nothing about the map, so it is not compared.
        let same = if name == "prune" {
            "-".to_string()
        } else {
            (o.map == grid.map).to_string()
        };
        println!(
            "{name:<20} {:>6} {:>9} {:>9.2} {same:>13}",
            o.hangs,
            o.measured,
            o.wall.as_secs_f64()
        );
    };
    line("grid", &grid);
    let prune = once(&m, &sweep, tmp.path().join("prune"), Kind::Prune, 0);
    line("prune", &prune);
    let bisect = once(&m, &sweep, tmp.path().join("bisect"), Kind::Bisect, 0);
    line("bisect", &bisect);
    let confirmed = once(&m, &sweep, tmp.path().join("confirm"), Kind::Bisect, 20);
    line("bisect --confirm 20", &confirmed);
    println!(
        "hangs: grid {}, prune {}, bisect {} ({:.2} of the grid's; target <= 0.33); \
         confirmation of 20 inferred units (seed 2026): {} disagreement(s), {} more hang(s)",
        grid.hangs,
        prune.hangs,
        bisect.hangs,
        bisect.hangs as f64 / grid.hangs.max(1) as f64,
        confirmed.disagreements.unwrap_or(0),
        confirmed.confirmed_hangs
    );

    let mut g = c.benchmark_group("strategy");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(30));
    let mut n = 0;
    for (name, kind) in [
        ("grid", Kind::Grid),
        ("prune", Kind::Prune),
        ("bisect", Kind::Bisect),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    n += 1;
                    let out = tmp.path().join(format!("{name}-{n}"));
                    let t = Instant::now();
                    let r = run(&opts(&sweep, out.clone(), kind, m.along, 0));
                    total += t.elapsed();
                    assert!(r.is_ok());
                    let _ = std::fs::remove_dir_all(&out);
                }
                total
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

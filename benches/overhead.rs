//! Harness overhead with warm workers: a run of 2,000 no-op units (4-byte copies, timing off)
//! through the real supervisor, journal and CSV. Target: at most 0.5 ms per unit.
//! Also the cost of one hang on the CPU backend: limit + grace + kill, respawn and health probe.

use criterion::{Criterion, criterion_group, criterion_main};
use rocsweep::exec::run::{RunOptions, run};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const UNITS: u64 = 2000;

fn write_sweep(dir: &std::path::Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(format!("{name}.toml"));
    std::fs::write(&p, text).unwrap_or_else(|e| panic!("{e}"));
    p
}

fn opts(sweep: PathBuf, out: PathBuf) -> RunOptions {
    RunOptions {
        sweep: Some(sweep),
        out: Some(out),
        quiet: true,
        max_units: u64::MAX,
        worker_exe: Some(PathBuf::from(env!("CARGO_BIN_EXE_rocsweep"))),
        ..RunOptions::default()
    }
}

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let noop = write_sweep(
        tmp.path(),
        "noop",
        &format!(
            "name = \"noop\"\nop = \"copy\"\n[axes]\nbytes = \"range(4..={}, step=4)\"\n[timing]\nenabled = false\n",
            4 * UNITS
        ),
    );
    let mut g = c.benchmark_group("supervisor");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    let mut n = 0;
    g.bench_function("2000_noop_units", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                n += 1;
                let out = tmp.path().join(format!("noop-{n}"));
                let t = Instant::now();
                let r = run(&opts(noop.clone(), out.clone()));
                total += t.elapsed();
                assert!(r.is_ok_and(|r| r.failures == 0));
                let _ = std::fs::remove_dir_all(&out);
            }
            total
        })
    });

    // One unit that hangs in `run` (limit 0.2 s, grace 0.5 s) next to one that does not.
    let hang = write_sweep(
        tmp.path(),
        "hang",
        "name = \"hang\"\nop = \"copy\"\n[axes]\nbytes = [4, 8]\n[timing]\nenabled = false\n[limits]\nrun = 0.2\ngrace = 0.5\n",
    );
    // SAFETY: set before any thread of this bench reads the environment; workers inherit it.
    unsafe { std::env::set_var("ROCSWEEP_TEST_FAULT", "bytes=8:hang@run") };
    g.bench_function("one_hang_limit_0.2s_grace_0.5s", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                n += 1;
                let out = tmp.path().join(format!("hang-{n}"));
                let t = Instant::now();
                let r = run(&opts(hang.clone(), out.clone()));
                total += t.elapsed();
                assert!(r.is_ok_and(|r| r.failures == 1));
                let _ = std::fs::remove_dir_all(&out);
            }
            total
        })
    });
    unsafe { std::env::remove_var("ROCSWEEP_TEST_FAULT") };
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

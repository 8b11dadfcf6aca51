//! Whole sweeps through the ROCm backend against the fake ROCm (tests/fake-rocm): the same
//! dlopen path as real ROCm, a temp directory of symlinks named like ROCm's sonames pointing at
//! one libfake_rocm.so, and a fault model that reproduces the seeds. The CSV must show each
//! seed's failure with the right status, and the RDNA1 map must come out as seed 004's table.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

#[path = "common/fake_rocm.rs"]
mod fake_rocm;
use fake_rocm::fake_library;

/// A directory that looks like one ROCm release's lib/: every soname the backend loads is a
/// symlink to the fake, except those in `omit`.
fn lib_dir(tmp: &Path, rocm_major: u32, omit: &[&str]) -> PathBuf {
    let dir = tmp.join(format!("rocm{rocm_major}-lib"));
    std::fs::create_dir_all(&dir).unwrap();
    let (hipblaslt, rocblas) = match rocm_major {
        5 => ("libhipblaslt.so.0", "librocblas.so.3"),
        6 => ("libhipblaslt.so.0", "librocblas.so.4"),
        _ => ("libhipblaslt.so.1", "librocblas.so.5"),
    };
    let mut names = vec![
        format!("libamdhip64.so.{rocm_major}"),
        "libMIOpen.so.1".to_string(),
        hipblaslt.to_string(),
        rocblas.to_string(),
        "libhiprand.so.1".to_string(),
    ];
    if rocm_major >= 7 {
        names.push("libhiprtc.so.7".into());
    }
    for n in names {
        if !omit.iter().any(|o| n.starts_with(o)) {
            std::os::unix::fs::symlink(fake_library(), dir.join(&n)).unwrap();
        }
    }
    // rocBLAS's and hipBLASLt's kernel files for the models' targets, which the backend checks
    // for before their first unit (a real rocBLAS aborts without them).
    for sub in ["rocblas/library", "hipblaslt/library"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        for arch in ["gfx1010", "gfx1030", "gfx1100", "gfx1151"] {
            let name = format!("TensileLibrary_lazy_{arch}.dat");
            std::fs::write(dir.join(sub).join(name), b"").unwrap();
        }
    }
    dir
}

fn model(name: &str) -> PathBuf {
    PathBuf::from(format!("{ROOT}/tests/fake-rocm/models/{name}"))
}

/// A sweep file from sweeps/, with some text replaced (shorter limits for the fake's hangs).
fn sweep(tmp: &Path, name: &str, edits: &[(&str, &str)]) -> PathBuf {
    let mut text = std::fs::read_to_string(format!("{ROOT}/sweeps/{name}")).unwrap();
    for (from, to) in edits {
        assert!(text.contains(from), "{name} has no `{from}`");
        text = text.replace(from, to);
    }
    let p = tmp.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

struct Run {
    code: Option<i32>,
    stderr: String,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    dir: PathBuf,
}

impl Run {
    fn col(&self, name: &str) -> usize {
        self.header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name} in {:?}", self.header))
    }

    /// (value of `key` columns joined by '/') -> status, for every row.
    fn statuses(&self, keys: &[&str]) -> BTreeMap<String, Vec<String>> {
        let st = self.col("status");
        let idx: Vec<usize> = keys.iter().map(|k| self.col(k)).collect();
        let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for r in &self.rows {
            let k = idx
                .iter()
                .map(|&i| r[i].as_str())
                .collect::<Vec<_>>()
                .join("/");
            m.entry(k).or_default().push(r[st].clone());
        }
        m
    }

    fn manifest(&self) -> String {
        std::fs::read_to_string(self.dir.join("manifest.json")).unwrap()
    }
}

fn run(tmp: &Path, sweep: &Path, libs: &Path, model: &Path, extra: &[&str]) -> Run {
    let dir = tmp.join(format!(
        "run-{}",
        sweep.file_stem().unwrap().to_string_lossy()
    ));
    let o = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .arg("run")
        .arg(sweep)
        .arg("--out")
        .arg(&dir)
        .arg("--rocm-lib-dir")
        .arg(libs)
        .args(["--quiet", "--no-report"])
        .args(extra)
        .env("FAKE_ROCM_MODEL", model)
        .env_remove("ROCM_PATH")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let (header, rows) = rocsweep::results::csv::read(&dir.join("results.csv"))
        .unwrap_or_else(|e| panic!("no results.csv ({e:?}); stderr:\n{stderr}"));
    Run {
        code: o.status.code(),
        stderr,
        header,
        rows,
        dir,
    }
}

#[test]
fn probe_through_the_fake_reports_versions_arch_and_libraries() {
    let tmp = tempfile::tempdir().unwrap();
    let libs = lib_dir(tmp.path(), 5, &[]);
    let o = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .args(["probe", "--backend", "rocm", "--rocm-lib-dir"])
        .arg(&libs)
        .env("FAKE_ROCM_MODEL", model("rdna1-rocm57.toml"))
        .env("HSA_OVERRIDE_GFX_VERSION", "10.3.0")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("rocm: available"), "{out}");
    assert!(
        out.contains("AMD Radeon RX 5700 XT (gfx1010:xnack-)"),
        "{out}"
    );
    assert!(out.contains("gcnArchName: gfx1010:xnack-"), "{out}");
    assert!(out.contains("HIP runtime: 5.7."), "{out}");
    assert!(out.contains("MIOpen: 2.20.0"), "{out}");
    assert!(
        out.contains("env HSA_OVERRIDE_GFX_VERSION: 10.3.0"),
        "{out}"
    );
    assert!(
        out.contains(&format!("{}/libamdhip64.so.5", libs.display())),
        "the file the runtime came from: {out}"
    );
}

#[test]
fn the_smoke_sweep_is_clean_on_a_healthy_card_and_names_unknown_solvers() {
    let tmp = tempfile::tempdir().unwrap();
    let libs = lib_dir(tmp.path(), 6, &[]);
    let s = sweep(tmp.path(), "rocm-smoke.toml", &[]);
    let r = run(tmp.path(), &s, &libs, &model("healthy.toml"), &[]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let st = r.col("status");
    let solver = r.col("solver");
    assert!(!r.rows.is_empty());
    for row in &r.rows {
        assert_eq!(row[st], "ok", "{row:?}");
    }
    let solvers: std::collections::BTreeSet<&str> =
        r.rows.iter().map(|row| row[solver].as_str()).collect();
    for want in [
        "ConvDirectNaiveConvFwd",
        "ConvBinWinogradRxSf2x3",
        "solver#9999",
        "find",
    ] {
        assert!(solvers.contains(want), "{want} in {solvers:?}");
    }
    let m = r.manifest();
    assert!(m.contains("gfx1100"), "{m}");
    assert!(m.contains("MIOpen"), "{m}");
}

/// Seed 004: on gfx1010 with ROCm 5.7, MIOpen's find hangs for 16->32 above 32x32, 32->64 above
/// 48x48, 64->128 above 64x64; 3->16 works at every size. The full grid must show exactly that;
/// bisect must draw the same map with at most a third of the grid's hangs, and a confirmation
/// pass over 20 inferred cells must find no disagreement (issue #7's target, on this model).
#[test]
fn the_rdna1_map_comes_out_as_seed_004_says_and_bisect_draws_it_with_a_third_of_the_hangs() {
    let tmp = tempfile::tempdir().unwrap();
    let libs = lib_dir(tmp.path(), 5, &[]);
    let s = sweep(
        tmp.path(),
        "rocm-rdna1-conv.toml",
        // Long enough that a healthy find compiles within it on a 2-core machine busy with other
        // builds (1 s was not: an ok cell came out `hang` under load); every hang costs it.
        &[("compile = 20", "compile = 5.0")],
    );
    let m = model("rdna1-rocm57.toml");
    let grid = run(tmp.path(), &s, &libs, &m, &[]);
    assert_eq!(grid.code, Some(0), "{}", grid.stderr);
    let map = grid.statuses(&["c_in", "c_out", "h"]);
    let phase = grid.col("phase");
    let mut hangs = 0;
    for (key, statuses) in &map {
        let v: Vec<usize> = key.split('/').map(|x| x.parse().unwrap()).collect();
        let (c_in, h) = (v[0], v[2]);
        let hangs_here = (c_in == 16 && h > 32) || (c_in == 32 && h > 48) || (c_in == 64 && h > 64);
        let want = if hangs_here { "hang" } else { "ok" };
        assert_eq!(statuses, &vec![want.to_string()], "{key}");
        hangs += usize::from(hangs_here);
    }
    assert_eq!(map.len(), 44);
    assert_eq!(hangs, 18);
    // Hangs are recorded with the phase they hung in (MIOpen's find compiles the kernels).
    let st = grid.col("status");
    for row in grid.rows.iter().filter(|row| row[st] == "hang") {
        assert_eq!(row[phase], "compile", "{row:?}");
    }

    // Issue 31: recommend's boundary table is the seed's table, row for row.
    let contiguous = "contiguous: every value up to 128 fails";
    let seed_table = |how: [&str; 3]| {
        vec![
            "| 3→16 | 128 (every value) | never | - | - |".to_string(),
            format!("| 16→32 | 32 | 40 | {} | {contiguous} |", how[0]),
            format!("| 32→64 | 48 | 56 | {} | {contiguous} |", how[1]),
            format!("| 64→128 | 64 | 80 | {} | {contiguous} |", how[2]),
        ]
    };
    assert_eq!(
        boundary_table(&grid.dir),
        seed_table(["hang in compile"; 3]),
        "grid"
    );

    let bdir = tmp.path().join("bisect");
    std::fs::create_dir_all(&bdir).unwrap();
    let b = run(
        &bdir,
        &s,
        &libs,
        &m,
        &["--strategy", "bisect", "--along", "h"],
    );
    assert_eq!(b.code, Some(0), "{}", b.stderr);
    let class = |st: &str| match st {
        "ok" | "inferred-ok" => "ok",
        "hang" | "inferred-fail" => "fail",
        other => panic!("unexpected status {other}"),
    };
    let bmap = b.statuses(&["c_in", "c_out", "h"]);
    let mut measured_hangs = 0;
    for (key, st) in &bmap {
        assert_eq!(class(&st[0]), class(&map[key][0]), "{key}: bisect {st:?}");
        measured_hangs += usize::from(st[0] == "hang");
    }
    assert_eq!(bmap.len(), 44);
    assert!(
        measured_hangs * 3 <= hangs,
        "bisect hung {measured_hangs} times, the grid {hangs}"
    );
    eprintln!("RDNA1 map: grid {hangs} hangs, bisect {measured_hangs}");
    // The same boundaries from the bisect run, its inferred failures counted as such.
    let inferred: Vec<String> = [8, 6, 4]
        .iter()
        .map(|&n| {
            let run_here = bmap
                .iter()
                .filter(|(k, st)| {
                    st[0] == "hang"
                        && k.starts_with(match n {
                            8 => "16/",
                            6 => "32/",
                            _ => "64/",
                        })
                })
                .count();
            format!(
                "hang in compile ({run_here} run, {} inferred)",
                n - run_here
            )
        })
        .collect();
    assert_eq!(
        boundary_table(&b.dir),
        seed_table([&inferred[0], &inferred[1], &inferred[2]].map(String::as_str)),
        "bisect"
    );

    let cdir = tmp.path().join("confirm");
    std::fs::create_dir_all(&cdir).unwrap();
    let c = run(
        &cdir,
        &s,
        &libs,
        &m,
        &["--strategy", "bisect", "--along", "h", "--confirm", "20"],
    );
    assert_eq!(
        c.code,
        Some(0),
        "no disagreement (exit 7 otherwise): {}",
        c.stderr
    );
    let (header, rows) = rocsweep::results::csv::read(&c.dir.join("confirm.csv")).unwrap();
    let agrees = header.iter().position(|h| h == "agrees").unwrap();
    assert_eq!(rows.len(), 20);
    assert!(rows.iter().all(|r| r[agrees] == "yes"), "{rows:?}");
}

/// The rows of the boundary table `rocsweep recommend` writes for a run directory (one env
/// combination, so the first table).
fn boundary_table(dir: &Path) -> Vec<String> {
    let out = dir.join("recommend");
    let o = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .arg("recommend")
        .arg(dir)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(out.join("recommend.md")).unwrap();
    let at = md
        .find("Boundary along `h`")
        .unwrap_or_else(|| panic!("no boundary table:\n{md}"));
    md[at..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(str::to_string)
        .collect()
}

/// Seeds 000-003 on gfx1151 (ROCm 7): each failure shows with its own status.
#[test]
fn strix_halo_seeds_are_each_detected() {
    let tmp = tempfile::tempdir().unwrap();
    let libs = lib_dir(tmp.path(), 7, &[]);
    let m = model("strix-halo-rocm7.toml");

    // Seed 002: bf16 -> f32 casts give zeros; the other conversions are exact.
    let s = sweep(tmp.path(), "rocm-strix-halo-probes.toml", &[]);
    let r = run(tmp.path(), &s, &libs, &m, &[]);
    for (key, st) in r.statuses(&["from", "to"]) {
        let want = if key == "bf16/f32" { "zeros" } else { "ok" };
        assert!(st.iter().all(|s| s == want), "{key}: {st:?}");
    }

    // Seed 000: normals of a million or more come back as zeros.
    let s = sweep(tmp.path(), "rocm-probe-rng.toml", &[]);
    let r = run(tmp.path(), &s, &libs, &m, &[]);
    for (key, st) in r.statuses(&["count"]) {
        let want = if key.parse::<usize>().unwrap() >= 1 << 20 {
            "zeros"
        } else {
            "ok"
        };
        assert!(st.iter().all(|s| s == want), "{key}: {st:?}");
    }

    // Seed 001: pageable host-to-device copies of 4 MiB and more arrive as zeros.
    let s = sweep(tmp.path(), "rocm-probe-copy.toml", &[]);
    let r = run(tmp.path(), &s, &libs, &m, &[]);
    for (key, st) in r.statuses(&["direction", "memory", "bytes"]) {
        let v: Vec<&str> = key.split('/').collect();
        let bad = v[0] == "h2d" && v[1] == "pageable" && v[2].parse::<usize>().unwrap() >= 4 << 20;
        let want = if bad { "zeros" } else { "ok" };
        assert!(st.iter().all(|s| s == want), "{key}: {st:?}");
    }

    // Seed 003: replays after the first are stale (captured graphs only), and hipBLASLt says
    // NOT_SUPPORTED for batched GEMMs while rocBLAS runs them.
    let s = sweep(tmp.path(), "rocm-graph.toml", &[]);
    let r = run(tmp.path(), &s, &libs, &m, &[]);
    for (key, st) in r.statuses(&["solver"]) {
        let want = if key == "stream-capture" {
            "mismatch"
        } else {
            "ok"
        };
        assert!(st.iter().all(|s| s == want), "{key}: {st:?}");
    }
    let s = sweep(tmp.path(), "rocm-gemm.toml", &[]);
    let r = run(tmp.path(), &s, &libs, &m, &[]);
    let (st, solver, batch) = (r.col("status"), r.col("solver"), r.col("batch"));
    let mut rocblas = 0;
    for row in &r.rows {
        let want = if row[solver].starts_with("hipblaslt") && row[batch] != "1" {
            "unsupported"
        } else {
            "ok"
        };
        assert_eq!(row[st], want, "{row:?}");
        rocblas += usize::from(row[solver] == "rocblas");
    }
    assert_eq!(rocblas, 12, "rocBLAS runs every case");
}

/// A solver that segfaults is a `crash` of its own unit; the next units run in a new worker.
#[test]
fn a_segfaulting_solver_is_a_crash_and_the_rest_of_the_sweep_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let libs = lib_dir(tmp.path(), 7, &[]);
    let s = sweep(tmp.path(), "rocm-smoke.toml", &[]);
    let r = run(
        tmp.path(),
        &s,
        &libs,
        &model("strix-halo-rocm7.toml"),
        &["--axis", "direction=fwd", "--axis", "dtype=f32"],
    );
    let (st, solver, err) = (r.col("status"), r.col("solver"), r.col("error"));
    let mut crashes = 0;
    for row in &r.rows {
        if row[solver] == "ConvBinWinogradRxSf2x3" {
            assert_eq!(row[st], "crash", "{row:?}");
            assert!(row[err].contains("SIGSEGV"), "{row:?}");
            crashes += 1;
        } else {
            assert_eq!(row[st], "ok", "{row:?}");
        }
    }
    assert_eq!(crashes, 4, "one per case (2 sizes x 2 channel pairs)");
    // The bug-report command runs that solution by its MIOpen id in immediate mode; the find
    // path has no -S (MIOpenDriver's default is Find).
    let id = r.col("unit_id");
    let repro = |pick: &dyn Fn(&Vec<String>) -> bool| {
        let row = r.rows.iter().find(|row| pick(row)).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
            .arg("repro")
            .arg(&r.dir)
            .arg(&row[id])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let text = repro(&|row| row[solver] == "ConvBinWinogradRxSf2x3");
    assert!(
        text.contains("MIOpenDriver conv -n 2 ") && text.contains(" -S 53"),
        "{text}"
    );
    let text = repro(&|row| row[solver] == "find");
    assert!(
        text.contains("MIOpenDriver conv") && !text.contains(" -S "),
        "{text}"
    );
}

/// Without MIOpen the convolutions fail with a message naming the file looked for; nothing panics.
#[test]
fn a_missing_miopen_is_an_error_naming_the_library_and_where_it_was_looked_for() {
    let tmp = tempfile::tempdir().unwrap();
    let libs = lib_dir(tmp.path(), 6, &["libMIOpen"]);
    let s = sweep(tmp.path(), "rocm-smoke.toml", &[]);
    let r = run(
        tmp.path(),
        &s,
        &libs,
        &model("healthy.toml"),
        &["--axis", "direction=fwd", "--axis", "dtype=f32"],
    );
    let (st, err) = (r.col("status"), r.col("error"));
    assert!(!r.rows.is_empty());
    for row in &r.rows {
        assert_eq!(row[st], "error", "{row:?}");
        assert!(row[err].contains("LIBRARY_NOT_FOUND"), "{row:?}");
        assert!(row[err].contains("libMIOpen.so.1"), "{row:?}");
    }
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
}

/// ROCm 5.x hipBLASLt takes the old type enums (hipblasDatatype_t, 150-series); the fake rejects
/// the 6.x values in 5.x mode, so an `ok` GEMM here proves the backend picked the right set.
/// Batched GEMMs (batch 4) check the layout attributes, which are the same in both.
#[test]
fn hipblaslt_gets_the_type_enums_of_its_rocm_release() {
    let tmp = tempfile::tempdir().unwrap();
    let healthy = std::fs::read_to_string(model("healthy.toml")).unwrap();
    let old = regex_free_replace_hip_version(&healthy, "5.7.31921");
    let m = tmp.path().join("rocm57.toml");
    std::fs::write(&m, old).unwrap();
    let s = sweep(tmp.path(), "rocm-gemm.toml", &[]);
    for (major, model) in [(5, m.clone()), (6, model("healthy.toml"))] {
        let libs = lib_dir(tmp.path(), major, &[]);
        let r = run(tmp.path(), &s, &libs, &model, &["--axis", "dtype=f32"]);
        let (st, solver) = (r.col("status"), r.col("solver"));
        let lt: Vec<&Vec<String>> = r
            .rows
            .iter()
            .filter(|row| row[solver].starts_with("hipblaslt#"))
            .collect();
        assert!(
            !lt.is_empty(),
            "ROCm {major}: the heuristic listed algorithms"
        );
        for row in lt {
            assert_eq!(row[st], "ok", "ROCm {major}: {row:?}");
        }
        std::fs::remove_dir_all(&r.dir).unwrap();
    }
}

fn regex_free_replace_hip_version(model: &str, version: &str) -> String {
    model
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("hip =") || l.trim_start().starts_with("hip=") {
                format!("hip = \"{version}\"")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// MIOpen's user DB and kernel cache live in the run directory, one pair per env combination,
/// so one combination's tuning never reaches another; compile times are recorded cold and warm.
#[test]
fn each_env_combination_gets_its_own_miopen_caches_and_compile_times() {
    let tmp = tempfile::tempdir().unwrap();
    let libs = lib_dir(tmp.path(), 6, &[]);
    let s = tmp.path().join("caches.toml");
    std::fs::write(
        &s,
        "name = \"caches\"\nop = \"conv2d\"\nbackend = \"rocm\"\n[axes]\nn = 1\nc_in = 3\nc_out = 16\nh = 16\n\
         solver = [\"ConvDirectNaiveConvFwd\", \"find\"]\n[env_axes]\nMIOPEN_FIND_MODE = [\"1\", \"2\"]\n\
         [timing]\nmin_samples = 1\nmax_time = 0.01\n",
    )
    .unwrap();
    let r = run(tmp.path(), &s, &libs, &model("healthy.toml"), &[]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let combos: Vec<_> = std::fs::read_dir(r.dir.join("caches"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(combos.len(), 2, "{combos:?}");
    for c in &combos {
        assert!(c.join("miopen-user-db").is_dir(), "{}", c.display());
        assert!(c.join("miopen-cache").is_dir(), "{}", c.display());
    }
    let (st, solver, cold, warm) = (
        r.col("status"),
        r.col("solver"),
        r.col("compile_ms"),
        r.col("compile_warm_ms"),
    );
    assert_eq!(r.rows.len(), 4);
    for row in &r.rows {
        assert_eq!(row[st], "ok", "{row:?}");
        assert!(row[cold].parse::<f64>().unwrap() >= 0.0, "{row:?}");
        // Find compiles inside its search: there is no second, warm compile to time.
        assert_eq!(row[warm].is_empty(), row[solver] == "find", "{row:?}");
    }

    let shared = tmp.path().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    let r = run(
        &shared,
        &s,
        &libs,
        &model("healthy.toml"),
        &["--shared-caches"],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        !r.dir.join("caches").exists(),
        "--shared-caches leaves the user's caches in use"
    );
}

/// `rocsweep solvers` prints the id table, and with a device the solvers MIOpen lists for a
/// problem (unknown ids as solver#<id>); MIOPEN_DEBUG_CONV_* switches hide disabled algorithms.
#[test]
fn solvers_lists_the_table_and_the_problems_solutions() {
    let tmp = tempfile::tempdir().unwrap();
    let libs = lib_dir(tmp.path(), 6, &[]);
    let solvers = |env: &[(&str, &str)]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rocsweep"));
        c.args([
            "solvers",
            "c_in=16",
            "c_out=32",
            "h=64",
            "direction=fwd",
            "--rocm-lib-dir",
        ])
        .arg(&libs)
        .env("FAKE_ROCM_MODEL", model("healthy.toml"));
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let out = solvers(&[]);
    assert!(out.contains("   53  ConvBinWinogradRxSf2x3"), "{out}");
    let listed = out.split("MIOpen lists for").nth(1).unwrap_or_default();
    for want in [
        "ConvDirectNaiveConvFwd",
        "ConvBinWinogradRxSf2x3",
        "GemmFwdRest",
        "solver#9999",
        "find",
    ] {
        assert!(listed.contains(want), "{want}: {out}");
    }
    let out = solvers(&[("MIOPEN_DEBUG_CONV_WINOGRAD", "0")]);
    let listed = out.split("MIOpen lists for").nth(1).unwrap_or_default();
    assert!(!listed.contains("ConvBinWinogradRxSf2x3"), "{out}");
    assert!(listed.contains("GemmFwdRest"), "{out}");

    // Without a device (Debian's real HIP or no HIP at all) the table still prints; exit 5.
    // ($ROCM_PATH holds no HIP runtime: a note, and the system's tree is used.)
    let o = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .args(["solvers", "c_in=16"])
        .env("ROCM_PATH", tmp.path())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(5), "{out}");
    assert!(
        out.contains("ConvBinWinogradRxSf2x3") && out.contains("no ROCm device"),
        "{out}"
    );
}

/// hipRTC lives inside libamdhip64 before ROCm 7 and only in libhiprtc.so.7 after: a ROCm 7 lib
/// directory without libhiprtc has no hipRTC even though libamdhip64 (the fake) exports it.
#[test]
fn hiprtc_comes_from_where_each_rocm_release_keeps_it() {
    let tmp = tempfile::tempdir().unwrap();
    let probe = |libs: &Path| {
        let o = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
            .args(["probe", "--backend", "rocm", "--rocm-lib-dir"])
            .arg(libs)
            .env("FAKE_ROCM_MODEL", model("strix-halo-rocm7.toml"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let seven = lib_dir(tmp.path(), 7, &[]);
    let out = probe(&seven);
    assert!(
        out.contains(&format!("{}/libhiprtc.so.7", seven.display())),
        "{out}"
    );
    assert!(out.contains("gcnArchName: gfx1151"), "{out}");

    let bare = tmp.path().join("bare");
    std::fs::create_dir_all(&bare).unwrap();
    let without = lib_dir(&bare, 7, &["libhiprtc"]);
    let out = probe(&without);
    assert!(
        out.contains(&format!(
            "hipRTC: hipRTC (libhiprtc) not found in the ROCm tree lib dir {}; looked for",
            without.display()
        )),
        "{out}"
    );
}

/// `selftest` end to end through the fake: the kernels compile (the fake's hipRTC applies the
/// real include rule and returns an ELF code object, checked as a real one is), then one tiny
/// case of every op and library runs in workers.
#[test]
fn selftest_passes_on_a_healthy_card_and_names_each_check() {
    let tmp = tempfile::tempdir().unwrap();
    let libs = lib_dir(tmp.path(), 6, &[]);
    let o = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .args(["selftest", "--backend", "rocm", "--rocm-lib-dir"])
        .arg(&libs)
        .env("FAKE_ROCM_MODEL", model("healthy.toml"))
        .env_remove("ROCM_PATH")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    for want in [
        "PASS        compile kernels for gfx1010",
        "PASS        compile kernels for gfx1030",
        "conv2d ",
        "solver=hipblaslt",
        "solver=rocblas",
        "rng ",
        "copy ",
        "cast ",
        "graph ",
        "selftest: every check passed",
    ] {
        assert!(out.contains(want), "{want}:\n{out}");
    }
    let checks = out.lines().filter(|l| l.starts_with("PASS")).count();
    assert!(checks >= 2 + 13, "{checks} checks passed:\n{out}");
}

/// A card whose bf16 conversion writes zeros (seed 002): the selftest says which check failed
/// and how, and exits 3.
#[test]
fn selftest_names_the_failing_check_on_a_strix_halo_model() {
    let tmp = tempfile::tempdir().unwrap();
    let libs = lib_dir(tmp.path(), 7, &[]);
    let logs_root = tmp.path().join("tmp");
    std::fs::create_dir_all(&logs_root).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .args(["selftest", "--backend", "rocm", "--rocm-lib-dir"])
        .arg(&libs)
        .env("FAKE_ROCM_MODEL", model("strix-halo-rocm7.toml"))
        .env("TMPDIR", &logs_root)
        .env_remove("ROCM_PATH")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(3), "{out}");
    // The worker logs are kept for the report, in a new directory whose name a planted link
    // could not have guessed (it was `rocsweep-selftest-<pid>`).
    let kept = out
        .lines()
        .find_map(|l| l.split("the worker logs in ").nth(1))
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| panic!("no logs directory named: {out}"));
    assert!(kept.starts_with(&logs_root), "{}", kept.display());
    assert_ne!(
        kept.file_name().unwrap().to_string_lossy(),
        format!("rocsweep-selftest-{pid}")
    );
    let logs: Vec<_> = std::fs::read_dir(&kept).unwrap().collect();
    assert!(!logs.is_empty(), "no worker log in {}", kept.display());
    let failed: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(
        failed
            .iter()
            .any(|l| l.contains("from=bf16;to=f32") && l.contains("zeros")),
        "seed 002's cast is the failing check: {out}"
    );
    assert!(
        failed.iter().any(|l| l.contains("graph ")),
        "seed 003's stale replay: {out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("PASS") && l.contains("from=f32;to=bf16")),
        "the other casts work: {out}"
    );
    assert!(out.contains("To report it, send this output"), "{out}");
}

/// Both timing figures on ROCm, with cold samples that flush a buffer of the sweep's size before
/// each one (the flush was a silent no-op on ROCm before) and rotating input copies: every unit
/// is timed launch-free (median_ms, behind the blocking kernel compiled by hipRTC) and per call
/// (call_median_ms).
#[test]
fn rocm_units_carry_device_and_per_call_times_also_with_cold_samples() {
    let tmp = tempfile::tempdir().unwrap();
    let libs = lib_dir(tmp.path(), 6, &[]);
    let s = sweep(
        tmp.path(),
        "rocm-gemm.toml",
        &[
            ("m = [64, 256]", "m = 64"),
            ("batch = [1, 4]", "batch = 1"),
            (
                "max_time = 0.1",
                "max_time = 0.1\nflush_cache = true\nflush_mib = 4",
            ),
        ],
    );
    let r = run(tmp.path(), &s, &libs, &model("healthy.toml"), &[]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let (st, med, call) = (r.col("status"), r.col("median_ms"), r.col("call_median_ms"));
    assert!(!r.rows.is_empty());
    for row in &r.rows {
        if row[st] != "ok" {
            continue;
        }
        let m: f64 = row[med].parse().unwrap_or(-1.0);
        let c: f64 = row[call].parse().unwrap_or(-1.0);
        assert!(m > 0.0 && c > 0.0, "{row:?}");
    }
    assert!(r.rows.iter().any(|row| row[st] == "ok"));
}

/// Issue 43 on the fake ROCm: a convolution that returns zeros only once a GEMM ran before it in
/// the same process (the model's `prior_gemm` condition, TheRock#5581's shape) is found in a
/// sequence, passes alone, and is shrunk to the GEMM it needs.
#[test]
fn a_sequence_on_the_fake_finds_a_conv_that_fails_only_after_a_gemm() {
    let tmp = tempfile::tempdir().unwrap();
    let libs = lib_dir(tmp.path(), 6, &[]);
    let mut text = std::fs::read_to_string(model("healthy.toml")).unwrap();
    text.push_str(
        "\n[[fault]]\nlib = \"miopen\"\naction = \"zeros\"\nphase = \"run\"\nwhen = { c_in = \"32\", prior_gemm = \">=1\" }\n",
    );
    let m = tmp.path().join("after-gemm.toml");
    std::fs::write(&m, text).unwrap();
    let seq = tmp.path().join("seq.toml");
    std::fs::write(
        &seq,
        r#"name = "fake-seq"
backend = "rocm"

[timing]
warmup = 1
min_samples = 2
max_time = 0.02

[[step]]
op = "conv2d"
c_in = 16
h = 8

[[step]]
op = "gemm"
m = 64

[[step]]
op = "conv2d"
c_in = 32
h = 8
"#,
    )
    .unwrap();
    let dir = tmp.path().join("run");
    let o = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .arg("run")
        .arg(&seq)
        .arg("--out")
        .arg(&dir)
        .arg("--rocm-lib-dir")
        .arg(&libs)
        .env("FAKE_ROCM_MODEL", &m)
        .env_remove("ROCM_PATH")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.contains("step at run order 3 returns zeros only after run order 2 ran in the same process; it passes alone"),
        "{stdout}"
    );
    let minimal = std::fs::read_to_string(dir.join("minimal.toml")).unwrap();
    assert_eq!(minimal.matches("[[step]]").count(), 2, "{minimal}");
    assert!(minimal.contains("op = \"gemm\"") && minimal.contains("backend = \"rocm\""));
}

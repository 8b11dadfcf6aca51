//! Issue 44, end to end on the fake ROCm (whose hipBLASLt and rocBLAS read their override files
//! as the real 0.12 / Tensile parsers do, and whose solutions cost real CPU time by rank): the
//! report's default against best, `rocsweep tune` writing each file, `--verify` proving it in
//! fresh processes (and dropping what the library does not take), compare naming a changed
//! choice, and the refusals.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "common/fake_rocm.rs"]
mod fake_rocm;
use fake_rocm::fake_library;

#[path = "common/torch_python.rs"]
mod torch_python;

/// A ROCm 6 lib directory of links to the fake, with the kernel files the backend checks for.
fn tree(tmp: &Path) -> PathBuf {
    let dir = tmp.join("rocm6-lib");
    std::fs::create_dir_all(&dir).unwrap();
    for n in [
        "libamdhip64.so.6",
        "libMIOpen.so.1",
        "libhipblaslt.so.0",
        "librocblas.so.4",
        "libhiprand.so.1",
    ] {
        std::os::unix::fs::symlink(fake_library(), dir.join(n)).unwrap();
    }
    for sub in ["rocblas/library", "hipblaslt/library"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        std::fs::write(dir.join(sub).join("TensileLibrary_lazy_gfx1100.dat"), b"").unwrap();
    }
    dir
}

/// A model: hipBLASLt 0.12.1 (git d3f1a2b) whose first pick is 64x slower than its third
/// solution (rocBLAS's all 32x slower), or (`rocblas`) no hipBLASLt and rocBLAS `version` whose own pick is 64x slower than
/// its second solution: far beyond any run-to-run noise, so the calls do not hang on the
/// machine's speed.
fn model(tmp: &Path, name: &str, body: &str) -> PathBuf {
    let p = tmp.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

const HIPBLASLT: &str = "[versions]\nhipblaslt = \"0.12.1\"\nhipblaslt_git = \"d3f1a2b\"\n\
    [hipblaslt]\nalgos = 4\nrepeat = [64, 32, 1, 16]\n[rocblas]\nrepeat = [32, 32, 32]\n";

fn rocblas_model(version: &str) -> String {
    format!(
        "[versions]\nrocblas = \"{version}\"\n[hipblaslt]\nalgos = 0\n\
         [rocblas]\nsolutions = 3\nrepeat = [64, 1, 16]\n"
    )
}

const SWEEP: &str = "name = \"g\"\nop = \"gemm\"\nbackend = \"rocm\"\n[axes]\nm = [64, 128]\n\
    n = 64\nk = 64\ndtype = \"f32\"\nsolver = [\"default\", \"all\"]\n\
    [timing]\nmin_samples = 3\nmax_time = 0.02\ntrials = 3\n";

/// One test's runs at a time: their timings are the point, so they do not share the CPUs with
/// another test's.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn rocsweep(model: &Path, lib: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rocsweep"));
    c.args(args)
        .arg("--rocm")
        .arg(lib)
        .env("FAKE_ROCM_MODEL", model)
        .env_remove("ROCM_PATH")
        .env_remove("HIPBLASLT_TUNING_OVERRIDE_FILE")
        .env_remove("ROCBLAS_TENSILE_GEMM_OVERRIDE_PATH")
        // No torch here: TunableOp's file is another test's.
        .env("ROCSWEEP_PYTHON", "/nonexistent/python3");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `rocsweep run FILE --out DIR --quiet`, expected to succeed.
fn run_file(model: &Path, lib: &Path, file: &Path, out: &Path) {
    let (f, o) = (file.to_str().unwrap(), out.to_str().unwrap());
    let r = rocsweep(model, lib, &["run", f, "--out", o, "--quiet"], &[]);
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
}

/// `rocsweep tune RUN --out OUT` (and `extra`), its output.
fn tune(model: &Path, lib: &Path, run: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "tune",
        run.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    rocsweep(model, lib, &args, &[])
}

/// Runs SWEEP on `model` into `tmp/<name>`, `env` set.
fn run(tmp: &Path, model: &Path, name: &str, env: &[(&str, &str)]) -> PathBuf {
    let sweep = tmp.join("g.toml");
    std::fs::write(&sweep, SWEEP).unwrap();
    let out = tmp.join(name);
    let lib = tmp.join("rocm6-lib");
    let o = rocsweep(
        model,
        &lib,
        &[
            "run",
            sweep.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ],
        env,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    out
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn chosen_of_default(run: &Path) -> Vec<String> {
    let (header, rows) = rocsweep::results::csv::read(&run.join("results.csv")).unwrap();
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    rows.iter()
        .filter(|r| r[col("solver")] == "default")
        .map(|r| r[col("chosen")].clone())
        .collect()
}

/// Point 3 and point 1-2 for hipBLASLt: the report shows the default far slower than the best on
/// both shapes; tune writes the override; --verify proves the library then runs the named
/// solution faster; a run with the file set makes `default` pick it, and compare lists the
/// changed choice, faster.
#[test]
fn hipblaslt_default_against_best_is_reported_tuned_verified_and_compared() {
    let _one = serial();
    let tmp = tempfile::tempdir().unwrap();
    let lib = tree(tmp.path());
    let m = model(tmp.path(), "lt.toml", HIPBLASLT);
    let a = run(tmp.path(), &m, "a", &[]);
    let summary = read(&a.join("summary.md"));
    assert!(summary.contains("## Default against best"), "{summary}");
    assert!(
        summary.contains("more than 10 % slower than the best solution on 2 of 2 shapes (100 %); the best beats the default beyond noise on 2"),
        "{summary}"
    );
    assert!(
        summary.contains("| hipblaslt solution index=1000 |"),
        "{summary}"
    );
    assert!(a.join("default_best.png").is_file());
    assert!(read(&a.join("report.html")).contains("<h2>Default against best</h2>"));

    let out = tmp.path().join("tuned");
    let o = tune(&m, &lib, &a, &out, &["--verify"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("tune: 2 of 2 shapes have a best solution beyond noise; hipblaslt_override.txt (2 rows); verified 2 of 2"),
        "{}",
        text(&o)
    );
    let file = read(&out.join("hipblaslt_override.txt"));
    assert!(file.starts_with("Git Version: d3f1a2b\n"), "{file}");
    let rows: Vec<&str> = file
        .lines()
        .filter(|l| l.trim_start().starts_with("N,N,"))
        .collect();
    assert_eq!(rows.len(), 2, "{file}");
    assert!(
        rows.iter()
            .all(|r| r.split(',').count() == 37 && r.split(',').nth(34) == Some("1002"))
    );
    let md = read(&out.join("tune.md"));
    assert!(md.contains("hipblaslt_override.txt: verified"), "{md}");
    assert!(
        md.contains("export HIPBLASLT_TUNING_OVERRIDE_FILE="),
        "{md}"
    );
    // The verification was a real run with the file set, the library's pick the file's.
    assert_eq!(
        chosen_of_default(&out.join("verify-hipblaslt")),
        ["hipblaslt solution index=1002"; 2]
    );

    // The user's run with the file: default takes the tuned solution; compare says so.
    let abs = std::path::absolute(out.join("hipblaslt_override.txt")).unwrap();
    let b = run(
        tmp.path(),
        &m,
        "b",
        &[("HIPBLASLT_TUNING_OVERRIDE_FILE", abs.to_str().unwrap())],
    );
    assert_eq!(chosen_of_default(&b), ["hipblaslt solution index=1002"; 2]);
    let cmp = tmp.path().join("cmp");
    let o = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .args(["compare", a.to_str().unwrap(), b.to_str().unwrap(), "--out"])
        .arg(&cmp)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let c = read(&cmp.join("compare.md"));
    assert!(c.contains("## The library's choice changed"), "{c}");
    assert!(
        c.contains("| hipblaslt solution index=1000 | hipblaslt solution index=1002 |"),
        "{c}"
    );
    let changed = c
        .split("## The library's choice changed")
        .nth(1)
        .unwrap_or("");
    assert!(changed.contains("| faster |"), "{c}");
}

/// --verify drops what the library does not take: a hipBLASLt whose git revision differs from
/// the run's ignores the file (its first line), so no row holds and none is written.
#[test]
fn a_file_the_library_ignores_is_dropped_by_verify_with_why() {
    let _one = serial();
    let tmp = tempfile::tempdir().unwrap();
    let lib = tree(tmp.path());
    let m = model(tmp.path(), "lt.toml", HIPBLASLT);
    let a = run(tmp.path(), &m, "a", &[]);
    let other = model(
        tmp.path(),
        "other.toml",
        &HIPBLASLT.replace("d3f1a2b", "0badc0d"),
    );
    let out = tmp.path().join("tuned");
    let o = tune(&other, &lib, &a, &out, &["--verify"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("no file written; verified 0 of 2"),
        "{}",
        text(&o)
    );
    assert!(!out.join("hipblaslt_override.txt").exists());
    let md = read(&out.join("tune.md"));
    assert!(
        md.contains("dropped: the library ran \\`hipblaslt solution index=1000\\`, not \\`hipblaslt solution index=1002\\`: it did not take the file's row"),
        "{md}"
    );
}

/// rocBLAS 5 numbers Tensile's solutions below -10: the file holds -index - 10, and --verify
/// proves each shape by Tensile's own log line (rocBLAS does not say what its pick ran).
#[test]
fn rocblas_indices_are_converted_and_verified_by_tensiles_log() {
    let _one = serial();
    let tmp = tempfile::tempdir().unwrap();
    let lib = tree(tmp.path());
    let m = model(tmp.path(), "rb.toml", &rocblas_model("5.1.0"));
    let a = run(tmp.path(), &m, "a", &[]);
    let summary = read(&a.join("summary.md"));
    assert!(summary.contains("| rocblas#1-sol-112 |"), "{summary}");
    let out = tmp.path().join("tuned");
    let o = tune(&m, &lib, &a, &out, &["--verify"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("rocblas_override.csv (2 rows); verified 2 of 2"),
        "{}",
        text(&o)
    );
    let file = read(&out.join("rocblas_override.csv"));
    assert!(
        file.starts_with("transA,transB,M,N,batch_count,K,"),
        "{file}"
    );
    // Solution -112 is Tensile's 101: the file's value is 102.
    assert!(
        file.contains("N,N,64,64,1,64,1,0,64,64,64,f32_r,f32_r,f32_r,102\n"),
        "{file}"
    );
    let md = read(&out.join("tune.md"));
    assert!(md.contains("rocblas_override.csv: verified"), "{md}");
}

/// Refusals, each naming what and why (exit 2, nothing written): a run without named
/// solutions beside `default`, a conv run on the CPU (no find-db), and a hipBLASLt too old for
/// the override file.
#[test]
fn tune_refuses_what_no_file_can_carry() {
    let _one = serial();
    let tmp = tempfile::tempdir().unwrap();
    let lib = tree(tmp.path());
    let m = model(
        tmp.path(),
        "old.toml",
        &HIPBLASLT.replace("0.12.1", "0.8.0"),
    );
    let a = run(tmp.path(), &m, "a", &[]);
    let out = tmp.path().join("tuned");
    let o = tune(&m, &lib, &a, &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("the run's hipBLASLt is 0.8: its override file (HIPBLASLT_TUNING_OVERRIDE_FILE) exists from hipBLASLt 0.12 (ROCm 6.4)"),
        "{}",
        text(&o)
    );
    assert!(!out.exists(), "nothing written");

    // Only `default`: no best to hand over.
    let sweep = tmp.path().join("d.toml");
    std::fs::write(
        &sweep,
        SWEEP.replace("[\"default\", \"all\"]", "\"default\""),
    )
    .unwrap();
    let d = tmp.path().join("d");
    run_file(&m, &lib, &sweep, &d);
    let o = tune(&m, &lib, &d, &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("no GEMM with both `default` and named solutions timed ok"),
        "{}",
        text(&o)
    );

    // A conv run.
    let conv = tmp.path().join("c.toml");
    std::fs::write(&conv, "name = \"c\"\nop = \"conv2d\"\nbackend = \"cpu\"\n[axes]\nh = 8\nc_in = 4\nc_out = 4\nn = 1\n").unwrap();
    let c = tmp.path().join("c");
    run_file(&m, &lib, &conv, &c);
    let o = tune(&m, &lib, &c, &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o)
            .contains("a conv2d run; a cpu run: only MIOpen (the rocm backend) keeps a find-db"),
        "{}",
        text(&o)
    );
    assert!(!out.exists(), "nothing written");
}

/// TunableOp's validators come from the target Python's torch; here (a CPU machine) its torch
/// cannot give them, and tune.md says so for each shape instead of writing a file PyTorch would
/// reject.
#[test]
#[cfg_attr(rocsweep_missing_torch, ignore = "needs torch (scripts/torch-venv.sh)")]
fn tunableop_validators_come_from_the_target_torch_or_the_file_is_not_written() {
    let Some(py) = torch_python::python() else {
        return;
    };
    let _one = serial();
    let tmp = tempfile::tempdir().unwrap();
    let lib = tree(tmp.path());
    let m = model(tmp.path(), "lt.toml", HIPBLASLT);
    let a = run(tmp.path(), &m, "a", &[]);
    let out = tmp.path().join("tuned");
    let o = rocsweep(
        &m,
        &lib,
        &["tune", a.to_str().unwrap(), "--out", out.to_str().unwrap()],
        &[("ROCSWEEP_PYTHON", py.to_str().unwrap())],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!out.join("tunableop0.csv").exists());
    let md = read(&out.join("tune.md"));
    assert!(
        md.contains("no: TunableOp's validators could not be read from the torch"),
        "{md}"
    );
    assert!(md.contains(py.to_str().unwrap()), "{md}");
}

/// A convolution run on the fake ROCm whose Winograd solver hangs MIOpen's Find: tune hands
/// over the find-db MIOpen itself wrote in the sandbox of the combination `recommend` ranks
/// first (Winograd off), says where it came from, and a profile that points MIOpen at it; a run
/// whose combinations left no find-db (immediate-mode solvers only) is refused with why.
#[test]
fn a_conv_run_hands_over_miopens_own_find_db_of_the_combination_ranked_first() {
    let _one = serial();
    let tmp = tempfile::tempdir().unwrap();
    let lib = tree(tmp.path());
    let m = model(
        tmp.path(),
        "winograd-hangs.toml",
        "[[fault]]\nlib = \"miopen\"\naction = \"hang\"\nphase = \"find\"\nwhen = { solver = \"53\" }\n",
    );
    let body = |solver: &str| {
        format!(
            "name = \"c\"\nop = \"conv2d\"\nbackend = \"rocm\"\n[axes]\nn = 1\nc_in = 4\nc_out = 8\n\
             h = [8, 12]\nsolver = \"{solver}\"\n[env_axes]\nMIOPEN_DEBUG_CONV_WINOGRAD = [\"1\", \"0\"]\n\
             [limits]\ncompile = 3.0\nrun = 3.0\n[timing]\nmin_samples = 1\nmax_time = 0.01\n"
        )
    };
    let sweep = tmp.path().join("c.toml");
    std::fs::write(&sweep, body("find")).unwrap();
    let run_dir = tmp.path().join("c");
    run_file(&m, &lib, &sweep, &run_dir);
    let out = tmp.path().join("tuned");
    let o = tune(&m, &lib, &run_dir, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("MIOpen's own find-db of combination `MIOPEN_DEBUG_CONV_WINOGRAD=0` (0 failures): 1 file copied"),
        "{}",
        text(&o)
    );
    // The file is the one the fake's MIOpen wrote in that combination's sandbox, as it wrote it:
    // both shapes, Winograd in neither.
    let db = read(&out.join("miopen-user-db").join("gfx1100_96.ufdb.txt"));
    assert_eq!(db.lines().count(), 2, "{db}");
    assert!(
        db.lines().all(|l| l.contains("=miopenConvolutionFwdAlgo")),
        "{db}"
    );
    assert!(!db.contains("Winograd"), "{db}");
    let profile = read(&out.join("miopen-env.sh"));
    let abs = std::path::absolute(out.join("miopen-user-db")).unwrap();
    assert!(
        profile.contains(&format!("export MIOPEN_USER_DB_PATH={}\n", abs.display())),
        "{profile}"
    );
    assert!(
        profile.contains("export MIOPEN_DEBUG_CONV_WINOGRAD=0\n"),
        "{profile}"
    );
    assert!(profile.contains("written by MIOpen 3.2.0, on"), "{profile}");
    let md = read(&out.join("tune.md"));
    assert!(
        md.contains("Solvers switched off while MIOpen searched (so none of them is in the find-db): MIOPEN_DEBUG_CONV_WINOGRAD=0"),
        "{md}"
    );
    assert!(md.contains("MIOpen 3.2.0"), "{md}");
    // Its evidence: what Find picked for each problem in that combination, never Winograd.
    let picks: Vec<&str> = md
        .lines()
        .skip_while(|l| !l.starts_with("## What MIOpen's Find picked"))
        .filter(|l| l.contains("| find | ok |"))
        .collect();
    assert_eq!(picks.len(), 2, "{md}");
    assert!(
        picks
            .iter()
            .all(|l| l.contains("h=") && !l.contains("Winograd")),
        "{md}"
    );
    // Each combination searched in its own sandbox: Winograd's hung in Find before anything was
    // written, so the run holds one find-db, the one handed over.
    let written: Vec<_> = std::fs::read_dir(run_dir.join("caches"))
        .unwrap()
        .map(|e| {
            e.unwrap()
                .path()
                .join("miopen-user-db")
                .join("gfx1100_96.ufdb.txt")
        })
        .filter(|f| f.exists())
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");
    assert_eq!(read(&written[0]), db);
    // --verify proves GEMM files only.
    let o = tune(&m, &lib, &run_dir, &tmp.path().join("again"), &["--verify"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--verify proves GEMM solution files"),
        "{}",
        text(&o)
    );

    // Immediate mode only: MIOpen's Find never ran, so there is no find-db to hand over.
    std::fs::write(&sweep, body("ConvDirectNaiveConvFwd")).unwrap();
    let naive = tmp.path().join("naive");
    run_file(&m, &lib, &sweep, &naive);
    let none = tmp.path().join("none");
    let o = tune(&m, &lib, &naive, &none, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("left no find-db in")
            && text(&o).contains("MIOpen writes one when its Find runs"),
        "{}",
        text(&o)
    );
    assert!(!none.exists(), "nothing written");
}

//! The torch backend with a real PyTorch from PyPI (scripts/torch-venv.sh), on torch's CPU
//! device: every op, the fault switch carried out inside the Python process, a torch exception,
//! resume after the supervisor is killed, env axes, and a Python without torch. `.ci/run`
//! makes the environment; under CI=true a missing one fails these tests instead of skipping.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "common/torch_python.rs"]
mod torch_python;
use torch_python::python;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rocsweep"));
    // The fault switch and the Python come from each test alone.
    c.env_remove("ROCSWEEP_TEST_FAULT")
        .env_remove("ROCSWEEP_PYTHON")
        .env_remove("VIRTUAL_ENV")
        .env_remove("CONDA_PREFIX");
    c
}

type Row = HashMap<String, String>;

fn rows(dir: &Path) -> Vec<Row> {
    let mut r = csv::Reader::from_path(dir.join("results.csv")).unwrap();
    let headers = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            headers
                .iter()
                .zip(rec.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

const TIMING: &str = "[timing]\nwarmup = 1\nmin_samples = 3\nmax_time = 0.02\n";

/// Runs `body` (a sweep's op and axes) on the torch backend; the output and its rows.
fn run(py: &Path, body: &str, fault: Option<&str>) -> (Output, Vec<Row>, tempfile::TempDir) {
    let fault = fault.map(|f| ("ROCSWEEP_TEST_FAULT", OsStr::new(f)));
    run_sweep(
        py,
        &format!("name = \"t\"\nbackend = \"torch\"\n{body}\n{TIMING}"),
        &["--quiet", "--no-report"],
        fault.as_slice(),
    )
}

/// Writes `sweep` (a whole sweep file) and runs it through the Python `py`, one trial, into
/// `run/` of a fresh temporary directory, with `args` after `run` and `env` set for rocsweep
/// (and so for its workers and their Python); the output and the rows.
fn run_sweep(
    py: &Path,
    sweep: &str,
    args: &[&str],
    env: &[(&str, &OsStr)],
) -> (Output, Vec<Row>, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("s.toml");
    std::fs::write(&file, sweep).unwrap();
    let out = tmp.path().join("run");
    let mut c = bin();
    c.arg("--python")
        .arg(py)
        .args(["run", "--trials", "1"])
        .args(args)
        .arg("--out")
        .arg(&out)
        .arg(&file);
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    let r = if out.join("results.csv").exists() {
        rows(&out)
    } else {
        Vec::new()
    };
    (o, r, tmp)
}

fn text(o: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// (solver, status) -> count
fn tally(rows: &[Row]) -> HashMap<(String, String), usize> {
    let mut t = HashMap::new();
    for r in rows {
        *t.entry((r["solver"].clone(), r["status"].clone()))
            .or_default() += 1;
    }
    t
}

fn count(rows: &[Row], solver: &str, status: &str) -> usize {
    tally(rows)
        .get(&(solver.to_string(), status.to_string()))
        .copied()
        .unwrap_or(0)
}

#[test]
#[cfg_attr(rocsweep_missing_torch, ignore = "needs torch (scripts/torch-venv.sh)")]
fn conv_and_gemm_through_torch_are_checked_against_rocsweeps_reference() {
    let Some(py) = python() else { return };
    let (o, r, _t) = run(
        &py,
        "op = \"conv2d\"\n[axes]\ndirection = [\"fwd\", \"bwd_data\", \"bwd_weights\"]\n\
         layout = [\"nchw\", \"nhwc\"]\ndtype = [\"f32\", \"bf16\"]\nc_in = 4\nc_out = 8\nh = 6\n\
         groups = [1, 2]\nsolver = \"all\"",
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(r.len(), 48, "{}", text(&o));
    for solver in ["torch-default", "torch-benchmark"] {
        assert_eq!(count(&r, solver, "ok"), 24, "{:?}", tally(&r));
    }
    assert!(
        r.iter()
            .all(|x| x["reference"] == "cpu-f64" && x["backend"] == "torch")
    );
    assert!(
        r.iter().all(|x| x["device"].starts_with("cpu (torch ")),
        "{:?}",
        r[0]
    );

    let (o, r, _t) = run(
        &py,
        "op = \"gemm\"\n[axes]\nm = [1, 9]\nn = 12\nk = 7\ntrans_a = [false, true]\n\
         trans_b = [false, true]\nbatch = [1, 3]\ndtype = [\"f32\", \"f16\"]\n\
         solver = [\"torch-matmul\", \"torch-linear\", \"torch-matmul+cublaslt\"]",
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(count(&r, "torch-matmul", "ok"), 32, "{:?}", tally(&r));
    // F.linear shares one weight across a batch: unsupported for batch 3, said why.
    assert_eq!(count(&r, "torch-linear", "ok"), 16, "{:?}", tally(&r));
    assert_eq!(count(&r, "torch-linear", "unsupported"), 16);
    // A BLAS preference is a GPU matter; torch on the CPU says so instead of ignoring it.
    assert_eq!(count(&r, "torch-matmul+cublaslt", "unsupported"), 32);
    let why: Vec<&str> = r
        .iter()
        .filter(|x| x["status"] == "unsupported")
        .map(|x| x["error"].as_str())
        .collect();
    assert!(
        why.iter().any(|w| w.contains("F.linear shares one weight")),
        "{why:?}"
    );
    assert!(why.iter().any(|w| w.contains("BLAS preference")), "{why:?}");
}

#[test]
#[cfg_attr(rocsweep_missing_torch, ignore = "needs torch (scripts/torch-venv.sh)")]
fn rng_copy_and_cast_through_torch() {
    let Some(py) = python() else { return };
    let (o, r, _t) = run(
        &py,
        "op = \"rng\"\n[axes]\ncount = 20001\nmean = [0, 2.5]\ndtype = [\"f32\", \"f16\", \"bf16\"]\nsolver = \"all\"",
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    for solver in ["torch-randn", "torch-randn_like", "torch-normal_"] {
        assert_eq!(count(&r, solver, "ok"), 6, "{solver}: {:?}", tally(&r));
    }
    assert_eq!(count(&r, "torch-rand", "ok"), 2, "{:?}", tally(&r));
    assert!(
        r.iter()
            .all(|x| x["status"] != "ok" || x["reference"] == "statistical")
    );

    let (o, r, _t) = run(
        &py,
        "op = \"copy\"\n[axes]\ndirection = [\"h2d\", \"d2h\", \"d2d\"]\n\
         memory = [\"pageable\", \"pinned\", \"mmap\"]\nbytes = [4, 65540]\nsolver = \"all\"",
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // Pinned memory needs torch's GPU, except for a device-to-device copy that never touches it.
    for solver in ["torch-to", "torch-to-nonblocking"] {
        assert_eq!(count(&r, solver, "ok"), 14, "{:?}", tally(&r));
        assert_eq!(count(&r, solver, "unsupported"), 4, "{:?}", tally(&r));
    }
    assert!(
        r.iter()
            .all(|x| x["status"] != "ok" || x["reference"] == "cpu-exact")
    );

    let (o, r, _t) = run(
        &py,
        "op = \"cast\"\n[axes]\nfrom = [\"f32\", \"f16\", \"bf16\"]\nto = [\"f32\", \"f16\", \"bf16\"]\ncount = 1000\nsolver = \"all\"",
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    for solver in ["torch-to", "torch-method", "torch-cpu"] {
        assert_eq!(count(&r, solver, "ok"), 9, "{:?}", tally(&r));
    }
}

#[test]
#[cfg_attr(rocsweep_missing_torch, ignore = "needs torch (scripts/torch-venv.sh)")]
fn graph_through_torch_eager_and_compiled() {
    let Some(py) = python() else { return };
    let (o, r, _t) = run(
        &py,
        "op = \"graph\"\n[axes]\nchannels = 4\nsize = 5\nreplays = 3\nkeep_outputs = [false, true]\n\
         solver = \"all\"\n[limits]\ncompile = 600\nrun = 600",
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(count(&r, "torch-eager", "ok"), 2, "{:?}", tally(&r));
    assert_eq!(count(&r, "torch-compile", "ok"), 2, "{:?}", tally(&r));
    // `solver = "all"` leaves CUDA graphs out where torch has no GPU.
    assert_eq!(count(&r, "torch-cudagraph", "ok"), 0);
    assert_eq!(r.len(), 4, "{:?}", tally(&r));
}

#[test]
#[cfg_attr(rocsweep_missing_torch, ignore = "needs torch (scripts/torch-venv.sh)")]
fn faults_happen_inside_python_and_become_crash_hang_and_exit_rows() {
    let Some(py) = python() else { return };
    let (o, r, _t) = run(
        &py,
        "op = \"gemm\"\n[axes]\nm = [8, 16, 24, 32, 40, 48]\nsolver = \"torch-matmul\"\n[limits]\nrun = 20",
        Some("m=16:segv@run;m=24:hang@run;m=32:exit@verify;m=40:abort@compile"),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let by_m: HashMap<&str, &Row> = r.iter().map(|x| (x["m"].as_str(), x)).collect();
    let at = |m: &str| -> (&str, &str, &str) {
        let x = by_m[m];
        (&x["status"], &x["phase"], &x["error"])
    };
    assert_eq!(at("8").0, "ok");
    assert_eq!(at("48").0, "ok", "the worker after the faults runs");
    let (s, p, e) = at("16");
    assert_eq!((s, p), ("crash", "run"), "{e}");
    assert!(e.contains("SIGSEGV"), "{e}");
    let (s, p, _) = at("24");
    assert_eq!((s, p), ("hang", "run"));
    let (s, p, e) = at("32");
    assert_eq!((s, p), ("crash", "verify"), "{e}");
    assert!(e.contains("exited with code 17"), "{e}");
    let (s, p, e) = at("40");
    assert_eq!((s, p), ("crash", "compile"), "{e}");
    assert!(e.contains("SIGABRT"), "{e}");
    // The Python side carried them out: the worker's log says its Python ended.
    assert!(
        e.contains("torch worker (Python) ended"),
        "the crash came from the Python process: {e}"
    );
}

#[test]
#[cfg_attr(rocsweep_missing_torch, ignore = "needs torch (scripts/torch-venv.sh)")]
fn a_torch_exception_is_an_error_row_with_torchs_message() {
    let Some(py) = python() else { return };
    // 4e13 bytes: torch's CPU allocator refuses it with its own RuntimeError.
    let (o, r, _t) = run(
        &py,
        "op = \"rng\"\n[axes]\ncount = [10000000000000, 1000]\nsolver = \"torch-randn\"",
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let big = r.iter().find(|x| x["count"] == "10000000000000").unwrap();
    assert_eq!(big["status"], "error");
    assert!(
        big["error"].starts_with("torch: RuntimeError: ")
            && big["error"].contains("can't allocate memory"),
        "{}",
        big["error"]
    );
    let small = r.iter().find(|x| x["count"] == "1000").unwrap();
    assert_eq!(small["status"], "ok", "the same worker goes on");
}

#[test]
#[cfg_attr(rocsweep_missing_torch, ignore = "needs torch (scripts/torch-venv.sh)")]
fn env_axes_reach_the_python_side() {
    let Some(py) = python() else { return };
    let (o, r, _t) = run(
        &py,
        "op = \"gemm\"\n[axes]\nm = [4, 8]\nsolver = \"torch-matmul\"\n\
         [env_axes]\nTORCH_BLAS_PREFER_HIPBLASLT = [\"0\", \"1\"]",
        // A fault that needs the variable in the Python process's own environment.
        Some("m=8&env.TORCH_BLAS_PREFER_HIPBLASLT=1:exit@run"),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let mut seen: Vec<(String, String, String)> = r
        .iter()
        .map(|x| (x["env"].clone(), x["m"].clone(), x["status"].clone()))
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        vec![
            (
                "TORCH_BLAS_PREFER_HIPBLASLT=0".into(),
                "4".into(),
                "ok".into()
            ),
            (
                "TORCH_BLAS_PREFER_HIPBLASLT=0".into(),
                "8".into(),
                "ok".into()
            ),
            (
                "TORCH_BLAS_PREFER_HIPBLASLT=1".into(),
                "4".into(),
                "ok".into()
            ),
            (
                "TORCH_BLAS_PREFER_HIPBLASLT=1".into(),
                "8".into(),
                "crash".into()
            ),
        ]
    );
}

#[test]
#[cfg_attr(rocsweep_missing_torch, ignore = "needs torch (scripts/torch-venv.sh)")]
fn resume_finishes_a_torch_run_whose_supervisor_was_killed() {
    let Some(py) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let sweep = tmp.path().join("s.toml");
    std::fs::write(
        &sweep,
        format!(
            "name = \"t\"\nbackend = \"torch\"\nop = \"gemm\"\n[axes]\nm = \"range(1..=12)\"\n\
             solver = \"torch-matmul\"\n{TIMING}"
        ),
    )
    .unwrap();
    let out = tmp.path().join("run");
    let mut c = bin();
    c.arg("--python").arg(&py).arg("run").arg(&sweep);
    c.args(["--trials", "1", "--quiet", "--no-report", "--out"])
        .arg(&out);
    std::os::unix::process::CommandExt::process_group(&mut c, 0);
    let mut child = c.spawn().unwrap();
    // Killed (with its workers) once some rows are in, whenever that is.
    let csv = out.join("results.csv");
    let lines = || {
        std::fs::read_to_string(&csv)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    while lines() < 4 {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: kill(2) of the process group this test started.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    let _ = child.wait();
    let before = rows(&out).len();
    let o = bin()
        .arg("--python")
        .arg(&py)
        .args(["run", "--resume"])
        .arg(&out)
        .args(["--quiet", "--no-report"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = rows(&out);
    assert!(before < 12, "killed before the end ({before} rows)");
    assert_eq!(r.len(), 12, "{}", text(&o));
    let mut ms: Vec<u32> = r.iter().map(|x| x["m"].parse().unwrap()).collect();
    ms.sort();
    assert_eq!(ms, (1..=12).collect::<Vec<_>>(), "each unit once");
    // The unit the kill caught is `interrupted` (a suspect, not rerun by a plain resume); every
    // other unit ran once, through torch.
    let bad: Vec<&Row> = r.iter().filter(|x| x["status"] != "ok").collect();
    assert!(
        bad.len() <= 1 && bad.iter().all(|x| x["status"] == "interrupted"),
        "{bad:?}"
    );
    let o = bin()
        .arg("--python")
        .arg(&py)
        .args(["run", "--resume"])
        .arg(&out)
        .args(["--retry-interrupted", "--quiet", "--no-report"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = rows(&out);
    assert_eq!(r.len(), 12, "{}", text(&o));
    assert!(r.iter().all(|x| x["status"] == "ok"), "{r:?}");
}

#[test]
#[cfg_attr(rocsweep_missing_torch, ignore = "needs torch (scripts/torch-venv.sh)")]
fn a_python_without_torch_or_no_python_is_said_plainly() {
    // The system's python3 has no torch (the tests' own environment is elsewhere).
    let Some(_) = python() else { return };
    let system = ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| {
            p.is_file()
                && Command::new(p)
                    .args(["-c", "import torch"])
                    .output()
                    .is_ok_and(|o| !o.status.success())
        });
    let tmp = tempfile::tempdir().unwrap();
    let sweep = tmp.path().join("s.toml");
    std::fs::write(
        &sweep,
        "name = \"t\"\nbackend = \"torch\"\nop = \"gemm\"\n[axes]\nm = 4\n",
    )
    .unwrap();
    if let Some(system) = system {
        let out = tmp.path().join("run");
        let o = bin()
            .arg("--python")
            .arg(&system)
            .arg("run")
            .arg(&sweep)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        let t = text(&o);
        // A run whose backend cannot run here is bad input (exit 2), as for every backend.
        assert_eq!(o.status.code(), Some(2), "{t}");
        assert!(
            t.contains("the torch backend cannot run here")
                && t.contains("cannot import torch")
                && t.contains("--python"),
            "{t}"
        );
        assert!(!out.exists(), "nothing is written: {t}");
        let o = bin()
            .arg("--python")
            .arg(&system)
            .args(["probe", "--backend", "torch"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(5), "{}", text(&o));
        assert!(text(&o).contains("torch: unavailable"), "{}", text(&o));
    }
    // Beside a GPU library, torch must have a GPU too: its CPU numbers would pair two devices.
    let out = tmp.path().join("beside-cuda");
    let o = bin()
        .arg("--python")
        .arg(python().unwrap())
        .arg("run")
        .arg(&sweep)
        .args(["--backend", "torch,cuda", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("has no GPU") && text(&o).contains("beside cuda"),
        "{}",
        text(&o)
    );
    assert!(!out.exists(), "nothing is written");
    let o = bin()
        .args(["--python", "/nowhere/python3", "run"])
        .arg(&sweep)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--python /nowhere/python3: no such file"),
        "{}",
        text(&o)
    );
}

#[test]
#[cfg_attr(rocsweep_missing_torch, ignore = "needs torch (scripts/torch-venv.sh)")]
fn the_stand_alone_scripts_run_with_nothing_but_torch_and_pass_where_torch_is_right() {
    use rocsweep::markup::torch_script::torch_script;
    let Some(py) = python() else { return };
    use rocsweep::results::rundata::Params;
    let p = |kv: &[(&str, &str)]| Params::from_pairs(kv.iter().copied());
    let conv = |dir: &str, layout: &str| {
        p(&[
            ("direction", dir),
            ("layout", layout),
            ("dtype", "f32"),
            ("n", "2"),
            ("c_in", "4"),
            ("c_out", "6"),
            ("h", "7"),
            ("w", "7"),
            ("kernel", "3"),
            ("groups", "2"),
            ("stride", "2"),
            ("pad", "1"),
            ("dilation", "1"),
        ])
    };
    let gemm = |ta: &str, tb: &str, batch: &str| {
        p(&[
            ("m", "5"),
            ("n", "7"),
            ("k", "9"),
            ("batch", batch),
            ("trans_a", ta),
            ("trans_b", tb),
            ("dtype", "f32"),
            ("compute", "f32"),
        ])
    };
    let cases: Vec<(&str, Params, &str)> = vec![
        ("gemm", gemm("true", "false", "3"), "torch-matmul"),
        ("gemm", gemm("false", "true", "1"), "torch-linear"),
        ("conv2d", conv("fwd", "nhwc"), "torch-benchmark"),
        ("conv2d", conv("bwd_data", "nchw"), "torch-default"),
        ("conv2d", conv("bwd_weights", "nhwc"), "torch-default"),
        (
            "rng",
            p(&[
                ("count", "100000"),
                ("mean", "2"),
                ("std", "0.5"),
                ("dtype", "bf16"),
            ]),
            "torch-randn_like",
        ),
        (
            "rng",
            p(&[
                ("count", "100000"),
                ("mean", "0"),
                ("std", "1"),
                ("dtype", "f32"),
            ]),
            "torch-rand",
        ),
        (
            "copy",
            p(&[("direction", "h2d"), ("memory", "mmap"), ("bytes", "4096")]),
            "torch-to-nonblocking",
        ),
        (
            "copy",
            p(&[
                ("direction", "d2h"),
                ("memory", "pageable"),
                ("bytes", "4096"),
            ]),
            "torch-to",
        ),
        (
            "copy",
            p(&[
                ("direction", "h2d"),
                ("memory", "shared"),
                ("bytes", "4096"),
            ]),
            "torch-to",
        ),
        (
            "copy",
            p(&[
                ("direction", "h2d"),
                ("memory", "dataloader"),
                ("bytes", "4096"),
                ("pin_memory", "false"),
            ]),
            "torch-to-nonblocking",
        ),
        (
            "copy",
            p(&[
                ("direction", "h2d"),
                ("memory", "accelerate"),
                ("bytes", "4096"),
                ("pin_memory", "false"),
            ]),
            "torch-to",
        ),
        (
            "cast",
            p(&[("from", "f32"), ("to", "bf16"), ("count", "1000")]),
            "torch-method",
        ),
        (
            "graph",
            p(&[
                ("channels", "4"),
                ("size", "5"),
                ("replays", "3"),
                ("keep_outputs", "false"),
                ("dtype", "f32"),
            ]),
            "torch-eager",
        ),
    ];
    for (op, params, solver) in cases {
        let script = torch_script(op, &params, solver).unwrap();
        let o = Command::new(&py).arg("-c").arg(&script).output().unwrap();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(0), "{op} {solver}:\n{script}\n{t}");
        assert!(t.contains("ok"), "{op} {solver}: {t}");
    }
}

#[test]
#[cfg_attr(rocsweep_missing_torch, ignore = "needs torch (scripts/torch-venv.sh)")]
fn cpu_and_torch_side_by_side_say_which_layer_fails() {
    let Some(py) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let sweep = tmp.path().join("s.toml");
    std::fs::write(
        &sweep,
        format!(
            "name = \"pair\"\nop = \"gemm\"\nbackend = [\"cpu\", \"torch\"]\n[axes]\nm = [8, 16, 24, 32]\n{TIMING}"
        ),
    )
    .unwrap();
    let out = tmp.path().join("run");
    let o = bin()
        .arg("--python")
        .arg(&py)
        .arg("run")
        .arg(&sweep)
        .args(["--trials", "1", "--quiet", "--out"])
        .arg(&out)
        // Real workers on both sides; the output faults pick a layer by the backend= condition.
        .env(
            "ROCSWEEP_TEST_FAULT",
            "backend=torch&m=16:zeros@verify;backend=cpu&m=24:nan@verify;m=32:zeros@verify",
        )
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = rows(&out);
    assert_eq!(r.len(), 8, "one row per case and backend");
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    for (case, lib, torch, verdict) in [
        ("m=n=k=8", "cpu: ok", "default: ok", "**neither**"),
        ("m=n=k=16", "cpu: ok", "default: zeros", "**pytorch**"),
        (
            "m=n=k=24",
            "cpu: nonfinite",
            "default: ok",
            "**library only**",
        ),
        ("m=n=k=32", "cpu: zeros", "default: zeros", "**library**"),
    ] {
        let line = format!("| {case} | {lib} | {torch} | {verdict} |");
        assert!(summary.contains(&line), "{line} in:\n{summary}");
    }
    // The table leads with the verdicts counted, and lists the failing cases first.
    assert!(
        summary.contains("**3 of 4 cases fail in some layer (listed first): 1 library · 1 pytorch · 1 library only · 1 neither.**"),
        "{summary}"
    );
    let neither = summary.find("| m=n=k=8 |").unwrap();
    let library = summary.find("| m=n=k=32 |").unwrap();
    assert!(library < neither, "{summary}");
    assert!(
        summary.contains("```python") && summary.contains("torch.matmul(A, B)"),
        "the torch side's stand-alone script: {summary}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("Which layer fails"),
        "report.html has the table"
    );
    // The manifest: what each backend's first worker said; the torch layer's libraries with
    // their digests (the torch process's own mapped files).
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    let t = &m["backends"][1];
    assert_eq!(t["backend"], "torch", "{m}");
    assert!(
        t["versions"]["torch"]
            .as_str()
            .is_some_and(|v| !v.is_empty()),
        "{t}"
    );
    // Clock and temperature come from the vendor's management library for torch's device (as
    // for the cuda and rocm backends); on torch's CPU device the manifest says there are none.
    assert_eq!(
        t["versions"]["telemetry"], "none (torch runs on the CPU)",
        "{t}"
    );
    let libs = t["libraries"].as_array().unwrap();
    assert!(
        libs.iter()
            .any(|l| l["path"].as_str().is_some_and(|p| p.contains("libtorch"))),
        "{t}"
    );
    assert!(
        libs.iter()
            .all(|l| l["sha256"].as_str().is_some_and(|h| h.len() == 64)),
        "every mapped library has its SHA-256: {t}"
    );
}

#[test]
#[cfg_attr(rocsweep_missing_torch, ignore = "needs torch (scripts/torch-venv.sh)")]
fn the_seed_sweeps_run_over_both_layers() {
    let Some(py) = python() else { return };
    // Each seed's sweep as shipped (rocm + torch), here over cpu + torch with smaller sizes: the
    // files parse, every torch unit works on torch's CPU and the which-layer table is written.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sweeps");
    let shrink: [(&str, &[&str]); 5] = [
        ("seed-000-randn-like", &["count=4096"]),
        ("seed-001-to-device", &["bytes=4096"]),
        ("seed-002-bf16-to-f32", &["count=4099"]),
        (
            "seed-003-reduce-overhead",
            &[
                "channels=4",
                "size=5",
                "dtype=f32",
                "solver=closure-list,torch-eager,torch-compile",
            ],
        ),
        (
            "seed-004-conv2d-benchmark",
            &["h=16,32", "solver=im2col,torch-benchmark"],
        ),
    ];
    for (name, axes) in shrink {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("run");
        let mut c = bin();
        c.arg("--python").arg(&py).arg("run");
        c.arg(root.join(format!("{name}.toml")));
        c.args([
            "--backend",
            "cpu,torch",
            "--trials",
            "1",
            "--quiet",
            "--out",
        ])
        .arg(&out);
        c.args([
            "--set",
            "timing.min_samples=1",
            "--set",
            "timing.max_time=0.01",
        ]);
        for a in axes {
            c.args(["--axis", a]);
        }
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{name}: {}", text(&o));
        let r = rows(&out);
        let torch_ok = r
            .iter()
            .filter(|x| x["backend"] == "torch" && x["status"] == "ok")
            .count();
        let wrong: Vec<String> = r
            .iter()
            .filter(|x| !matches!(x["status"].as_str(), "ok" | "unsupported"))
            .map(|x| {
                format!(
                    "{} {} {} {}",
                    x["backend"], x["solver"], x["status"], x["error"]
                )
            })
            .collect();
        assert!(torch_ok > 0 && wrong.is_empty(), "{name}: {wrong:?}");
        let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
        assert!(
            summary.contains("## Which layer fails"),
            "{name}: {summary}"
        );
    }
}

/// What each worker log says about the Python processes that prepared units: solver -> pids.
fn preparing_pids(run: &Path) -> HashMap<String, std::collections::BTreeSet<u32>> {
    let mut by_solver: HashMap<String, std::collections::BTreeSet<u32>> = HashMap::new();
    for entry in std::fs::read_dir(run.join("workers")).unwrap() {
        let log = std::fs::read_to_string(entry.unwrap().path()).unwrap_or_default();
        for line in log.lines() {
            let Some(rest) = line.strip_prefix("rocsweep torch worker: process ") else {
                continue;
            };
            let Some((pid, solver)) = rest.split_once(" prepares ") else {
                continue;
            };
            by_solver
                .entry(solver.trim().to_string())
                .or_default()
                .insert(pid.parse().unwrap());
        }
    }
    by_solver
}

#[test]
#[cfg_attr(rocsweep_missing_torch, ignore = "needs torch (scripts/torch-venv.sh)")]
fn each_torch_solver_runs_in_a_python_process_of_its_own_and_rows_say_how_they_were_timed() {
    let Some(py) = python() else { return };
    // Two shapes, each through both solvers, in the order a worker takes them (shape by shape):
    // a Python shared between solvers would see both in turn.
    let (o, r, t) = run(
        &py,
        "op = \"conv2d\"\n[axes]\nc_in = [4, 8]\nc_out = 8\nh = 6\nsolver = \"all\"",
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(r.len(), 4, "{}", text(&o));
    let pids = preparing_pids(&t.path().join("run"));
    let default = &pids["torch-default"];
    let benchmark = &pids["torch-benchmark"];
    assert_eq!(default.len(), 1, "one process per solver: {pids:?}");
    assert_eq!(benchmark.len(), 1, "one process per solver: {pids:?}");
    assert!(default.is_disjoint(benchmark), "{pids:?}");
    // The CPU has nothing to flush: the default cold cache reads `warm`, timed by the host clock.
    for row in &r {
        assert_eq!(
            (row["timing_method"].as_str(), row["cache"].as_str()),
            ("wall", "warm"),
            "{row:?}"
        );
    }
}

/// Each `run` line the torch worker traced in the run's worker logs: (k, start, end).
fn traced_samples(run: &Path) -> Vec<(u32, f64, f64)> {
    let mut samples = Vec::new();
    for entry in std::fs::read_dir(run.join("workers")).unwrap() {
        let log = std::fs::read_to_string(entry.unwrap().path()).unwrap_or_default();
        for line in log.lines() {
            let Some(rest) = line.strip_prefix("rocsweep torch worker: run ") else {
                continue;
            };
            let field = |name: &str| {
                rest.split_whitespace()
                    .find_map(|f| f.strip_prefix(name))
                    .unwrap_or_else(|| panic!("no {name} in {line:?}"))
                    .to_string()
            };
            samples.push((
                field("k=").parse().unwrap(),
                field("start=").parse().unwrap(),
                field("end=").parse().unwrap(),
            ));
        }
    }
    samples
}

#[test]
#[cfg_attr(rocsweep_missing_torch, ignore = "needs torch (scripts/torch-venv.sh)")]
fn rocsweep_torch_trace_logs_each_samples_start_and_end_and_nothing_without_it() {
    let Some(py) = python() else { return };
    let sweep = format!(
        "name = \"t\"\nbackend = \"torch\"\nop = \"gemm\"\n[axes]\nm = 8\nn = 8\nk = 8\nsolver = \"torch-matmul\"\n{TIMING}"
    );
    let args = ["--quiet", "--no-report"];
    let (o, r, t) = run_sweep(
        &py,
        &sweep,
        &args,
        &[("ROCSWEEP_TORCH_TRACE", OsStr::new("1"))],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(count(&r, "torch-matmul", "ok"), 1, "{}", text(&o));
    let samples = traced_samples(&t.path().join("run"));
    // The first call, one warmup and at least three samples (TIMING), each on the host's
    // monotonic clock, one after the other.
    assert!(samples.len() >= 5, "{samples:?}");
    assert!(
        samples.iter().all(|&(k, a, b)| k >= 1 && a <= b),
        "{samples:?}"
    );
    assert!(samples.windows(2).all(|w| w[0].2 <= w[1].1), "{samples:?}");
    let (o, _, t) = run_sweep(&py, &sweep, &args, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(traced_samples(&t.path().join("run")).is_empty());
}

#[test]
#[cfg_attr(rocsweep_missing_torch, ignore = "needs torch (scripts/torch-venv.sh)")]
fn rocsweep_torch_kernels_records_each_samples_calls_and_never_writes_through_a_link() {
    let Some(py) = python() else { return };
    let sweep = format!(
        "name = \"t\"\nbackend = \"torch\"\nop = \"gemm\"\n[axes]\nm = 8\nn = 16\nk = 8\nsolver = \"torch-matmul\"\n{TIMING}"
    );
    let args = ["--quiet", "--no-report"];
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("kernels.jsonl");
    let (o, r, _t) = run_sweep(
        &py,
        &sweep,
        &args,
        &[("ROCSWEEP_TORCH_KERNELS", log.as_os_str())],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(count(&r, "torch-matmul", "ok"), 1, "{}", text(&o));
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The first call, one warmup and at least three samples (TIMING): a line each, naming the
    // solver and problem, and holding the sample's calls: on the CPU one call, then k more.
    assert!(lines.len() >= 5, "{lines:?}");
    for l in &lines {
        assert_eq!(l["solver"], "torch-matmul", "{l}");
        assert_eq!(
            (l["problem"]["op"].as_str(), l["problem"]["n"].as_u64()),
            (Some("gemm"), Some(16)),
            "{l}"
        );
        assert_eq!(l["method"], "wall", "{l}");
        let k = l["k"].as_u64().unwrap();
        assert_eq!(l["calls"].as_u64(), Some(k), "{l}");
        let calls = l["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e[0] == "aten::matmul")
            .count();
        assert_eq!(calls as u64, if k > 1 { k + 1 } else { 1 }, "{l}");
    }
    assert!(lines.iter().any(|l| l["k"].as_u64() > Some(1)), "{lines:?}");
    // A link planted at the path is not followed: the file it names stays as it was.
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "kept").unwrap();
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let (o, _, _t) = run_sweep(
        &py,
        &sweep,
        &args,
        &[("ROCSWEEP_TORCH_KERNELS", link.as_os_str())],
    );
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "kept",
        "{}",
        text(&o)
    );
}

#[test]
#[cfg_attr(rocsweep_missing_torch, ignore = "needs torch (scripts/torch-venv.sh)")]
fn a_cpu_and_torch_run_counts_its_solvers_up_front_and_names_both_backends() {
    let Some(py) = python() else { return };
    let (o, rows, tmp) = run_sweep(
        &py,
        &format!(
            "name = \"t\"\nop = \"gemm\"\n[axes]\nm = [8, 16]\nn = 8\nk = 8\nsolver = \"all\"\n{TIMING}"
        ),
        &["--backend", "cpu,torch"],
        &[],
    );
    let out = tmp.path().join("run");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // Two cases, each through the CPU's gemm solvers and torch's two.
    let cpu = rows.iter().filter(|r| r["backend"] == "cpu").count();
    assert_eq!(rows.len() - cpu, 4, "{}", text(&o));
    // The progress counts every unit from the first line: [1/N] .. [N/N], N the rows.
    let stdout = String::from_utf8_lossy(&o.stdout);
    let totals: std::collections::BTreeSet<String> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix('[')?.split_once(']'))
        .filter_map(|(frac, _)| frac.split_once('/').map(|(_, t)| t.to_string()))
        .collect();
    assert_eq!(
        totals.into_iter().collect::<Vec<_>>(),
        vec![rows.len().to_string()],
        "{stdout}"
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let n = rows.len();
    assert!(
        summary.contains(&format!("| units | {n} planned · {n} with a row |")),
        "{summary}"
    );
    assert!(summary.contains("| backend | cpu, torch |"), "{summary}");
    assert!(summary.contains("| env combinations | none |"), "{summary}");
    let libs = summary
        .lines()
        .find(|l| l.starts_with("| libraries |"))
        .unwrap_or_default();
    assert!(
        libs.contains("cpu: ") && libs.contains("torch: ") && libs.contains("torch 2."),
        "{libs}"
    );

    // `repro` of a torch unit names torch's libraries, and its command, pasted as printed
    // where the python3 on PATH has no torch, runs the unit through the run's own Python.
    let torch_unit = rows.iter().find(|r| r["backend"] == "torch").unwrap();
    let o = bin()
        .args(["repro"])
        .arg(&out)
        .arg(&torch_unit["unit_id"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let page = String::from_utf8_lossy(&o.stdout).to_string();
    let backend_line = page
        .lines()
        .find(|l| l.starts_with("| backend |"))
        .unwrap_or_default();
    assert!(
        backend_line.contains("torch 2.") && !backend_line.contains("gemm 0."),
        "{backend_line}"
    );
    let start = page.find("Exactly this unit").unwrap();
    let block = &page[start..];
    let block = &block[block.find("```sh\n").unwrap() + 6..];
    let block = &block[..block.find("\n```").unwrap()];
    assert!(block.contains("--python "), "{block}");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_rocsweep")).parent().unwrap();
    let work = tmp.path().join("paste");
    std::fs::create_dir(&work).unwrap();
    let o = Command::new("bash")
        .arg("-c")
        .arg(block)
        .current_dir(&work)
        .env("PATH", format!("{}:/usr/bin:/bin", bin_dir.display()))
        .env_remove("ROCSWEEP_PYTHON")
        .env_remove("VIRTUAL_ENV")
        .env_remove("CONDA_PREFIX")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{block}\n{}", text(&o));
}

#[test]
#[cfg_attr(rocsweep_missing_torch, ignore = "needs torch (scripts/torch-venv.sh)")]
fn a_cpu_profiler_trace_imports_without_a_traced_time_share() {
    let Some(py) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("trace.json");
    // A real PyTorch profiler trace of CPU calls: no device time in it.
    let o = Command::new(&py)
        .arg("-c")
        .arg(
            "import sys, torch\n\
             from torch.profiler import profile, ProfilerActivity\n\
             a, b = torch.rand(16, 32), torch.rand(32, 8)\n\
             with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as p:\n\
             \x20   for _ in range(3):\n\
             \x20       torch.matmul(a, b)\n\
             p.export_chrome_trace(sys.argv[1])\n",
        )
        .arg(&trace)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out = tmp.path().join("imported");
    let o = bin()
        .arg("import")
        .arg(&trace)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains("PyTorch profiler trace op calls"),
        "{summary}"
    );
    let gemm = std::fs::read_to_string(out.join("gemm.toml")).unwrap();
    assert!(gemm.contains("m = 16"), "{gemm}");
    assert!(
        !gemm.contains("traced_ms ="),
        "no device time, no traced_ms:\n{gemm}"
    );
    // The imported sweep's report speaks of calls only.
    let run = tmp.path().join("run");
    let o = bin()
        .args([
            "run",
            "--backend",
            "cpu",
            "--trials",
            "1",
            "--quiet",
            "--out",
        ])
        .arg(&run)
        .arg(out.join("gemm.toml"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let report = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(report.contains("of the model's calls"), "{report}");
    assert!(!report.contains("of its traced time"), "{report}");
}

/// Seed 001's batch path on torch's CPU device, beside the CPU's own copy of the same bytes.
const BATCH_SWEEP: &str = "op = \"copy\"\nbackend = [\"cpu\", \"torch\"]\n\
    [axes]\ndirection = \"h2d\"\nmemory = [\"shared\", \"dataloader\", \"accelerate\"]\n\
    bytes = [4096, 65536]\nsolver = \"all\"\n[limits]\nrun = 20\n";

/// Runs BATCH_SWEEP with `env` set for rocsweep (and so for its workers and their Python).
fn run_batch(py: &Path, env: &[(&str, &OsStr)]) -> (Output, Vec<Row>, tempfile::TempDir) {
    let sweep = format!("name = \"t\"\n{BATCH_SWEEP}\n{TIMING}");
    run_sweep(py, &sweep, &["--quiet"], env)
}

#[test]
#[cfg_attr(rocsweep_missing_torch, ignore = "needs torch (scripts/torch-venv.sh)")]
fn the_dataloader_path_runs_each_kind_and_a_fault_there_is_pytorchs() {
    let Some(py) = python() else { return };
    let (o, r, t) = run_batch(&py, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // Every kind through both torch solvers, each verified bit for bit, and the CPU's copy.
    for memory in ["shared", "dataloader", "accelerate"] {
        for solver in ["torch-to", "torch-to-nonblocking", "memcpy"] {
            let n = r
                .iter()
                .filter(|x| x["memory"] == memory && x["solver"] == solver)
                .filter(|x| x["status"] == "ok" && x["reference"] == "cpu-exact")
                .count();
            assert_eq!(n, 2, "{memory} {solver}: {:?}", tally(&r));
        }
    }
    let m = std::fs::read_to_string(t.path().join("run/manifest.json")).unwrap();
    assert!(
        m.contains("\"accelerate\": \"1."),
        "accelerate's version: {m}"
    );

    // A worker of the DataLoader that dies: its batch never comes, an error through PyTorch
    // only, so the which-layer table says `pytorch`.
    let fault = OsStr::new("memory=dataloader&backend=torch:segv@compile");
    let (o, r, t) = run_batch(&py, &[("ROCSWEEP_TEST_FAULT", fault)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let broken: Vec<&Row> = r
        .iter()
        .filter(|x| x["memory"] == "dataloader" && x["backend"] == "torch")
        .collect();
    assert!(
        broken
            .iter()
            .all(|x| x["status"] == "error" && x["error"].contains("DataLoader worker")),
        "{broken:?}"
    );
    // The torch process itself lived on: the other kinds are ok.
    assert!(
        r.iter()
            .filter(|x| x["memory"] != "dataloader")
            .all(|x| x["status"] == "ok"),
        "{:?}",
        tally(&r)
    );
    let summary = std::fs::read_to_string(t.path().join("run/summary.md")).unwrap();
    assert!(
        summary
            .contains("| memory=dataloader bytes=4096 | cpu: ok | torch-to: error | **pytorch** |"),
        "{summary}"
    );
}

#[test]
#[cfg_attr(rocsweep_missing_torch, ignore = "needs torch (scripts/torch-venv.sh)")]
fn accelerate_missing_is_unsupported_with_why() {
    let Some(py) = python() else { return };
    // An `accelerate` that cannot be imported, ahead of the real one on the Python's path.
    let tmp = tempfile::tempdir().unwrap();
    let shadow = tmp.path().join("accelerate");
    std::fs::create_dir(&shadow).unwrap();
    std::fs::write(
        shadow.join("__init__.py"),
        "raise ImportError('no accelerate in this test')\n",
    )
    .unwrap();
    let (o, r, _t) = run_batch(&py, &[("PYTHONPATH", tmp.path().as_os_str())]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let acc: Vec<&Row> = r
        .iter()
        .filter(|x| x["memory"] == "accelerate" && x["backend"] == "torch")
        .collect();
    assert_eq!(acc.len(), 4);
    assert!(
        acc.iter().all(|x| x["status"] == "unsupported"
            && x["error"].contains("accelerate is not installed in")
            && x["error"].contains("no accelerate in this test")),
        "{acc:?}"
    );
}

/// Issue 45: the DataLoader's sharing strategy is an axis; each strategy the platform offers runs
/// and verifies and says which it used; one the platform refuses is a row with why (here a
/// platform that offers only `file_system`, as macOS does, made by a `sitecustomize` over the real
/// torch), and the strategy is left as it was for the next unit.
#[test]
#[cfg_attr(rocsweep_missing_torch, ignore = "needs torch (scripts/torch-venv.sh)")]
fn the_sharing_strategy_is_an_axis_and_one_the_platform_refuses_is_a_row_with_why() {
    let Some(py) = python() else { return };
    let sweep = "op = \"copy\"\n[axes]\ndirection = \"h2d\"\n\
        memory = [\"dataloader\", \"pageable\"]\n\
        sharing_strategy = [\"default\", \"file_descriptor\", \"file_system\"]\n\
        bytes = 4096\nsolver = \"torch-to\"\n[limits]\nrun = 20\n";
    let (o, r, _t) = run(&py, sweep, None);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let pick = |r: &[Row], memory: &str, s: &str| -> Row {
        r.iter()
            .find(|x| x["memory"] == memory && x["sharing_strategy"] == s)
            .cloned()
            .unwrap_or_else(|| panic!("no row for {memory} {s}: {r:?}"))
    };
    // Linux offers both strategies; its default is file_descriptor.
    for (s, used) in [
        ("default", "file_descriptor"),
        ("file_descriptor", "file_descriptor"),
        ("file_system", "file_system"),
    ] {
        let row = pick(&r, "dataloader", s);
        assert_eq!(row["status"], "ok", "{row:?}");
        assert!(
            row["chosen"].contains(&format!("sharing {used}")),
            "{row:?}"
        );
    }
    // Not a DataLoader: the strategy has no meaning there.
    let row = pick(&r, "pageable", "file_system");
    assert_eq!(row["status"], "unsupported", "{row:?}");
    assert!(
        row["error"].contains("sharing_strategy is a DataLoader's"),
        "{row:?}"
    );
    assert_eq!(pick(&r, "pageable", "default")["status"], "ok");

    // A platform that offers only file_system.
    let site = tempfile::tempdir().unwrap();
    std::fs::write(
        site.path().join("sitecustomize.py"),
        "import torch.multiprocessing as mp\n\
         mp.get_all_sharing_strategies = lambda: {'file_system'}\n\
         mp.set_sharing_strategy('file_system')\n",
    )
    .unwrap();
    let (o, r, _t) = run_sweep(
        &py,
        &format!("name = \"t\"\nbackend = \"torch\"\n{sweep}\n{TIMING}"),
        &["--quiet", "--no-report"],
        &[("PYTHONPATH", site.path().as_os_str())],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let refused = pick(&r, "dataloader", "file_descriptor");
    assert_eq!(refused["status"], "unsupported", "{refused:?}");
    assert!(
        refused["error"].contains(
            "this platform does not offer sharing strategy file_descriptor; \
             torch.multiprocessing offers file_system"
        ),
        "{refused:?}"
    );
    for s in ["default", "file_system"] {
        let row = pick(&r, "dataloader", s);
        assert_eq!(row["status"], "ok", "{row:?}");
        assert!(row["chosen"].contains("sharing file_system"), "{row:?}");
    }
}

#[test]
#[cfg_attr(rocsweep_missing_torch, ignore = "needs torch (scripts/torch-venv.sh)")]
fn a_dataloader_that_hangs_is_a_hang_in_run_and_leaves_no_worker_behind() {
    let Some(py) = python() else { return };
    // Every process of this run carries the mark in its environment (they inherit it).
    let mark = format!("rocsweep-test-{}", std::process::id());
    let (o, r, _t) = run_sweep(
        &py,
        "name = \"t\"\nop = \"copy\"\nbackend = \"torch\"\n[axes]\ndirection = \"h2d\"\n\
         memory = \"dataloader\"\nbytes = [4096, 8192]\nsolver = \"torch-to\"\n[limits]\nrun = 3\n",
        &["--quiet", "--no-report"],
        &[
            ("ROCSWEEP_TEST_MARK", OsStr::new(&mark)),
            ("ROCSWEEP_TEST_FAULT", OsStr::new("bytes=4096:hang@compile")),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let hung = r.iter().find(|x| x["bytes"] == "4096").unwrap();
    assert_eq!(
        (hung["status"].as_str(), hung["phase"].as_str()),
        ("hang", "run"),
        "{hung:?}"
    );
    let next = r.iter().find(|x| x["bytes"] == "8192").unwrap();
    assert_eq!(next["status"], "ok", "the next unit runs: {next:?}");
    // No process of the run is left: not the torch Python, not a DataLoader worker.
    let needle = format!("ROCSWEEP_TEST_MARK={mark}");
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|e| {
            std::fs::read(e.path().join("environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == needle.as_bytes()))
        })
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

/// Issue 43 in the torch layer: a sequence's steps run in one Python process; a conv that returns
/// zeros only after two GEMMs ran before it (the `prior_gemm` fault, carried out on the output
/// the Python side returned) is found, passes alone, is shrunk to the two GEMMs, and its
/// `minimal.py` replays those calls with plain torch.
#[test]
#[cfg_attr(rocsweep_missing_torch, ignore = "needs torch (scripts/torch-venv.sh)")]
fn a_sequence_in_the_torch_layer_is_shrunk_and_its_minimal_script_runs() {
    let Some(py) = python() else { return };
    let sequence = format!(
        "name = \"torch-seq\"\nbackend = \"torch\"\n{TIMING}\n\
         [[step]]\nop = \"gemm\"\nm = 32\n\n[[step]]\nop = \"conv2d\"\nc_in = 8\nh = 8\n\n\
         [[step]]\nop = \"gemm\"\nm = 48\n\n[[step]]\nop = \"conv2d\"\nc_in = 64\nc_out = 16\nh = 8\n"
    );
    let fault = OsStr::new("prior_gemm>=2&c_in=64:zeros@verify");
    let (o, rows, tmp) = run_sweep(&py, &sequence, &[], &[("ROCSWEEP_TEST_FAULT", fault)]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains("step at run order 4 returns zeros only after run order 1, 3 ran in the same process; it passes alone"),
        "{out}"
    );
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[3]["status"], "zeros");
    assert_eq!(rows[3]["needs"], "1;3");
    // The sequence's gemm and conv steps (two torch solvers) ran in one Python process.
    let log = std::fs::read_dir(tmp.path().join("run/workers"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("r001-"))
        .unwrap();
    let log = std::fs::read_to_string(log).unwrap();
    let pythons: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("runs in Python process"))
        .collect();
    assert_eq!(pythons.len(), 1, "{log}");
    assert!(pythons[0].contains("torch solver (every solver)"), "{log}");
    let script = tmp.path().join("run/minimal.py");
    let text_py = std::fs::read_to_string(&script).unwrap();
    assert_eq!(text_py.matches("torch.matmul").count(), 2, "{text_py}");
    let o = Command::new(&py).arg(&script).output().unwrap();
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && said.trim_end().ends_with("ok"),
        "{said}{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

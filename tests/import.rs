//! `rocsweep import`: vendor logs and profiler traces into weighted sweeps, through the real
//! binary. The H200 fixtures (tests/fixtures/import/h200/) are one real PyTorch run seen through
//! four lenses, which must agree on the problems; the public fixtures quote lines from ROCm and
//! NVIDIA issues and documentation (tests/fixtures/import/SOURCES.md).

use rocsweep::spec::{self, Sweep};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn rocsweep(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rocsweep"));
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("rocsweep runs")
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name)
        .display()
        .to_string()
}

fn import(files: &[&str], out: &Path) -> Output {
    let mut args = vec!["import"];
    args.extend_from_slice(files);
    args.extend(["--out", out.to_str().expect("utf-8 path"), "--quiet"]);
    rocsweep(&args, &[])
}

fn sweep(path: &Path) -> Sweep {
    spec::load(path, &[]).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Case id -> (weight, traced_ms) of an imported sweep.
fn weights(path: &Path) -> BTreeMap<String, (f64, Option<f64>)> {
    let s = sweep(path);
    let w = s.case_weights().expect("an imported sweep is weighted");
    s.cases()
        .map(|c| c.expect("a valid case"))
        .map(|c| {
            let x = w[&c.id];
            (c.id, (x.calls, x.traced_ms))
        })
        .collect()
}

fn imported(files: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("model");
    let o = import(files, &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (tmp, out)
}

#[test]
fn one_h200_run_seen_through_the_trace_cudnn_and_tunableop_gives_the_same_problems() {
    let (_t1, trace) = imported(&[&fixture("h200/trace.json")]);
    let (_t2, cudnn) = imported(&[&fixture("h200/cudnn-graphs.log")]);
    let (_t3, tunable) = imported(&[&fixture("h200/tunableop_untuned0.csv")]);
    let conv = weights(&trace.join("conv2d.toml"));
    let gemm = weights(&trace.join("gemm.toml"));
    assert_eq!(
        conv.len(),
        28,
        "28 distinct convolutions (fwd, bwd data, bwd weights)"
    );
    assert_eq!(gemm.len(), 24);
    // Two profiled training steps: every problem was called twice, and timed.
    assert!(conv.values().chain(gemm.values()).all(|(w, _)| *w == 2.0));
    assert!(
        conv.values()
            .chain(gemm.values())
            .all(|(_, t)| t.is_some_and(|ms| ms > 0.0))
    );
    let ids = |m: &BTreeMap<String, _>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        ids(&weights(&cudnn.join("conv2d.toml"))),
        ids(&conv),
        "cuDNN's graphs are the trace's convolutions"
    );
    // TunableOp records column-major BLAS calls, the trace row-major shapes: same problems.
    assert_eq!(
        ids(&weights(&tunable.join("gemm.toml"))),
        ids(&gemm),
        "TunableOp's GEMMs are the trace's"
    );
    assert!(!cudnn.join("gemm.toml").exists() && !tunable.join("conv2d.toml").exists());
}

#[test]
fn cublaslt_trace_lines_are_read_with_their_layouts_and_transposes() {
    let (_t, out) = imported(&[&fixture("h200/cublaslt.log")]);
    let text = std::fs::read_to_string(out.join("gemm.toml")).expect("gemm.toml");
    // The attention's batched product: 64 x (128 x 128 x 64) in bf16, from a cublasLtTSTMatmul line.
    assert!(text.contains("batch = 64"), "{text}");
    let summary = std::fs::read_to_string(out.join("summary.md")).expect("summary.md");
    assert!(
        summary.contains("78 cuBLASLt trace log lines, 78 problems"),
        "{summary}"
    );
    let w = weights(&out.join("gemm.toml"));
    assert_eq!(
        w.values().map(|(c, _)| c).sum::<f64>(),
        78.0,
        "one call per trace line"
    );
}

#[test]
fn public_log_lines_import_and_what_is_not_a_problem_is_counted() {
    let cases = [
        ("miopen-public.log", "conv2d.toml", "MIOpen CBAInfer"),
        ("rocblas-public.log", "gemm.toml", "rocBLAS profile (YAML)"),
        (
            "hipblaslt-public.log",
            "gemm.toml",
            "hipBLASLt bench commands",
        ),
        ("cublaslt-public.log", "gemm.toml", "cuBLASLt trace log"),
        ("tunableop-public.csv", "gemm.toml", "TunableOp"),
        ("tunableop-untuned-public.csv", "gemm.toml", "TunableOp"),
    ];
    for (file, sweep_file, expect) in cases {
        let (_t, out) = imported(&[&fixture(file)]);
        assert!(!weights(&out.join(sweep_file)).is_empty(), "{file}");
        let summary = std::fs::read_to_string(out.join("summary.md")).expect("summary.md");
        assert!(summary.contains(expect), "{file}: {summary}");
    }
    // A Find alone is a problem prepared, not run: weighted by its Finds only when never run.
    let (_t, out) = imported(&[&fixture("miopen-public.log")]);
    let text = std::fs::read_to_string(out.join("conv2d.toml")).expect("conv2d.toml");
    assert!(
        text.contains("# source") || text.contains("miopen-public.log:"),
        "source lines quoted"
    );
}

const MODEL_LOG: &str = "\
some unrelated start-up line
MIOpen(HIP): Command [LogCmdFindConvolution] ./bin/MIOpenDriver conv -n 1 -c 4 -H 8 -W 8 -k 4 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1
";

/// 96 calls of a 4->4 conv, 3 of an 8->8 conv, one Find-only 4->8, a truncated line, a 3-D one.
fn model_log(dir: &Path) -> PathBuf {
    let run = |c: u32, k: u32| {
        format!(
            "[host 1]MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c {c} -H 8 -W 8 -k {k} -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1\n"
        )
    };
    let mut text = MODEL_LOG.to_string();
    for _ in 0..96 {
        text.push_str(&run(4, 4));
    }
    for _ in 0..3 {
        text.push_str(&run(8, 8));
    }
    text.push_str("MIOpen(HIP): Command [LogCmdFindConvolution] ./bin/MIOpenDriver conv -n 1 -c 4 -H 8 -W 8 -k 8 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1\n");
    text.push_str(
        "MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c 4 -H\n",
    );
    text.push_str("MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv --spatial_dim 3 -n 1 -c 4 -H 8 -W 8 --in_d 8 -k 4 -F 1\n");
    let path = dir.join("miopen.log");
    std::fs::write(&path, text).expect("write log");
    path
}

#[test]
fn a_model_log_becomes_weighted_cases_and_the_report_says_the_share_of_calls() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let log = model_log(tmp.path());
    let out = tmp.path().join("model");
    let o = rocsweep(
        &[
            "import",
            log.to_str().expect("utf-8"),
            "--out",
            out.to_str().expect("utf-8"),
        ],
        &[],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary = std::fs::read_to_string(out.join("summary.md")).expect("summary.md");
    let shown = format!("{}:103: -H has no value", log.display());
    assert!(
        summary.contains(&shown),
        "malformed line by file and line: {summary}"
    );
    assert!(
        summary.contains("MIOpen 3-D convolution | 1 |"),
        "{summary}"
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("3 distinct problems, 100 calls"));
    let sweep_file = out.join("conv2d.toml");
    let text = std::fs::read_to_string(&sweep_file).expect("conv2d.toml");
    assert!(
        text.contains("weight = 96") && text.contains("weight = 3") && text.contains("weight = 1"),
        "{text}"
    );
    assert!(text.contains("seen only in Find"), "{text}");
    assert!(
        text.contains(&format!("# {}:3: ", log.display())),
        "source lines quoted: {text}"
    );

    // Run it on the CPU with the 8->8 conv hanging: the report weighs the statuses by calls.
    let run = tmp.path().join("run");
    let o = rocsweep(
        &[
            "run",
            sweep_file.to_str().expect("utf-8"),
            "--backend",
            "cpu",
            "--out",
            run.to_str().expect("utf-8"),
            "--trials",
            "1",
            "--axis",
            "solver=im2col",
            "--set",
            "limits.run=1",
            "--quiet",
        ],
        &[("ROCSWEEP_TEST_FAULT", "c_in=8:hang@run")],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(run.join("summary.md")).expect("summary.md");
    assert!(md.contains("## The model's calls"), "{md}");
    assert!(
        md.contains("97.0% of the model's calls ran ok; 3.0% hang: 1 shape"),
        "{md}"
    );
    let html = std::fs::read_to_string(run.join("report.html")).expect("report.html");
    assert!(
        html.contains("97.0% of the model&#39;s calls ran ok")
            || html.contains("97.0% of the model's calls ran ok"),
        "report.html"
    );
    let o = rocsweep(&["recommend", run.to_str().expect("utf-8")], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rec = std::fs::read_to_string(run.join("recommend.md")).expect("recommend.md");
    assert!(
        rec.contains("Weighted by the model's calls: 97.0%"),
        "{rec}"
    );
    let cmp = tmp.path().join("cmp");
    let o = rocsweep(
        &[
            "compare",
            run.to_str().expect("utf-8"),
            run.to_str().expect("utf-8"),
            "--out",
            cmp.to_str().expect("utf-8"),
        ],
        &[],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(cmp.join("compare.md")).expect("compare.md");
    assert!(
        md.contains("weighted by the model's calls per case"),
        "{md}"
    );
}

#[test]
fn bad_input_is_exit_2_and_writes_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    let o = import(&["/nonexistent/miopen.log"], &out);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read /nonexistent/miopen.log"));
    assert!(!out.exists());

    let junk = tmp.path().join("junk.log");
    std::fs::write(
        &junk,
        "hello\nworld\nMIOpen(HIP): Command [LogCmdBNorm] ./bin/MIOpenDriver bnorm -n 1\n",
    )
    .expect("write");
    let log = model_log(tmp.path());
    // One good file and one with nothing to import: nothing is written at all.
    let o = import(
        &[log.to_str().expect("utf-8"), junk.to_str().expect("utf-8")],
        &out,
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("{}: nothing to import (3 lines, 1 MIOpen command log line, 0 problems, 1 not supported, 2 other lines skipped)", junk.display())), "{err}");
    assert!(!out.exists(), "no half-written directory");
    assert!(std::fs::read_dir(tmp.path()).expect("ls").all(|e| {
        !e.expect("entry")
            .file_name()
            .to_string_lossy()
            .contains("staging")
    }));

    std::fs::create_dir(&out).expect("mkdir");
    std::fs::write(out.join("keep"), "x").expect("write");
    let o = import(&[log.to_str().expect("utf-8")], &out);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not empty"));
}

/// Issue 43: the calls in order become `sequence.toml`, a loop as `repeat`, and it replays.
#[test]
fn calls_in_order_become_a_sequence_with_the_loop_as_repeat_and_it_runs() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let line = |c: u32, k: u32| {
        format!(
            "MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c {c} -H 8 -W 8 -k {k} -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1\n"
        )
    };
    let mut text = String::new();
    for _ in 0..4 {
        text.push_str(&line(4, 8));
        text.push_str(&line(8, 8));
        text.push_str(&line(4, 8));
    }
    let log = tmp.path().join("loop.log");
    std::fs::write(&log, text).expect("write log");
    let out = tmp.path().join("model");
    let o = import(&[log.to_str().expect("utf-8")], &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let seq_path = out.join("sequence.toml");
    let text = std::fs::read_to_string(&seq_path).expect("sequence.toml written");
    let seq = spec::sequence::load_str("sequence.toml", &text, &[]).expect("it loads");
    assert_eq!((seq.steps.len(), seq.repeat), (3, 4), "{text}");
    let c_in: Vec<String> = seq
        .steps
        .iter()
        .map(|s| s.case.values[2].to_string())
        .collect();
    assert_eq!(c_in, ["4", "8", "4"]);
    let summary = std::fs::read_to_string(out.join("summary.md")).expect("summary");
    assert!(
        summary.contains("the 12 calls the sources recorded in order, as 3 steps x repeat 4"),
        "{summary}"
    );
    // It replays: 12 steps in one process on the CPU backend.
    let run = tmp.path().join("run");
    let o = rocsweep(
        &[
            "run",
            seq_path.to_str().expect("utf-8"),
            "--backend",
            "cpu",
            "--out",
            run.to_str().expect("utf-8"),
            "--set",
            "timing.max_time=0.01",
        ],
        &[],
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.contains("12 steps run in 1 env combination(s), 0 failed"),
        "{stdout}"
    );
}

#[test]
fn a_profiler_trace_gives_its_calls_in_order_and_a_tunableop_list_gives_none() {
    let (_t, out) = imported(&[&fixture("h200/trace.json")]);
    let text = std::fs::read_to_string(out.join("sequence.toml")).expect("sequence.toml");
    let seq = spec::sequence::load_str("sequence.toml", &text, &[]).expect("it loads");
    let calls: f64 = ["conv2d.toml", "gemm.toml"]
        .iter()
        .map(|f| out.join(f))
        .filter(|p| p.exists())
        .flat_map(|p| weights(&p).into_values().map(|(w, _)| w))
        .sum();
    assert_eq!(
        seq.order().len() as f64,
        calls,
        "every traced call is a step, in order"
    );
    let (_t, out) = imported(&[&fixture("tunableop-public.csv")]);
    assert!(!out.join("sequence.toml").exists());
}

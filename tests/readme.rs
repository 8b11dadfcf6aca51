//! Every command README.md shows runs (issue 41). The commands of its ```sh blocks are read
//! and run with the built binary: `run` with `--dry-run` (the sweep and every option parsed and
//! planned, nothing run: most need a GPU), the analysis commands against committed fixture runs
//! standing in for the run directories the README names, `import` on committed logs. A command
//! the README gains that this test cannot place fails it, so the README cannot show a command
//! that does not work.

#[path = "common/copy_dir.rs"]
mod copy_dir;
use copy_dir::copy_dir;
use std::path::Path;
use std::process::Command;

/// The commands of README.md's ```sh blocks: (line, text without its `# comment`).
fn readme_commands() -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let mut out = Vec::new();
    let mut in_sh = false;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with("```") {
            in_sh = !in_sh && t == "```sh";
            continue;
        }
        if in_sh {
            let cmd = t.split("  #").next().unwrap_or("").trim();
            if !cmd.is_empty() && !cmd.starts_with('#') {
                out.push((i + 1, cmd.to_string()));
            }
        }
    }
    out
}

/// The set-up and test commands the README may show, which this test does not run: CI runs
/// the two commands itself (`.ci/run`), and installing is the wheel test's (scripts/wheel-test.sh).
const NOT_RUN_HERE: &[&str] = &[
    "cargo install --locked --path .",
    "pip install .",
    "cargo test --workspace",
];

/// What stands in for each name the README uses: run directories (committed fixture runs),
/// logs to import (committed logs), ROCm trees (Debian's HIP runtime), a unit id (the first
/// unit of the run it follows).
fn stand_ins(tmp: &Path) -> Vec<(&'static str, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fixture = |name: &str, as_name: &str| -> String {
        let to = tmp.join(as_name);
        if !to.exists() {
            copy_dir(&root.join("tests/fixtures/runs").join(name), &to);
        }
        to.display().to_string()
    };
    let first_unit = {
        let csv = std::fs::read_to_string(root.join("tests/fixtures/runs/rdna1-like/results.csv"))
            .unwrap();
        let line = csv.lines().nth(1).unwrap().to_string();
        line.split(',').next().unwrap().to_string()
    };
    let hip = "/usr/lib/x86_64-linux-gnu".to_string();
    vec![
        ("runs/rdna1", fixture("rdna1-like", "rdna1")),
        ("runs/rocm-6.4", fixture("release-a", "rocm-6.4")),
        ("runs/rocm-7.1", fixture("release-b", "rocm-7.1")),
        ("runs/seed-001", tmp.join("seed-001").display().to_string()),
        // A GEMM run of `default` beside every solution (the fake ROCm's hipBLASLt 0.12.1, on
        // the H200 machine: reports/h200/tune/); its verification finds no tree here.
        ("runs/gemm", fixture("tune-gemm", "gemm")),
        (
            "runs/gemm-tuned",
            tmp.join("gemm-tuned").display().to_string(),
        ),
        ("/opt/rocm-6.4.1", hip.clone()),
        ("/opt/rocm-7.1.0", hip),
        (
            "trace.json",
            root.join("tests/fixtures/import/h200/trace.json")
                .display()
                .to_string(),
        ),
        (
            "miopen.log",
            root.join("tests/fixtures/import/miopen-public.log")
                .display()
                .to_string(),
        ),
        ("my-model", tmp.join("my-model").display().to_string()),
        ("UNIT_ID", first_unit),
    ]
}

/// The exit codes a README command may end with here, where there is no GPU.
fn accepted(args: &[String]) -> &'static [i32] {
    match args.first().map(String::as_str) {
        // `selftest --backend rocm` compiles its kernels with the real hipRTC, then finds no
        // device: 5, "cannot run here".
        Some("selftest") => &[0, 5],
        // A regression between the two fixture runs is what they are for: 3.
        Some("compare") => &[0, 3],
        _ => &[0],
    }
}

#[test]
fn every_command_the_readme_shows_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let subs = stand_ins(tmp.path());
    let bin = env!("CARGO_BIN_EXE_rocsweep");
    let mut ran = 0;
    for (line, cmd) in readme_commands() {
        if NOT_RUN_HERE.contains(&cmd.as_str()) {
            continue;
        }
        let rest = if let Some(r) = cmd.strip_prefix("cargo run --release -- ") {
            r.to_string()
        } else if let Some(r) = cmd.strip_prefix("rocsweep ") {
            r.to_string()
        } else if cmd == "rocsweep" {
            String::new()
        } else {
            panic!("README.md:{line}: `{cmd}` is not a rocsweep command this test knows");
        };
        let mut args: Vec<String> = rest
            .split_whitespace()
            .map(|a| {
                let mut a = a.to_string();
                for (name, stand_in) in &subs {
                    if a == *name || a.starts_with(&format!("{name}@")) {
                        a = a.replacen(name, stand_in, 1);
                    } else if let Some(tail) = a.strip_prefix(&format!("{name}/")) {
                        a = format!("{stand_in}/{tail}");
                    }
                }
                a
            })
            .collect();
        if args.first().map(String::as_str) == Some("run") {
            args.push("--dry-run".into());
        }
        let o = Command::new(bin)
            .args(&args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        let code = o.status.code().unwrap_or(-1);
        assert!(
            accepted(&args).contains(&code),
            "README.md:{line}: `{cmd}` exited {code}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        ran += 1;
    }
    assert!(ran >= 10, "only {ran} README commands ran");
}

#[test]
fn the_readme_shows_the_two_commands_ci_runs() {
    let cmds: Vec<String> = readme_commands().into_iter().map(|(_, c)| c).collect();
    for c in [
        "cargo run --release -- run sweeps/quickstart.toml",
        "cargo test --workspace",
    ] {
        assert!(cmds.iter().any(|x| x == c), "README.md lacks `{c}`");
    }
    let ci =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/run")).unwrap();
    assert!(ci.contains("\ncargo test --workspace\n"));
    assert!(ci.contains("cargo run --release -- run sweeps/quickstart.toml"));
}

#[test]
fn every_device_script_is_cited_by_the_validation_record_with_a_report_it_reproduces() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let record = std::fs::read_to_string(root.join("docs/validation.md")).unwrap();
    let mut uncited = Vec::new();
    for entry in std::fs::read_dir(root.join("scripts/device")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        // A line names the script and at least one report folder that exists.
        let reproduces = record
            .lines()
            .filter(|l| l.contains(&format!("`scripts/device/{name}`")))
            .any(|l| {
                l.split('`')
                    .filter(|p| p.starts_with("reports/"))
                    .any(|p| root.join(p).is_dir())
            });
        if !reproduces {
            uncited.push(name);
        }
    }
    assert!(
        uncited.is_empty(),
        "docs/validation.md does not cite these scripts/device files with a report folder: {uncited:?}"
    );
}

#[test]
fn the_docs_put_what_works_first_and_give_the_test_time_once() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut texts = vec![(
        "README.md".to_string(),
        std::fs::read_to_string(root.join("README.md")).unwrap(),
    )];
    for e in std::fs::read_dir(root.join("docs")).unwrap() {
        let p = e.unwrap().path();
        let name = format!("docs/{}", p.file_name().unwrap().to_string_lossy());
        texts.push((name, std::fs::read_to_string(&p).unwrap()));
    }
    // Nothing is published: no page shows `pip install rocsweep` before what works today.
    for (name, text) in &texts {
        let first = text
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with("pip install") || l.starts_with("uv tool install"));
        assert!(
            first.is_none_or(|l| !l.starts_with("pip install rocsweep")
                && !l.starts_with("uv tool install rocsweep")),
            "{name}: the first install command is {first:?}, which fails until a release is published"
        );
    }
    // The test suite's duration, wherever a page gives it, is one figure.
    let mut figures = std::collections::BTreeSet::new();
    for (_, text) in &texts {
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        for (i, _) in flat.match_indices("test suite about ") {
            let rest = &flat[i + "test suite about ".len()..];
            if let Some(n) = rest.split(' ').next() {
                figures.insert(n.to_string());
            }
        }
        assert!(
            !flat.contains("suite takes about"),
            "another way of giving the test time"
        );
    }
    assert!(figures.len() <= 1, "the test time is given as {figures:?}");
}

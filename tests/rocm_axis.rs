//! ROCm trees as an axis, with real worker processes on the fake ROCm: two `/opt/rocm-X.Y`
//! prefixes of the fake library, whose fault model makes different cases fail in each tree
//! (its rules match the `ROCSWEEP_ROCM` value each tree's workers are given), run in one sweep
//! (`rocm = [A, B]`, or `--rocm A --rocm B`); rows carry their tree, `compare RUN@A RUN@B`
//! sets one tree against the other, `repro` names the tree, and a tree with no HIP runtime is
//! refused before anything is written.

#[allow(dead_code)]
#[path = "rocm_trees/layout.rs"]
mod layout;

use layout::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// rocsweep with a clean ROCm environment (no tree from the caller) and `model` as the fake's
/// fault model.
fn rocsweep(tmp: &Path, args: &[&str], model: &Path) -> Output {
    rocsweep_with(tmp, args, model, &[])
}

fn rocsweep_with(tmp: &Path, args: &[&str], model: &Path, vars: &[(&str, &str)]) -> Output {
    command(tmp, args, model, vars).output().unwrap()
}

fn command(tmp: &Path, args: &[&str], model: &Path, vars: &[(&str, &str)]) -> Command {
    let empty = tmp.join("empty-opt");
    std::fs::create_dir_all(&empty).unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_rocsweep"));
    c.args(args)
        .env_remove("ROCM_PATH")
        .env_remove("ROCSWEEP_ROCM")
        .env_remove("ROCSWEEP_ROCM_LIB_DIR")
        .env_remove("VIRTUAL_ENV")
        .env_remove("CONDA_PREFIX")
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("ROCSWEEP_TEST_FAULT")
        .env("ROCSWEEP_OPT_DIR", &empty)
        .env("HOME", &empty)
        .env("FAKE_ROCM_MODEL", model)
        .envs(vars.iter().copied());
    c
}

/// Two fake trees (ROCm 5 and 7 prefixes) and a fault model under which tree A returns NaN for
/// m=32 and tree B zeros for m=64 (hipBLASLt and rocBLAS alike; they are column-major, so the
/// sweep's row-major m is the library's n).
fn trees(tmp: &Path) -> (String, String, PathBuf) {
    let (a, b) = (tmp.join("opt/rocm-5.7.1"), tmp.join("opt/rocm-7.1.0"));
    fake_prefix(&a, 5);
    fake_prefix(&b, 7);
    let (a, b) = (a.display().to_string(), b.display().to_string());
    let mut text = std::fs::read_to_string(model("healthy.toml")).unwrap();
    for lib in ["hipblaslt", "rocblas"] {
        text.push_str(&format!(
            "\n[[fault]]\nlib = \"{lib}\"\naction = \"nan\"\nwhen = {{ n = \"32\" }}\nenv = {{ ROCSWEEP_ROCM = \"{a}\" }}\n\
             \n[[fault]]\nlib = \"{lib}\"\naction = \"zeros\"\nwhen = {{ n = \"64\" }}\nenv = {{ ROCSWEEP_ROCM = \"{b}\" }}\n"
        ));
    }
    let m = tmp.join("two-trees.toml");
    std::fs::write(&m, text).unwrap();
    (a, b, m)
}

fn sweep(tmp: &Path, rocm: &str) -> PathBuf {
    let p = tmp.join("trees.toml");
    std::fs::write(
        &p,
        format!(
            "name = \"trees\"\nop = \"gemm\"\nbackend = \"rocm\"\n{rocm}\n[axes]\nm = [32, 64]\nn = 16\nk = 16\n[timing]\nenabled = false\n"
        ),
    )
    .unwrap();
    p
}

fn run_args<'a>(sweep: &'a str, out: &'a str) -> Vec<&'a str> {
    vec!["run", sweep, "--out", out, "--trials", "1", "--quiet"]
}

/// (rocm, m, status) of every row.
fn rows(dir: &Path) -> Vec<(String, String, String)> {
    let (header, rows) = rocsweep::results::csv::read(&dir.join("results.csv")).unwrap();
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let mut v: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| {
            (
                r[col("rocm")].clone(),
                r[col("m")].clone(),
                r[col("status")].clone(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn two_trees_in_one_run_are_compared_tree_against_tree() {
    if !have_patchelf() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, model) = trees(tmp.path());
    let s = sweep(tmp.path(), &format!("rocm = [\"{a}\", \"{b}\"]"));
    let out = tmp.path().join("run");
    let (sf, of) = (s.display().to_string(), out.display().to_string());
    let o = rocsweep(tmp.path(), &run_args(&sf, &of), &model);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let want = vec![
        (a.clone(), "32".to_string(), "nonfinite".to_string()),
        (a.clone(), "64".to_string(), "ok".to_string()),
        (b.clone(), "32".to_string(), "ok".to_string()),
        (b.clone(), "64".to_string(), "zeros".to_string()),
    ];
    assert_eq!(rows(&out), want);
    // The manifest names each tree's worker and its own files.
    let man = rocsweep::results::manifest::read(&out).unwrap();
    let trees: Vec<(&str, &str, &str)> = man
        .rocm_trees
        .iter()
        .map(|t| (t.env.as_str(), t.rocm.as_str(), t.path.as_str()))
        .collect();
    let (ka, kb) = (format!("rocm={a}"), format!("rocm={b}"));
    assert_eq!(
        trees,
        [
            (ka.as_str(), a.as_str(), a.as_str()),
            (kb.as_str(), b.as_str(), b.as_str())
        ],
        "{:?}",
        man.rocm_trees
    );
    for (t, dir) in man.rocm_trees.iter().zip([&a, &b]) {
        assert!(
            t.tree.starts_with(&format!("prefix {dir} (from --rocm")),
            "{}",
            t.tree
        );
        assert!(!t.libraries.is_empty());
        for f in &t.libraries {
            assert!(f.path.starts_with(dir.as_str()), "{f:?} is not in {dir}");
            assert_eq!(f.sha256.len(), 64, "{f:?}");
        }
    }
    // A resume finds a row for every unit of both trees.
    let o = rocsweep(tmp.path(), &["run", "--resume", &of], &model);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("nothing to do"));
    // The report has a panel per tree: its env labels name them.
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains(&format!("rocm={b}")), "{summary}");
    // Its provenance section names each tree, how it was chosen and its own files.
    let trees_md = &summary[summary.find("## ROCm trees").expect("a ROCm trees section")..];
    for (t, major) in [(&a, 5), (&b, 7)] {
        assert!(
            trees_md.contains(&format!("rocm={t}: prefix {t} (from --rocm {t})")),
            "{trees_md}"
        );
        assert!(
            trees_md.contains(&format!("| libamdhip64.so.{major}.0.0 | {major}.0.0 | `")),
            "{trees_md}"
        );
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<h2>ROCm trees</h2>"));

    // One tree against the other, in the same run.
    let cmp = tmp.path().join("cmp");
    let o = rocsweep(
        tmp.path(),
        &[
            "compare",
            &format!("{of}@{a}"),
            &format!("{of}@{b}"),
            "--out",
            &cmp.display().to_string(),
        ],
        &model,
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let (header, cmp_rows) = rocsweep::results::csv::read(&cmp.join("compare.csv")).unwrap();
    let t = header.iter().position(|h| h == "transition").unwrap();
    let mut transitions: Vec<&str> = cmp_rows.iter().map(|r| r[t].as_str()).collect();
    transitions.sort();
    assert_eq!(transitions, ["nonfinite->ok", "ok->zeros"], "{cmp_rows:?}");
    let md = std::fs::read_to_string(cmp.join("compare.md")).unwrap();
    assert!(
        md.contains(&format!("run@{a}")) && md.contains(&format!("run@{b}")),
        "{md}"
    );
    // Each tree's own files: tree A's HIP runtime is ROCm 5's, tree B's ROCm 7's.
    assert!(
        md.contains(&format!("- only in A: `{a}/lib/libamdhip64.so.5.0.0`"))
            && md.contains(&format!("- only in B: `{b}/lib/libamdhip64.so.7.0.0`")),
        "{md}"
    );
    // A label the run does not have is bad input naming its trees.
    let o = rocsweep(
        tmp.path(),
        &["compare", &of, &format!("{of}@/opt/rocm-9")],
        &model,
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no ROCm tree `/opt/rocm-9`") && err.contains(&a),
        "{err}"
    );

    // repro names the unit's tree.
    let data = rocsweep::results::rundata::RunData::load(&out).unwrap();
    let zeros = data
        .rows
        .iter()
        .find(|r| r.status.name() == "zeros")
        .unwrap();
    let o = rocsweep(tmp.path(), &["repro", &of, &zeros.unit_id], &model);
    let page = String::from_utf8_lossy(&o.stdout);
    assert!(page.contains(&format!("rocm = \"{b}\"")), "{page}");
    assert!(page.contains(&format!("--rocm {b}")), "{page}");

    // The same trees from the command line: the same units.
    let s2 = sweep(tmp.path(), "");
    let out2 = tmp.path().join("run2");
    let (sf2, of2) = (s2.display().to_string(), out2.display().to_string());
    let mut args = run_args(&sf2, &of2);
    args.extend(["--rocm", &a, "--rocm", &b]);
    let o = rocsweep(tmp.path(), &args, &model);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(rows(&out2), want);
}

#[test]
fn a_tree_with_no_hip_runtime_is_refused_before_anything_is_written() {
    if !have_patchelf() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (a, _, model) = trees(tmp.path());
    let empty = tmp.path().join("not-rocm");
    std::fs::create_dir_all(&empty).unwrap();
    let e = empty.display().to_string();
    let s = sweep(tmp.path(), &format!("rocm = [\"{a}\", \"{e}\"]"));
    let out = tmp.path().join("run");
    let (sf, of) = (s.display().to_string(), out.display().to_string());
    let o = rocsweep(tmp.path(), &run_args(&sf, &of), &model);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("rocm `{e}`")) && err.contains("no HIP runtime"),
        "{err}"
    );
    assert!(!out.exists());
    // `--rocm` twice is for `run` only.
    let o = rocsweep(tmp.path(), &["probe", "--rocm", &a, "--rocm", &e], &model);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("only `run` takes several ROCm trees"));
}

/// Issue 40, D4: a tree named twice, by `--rocm` or in the sweep, by the same or another
/// spelling of its path, is refused with exit 2 before anything is written.
#[test]
fn a_tree_named_twice_is_refused_either_way() {
    if !have_patchelf() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (a, _, model) = trees(tmp.path());
    let out = tmp.path().join("run");
    let o = tmp.path().join("run").display().to_string();
    let s = sweep(tmp.path(), "").display().to_string();
    let mut args = run_args(&s, &o);
    args.extend(["--rocm", &a, "--rocm", &a]);
    let r = rocsweep(tmp.path(), &args, &model);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "--rocm: `{a}` is named twice; each ROCm tree may be named once"
        )),
        "{err}"
    );
    assert!(!out.exists());
    let other = format!("{a}/");
    let mut args = run_args(&s, &o);
    args.extend(["--rocm", &a, "--rocm", &other]);
    let r = rocsweep(tmp.path(), &args, &model);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(err.contains("are the same tree"), "{err}");
    let s2 = sweep(tmp.path(), &format!("rocm = [\"{a}\", \"{other}\"]"));
    let r = rocsweep(tmp.path(), &run_args(&s2.display().to_string(), &o), &model);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(err.contains("are the same tree"), "{err}");
    assert!(!out.exists());
}

/// Every file under `dir` with its bytes (what "nothing was changed" compares).
/// Whether patchelf is here (the fake prefixes are laid out with it).
fn have_patchelf() -> bool {
    have(
        "patchelf",
        Command::new("patchelf").arg("--version").output().is_ok(),
    )
}

/// Changes the library file `lib` as a rebuild would; its original bytes.
fn rebuild(lib: &Path) -> Vec<u8> {
    let original = std::fs::read(lib).unwrap();
    let mut changed = original.clone();
    changed.extend_from_slice(b"rebuilt");
    std::fs::write(lib, &changed).unwrap();
    original
}

/// A resume refused (exit 2) because `lib` changed since the run recorded it.
fn assert_refused_for_changed(o: &Output, lib: &Path) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("its library files changed since the run recorded them")
            && err.contains(&lib.display().to_string()),
        "{err}"
    );
}

fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_resume_with_another_tree_or_changed_library_files_is_refused_and_changes_nothing() {
    if !have_patchelf() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, _) = trees(tmp.path());
    let healthy = model("healthy.toml");
    let s = sweep(tmp.path(), "");
    let out = tmp.path().join("run");
    let (sf, of) = (s.display().to_string(), out.display().to_string());
    // A run on tree A that stops with units left: m=32 crashes and so does the health probe.
    let mut args = run_args(&sf, &of);
    args.extend(["--rocm", &a]);
    let fault = [("ROCSWEEP_TEST_FAULT", "m=32:segv@run;probe:segv@run")];
    let o = rocsweep_with(tmp.path(), &args, &healthy, &fault);
    assert_eq!(
        o.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let before = snapshot(&out);

    // Tree B: refused, naming both trees and how to go on.
    let o = rocsweep(
        tmp.path(),
        &["run", "--resume", &of, "--rocm", &b],
        &healthy,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "were run on the ROCm tree prefix {a} (from --rocm {a})"
        )) && err.contains(&format!(
            "this rocsweep would now use prefix {b} (from --rocm {b})"
        )) && err.contains(&format!("rocsweep run --resume {of} --rocm {a}"))
            && err.contains("nothing was changed"),
        "{err}"
    );
    assert_eq!(snapshot(&out), before, "the run directory is as it was");

    // Tree A with a library file changed since: refused, naming the file.
    let hip = Path::new(&a).join("lib/libamdhip64.so.5.0.0");
    let original = rebuild(&hip);
    let o = rocsweep(
        tmp.path(),
        &["run", "--resume", &of, "--rocm", &a],
        &healthy,
    );
    assert_refused_for_changed(&o, &hip);
    assert_eq!(snapshot(&out), before, "the run directory is as it was");

    // The recorded tree as it was: the resume runs the rest.
    std::fs::write(&hip, &original).unwrap();
    let o = rocsweep(
        tmp.path(),
        &["run", "--resume", &of, "--rocm", &a],
        &healthy,
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let statuses: Vec<(String, String)> =
        rows(&out).into_iter().map(|(_, m, st)| (m, st)).collect();
    assert_eq!(
        statuses,
        [
            ("32".to_string(), "crash".to_string()),
            ("64".to_string(), "ok".to_string())
        ]
    );
}

/// The processes whose parent is `pid` (read from /proc).
fn children(pid: u32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            // pid (comm) state ppid ...: comm may hold spaces, so read after its closing paren.
            let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            after.split_whitespace().nth(1) == Some(&pid.to_string())
        })
        .collect()
}

/// Starts a run over trees A and B in which tree B hangs in its unit with library n = `hang_n`
/// (under a run limit that outlasts the test), waits until the manifest names `want` trees
/// (or 120 s), then SIGKILLs the supervisor and its workers. The run directory, its path as
/// given, and how many trees the manifest named before the kill.
fn killed_in_b(tmp: &Path, a: &str, b: &str, hang_n: u32, want: usize) -> (PathBuf, String, usize) {
    let mut text = std::fs::read_to_string(model("healthy.toml")).unwrap();
    for lib in ["hipblaslt", "rocblas"] {
        text.push_str(&format!(
            "\n[[fault]]\nlib = \"{lib}\"\naction = \"hang\"\nwhen = {{ n = \"{hang_n}\" }}\nenv = {{ ROCSWEEP_ROCM = \"{b}\" }}\n"
        ));
    }
    let hangs = tmp.join("b-hangs.toml");
    std::fs::write(&hangs, text).unwrap();
    let s = sweep(
        tmp,
        &format!("rocm = [\"{a}\", \"{b}\"]\n[limits]\nrun = 600"),
    );
    let out = tmp.join("run");
    let (sf, of) = (s.display().to_string(), out.display().to_string());
    let mut run = command(tmp, &run_args(&sf, &of), &hangs, &[])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let named = || rocsweep::results::manifest::read(&out).map_or(0, |m| m.rocm_trees.len());
    // The hang has begun once B's worker is in its unit: the journal says `started` for it
    // after A's units (A runs first) have their rows.
    let recorded = loop {
        let n = named();
        let started_b = std::fs::read_to_string(out.join("journal.ndjson"))
            .map_or(0, |j| j.matches("\"ev\":\"started\"").count());
        if (n >= want && started_b >= 3) || std::time::Instant::now() > deadline {
            break n;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let workers = children(run.id());
    // SAFETY: signalling our own child, then the workers it started.
    unsafe {
        libc::kill(run.id() as i32, libc::SIGKILL);
        for w in &workers {
            libc::kill(*w, libc::SIGKILL);
        }
    }
    let _ = run.wait();
    (out, of, recorded)
}

#[test]
fn a_run_killed_mid_way_already_names_its_trees_and_its_resume_is_checked_against_them() {
    if !have_patchelf() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, _) = trees(tmp.path());
    // Tree B hangs in its second unit: both trees' workers have reported a unit by then, and
    // each tree is written into the manifest as its first worker reports, not at the run's end.
    let (out, of, recorded) = killed_in_b(tmp.path(), &a, &b, 64, 2);
    assert_eq!(
        recorded, 2,
        "the manifest names both trees while the run is going"
    );
    let before = snapshot(&out);

    // Tree B's HIP runtime changed since: the resume is refused, naming it, and changes nothing.
    let hip = Path::new(&b).join("lib/libamdhip64.so.7.0.0");
    let original = rebuild(&hip);
    let healthy = model("healthy.toml");
    let o = rocsweep(tmp.path(), &["run", "--resume", &of], &healthy);
    assert_refused_for_changed(&o, &hip);
    assert_eq!(snapshot(&out), before, "the run directory is as it was");

    // As it was: the resume runs what is left (the unit killed in its hang is `interrupted`).
    std::fs::write(&hip, &original).unwrap();
    let o = rocsweep(tmp.path(), &["run", "--resume", &of], &healthy);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(rows(&out).len(), 4);
}

#[test]
fn a_unit_recorded_without_running_never_gives_its_tree_another_trees_files() {
    if !have_patchelf() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, _) = trees(tmp.path());
    // Killed in tree B's first unit: only A is recorded. The resume writes B's killed unit as
    // `interrupted` (no worker runs it) while the slot's worker is A's; B's record must come
    // from B's own worker, which runs B's other unit.
    let (out, of, recorded) = killed_in_b(tmp.path(), &a, &b, 32, 1);
    assert_eq!(
        recorded, 1,
        "only tree A had reported when the run was killed"
    );
    let o = rocsweep(
        tmp.path(),
        &["run", "--resume", &of],
        &model("healthy.toml"),
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let statuses: Vec<(String, String, String)> = rows(&out);
    assert!(
        statuses.contains(&(b.clone(), "32".to_string(), "interrupted".to_string())),
        "{statuses:?}"
    );
    let man = rocsweep::results::manifest::read(&out).unwrap();
    let tree_b = man
        .rocm_trees
        .iter()
        .find(|t| t.rocm == b)
        .unwrap_or_else(|| panic!("no record of {b}: {:?}", man.rocm_trees));
    assert!(
        tree_b.libraries.iter().all(|l| l.path.starts_with(&b)) && !tree_b.libraries.is_empty(),
        "{:?}",
        tree_b.libraries
    );
    assert!(tree_b.tree.contains(&b), "{}", tree_b.tree);
}

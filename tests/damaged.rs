//! Damaged run directories (issue 15, points 1-4): a resume reads and checks everything before
//! it writes anything, refuses what it cannot use with exit 2 and nothing changed, survives a
//! torn journal, and takes the journal's row where results.csv disagrees with it. Real runs of
//! the real binary on the CPU backend, damaged by hand as a spreadsheet or a power cut would.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rocsweep"))
}

/// A finished 5-unit run (one trial) in `dir/run`.
fn finished_run(dir: &Path) -> PathBuf {
    let sweep = dir.join("d.toml");
    std::fs::write(
        &sweep,
        "name = \"d\"\nop = \"copy\"\n[axes]\nbytes = [64, 128, 256, 512, 1024]\n",
    )
    .unwrap();
    let out = dir.join("run");
    let o = bin()
        .args([
            "run",
            sweep.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .args(["--trials", "1", "--quiet", "--no-report"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

fn resume(out: &Path) -> Output {
    bin()
        .args([
            "run",
            "--resume",
            out.to_str().unwrap(),
            "--quiet",
            "--no-report",
        ])
        .output()
        .unwrap()
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn rows(out: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    rocsweep::results::csv::read(&out.join("results.csv")).unwrap()
}

#[test]
fn a_header_with_an_extra_column_is_refused_and_nothing_is_changed() {
    let tmp = tempfile::tempdir().unwrap();
    let out = finished_run(tmp.path());
    let csv = out.join("results.csv");
    let text = String::from_utf8(read(&csv)).unwrap();
    let (first, rest) = text.split_once('\n').unwrap();
    std::fs::write(&csv, format!("{first},note\n{rest}")).unwrap();
    let (csv_before, manifest_before) = (read(&csv), read(&out.join("manifest.json")));
    let journal_before = read(&out.join("journal.ndjson"));

    let o = resume(&out);
    assert_eq!(o.status.code(), Some(2), "bad run directory: exit 2");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("results.csv: line 1: the header is neither this version's nor an earlier one's for copy: unknown column `note`; nothing was changed"),
        "{err}"
    );
    assert_eq!(read(&csv), csv_before, "results.csv untouched");
    assert_eq!(
        read(&out.join("manifest.json")),
        manifest_before,
        "manifest untouched"
    );
    assert_eq!(read(&out.join("journal.ndjson")), journal_before);
}

#[test]
fn invalid_utf8_in_the_journal_is_skipped_and_the_run_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let out = finished_run(tmp.path());
    let journal = out.join("journal.ndjson");
    let mut j = read(&journal);
    // A power cut inside a multi-byte character, then two stray bytes on a line of their own.
    j.extend_from_slice(b"{\"ev\":\"started\",\"unit\":\"\xe2\x82");
    j.extend_from_slice(b"\n\xff\xfe\n");
    std::fs::write(&journal, &j).unwrap();
    let before = rows(&out);
    let o = resume(&out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("skipped 2 unreadable line(s) of journal.ndjson"),
        "{err}"
    );
    assert_eq!(rows(&out), before, "every row kept");
}

#[test]
fn the_journal_wins_over_a_wrong_or_garbage_row() {
    let tmp = tempfile::tempdir().unwrap();
    let out = finished_run(tmp.path());
    let (header, good) = rows(&out);
    let st = header.iter().position(|h| h == "status").unwrap();
    // A conflicting copy of unit 0 first (status crash), the real one after it, and a row of
    // garbage with the right field count.
    let mut wrong = good[0].clone();
    wrong[st] = "crash".into();
    let mut garbage = vec!["garbage".to_string(); header.len()];
    garbage[0] = "ffffffffffffffff".into();
    let mut w = csv::Writer::from_path(out.join("results.csv")).unwrap();
    w.write_record(&header).unwrap();
    w.write_record(&wrong).unwrap();
    for r in &good {
        w.write_record(r).unwrap();
    }
    w.write_record(&garbage).unwrap();
    w.flush().unwrap();
    drop(w);

    let o = resume(&out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("1 row(s) replaced by the journal's record"),
        "{err}"
    );
    assert!(err.contains("2 row(s) dropped from results.csv"), "{err}");
    let (_, after) = rows(&out);
    assert_eq!(after, good, "the journal's rows, once each, in order");
    // And the run reads back: report works.
    let o = bin()
        .args(["report", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn planted_secrets_reach_no_file_of_the_run_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = tmp.path().join("s.toml");
    std::fs::write(
        &sweep,
        "name = \"s\"\nop = \"copy\"\n[axes]\nbytes = [64, 128]\n[env_axes]\nMY_FLAG = [\"1\", \"2\"]\n",
    )
    .unwrap();
    let out = tmp.path().join("run");
    let secrets = [
        ("GITHUB_TOKEN", "ghp_plantedsecret0001"),
        ("AWS_SECRET_ACCESS_KEY", "plantedsecret0002"),
        ("HF_TOKEN", "hf_plantedsecret0003"),
        ("MY_PASSWORD", "plantedsecret0004"),
        ("HIP_API_KEY", "plantedsecret0005"),
    ];
    let o = bin()
        .args([
            "run",
            sweep.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .args(["--trials", "1", "--quiet"])
        .envs(secrets)
        .env("UNRELATED_VARIABLE", "not-recorded")
        .env("HIP_VISIBLE_DEVICES", "0")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (header, rows) = rocsweep::results::csv::read(&out.join("results.csv")).unwrap();
    let id = &rows[0][header.iter().position(|h| h == "unit_id").unwrap()];
    let repro = bin()
        .args(["repro", out.to_str().unwrap(), id])
        .output()
        .unwrap();
    assert!(repro.status.success());
    std::fs::write(out.join("repro.txt"), &repro.stdout).unwrap();
    for f in files(&out) {
        let text = String::from_utf8_lossy(&read(&f)).into_owned();
        for (name, value) in secrets {
            assert!(
                !text.contains(value),
                "{name}'s value is in {}",
                f.display()
            );
        }
        assert!(
            !text.contains("not-recorded"),
            "an unrelated variable is in {}",
            f.display()
        );
    }
    let m = rocsweep::results::manifest::read(&out).unwrap();
    assert_eq!(
        m.environment.get("HIP_VISIBLE_DEVICES").map(String::as_str),
        Some("0")
    );
    assert_eq!(
        m.environment.get("HIP_API_KEY").map(String::as_str),
        Some("<masked>")
    );
    assert!(
        !m.environment.contains_key("GITHUB_TOKEN"),
        "not a variable that affects a run"
    );
}

#[test]
fn an_error_in_the_stored_sweep_text_names_the_manifest_not_the_sweep_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out = finished_run(tmp.path());
    let mpath = out.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&read(&mpath)).unwrap();
    let text = m["sweep"]["text"].as_str().unwrap().replace("copy", "copi");
    m["sweep"]["text"] = serde_json::Value::String(text);
    std::fs::write(&mpath, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    let before = read(&mpath);
    let o = resume(&out);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let first = err.lines().next().unwrap_or("");
    let sweep_file = tmp.path().join("d.toml");
    assert!(
        first.starts_with(&format!(
            "error: {} (sweep.text, from {}):2:6: unknown op `copi`",
            mpath.display(),
            sweep_file.display()
        )),
        "{err}"
    );
    assert_eq!(read(&mpath), before, "nothing changed");
}

#[test]
fn a_resume_of_a_finished_run_says_there_is_nothing_to_do_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = finished_run(tmp.path());
    let snapshot = |out: &Path| {
        let mut v: Vec<(PathBuf, Vec<u8>)> = files(out)
            .into_iter()
            .map(|p| (p.clone(), read(&p)))
            .collect();
        v.sort();
        v
    };
    let before = snapshot(&out);
    let o = resume(&out);
    assert_eq!(o.status.code(), Some(0));
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(said.starts_with("nothing to do: "), "{said}");
    assert!(
        before == snapshot(&out),
        "no file added, removed or changed"
    );
}

/// Issue 40, S3: links planted in a run directory, at the temporary names rocsweep once used
/// and at the names of its files, never redirect a write; `report`, `recommend` and
/// `run --resume` refuse what is a link and write everything else as regular files.
#[test]
fn links_planted_in_a_run_directory_redirect_no_write() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().unwrap();
    // A run stopped with units left: the device failed its health probe (exit 4).
    let sweep = tmp.path().join("d.toml");
    std::fs::write(
        &sweep,
        "name = \"d\"\nop = \"copy\"\n[axes]\nbytes = [64, 128, 256, 512]\n\
         [limits]\nrun = 0.5\ngrace = 0.2\n",
    )
    .unwrap();
    let out = tmp.path().join("run");
    let o = bin()
        .arg("run")
        .arg(&sweep)
        .arg("--out")
        .arg(&out)
        .args(["--trials", "1", "--quiet", "--no-report"])
        .env("ROCSWEEP_TEST_FAULT", "bytes=128:segv@run;probe:hang@run")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let victim = outside.join("victim.txt");
    std::fs::write(&victim, "keep").unwrap();
    for name in [
        ".manifest.tmp.json",
        ".results.tmp.csv",
        ".summary.tmp.md",
        ".report.tmp.html",
        ".rocsweep-env.tmp.sh",
        ".recommend.tmp.md",
    ] {
        symlink(&victim, out.join(name)).unwrap();
    }
    let untouched = |what: &str| {
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep", "{what}");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1, "{what}");
    };

    // workers/ replaced by a link: the resume is refused (exit 2), naming it, nothing changed.
    std::fs::rename(out.join("workers"), tmp.path().join("workers-real")).unwrap();
    symlink(&outside, out.join("workers")).unwrap();
    let before = std::fs::read(out.join("manifest.json")).unwrap();
    let o = resume(&out);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("workers is a symbolic link") && err.contains("nothing was changed"),
        "{err}"
    );
    assert_eq!(std::fs::read(out.join("manifest.json")).unwrap(), before);
    untouched("resume refused");

    // The real workers/ back: the resume runs the skipped units beside the planted links.
    std::fs::remove_file(out.join("workers")).unwrap();
    std::fs::rename(tmp.path().join("workers-real"), out.join("workers")).unwrap();
    let o = resume(&out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    untouched("resume");
    for cmd in ["report", "recommend"] {
        let o = bin().arg(cmd).arg(&out).output().unwrap();
        assert!(
            o.status.success(),
            "{cmd}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        untouched(cmd);
    }
    for name in [
        "manifest.json",
        "results.csv",
        "summary.md",
        "report.html",
        "rocsweep-env.sh",
        "recommend.md",
    ] {
        let m = std::fs::symlink_metadata(out.join(name)).unwrap();
        assert!(m.file_type().is_file(), "{name} is a regular file");
    }
    let (_, after) = rows(&out);
    assert_eq!(after.len(), 4);

    // A link at a file's own name: refused, naming it, its target untouched.
    std::fs::remove_file(out.join("summary.md")).unwrap();
    symlink(&victim, out.join("summary.md")).unwrap();
    let o = bin().arg("report").arg(&out).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("summary.md is a symbolic link"), "{err}");
    untouched("report over a link");
}

/// Issue 40, S5: values the sweep itself sets under a credential's name (`[env]`,
/// `[env_axes]`) reach no file of the run directory, its reports, profile or repro page; the
/// combinations stay apart by their labels; a resume reads the sweep file, which must be the
/// one the run started from.
#[test]
fn credentials_the_sweep_sets_reach_no_file_and_resume_reads_the_sweep_file() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = tmp.path().join("s.toml");
    let text = "name = \"s\"\nop = \"copy\"\n[axes]\nbytes = [64, 128, 256]\n\
         [env]\nMY_API_TOKEN = \"tok-planted-0001\"\nDB_PASS = \"pw-planted-0002\"\n\
         [env_axes]\nHF_TOKEN = [\"hf-planted-0003\", \"hf-planted-0004\"]\nGITHUB_PAT = \"ghp-planted-0005\"\n\
         [limits]\nrun = 0.5\ngrace = 0.2\n";
    std::fs::write(&sweep, text).unwrap();
    let out = tmp.path().join("run");
    let o = bin()
        .current_dir(tmp.path())
        .args([
            "run",
            "s.toml",
            "--out",
            "run",
            "--trials",
            "1",
            "--quiet",
            "--no-report",
        ])
        .env("ROCSWEEP_TEST_FAULT", "bytes=128:segv@run;probe:hang@run")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // From elsewhere the sweep file is not found: refused, nothing changed.
    let before = std::fs::read(out.join("results.csv")).unwrap();
    let o = resume(&out);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("its sweep sets credentials"), "{err}");
    assert_eq!(std::fs::read(out.join("results.csv")).unwrap(), before);
    // Where the run started: the resume runs the rest.
    let o = bin()
        .current_dir(tmp.path())
        .args(["run", "--resume", "run", "--quiet", "--no-report"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (header, rows) = rows(&out);
    assert_eq!(rows.len(), 6, "3 sizes x 2 HF_TOKEN values");
    let env = header.iter().position(|h| h == "env").unwrap();
    let envs: std::collections::BTreeSet<&str> = rows.iter().map(|r| r[env].as_str()).collect();
    assert_eq!(envs.len(), 2, "{envs:?}");
    assert!(
        envs.iter().all(|e| e.contains("HF_TOKEN=<masked:")),
        "{envs:?}"
    );
    // Reports, recommend's profile and a repro page.
    for cmd in ["report", "recommend"] {
        let o = bin().arg(cmd).arg(&out).output().unwrap();
        assert!(
            o.status.success(),
            "{cmd}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let id = &rows[0][0];
    let repro = bin().arg("repro").arg(&out).arg(id).output().unwrap();
    assert!(repro.status.success());
    std::fs::write(out.join("repro.md"), &repro.stdout).unwrap();
    let profile = String::from_utf8_lossy(&read(&out.join("rocsweep-env.sh"))).into_owned();
    assert!(
        profile.contains(
            "# MY_API_TOKEN was set by the sweep; its value (a credential's) is not recorded"
        ),
        "{profile}"
    );
    for f in files(&out) {
        let text = String::from_utf8_lossy(&read(&f)).into_owned();
        assert!(
            !text.contains("-planted-"),
            "a credential is in {}",
            f.display()
        );
    }
    // Changed since: refused.
    std::fs::write(
        &sweep,
        text.replace("bytes = [64, 128, 256]", "bytes = [64, 128]"),
    )
    .unwrap();
    let o = bin()
        .current_dir(tmp.path())
        .args(["run", "--resume", "run", "--quiet", "--no-report"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("it has changed since the run started"),
        "{err}"
    );
}

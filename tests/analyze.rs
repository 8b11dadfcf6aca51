//! compare, recommend and repro on the committed run-directory fixtures (tests/fixtures/runs,
//! made by tests/fixtures/make-fixtures.sh). The fixtures are fixed files, so every output,
//! timings included, is deterministic and checked as a golden text (insta).
//!
//! Paths stay relative to the package root (where cargo runs integration tests), because the
//! outputs name the run directory as given and the manifests name their sweeps relatively.

use rocsweep::analyze::compare::{self, Verdict};
use rocsweep::analyze::{recommend, repro};
use rocsweep::error::CmdError;
use rocsweep::results::rundata::RunData;
use rocsweep::results::status::Status;
use std::path::Path;
use std::process::Command;

const RDNA1: &str = "tests/fixtures/runs/rdna1-like";
const REL_A: &str = "tests/fixtures/runs/release-a";
const REL_B: &str = "tests/fixtures/runs/release-b";

fn load(dir: &str) -> RunData {
    RunData::load(Path::new(dir)).unwrap_or_else(|e| panic!("{dir}: {e}"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn csv_rows(path: &Path) -> Vec<csv::StringRecord> {
    let mut r = csv::Reader::from_path(path).unwrap();
    r.records().map(|x| x.unwrap()).collect()
}

#[test]
fn compare_release_a_b_lists_the_new_hang_and_the_speed_changes() {
    let (a, b) = (load(REL_A), load(REL_B));
    let c = compare::compare(&a, &b);
    let md = compare::markdown(&c, Some("ratio.png"));
    insta::assert_snapshot!("compare_release_a_b_md", md);

    let hang = c
        .units
        .iter()
        .find(|u| u.transition() == "ok->hang")
        .expect("the ok->hang unit is listed");
    assert_eq!(hang.unit_id, "09ed95f8e30236bb");
    assert!(hang.regressed());
    assert!(md.contains("| `ok->hang` | 1 |"));
    assert_eq!(compare::exit_code(&c, true), 3);
    assert_eq!(compare::exit_code(&c, false), 0);
    // The m=96 f32 unit took twice as long in B, but these fixtures were made before trials
    // (one run of each unit): with no run-to-run noise known, a 2x change is ambiguous, not
    // slower, and no slowdown counts as a regression.
    let m96 = c
        .units
        .iter()
        .find(|u| u.unit_id == "7272cbaaa5395342")
        .unwrap();
    assert_eq!(m96.ratio.map(|r| r.1), Some(Verdict::Ambiguous));
    assert!(!m96.regressed());
    assert_eq!(c.regression_lines().len(), 1, "{:?}", c.regression_lines());
    assert!(
        c.regression_lines()[0].starts_with("09ed95f8e30236bb gemm m=96")
            && c.regression_lines()[0].ends_with(": ok->hang"),
        "{:?}",
        c.regression_lines()
    );
}

#[test]
fn compare_command_writes_csv_md_and_plot_and_sets_the_exit_code() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("cmp");
    let code = compare::command(Path::new(REL_A), Path::new(REL_B), Some(&out), false, true);
    assert_eq!(
        code.unwrap(),
        3,
        "--fail-on regression with an ok->hang unit"
    );
    let code = compare::command(Path::new(REL_A), Path::new(REL_B), Some(&out), false, false);
    assert_eq!(code.unwrap(), 0);

    let rows = csv_rows(&out.join("compare.csv"));
    assert_eq!(rows.len(), load(REL_A).rows.len(), "one row per unit");
    let hang: Vec<_> = rows.iter().filter(|r| &r[7] == "ok->hang").collect();
    assert_eq!(hang.len(), 1);
    assert_eq!((&hang[0][5], &hang[0][6]), ("ok", "hang"));
    assert!(read(&out.join("compare.md")).starts_with("# Compare: release-a vs release-b"));
    let png = std::fs::read(out.join("ratio.png")).unwrap();
    assert_eq!(&png[..4], b"\x89PNG");
}

#[test]
fn compare_default_out_is_inside_run_b() {
    assert_eq!(
        compare::default_out(Path::new(REL_A), Path::new("/x/run-b")),
        Path::new("/x/run-b/compare-release-a")
    );
}

#[test]
fn compare_a_run_with_itself_finds_nothing() {
    let a = load(REL_A);
    let c = compare::compare(&a, &a);
    assert!(c.units.iter().all(|u| u.transition().is_empty()));
    assert!(
        c.units
            .iter()
            .all(|u| !matches!(u.ratio, Some((_, Verdict::Faster | Verdict::Slower))))
    );
    assert!(
        c.units
            .iter()
            .filter_map(|u| u.ratio)
            .all(|(r, v)| r == 1.0 && v == Verdict::Same)
    );
    assert_eq!(compare::exit_code(&c, true), 0);

    let tmp = tempfile::tempdir().unwrap();
    let code = compare::command(
        Path::new(RDNA1),
        Path::new(RDNA1),
        Some(tmp.path()),
        false,
        true,
    );
    assert_eq!(code.unwrap(), 0, "a failure in both runs is no regression");
    for r in csv_rows(&tmp.path().join("compare.csv")) {
        assert!(matches!(&r[11], "same" | ""), "verdict {} in {r:?}", &r[11]);
    }
}

#[test]
fn compare_refuses_different_sweeps_unless_forced() {
    let tmp = tempfile::tempdir().unwrap();
    let err = compare::command(
        Path::new(REL_A),
        Path::new(RDNA1),
        Some(tmp.path()),
        false,
        false,
    )
    .expect_err("different sweeps");
    let CmdError::BadInput(msg) = err else {
        panic!("expected BadInput, got {err:?}");
    };
    assert!(
        msg.contains("`release`") && msg.contains("`rdna1-like`"),
        "{msg}"
    );
    assert!(msg.contains("--force"), "{msg}");
    assert!(!tmp.path().join("compare.md").exists(), "nothing written");

    let code = compare::command(
        Path::new(REL_A),
        Path::new(RDNA1),
        Some(tmp.path()),
        true,
        true,
    );
    assert_eq!(code.unwrap(), 0);
    let md = read(&tmp.path().join("compare.md"));
    assert!(md.contains("different sweeps"), "{md}");
    assert!(
        md.contains("Only in A: 8 units") && md.contains("Only in B: 32 units"),
        "{md}"
    );
}

#[test]
fn recommend_rdna1_picks_gemm_off_and_finds_the_hang_region() {
    let run = load(RDNA1);
    let rec = recommend::recommend(&run);
    insta::assert_snapshot!("recommend_rdna1_md", recommend::markdown(&rec));

    let best = &rec.combos[0];
    assert!(
        best.key.contains("MIOPEN_DEBUG_CONV_GEMM=0"),
        "{}",
        best.key
    );
    assert_eq!((best.failures, best.ok), (0, 16));
    let worst = &rec.combos[1];
    let hang = worst
        .fail_rules
        .iter()
        .find(|r| r.status == Some(Status::Hang))
        .expect("a hang rule");
    let text = hang.text();
    // The channel pair is a category (issue 31): never `c_in >= 16`, as if it were a scale.
    assert!(text.contains("c_in→c_out != 3→16"), "{text}");
    assert!(!text.contains("c_in >="), "{text}");
    assert!(text.contains("h >= 48"), "{text}");
    // The boundary table says the same, pair by pair.
    let rows: Vec<(String, String, String)> = worst
        .boundaries
        .iter()
        .map(|b| {
            let t = |p: Option<&rocsweep::analyze::boundary::Point>| {
                p.map_or("-".to_string(), |p| p.text.clone())
            };
            (b.group.join(" "), t(b.ok_up_to()), t(b.fails_from()))
        })
        .collect();
    let row = |g: &str, ok: &str, fail: &str| (g.to_string(), ok.to_string(), fail.to_string());
    assert_eq!(
        rows,
        vec![
            row("3→16", "48", "64"),
            row("16→32", "32", "48"),
            row("32→64", "32", "48"),
            row("64→128", "32", "48"),
        ]
    );
    assert_eq!(
        (hang.units, hang.exceptions, hang.phase.as_str()),
        (6, 0, "compile")
    );
    assert!(
        worst
            .fail_rules
            .iter()
            .any(|r| r.status == Some(Status::Crash))
    );
}

#[test]
fn recommend_writes_a_profile_that_bash_accepts() {
    let tmp = tempfile::tempdir().unwrap();
    recommend::command(Path::new(RDNA1), Some(tmp.path())).unwrap();
    let path = tmp.path().join(recommend::PROFILE_NAME);
    let profile = read(&path);
    assert!(
        profile.contains("\nexport MIOPEN_DEBUG_CONV_GEMM=0\n"),
        "{profile}"
    );
    assert!(
        profile.contains("export HSA_OVERRIDE_GFX_VERSION=10.3.0"),
        "{profile}"
    );
    assert!(profile.contains("# MIOPEN_DEBUG_CONV_GEMM=0: 0 failures / 16 units vs 7 failures"));
    let o = Command::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(read(&tmp.path().join("recommend.md")).contains(&profile));
}

#[test]
fn recommend_with_one_combination_still_ranks_and_describes_it() {
    let rec = recommend::recommend(&load(REL_B));
    assert_eq!(rec.combos.len(), 1);
    let c = &rec.combos[0];
    assert_eq!(c.failures, 1);
    assert_eq!(c.fail_rules.len(), 1);
    let text = c.fail_rules[0].text();
    assert!(text.starts_with("hangs in run when"), "{text}");
    assert!(
        text.contains("m = 96") && text.contains("dtype = bf16"),
        "{text}"
    );
    let profile = recommend::profile(&rec);
    assert!(profile.contains("nothing to export"), "{profile}");
}

/// The text between `<<'ROCSWEEP_SWEEP'` and its end marker.
fn heredoc(text: &str) -> String {
    let start = text.find("<<'ROCSWEEP_SWEEP'\n").expect("a heredoc") + 19;
    let len = text[start..].find("ROCSWEEP_SWEEP\n").expect("its end");
    text[start..start + len].to_string()
}

/// `rocsweep run ... --dry-run`: the case lines (id, rest) and the summary line.
fn dry_run(dir: &Path, args: &[String]) -> (Vec<String>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .current_dir(dir)
        .args(args)
        .arg("--dry-run")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{args:?}: {stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut lines: Vec<String> = stdout.lines().map(String::from).collect();
    let summary = lines.pop().unwrap_or_default();
    (lines, summary)
}

#[test]
fn repro_of_a_hang_gives_driver_env_and_a_sweep_that_selects_the_case() {
    let run = load(RDNA1);
    let text = repro::repro(&run, "d7abc0d4e9ea9fd1").unwrap();
    insta::assert_snapshot!("repro_rdna1_hang", text);
    assert!(text.contains(
        "MIOpenDriver conv -n 2 -c 16 -H 48 -W 48 -k 32 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -g 1 -F 1 -t 1"
    ));
    assert!(text.contains("export MIOPEN_DEBUG_CONV_GEMM=1\n"));
    assert!(text.contains("export HSA_OVERRIDE_GFX_VERSION=10.3.0\n"));
    assert!(
        !text.contains("ROCSWEEP_TEST_FAULT"),
        "test-only switch leaked"
    );
    assert!(text.contains("rocsweep run repro-d7abc0d4e9ea9fd1.toml --out repro-d7abc0d4e9ea9fd1"));

    // The stand-alone sweep, through the real binary, selects exactly the unit's case.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("repro-d7abc0d4e9ea9fd1.toml"),
        heredoc(&text),
    )
    .unwrap();
    let (cases, summary) = dry_run(
        tmp.path(),
        &["run".into(), "repro-d7abc0d4e9ea9fd1.toml".into()],
    );
    let case_id = &run
        .rows
        .iter()
        .find(|r| r.unit_id == "d7abc0d4e9ea9fd1")
        .unwrap()
        .case_id;
    assert_eq!(cases.len(), 1, "{cases:?}");
    assert!(cases[0].starts_with(&format!("{case_id} ")), "{cases:?}");
    assert!(
        summary.starts_with("1 cases x 1 env combination(s) = 1 units"),
        "{summary}"
    );
}

/// Splits a command line the way sh would for the words repro writes (bare or single-quoted).
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    cur.push(q);
                }
            }
            ' ' if in_word => {
                words.push(std::mem::take(&mut cur));
                in_word = false;
            }
            ' ' => {}
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

#[test]
fn repro_from_the_original_sweep_pins_every_varied_axis() {
    let run = load(REL_B);
    let text = repro::repro(&run, "09ed95f8e30236bb").unwrap();
    assert!(
        text.contains("hipblaslt-bench -m 96 -n 96 -k 96 --transA N --transB N --batch_count 1")
    );
    assert!(text.contains("--a_type bf16_r"));
    let line = text
        .lines()
        .find(|l| l.starts_with("rocsweep run tests/fixtures/release.toml "))
        .expect("a command on the original sweep file");
    let words = shell_words(line);
    assert!(words.iter().any(|w| w == "solver=default"), "{words:?}");
    let (cases, _) = dry_run(Path::new(env!("CARGO_MANIFEST_DIR")), &words[1..]);
    assert_eq!(cases.len(), 1, "{cases:?}");
    assert!(cases[0].starts_with("cd68b6464c0c3dbd "), "{cases:?}");
}

#[test]
fn repro_pins_a_zip_group_with_axis_overrides() {
    // `--axis c_in=16` selects the 16 -> 32 row of the `channels` zip group.
    let text = repro::repro(&load(RDNA1), "d7abc0d4e9ea9fd1").unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("rocsweep run tests/fixtures/rdna1-like.toml "))
        .unwrap_or_else(|| panic!("a command on the original sweep file:\n{text}"));
    let words = shell_words(line);
    let (cases, _) = dry_run(Path::new(env!("CARGO_MANIFEST_DIR")), &words[1..]);
    assert_eq!(cases.len(), 1, "{cases:?}");
}

#[test]
fn repro_escapes_library_text_in_its_markdown() {
    // The every-status fixture's error unit carries `<script>`, `&` and quotes from "the library".
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs/every-status");
    let text = repro::repro(&load(dir.to_str().unwrap()), "cda0ab0ae4ad9730").unwrap();
    let error = text
        .lines()
        .find(|l| l.starts_with("| error |"))
        .unwrap_or_else(|| panic!("an error row:\n{text}"));
    assert!(
        error.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp;"),
        "{error}"
    );
    assert!(!text.contains("<script>"), "{text}");
    // The row is one table row: the log tail's ` | ` separators are escaped.
    assert_eq!(error.matches(" | ").count(), 1, "{error}");
}

#[test]
fn repro_of_an_unknown_unit_is_bad_input_with_suggestions() {
    let err = repro::command(Path::new(RDNA1), "0000000000000000").unwrap_err();
    let CmdError::BadInput(msg) = err else {
        panic!("expected BadInput, got {err:?}");
    };
    assert!(
        msg.contains("`0000000000000000`") && msg.contains(RDNA1),
        "{msg}"
    );

    let err = repro::command(Path::new(RDNA1), "d7abc0d4").unwrap_err();
    let CmdError::BadInput(msg) = err else {
        panic!("expected BadInput, got {err:?}");
    };
    assert!(msg.contains("did you mean d7abc0d4e9ea9fd1?"), "{msg}");
}

#[test]
fn profile_values_reach_the_shell_unchanged_and_unexecuted() {
    let mut rec = recommend::recommend(&load(RDNA1));
    let evil = "$(touch pwned)'\"; touch pwned2\nexport X=`id`";
    rec.host = "vm\ntouch pwned3".into();
    rec.combos[0].vars.push(("WEIRD_VALUE".into(), evil.into()));
    rec.decisions.push(recommend::Decision {
        name: "WEIRD_VALUE".into(),
        value: evil.into(),
        export: true,
        why: format!("because {evil}"),
    });
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(recommend::PROFILE_NAME);
    std::fs::write(&path, recommend::profile(&rec)).unwrap();
    let o = Command::new("bash")
        .current_dir(tmp.path())
        .arg("-c")
        .arg(r#". ./rocsweep-env.sh && printf %s "$WEIRD_VALUE""#)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), evil);
    for f in ["pwned", "pwned2", "pwned3"] {
        assert!(!tmp.path().join(f).exists(), "{f} was created");
    }
}

/// A copy of the RDNA1 fixture with one row changed by `edit` (header, row) and the manifest by
/// `manifest` (its JSON).
fn planted_copy(
    tmp: &Path,
    edit: impl Fn(&csv::StringRecord, &mut Vec<String>),
    manifest: impl Fn(&mut serde_json::Value),
) -> std::path::PathBuf {
    let run = tmp.join("run");
    std::fs::create_dir_all(&run).unwrap();
    for f in ["results.csv", "manifest.json"] {
        std::fs::copy(Path::new(RDNA1).join(f), run.join(f)).unwrap();
    }
    let mut r = csv::Reader::from_path(run.join("results.csv")).unwrap();
    let header = r.headers().unwrap().clone();
    let rows: Vec<Vec<String>> = r
        .records()
        .map(|x| x.unwrap().iter().map(str::to_string).collect())
        .collect();
    let mut w = csv::Writer::from_path(run.join("results.csv")).unwrap();
    w.write_record(&header).unwrap();
    for mut row in rows {
        edit(&header, &mut row);
        w.write_record(&row).unwrap();
    }
    w.flush().unwrap();
    let path = run.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_str(&read(&path)).unwrap();
    manifest(&mut m);
    std::fs::write(&path, serde_json::to_string(&m).unwrap()).unwrap();
    run
}

/// Issue 40, S2: values planted in a run directory reach shell lines quoted and Python not at
/// all; every `sh` block of the page, run by bash, runs nothing planted.
#[test]
fn repro_pastes_no_planted_value_into_a_shell_or_python() {
    let tmp = tempfile::tempdir().unwrap();
    let id = "a$(touch PWNED-id)b";
    let run = planted_copy(
        tmp.path(),
        |h, row| {
            let col = |n: &str| h.iter().position(|x| x == n).unwrap();
            if row[0] == "d7abc0d4e9ea9fd1" {
                row[0] = id.into();
                row[col("backend")] = "torch".into();
                row[col("h")] = "48), __import__('os').system('touch PWNED-py'".into();
            }
        },
        |_| {},
    );
    let o = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .arg("repro")
        .arg(&run)
        .arg(id)
        .output()
        .unwrap();
    let page = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        page.contains("No stand-alone script for this `conv2d` case")
            && !page.contains("ROCSWEEP_PY"),
        "no Python is written from a planted value:\n{page}"
    );
    // Every shell block, run with stand-ins for the commands it calls.
    let work = tmp.path().join("work");
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["rocsweep", "python3", "MIOpenDriver", "timeout"] {
        let p = bin.join(tool);
        std::fs::write(&p, "#!/bin/sh\nexit 0\n").unwrap();
        let mut perm = std::fs::metadata(&p).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
        std::fs::set_permissions(&p, perm).unwrap();
    }
    let mut blocks = 0;
    for block in page.split("```sh\n").skip(1) {
        let code = block.split("\n```").next().unwrap();
        let st = Command::new("bash")
            .arg("-c")
            .arg(code)
            .current_dir(&work)
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .status()
            .unwrap();
        assert!(st.success(), "{code}");
        blocks += 1;
    }
    assert!(blocks >= 2, "{page}");
    let names: Vec<String> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.starts_with("PWNED")),
        "planted commands ran: {names:?}"
    );
    assert!(names.contains(&format!("repro-{id}.toml")), "{names:?}");
}

/// Issue 40, S2: an env name no variable can have (a newline would end the page's heredoc) is
/// refused when the run directory is read, naming the manifest.
#[test]
fn a_run_directory_with_a_newline_in_an_env_name_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let run = planted_copy(
        tmp.path(),
        |_, _| {},
        |m| {
            m["env_combos"][0]["vars"][0][0] =
                serde_json::Value::String("X\nROCSWEEP_SWEEP\ntouch PWNED".into());
        },
    );
    match RunData::load(&run) {
        Err(CmdError::BadInput(msg)) => {
            assert!(
                msg.contains("manifest.json names an environment variable")
                    && msg.contains("X\\nROCSWEEP_SWEEP"),
                "{msg}"
            );
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("loaded"),
    }
    let o = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .arg("repro")
        .arg(&run)
        .arg("d7abc0d4e9ea9fd1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

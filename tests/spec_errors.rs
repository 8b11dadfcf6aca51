//! Sweep-file and `--axis` errors: each names the file, line and column of the offending text and
//! says what was wrong. The fixtures in tests/malformed/ each start with
//! `# expect: LINE:COL: part of the message`.

use rocsweep::spec::{self, error::SpecError};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MIN_FIXTURES: usize = 30;

/// A valid sweep used as the base for `--axis` overrides.
const VALID: &str = r#"name = "ok"
op = "conv2d"
drop = ["c_out < c_in"]

[axes]
c_in = [16, 32]
c_out = [16, 32]
dtype = ["f32", "f16"]

[zip.spatial]
h = [8, 16, 32]
kernel = [1, 3, 3]
"#;

struct Expect {
    line: usize,
    col: usize,
    message: String,
}

fn malformed_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/malformed")
}

fn fixture(name: &str) -> PathBuf {
    malformed_dir().join(name)
}

fn fixtures() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(malformed_dir())
        .expect("tests/malformed exists")
        .map(|e| e.expect("readable dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

/// Parses `# expect: LINE:COL: message` from the first line.
fn parse_expect(text: &str) -> Result<Expect, String> {
    let first = text.lines().next().unwrap_or("");
    let rest = first
        .strip_prefix("# expect: ")
        .ok_or_else(|| format!("first line is not `# expect: LINE:COL: message`: {first:?}"))?;
    let mut parts = rest.splitn(3, ':');
    let mut num = |what: &str| -> Result<usize, String> {
        parts
            .next()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| format!("bad {what} in {first:?}"))
    };
    let (line, col) = (num("line")?, num("column")?);
    let message = parts.next().unwrap_or("").trim().to_string();
    if message.is_empty() {
        return Err(format!("no message in {first:?}"));
    }
    Ok(Expect { line, col, message })
}

/// Loads sweep text that must fail, with `--axis` overrides.
fn load_err(path: &str, text: &str, overrides: &[&str]) -> SpecError {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    match spec::load_str(path, text, &overrides) {
        Ok(_) => panic!("{path} with {overrides:?} loaded, expected an error"),
        Err(e) => e,
    }
}

/// Checks one error against an expectation; returns what differs.
fn mismatch(e: &SpecError, file: &str, want: &Expect) -> Option<String> {
    let mut problems = Vec::new();
    if (e.line, e.col) != (want.line, want.col) {
        problems.push(format!(
            "at {}:{} (snippet {:?}), expected {}:{}",
            e.line,
            e.col,
            e.snippet(),
            want.line,
            want.col
        ));
    }
    if !e.message.contains(&want.message) {
        problems.push(format!("message {:?} lacks {:?}", e.message, want.message));
    }
    if e.file != file {
        problems.push(format!("file {:?}, expected {file:?}", e.file));
    }
    // A file's errors say file:line:col; an argument's say the flag and the argument as typed.
    let prefix = if file.starts_with("--") {
        format!("{file} {}: ", e.source_text())
    } else {
        format!("{file}:{}:{}: ", e.line, e.col)
    };
    if !e.to_string().starts_with(&prefix) {
        problems.push(format!(
            "display {:?} lacks prefix {prefix:?}",
            e.to_string()
        ));
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

fn check_fixture(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("unreadable: {e}"))?;
    let want = parse_expect(&text)?;
    let shown = path.display().to_string();
    // A file with [[step]] tables is a sequence (issue 43), read by its own loader.
    let loaded = if spec::sequence::is_sequence(&text) {
        spec::sequence::load_str(&shown, &text, &[]).map(|_| ())
    } else {
        spec::load_str(&shown, &text, &[]).map(|_| ())
    };
    match loaded {
        Ok(()) => Err("loaded without error".into()),
        Err(e) => mismatch(&e, &shown, &want).map_or(Ok(()), Err),
    }
}

#[test]
fn every_malformed_fixture_fails_at_its_expected_place() {
    let files = fixtures();
    assert!(
        files.len() >= MIN_FIXTURES,
        "expected at least {MIN_FIXTURES} fixtures in tests/malformed, found {}",
        files.len()
    );
    let failures: Vec<String> = files
        .iter()
        .filter_map(|p| {
            check_fixture(p)
                .err()
                .map(|why| format!("{}: {why}", p.file_name().unwrap().to_string_lossy()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} fixtures failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn the_valid_base_sweep_loads() {
    let s = spec::load_str("ok.toml", VALID, &[]).unwrap();
    assert_eq!(s.name, "ok");
}

#[test]
fn unknown_filter_axis_lists_the_sweep_axes() {
    let no_axes = "name = \"f\"\nop = \"conv2d\"\ndrop = [\"h > 8\"]\n";
    let e = load_err("f.toml", no_axes, &[]);
    assert_eq!((e.line, e.col), (3, 10));
    assert!(e.help.as_deref().unwrap_or("").contains("no axes"), "{e:?}");
    let e = load_err("f.toml", &VALID.replace("c_out < c_in", "c_out < hw"), &[]);
    assert_eq!(
        e.help.as_deref(),
        Some("the sweep's axes are: c_in, c_out, dtype, h, kernel")
    );
}

// ---- `--axis` overrides -------------------------------------------------------------------------

/// Loads VALID with one override that must fail; checks file `--axis`, line 1 and the column.
fn override_error(arg: &str, col: usize, message: &str) {
    let e = load_err("ok.toml", VALID, &[arg]);
    let want = Expect {
        line: 1,
        col,
        message: message.into(),
    };
    if let Some(why) = mismatch(&e, "--axis", &want) {
        panic!("--axis {arg:?}: {why}");
    }
}

#[test]
fn override_unknown_axis_points_at_the_name() {
    override_error("hw=16,32", 1, "unknown axis `hw` for op conv2d");
}

#[test]
fn override_bad_value_points_at_the_item() {
    override_error("dtype=f32,f42", 11, "unknown dtype `f42`");
    override_error("layout=nchw, nchwc", 14, "unknown layout `nchwc`");
    override_error("c_in=16,0", 9, "`c_in` must be at least 1, found 0");
    override_error("c_in=16,,32", 9, "empty value in the list for `c_in`");
    // A range written bare is a string: the message names the generators.
    override_error(
        "h=7..9",
        3,
        "`h` expects an integer, found a string; a range is written range(7..9) (every integer; range(a..=b, step=s)) or pow2(7..9) (powers of two)",
    );
    override_error(
        "c_in=16,99999999999999999999",
        9,
        "integer `99999999999999999999` overflows a 64-bit signed integer",
    );
}

#[test]
fn override_inverted_generator_points_at_the_generator() {
    override_error("h=8,pow2(64..=8)", 5, "inverted range 64..=8");
    override_error(
        "h=range(8..=64, step=0)",
        17,
        "step must be a positive integer",
    );
}

#[test]
fn override_generator_values_are_checked_at_the_generator() {
    override_error(
        "c_in=16,range(0..=3)",
        9,
        "`c_in` must be at least 1, found 0",
    );
    override_error(
        "dtype=f32,pow2(1..=4)",
        11,
        "`dtype` is not an integer axis, so it cannot use `pow2(1..=4)`",
    );
}

#[test]
fn override_columns_count_spaces_around_the_name() {
    override_error(
        " c_in = 16,x",
        12,
        "`c_in` expects an integer, found a string",
    );
    override_error("  hw=1", 3, "unknown axis `hw`");
}

#[test]
fn override_without_equals_sign() {
    override_error(
        "c_in",
        1,
        "expected NAME=VALUES (e.g. c_in=16,32), found `c_in`",
    );
}

#[test]
fn override_zip_member_with_another_length() {
    override_error(
        "kernel=1,5",
        8,
        "`kernel` varies together with h in zip group `spatial` (3 values each), but the override gives 2; to make new rows, give every axis of the group the same number of values (--axis kernel=... --axis h=...)",
    );
}

#[test]
fn set_errors_point_into_the_argument() {
    for (arg, col, message) in [
        (
            "--set run=5",
            1,
            "unknown key `run` at --set, expected one of: limits, timing, verify",
        ),
        ("--set limits.bogus=5", 8, "unknown key `bogus` at [limits]"),
        ("--set timing.warmup=100000", 15, "`warmup`"),
        ("--set limits.run=-1", 12, "`run`"),
        (
            "--set timing.max_samples=1",
            20,
            "max_samples (1) is smaller than min_samples",
        ),
        ("--set limits", 7, "expected SECTION.KEY=VALUE"),
    ] {
        let e = load_err("ok.toml", VALID, &[arg]);
        let shown = arg.trim_start_matches("--set ");
        assert_eq!(e.file, "--set", "{arg}");
        assert_eq!((e.line, e.col), (1, col), "{arg}: {e}");
        assert!(e.message.contains(message), "{arg}: {e}");
        assert!(
            e.to_string().starts_with(&format!("--set {shown}: ")),
            "{e}"
        );
    }
}

#[test]
fn override_of_a_whole_zip_group_with_unequal_counts() {
    let e = load_err("ok.toml", VALID, &["h=8,16", "kernel=1"]);
    assert_eq!(e.file, "--axis");
    assert_eq!(e.col, 8, "at the values of the odd one out");
    assert!(
        e.to_string().starts_with("--axis kernel=1: every axis of zip group `spatial` is given, but with different numbers of values (h 2, kernel 1)"),
        "{e}"
    );
}

// ---- through the binary -------------------------------------------------------------------------

fn rocsweep(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .args(args)
        .output()
        .expect("the rocsweep binary runs")
}

/// Runs `rocsweep run <sweep> --out <tmp>/run <extra..>` and checks exit 2, that stderr holds
/// every `needles` entry, and that the run directory was not created.
fn run_fails(sweep: &Path, extra: &[&str], needles: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let mut args = vec![
        "run",
        sweep.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = rocsweep(&args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}\nstderr:\n{stderr}");
    for n in needles {
        assert!(
            stderr.contains(n),
            "{args:?}: stderr lacks {n:?}:\n{stderr}"
        );
    }
    assert!(!out.exists(), "{args:?} created {}", out.display());
}

/// Writes VALID to a temporary file, for runs that need a good sweep.
fn valid_sweep_file(dir: &Path) -> PathBuf {
    let p = dir.join("ok.toml");
    std::fs::write(&p, VALID).unwrap();
    p
}

#[test]
fn binary_reports_malformed_files_with_location_and_exit_2() {
    for (name, loc, msg) in [
        ("10_unknown_op.toml", "3:6", "unknown op `conv3d`"),
        ("11_unknown_dtype.toml", "6:17", "unknown dtype `f42`"),
        (
            "27_filter_unknown_axis.toml",
            "4:18",
            "filter names unknown axis `hw`",
        ),
        ("42_invalid_toml.toml", "7:1", "invalid TOML"),
    ] {
        let path = fixture(name);
        let located = format!("{}:{loc}: ", path.display());
        run_fails(&path, &[], &[&located, msg]);
    }
}

#[test]
fn binary_reports_a_bad_axis_override() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = valid_sweep_file(tmp.path());
    run_fails(
        &sweep,
        &["--axis", "dtype=f32,f42"],
        &["--axis dtype=f32,f42: ", "unknown dtype `f42`"],
    );
}

#[test]
fn binary_names_solvers_arguments_as_typed() {
    let o = rocsweep(&["solvers", "c_in=abc"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "error: solvers `c_in=abc`: `c_in` expects an integer, found a string"
    );
}

#[test]
fn binary_reports_a_missing_sweep_file() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-sweep.toml");
    let shown = missing.display().to_string();
    run_fails(&missing, &[], &[&shown, "cannot read sweep file"]);
    let o = rocsweep(&["run", &shown, "--dry-run"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        !stderr.contains(".toml:1:1"),
        "a missing file has no line: {stderr}"
    );
}

/// Issue 40, M11: a readable empty file keeps its location (only a file that cannot be read
/// has none).
#[test]
fn binary_names_line_1_column_1_of_an_empty_sweep_file() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty.toml");
    std::fs::write(&empty, "").unwrap();
    let o = rocsweep(&["run", empty.to_str().unwrap(), "--dry-run"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "error: {}:1:1: missing key `name`",
            empty.display()
        )),
        "{stderr}"
    );
}

#[test]
fn binary_refuses_a_fifo_a_directory_and_a_huge_file_as_sweeps() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("fifo.toml");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    // Nobody ever writes to the FIFO: opening it to read would block forever.
    run_fails(&fifo, &[], &["fifo.toml", "not a regular file"]);
    run_fails(tmp.path(), &[], &["not a regular file"]);
    let huge = tmp.path().join("huge.toml");
    let mut text = VALID.to_string();
    text.push('#');
    text.push_str(&"x".repeat(5 << 20));
    std::fs::write(&huge, text).unwrap();
    run_fails(&huge, &[], &["huge.toml", "more than the limit of 4194304"]);
}

#[test]
fn binary_says_each_error_once() {
    let path = fixture("11_unknown_dtype.toml");
    let o = rocsweep(&["run", path.to_str().unwrap(), "--dry-run"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.matches("unknown dtype `f42`").count(), 1, "{stderr}");
    // stderr is a pipe here: the source line and carets in plain text, no box drawing.
    let plain = "  6 | dtype = [\"f32\", \"f42\"]\n    |                 ^^^^^";
    assert!(stderr.contains(plain), "plain excerpt: {stderr}");
    assert!(!stderr.contains('\u{256d}'), "no box in a pipe: {stderr}");
    let missing = rocsweep(&["run", "no-such-sweep.toml", "--dry-run"]);
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(stderr.lines().count(), 1, "no empty source box: {stderr}");
}

#[test]
#[cfg_attr(rocsweep_missing_script, ignore = "needs util-linux script")]
fn binary_draws_the_excerpt_in_a_box_on_a_terminal() {
    // A real terminal: a pty made by util-linux `script` (an essential package on Debian).
    if Command::new("script").arg("--version").output().is_err() {
        assert!(
            std::env::var("CI").is_err(),
            "util-linux `script` is missing"
        );
        eprintln!("skipped: no `script` (util-linux) to make a terminal");
        return;
    }
    let path = fixture("11_unknown_dtype.toml");
    let cmd = format!(
        "{} run {} --dry-run",
        env!("CARGO_BIN_EXE_rocsweep"),
        path.display()
    );
    let o = Command::new("script")
        .args(["-q", "-e", "-c", &cmd, "/dev/null"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert_eq!(text.matches("unknown dtype `f42`").count(), 1, "{text}");
    assert!(text.contains('\u{256d}'), "the boxed excerpt: {text}");
    assert!(!text.contains("^^^^^"), "not the plain one too: {text}");
}

#[test]
fn binary_rejects_an_unknown_backend_as_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = valid_sweep_file(tmp.path());
    run_fails(
        &sweep,
        &["--backend", "nonsense"],
        &["invalid value 'nonsense'", "--backend"],
    );
}

#[test]
fn override_with_a_value_twice_is_refused() {
    // Two equal values would plan the same case twice (and two rows with one unit id).
    override_error(
        "c_in=16,16",
        6,
        "`c_in`: the value c_in = 16 would appear more than once",
    );
    override_error(
        "dtype=f32,f16,f32",
        7,
        "`dtype`: the value dtype = f32 would appear more than once",
    );
    // In a zip group a value may repeat while the rows stay distinct (h=8 with kernel 1 and 3).
    assert!(spec::load_str("ok.toml", VALID, &["h=8,pow2(8..=16)".to_string()]).is_ok());
}

#[test]
fn an_error_past_column_65535_is_reported_not_a_panic() {
    // A 75 KB array with a bad item at its end: the renderer cannot draw past column 65535,
    // and echoing the line helps nobody; the location and a short excerpt do.
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("wide.toml");
    let items = "1, ".repeat(25_000);
    std::fs::write(
        &path,
        format!("name = \"x\"\nop = \"gemm\"\n[axes]\nm = [{items}\"bad\"]\n"),
    )
    .unwrap();
    let located = format!("{}:4:75006: ", path.display());
    run_fails(
        &path,
        &[],
        &[
            &located,
            "`m` expects an integer, found a string",
            "bytes long, not shown",
        ],
    );
}

#[test]
fn binary_refuses_a_bad_backend_list_before_writing_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = valid_sweep_file(tmp.path());
    run_fails(
        &sweep,
        &["--backend", "cpu,opencl"],
        &["--backend", "cpu,opencl", "unknown backend `opencl`"],
    );
    run_fails(
        &sweep,
        &["--backend", "cpu,auto,cpu"],
        &["backend `cpu` is named twice"],
    );
    run_fails(&sweep, &["--backend", "cpu,"], &["an empty backend name"]);
}

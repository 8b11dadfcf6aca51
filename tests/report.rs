//! `rocsweep report`: every file is written for real run directories (copies of the committed
//! fixtures, so the fixtures stay untouched), for a run with every status and for a run with no
//! rows; HTML escaping; bad run directories are bad input.

use rocsweep::error::CmdError;
use std::path::{Path, PathBuf};
use std::process::Command;

const FILES: [&str; 8] = [
    "heatmap.png",
    "heatmap.svg",
    "counts.png",
    "counts.svg",
    "throughput.png",
    "throughput.svg",
    "report.html",
    "summary.md",
];

/// Drawn only for a run that timed `default` beside named solutions (issue 44).
const WHERE_DEFAULT_MEETS_BEST: [&str; 2] = ["default_best.png", "default_best.svg"];

const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runs")
        .join(name)
}

/// A copy of a fixture run in a temporary directory, so reports never land in the repository.
fn copy_of(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join(name);
    std::fs::create_dir(&dir).expect("create run dir");
    for f in ["manifest.json", "results.csv"] {
        std::fs::copy(fixture(name).join(f), dir.join(f)).expect("copy fixture file");
    }
    (tmp, dir)
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The compression level a PNG's image data declares (FLEVEL of its zlib header, RFC 1950: 0
/// fastest, 1 fast, 2 default, 3 maximum), from its first IDAT chunk.
fn idat_zlib_level(png: &[u8]) -> Option<u8> {
    let mut pos = 8;
    while pos + 8 <= png.len() {
        let len = u32::from_be_bytes(png[pos..pos + 4].try_into().ok()?) as usize;
        if &png[pos + 4..pos + 8] == b"IDAT" {
            return png.get(pos + 9).map(|flg| flg >> 6);
        }
        pos += 12 + len;
    }
    None
}

/// Every expected file exists, is what its name says, and the HTML carries the manifest's facts.
fn check_files(dir: &Path, written: &[PathBuf]) {
    for name in FILES {
        let path = dir.join(name);
        assert!(
            written.contains(&path),
            "{name} not in the returned list {written:?}"
        );
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!bytes.is_empty(), "{name} is empty");
        if name.ends_with(".png") {
            assert_eq!(bytes[..8], PNG_SIGNATURE, "{name} is not a PNG");
            assert!(bytes.len() > 5_000, "{name} is suspiciously small");
            assert!(
                idat_zlib_level(&bytes).is_some_and(|l| l >= 2),
                "{name} is not compressed at zlib's default level or better (FLEVEL {:?})",
                idat_zlib_level(&bytes)
            );
        }
        if name.ends_with(".svg") {
            let text = String::from_utf8(bytes).expect("SVG is UTF-8");
            assert!(text.contains("<svg"), "{name} has no <svg element");
            assert!(text.trim_end().ends_with("</svg>"), "{name} is not closed");
            assert!(text.contains("<text"), "{name} has no text");
        }
    }
    let extra: Vec<&PathBuf> = written
        .iter()
        .filter(|w| !FILES.iter().any(|f| **w == dir.join(f)))
        .collect();
    assert!(
        extra
            .iter()
            .all(|w| WHERE_DEFAULT_MEETS_BEST.iter().any(|f| **w == dir.join(f))),
        "unexpected files: {extra:?}"
    );
    let html = read(dir, "report.html");
    let manifest: serde_json::Value =
        serde_json::from_str(&read(dir, "manifest.json")).expect("manifest");
    let device = manifest["backend"]["devices"][0].as_str().expect("device");
    let sweep = manifest["sweep"]["name"].as_str().expect("sweep name");
    assert!(html.contains(device), "device {device} missing");
    assert!(html.contains(sweep), "sweep name {sweep} missing");
    assert!(html.contains(manifest["backend"]["backend"].as_str().expect("backend")));
    assert!(html.contains(manifest["rocsweep_version"].as_str().expect("version")));
    assert!(html.contains(manifest["git_commit"].as_str().expect("commit")));
    assert!(html.contains(manifest["host"]["hostname"].as_str().expect("host")));
    for (lib, version) in manifest["backend"]["versions"].as_object().expect("libs") {
        let version = version.as_str().expect("version");
        assert!(html.contains(&format!("{lib} {version}")), "{lib} missing");
    }
    // The safe-region map is HTML (cells that link to their units) unless it is too large to
    // draw; the other plots are embedded pictures.
    let maps = usize::from(html.contains("<table class=\"map\">"));
    let default_best = usize::from(written.contains(&dir.join("default_best.png")));
    assert_eq!(
        html.matches("data:image/png;base64,").count() + maps,
        3 + default_best,
        "three plots embedded, and default against best where it was drawn"
    );
    assert!(!html.contains("<script"), "the page carries no script");
    let md = read(dir, "summary.md");
    assert!(md.contains(&format!("# rocsweep report: {sweep}")));
    assert!(md.lines().any(|l| l.starts_with("Counts: ")), "{md}");
}

#[test]
fn rdna1_like_report_maps_the_compile_hangs_per_env() {
    let (_tmp, dir) = copy_of("rdna1-like");
    let written = rocsweep::report::write(&dir).expect("report");
    check_files(&dir, &written);
    let html = read(&dir, "report.html");
    for (word, n) in [("ok", 25), ("hang", 6), ("crash", 1)] {
        let row = format!("</span>{word}</td><td class=\"num\">{n}</td>");
        assert!(html.contains(&row), "{word} count row");
    }
    for word in ["hang", "crash"] {
        assert!(html.contains(&format!(">{word}</span>")), "{word} badge");
    }
    assert!(html.contains("killed by SIGSEGV"));
    assert!(html.contains("MIOPEN_DEBUG_CONV_GEMM=0"));
    assert!(html.contains("MIOPEN_DEBUG_CONV_GEMM=1"));
    assert!(html.contains("Fastest solver per case"));
    // One panel per env combination, hang cells labelled with their phase.
    let svg = read(&dir, "heatmap.svg");
    assert!(svg.contains("MIOPEN_DEBUG_CONV_GEMM=0 · solver default"));
    assert!(svg.contains("MIOPEN_DEBUG_CONV_GEMM=1 · solver default"));
    assert_eq!(svg.matches("H:compile").count(), 6, "six compile hangs");
    assert_eq!(svg.matches("C:run").count(), 1, "one crash in run");
    assert!(svg.contains("c_in→c_out"));
    let md = read(&dir, "summary.md");
    assert!(
        md.contains("Counts: 32 units: ok 25, hang 6, crash 1"),
        "{md}"
    );
    assert!(md.contains("| hang | compile | default | MIOPEN_DEBUG_CONV_GEMM=1 |"));
    // Every failure leads to its repro: its row carries the unit id in a copyable command, and
    // its map cell links to that row.
    let canonical = std::fs::canonicalize(&dir).expect("canonical run dir");
    let csv = read(&dir, "results.csv");
    let mut failures = 0;
    for line in csv.lines().skip(1) {
        let id = line.split(',').next().expect("unit id");
        if !line.contains(",hang,") && !line.contains(",crash,") {
            continue;
        }
        failures += 1;
        let repro = format!("rocsweep repro {} {id}", canonical.display());
        assert!(
            md.contains(&format!("`{repro}`")),
            "{id}: no repro in summary.md"
        );
        assert!(
            html.contains(&format!("<code class=\"copy\">{repro}</code>")),
            "{id}"
        );
        assert!(
            html.contains(&format!("<tr id=\"u-{id}\">")),
            "{id}: no row anchor"
        );
        assert!(
            html.contains(&format!("<a href=\"#u-{id}\">")),
            "{id}: no map link"
        );
    }
    assert_eq!(failures, 7, "six hangs and a crash");
    // Throughput lines hold the channels fixed: the legend names each family.
    let tp = read(&dir, "throughput.svg");
    let families = ["c_in→c_out=3→16", "c_in→c_out=16→32"];
    assert!(
        families.iter().all(|f| tp.contains(f)),
        "families in the legend"
    );
    // The map cells say which unit they are when pointed at.
    assert!(
        html.contains("title=\"hang in compile · solver default"),
        "cell title"
    );
}

#[test]
fn release_a_report_has_no_failures_and_names_its_cases() {
    let (_tmp, dir) = copy_of("release-a");
    let written = rocsweep::report::write(&dir).expect("report");
    check_files(&dir, &written);
    let html = read(&dir, "report.html");
    assert!(html.contains("No unit failed"));
    assert!(html.contains("m=n=k=128 dtype=out_dtype=bf16"));
    let md = read(&dir, "summary.md");
    assert!(md.contains("Counts: 8 units: ok 8"), "{md}");
    // Nothing fails: one sentence for the boundaries, not a row of "never" per line.
    assert!(
        md.contains("## Boundaries along m\n\nNo line fails: each of the"),
        "{md}"
    );
    assert!(!md.contains("| never |"), "{md}");
    let svg = read(&dir, "throughput.svg");
    // dtype is a word: a panel per dtype rather than a line zig-zagging between them.
    assert!(svg.contains("dtype=f32") && svg.contains("dtype=bf16"));
}

#[test]
fn every_status_report_names_each_status_and_escapes_error_text() {
    let (_tmp, dir) = copy_of("every-status");
    let written = rocsweep::report::write(&dir).expect("report");
    check_files(&dir, &written);
    let html = read(&dir, "report.html");
    for status in rocsweep::results::status::Status::ALL {
        let row = format!("</span>{status}</td><td class=\"num\">");
        assert!(html.contains(&row), "{status} has no count row");
        // Inferred units are counted and noted, not listed one by one (a bisect run has hundreds).
        if status != rocsweep::results::status::Status::Ok && !status.is_inferred() {
            let badge = format!(">{status}</span>");
            assert!(html.contains(&badge), "{status} has no badge");
        }
    }
    assert!(html.contains("2 units were inferred by the boundary search"));
    assert!(html.contains(
        "HIPBLAS_STATUS_INTERNAL_ERROR: &lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot;"
    ));
    assert!(!html.contains("<script>alert(1)"));
    assert!(
        html.contains("&lt;gemm_f32_128&gt;"),
        "log tails are escaped too"
    );
    assert!(
        html.contains("the device stayed unhealthy"),
        "why it stopped"
    );
    let md = read(&dir, "summary.md");
    assert!(
        md.contains(
            "Counts: 16 units: ok 4, mismatch 1, zeros 1, nonfinite 1, hang 1, crash 1, error 1, unsupported 1, skipped 2, interrupted 1, inferred-ok 1, inferred-fail 1"
        ),
        "{md}"
    );
    assert!(md.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!md.contains("<script>"));
    // Two solvers: one panel each; every cell code appears.
    let svg = read(&dir, "heatmap.svg");
    assert!(svg.contains("solver default") && svg.contains("solver gemm-crate"));
    assert!(
        svg.contains("hatched: inferred, not run"),
        "the legend explains hatching"
    );
    for code in ["H:compile", "C:run", "I:alloc", ">\nF\n<"] {
        assert!(svg.contains(code), "{code} missing from the heatmap");
    }
}

#[test]
fn the_map_opens_on_the_worst_and_best_over_solvers_and_colours_inferred_cells_by_their_source() {
    let (_tmp, dir) = copy_of("every-status");
    // Point the inferred failure at the run's measured crash instead of a unit that is not there.
    let csv =
        read(&dir, "results.csv").replace("[unit 0000000000000000]", "[unit 5718b45527db04d7]");
    std::fs::write(dir.join("results.csv"), csv).expect("write");
    rocsweep::report::write(&dir).expect("report");
    let svg = read(&dir, "heatmap.svg");
    assert!(svg.contains("worst of 2 solvers") && svg.contains("best of 2 solvers"));
    let worst = svg.find("worst of 2 solvers").expect("worst panel");
    let per_solver = svg.find("solver default").expect("solver panel");
    assert!(worst < per_solver, "the overview comes first");
    let html = read(&dir, "report.html");
    let crash = "background:#212121";
    let cell = html
        .split("<td")
        .find(|td| td.contains("unit ee242be1fdc178bf"))
        .expect("the inferred-fail cell");
    assert!(
        cell.contains(crash),
        "inferred from a crash, drawn as one: {cell}"
    );
    assert!(cell.contains("class=\"hatched\""), "and hatched: {cell}");
}

#[test]
fn one_solver_everywhere_is_one_line_not_a_table() {
    let (_tmp, dir) = copy_of("release-a");
    rocsweep::report::write(&dir).expect("report");
    let md = read(&dir, "summary.md");
    let section = md
        .split("## Fastest solver per case")
        .nth(1)
        .expect("section");
    let body = section.split("\n## ").next().unwrap_or("");
    assert!(!body.contains("| case |"), "no table: {body}");
    assert!(
        body.contains("default is the only timed solver in all 8 cases"),
        "{body}"
    );
    // With a choice between envs the table stays (rdna1-like: the env decides).
    let (_tmp2, dir) = copy_of("rdna1-like");
    rocsweep::report::write(&dir).expect("report");
    assert!(read(&dir, "summary.md").contains("| case | fastest solver | env |"));
}

#[test]
fn empty_run_renders_no_data_plots() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("empty");
    std::fs::create_dir(&dir).expect("create run dir");
    std::fs::copy(
        fixture("release-a").join("manifest.json"),
        dir.join("manifest.json"),
    )
    .expect("copy manifest");
    let csv = std::fs::read_to_string(fixture("release-a").join("results.csv")).expect("csv");
    let header = csv.lines().next().expect("header");
    std::fs::write(dir.join("results.csv"), format!("{header}\n")).expect("write header");
    let written = rocsweep::report::write(&dir).expect("report of an empty run");
    check_files(&dir, &written);
    for svg in ["heatmap.svg", "counts.svg", "throughput.svg"] {
        assert!(read(&dir, svg).contains("no data"), "{svg} says no data");
    }
    let md = read(&dir, "summary.md");
    assert!(md.contains("Counts: 0 units"), "{md}");
    assert!(read(&dir, "report.html").contains("No timings"));
}

#[test]
fn missing_run_directory_is_bad_input_naming_it() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("no-such-run");
    match rocsweep::report::write(&dir) {
        Err(CmdError::BadInput(msg)) => assert!(msg.contains("no-such-run"), "{msg}"),
        other => panic!("expected BadInput, got {other:?}"),
    }
}

#[test]
fn unknown_status_word_is_bad_input_naming_file_and_line() {
    let (_tmp, dir) = copy_of("release-a");
    let csv = read(&dir, "results.csv");
    let broken = csv.replacen(",ok,", ",exploded,", 2);
    std::fs::write(dir.join("results.csv"), broken).expect("write");
    match rocsweep::report::write(&dir) {
        Err(CmdError::BadInput(msg)) => {
            assert!(msg.contains("results.csv"), "{msg}");
            assert!(msg.contains("line 2"), "{msg}");
            assert!(msg.contains("exploded"), "{msg}");
        }
        other => panic!("expected BadInput, got {other:?}"),
    }
    assert!(!dir.join("report.html").exists(), "nothing written");
}

#[test]
fn cli_report_prints_the_files_and_exits_0_or_2() {
    let (_tmp, dir) = copy_of("rdna1-like");
    let out = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .arg("report")
        .arg(&dir)
        .output()
        .expect("run rocsweep");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    for name in FILES {
        assert!(stdout.contains(name), "{name} not printed: {stdout}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .arg("report")
        .arg(dir.join("nope"))
        .output()
        .expect("run rocsweep");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// Renders report.html in headless Chromium when it is installed (CI installs it: under
/// CI=true a missing Chromium fails the test, as a missing Slurm or hipcc does); elsewhere it
/// prints that it skipped.
#[test]
#[cfg_attr(
    rocsweep_missing_chromium,
    ignore = "needs /usr/bin/chromium (apt-get install chromium)"
)]
fn report_html_renders_in_headless_chromium() {
    if !Path::new("/usr/bin/chromium").exists() {
        assert!(
            std::env::var("CI").is_err(),
            "/usr/bin/chromium is missing, but .ci/run installs it"
        );
        eprintln!(
            "skipped: /usr/bin/chromium not found (apt-get install chromium to run this test)"
        );
        return;
    }
    let (tmp, dir) = copy_of("every-status");
    rocsweep::report::write(&dir).expect("report");
    let shot = tmp.path().join("shot.png");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check-report-html.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(&dir)
        .arg(&shot)
        .output()
        .expect("run check-report-html.sh");
    assert!(out.status.success(), "{out:?}");
    let bytes = std::fs::read(&shot).expect("screenshot");
    assert_eq!(bytes[..8], PNG_SIGNATURE);
    assert!(bytes.len() > 50_000, "screenshot of {} bytes", bytes.len());
}

#[test]
fn a_run_too_wide_to_draw_gets_a_note_instead_of_a_giant_bitmap() {
    // 20,000 distinct values on the x axis: one cell each would be a bitmap of gigabytes.
    let (_tmp, dir) = copy_of("release-a");
    let text = read(&dir, "results.csv");
    let mut lines = text.lines();
    let header = lines.next().unwrap().to_string();
    let first: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    let cols: Vec<&str> = header.split(',').collect();
    let m = cols.iter().position(|c| *c == "m").unwrap();
    let id = cols.iter().position(|c| *c == "unit_id").unwrap();
    let mut out = header.clone();
    for i in 0..20_000 {
        let mut row = first.clone();
        row[m] = (i + 1).to_string();
        row[id] = format!("{i:016x}");
        out.push('\n');
        out.push_str(&row.join(","));
    }
    out.push('\n');
    std::fs::write(dir.join("results.csv"), out).unwrap();
    let written = rocsweep::report::write(&dir).unwrap();
    check_files(&dir, &written);
    let svg = read(&dir, "heatmap.svg");
    assert!(svg.contains("too many cells to draw"), "a note, not a map");
    let png = std::fs::metadata(dir.join("heatmap.png")).unwrap().len();
    assert!(png < 1_000_000, "heatmap.png is {png} bytes");
}

#[test]
fn a_picture_with_many_solvers_keeps_the_failing_ones_and_says_what_it_left_out() {
    // 20 solvers over the fixture's cases (a cuBLASLt sweep names one per rank and algorithm);
    // only solver s17 has a failure. The picture draws 12 solver panels: s17 first, then the
    // first 11 all-ok ones; report.html keeps all 20.
    let (_tmp, dir) = copy_of("release-a");
    let text = read(&dir, "results.csv");
    let mut lines = text.lines();
    let header = lines.next().unwrap().to_string();
    let cols: Vec<&str> = header.split(',').collect();
    let at = |name: &str| cols.iter().position(|c| *c == name).unwrap();
    let (solver, status, phase, id) = (at("solver"), at("status"), at("phase"), at("unit_id"));
    let rows: Vec<Vec<String>> = lines
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    let mut out = header.clone();
    for s in 0..20 {
        for (i, r) in rows.iter().enumerate() {
            let mut row = r.clone();
            row[solver] = format!("s{s:02}");
            row[id] = format!("{:016x}", s * 100 + i);
            if s == 17 && i == 0 {
                row[status] = "hang".into();
                row[phase] = "run".into();
            }
            out.push('\n');
            out.push_str(&row.join(","));
        }
    }
    out.push('\n');
    std::fs::write(dir.join("results.csv"), out).unwrap();
    let written = rocsweep::report::write(&dir).unwrap();
    check_files(&dir, &written);
    let svg = read(&dir, "heatmap.svg");
    assert!(
        svg.contains("8 of 20 solver panels left out (8 of them with every unit ok)"),
        "the subtitle names what was left out"
    );
    for kept in ["solver s17", "solver s00", "solver s10"] {
        assert!(svg.contains(kept), "{kept} drawn");
    }
    for left in ["solver s11", "solver s16", "solver s19"] {
        assert!(!svg.contains(left), "{left} left out of the picture");
    }
    let html = read(&dir, "report.html");
    assert!(html.contains("solver s19"), "report.html keeps every panel");
}

/// Issue 40, S4: the command line in summary.md is quoted as a shell needs it: pasted into bash,
/// it gives back the same arguments.
#[test]
fn the_command_line_in_the_summary_is_quoted_for_a_shell() {
    let (_tmp, dir) = copy_of("release-a");
    let path = dir.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_str(&read(&dir, "manifest.json")).unwrap();
    let args = [
        "rocsweep",
        "run",
        "my sweep;$(id).toml",
        "--out",
        "it's here",
    ];
    m["command_line"] = serde_json::json!(args);
    std::fs::write(&path, serde_json::to_string(&m).unwrap()).unwrap();
    rocsweep::report::write(&dir).unwrap();
    let md = read(&dir, "summary.md");
    let line = md
        .lines()
        .find(|l| l.starts_with("| command |"))
        .unwrap_or_else(|| panic!("{md}"));
    let code = line
        .split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    assert_eq!(
        code,
        r#"rocsweep run 'my sweep;$(id).toml' --out 'it'\''s here'"#
    );
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!("printf '%s\\n' {code}"))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .collect::<Vec<_>>(),
        args
    );
}

//! Memory at scale (issue 40, "Scale"): `report`, `compare` and `recommend` over a run of many
//! rows hold a few hundred bytes per row, not the 2.8-6.1 KB per row they held with a row of
//! owned strings (10^6 rows: 2.8, 6.1 and 2.8 GB). The run is grown from a committed fixture by
//! scripts/scale-run.py; each command is a real process, and its peak resident set comes from
//! the kernel (wait4), not from a clock.

use std::path::Path;
use std::process::Command;

/// The peak resident set of the command's process, in bytes, and whether it succeeded.
// The child is reaped by wait4 (which also gives its rusage), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
fn peak_rss(cmd: &mut Command) -> (bool, u64) {
    let child = cmd.spawn().expect("spawn");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our own unwaited child; status and usage are valid for writes.
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(got, pid, "wait4: {}", std::io::Error::last_os_error());
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    (ok, usage.ru_maxrss as u64 * 1024)
}

fn grow(base: &Path, out: &Path, rows: usize) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/scale-run.py");
    let o = Command::new("python3")
        .arg(&script)
        .arg(base)
        .arg(out)
        .arg(rows.to_string())
        .output()
        .expect("python3 runs scripts/scale-run.py");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Peak resident set of `rocsweep NAME ARGS`, asserting that it succeeded.
fn peak_of(name: &str, args: &[&Path]) -> u64 {
    let (ok, peak) = peak_rss(
        Command::new(env!("CARGO_BIN_EXE_rocsweep"))
            .arg(name)
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    assert!(ok, "rocsweep {name} failed");
    peak
}

#[test]
fn report_compare_and_recommend_hold_a_few_hundred_bytes_per_row() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs/rdna1-like");
    let tmp = tempfile::tempdir().unwrap();
    // Two sizes: what a row costs is the slope, free of the fixed costs (fonts, pictures).
    let (small, large) = (20_000, 60_000);
    let run = |name: &str, rows: usize| {
        let dir = tmp.path().join(name);
        grow(&fixture, &dir, rows);
        dir
    };
    let (a1, b1, a2, b2) = (
        run("a1", small),
        run("b1", small),
        run("a2", large),
        run("b2", large),
    );
    let out = tmp.path().join("cmp");
    // (command, its arguments at each size, bytes per row allowed)
    let cases: [(&str, [Vec<&Path>; 2], u64); 3] = [
        ("report", [vec![&a1], vec![&a2]], 1000),
        (
            "compare",
            [
                vec![&a1, &b1, Path::new("--out"), &out],
                vec![&a2, &b2, Path::new("--out"), &out],
            ],
            800,
        ),
        ("recommend", [vec![&a1], vec![&a2]], 1000),
    ];
    for (name, [args1, args2], limit) in cases {
        let (p1, p2) = (peak_of(name, &args1), peak_of(name, &args2));
        let per_row = p2.saturating_sub(p1) / (large - small) as u64;
        eprintln!(
            "{name}: peak {} MB at {small} rows, {} MB at {large}: {per_row} bytes per row",
            p1 >> 20,
            p2 >> 20
        );
        assert!(
            per_row < limit,
            "rocsweep {name}: {per_row} bytes per row (at most {limit}); peak {} MB at {large} rows",
            p2 >> 20
        );
    }
    assert!(out.join("compare.csv").is_file());
    assert!(a2.join("report.html").is_file());
}

//! Records the git commit and the versions of the numeric crates the CPU backend runs on, for
//! the manifest. Missing git or Cargo.lock gives "unknown", never a build failure.

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .is_some_and(|o| o.status.success() && !o.stdout.is_empty());
    let commit = if dirty && commit != "unknown" {
        format!("{commit}-dirty")
    } else {
        commit
    };
    println!("cargo:rustc-env=ROCSWEEP_GIT_COMMIT={commit}");
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/index");
    println!("cargo:rerun-if-changed=Cargo.lock");

    let lock = std::fs::read_to_string("Cargo.lock").unwrap_or_default();
    let mut entries = Vec::new();
    for name in ["gemm", "half", "rand", "rand_distr"] {
        // Several versions of a crate can be locked (dev-dependencies bring older ones); the
        // newest is the one this package depends on.
        let version = lock
            .split("[[package]]")
            .filter(|block| {
                block
                    .lines()
                    .any(|l| l.trim() == format!("name = \"{name}\""))
            })
            .filter_map(|block| {
                block
                    .lines()
                    .find(|l| l.trim_start().starts_with("version = "))
            })
            .filter_map(|l| l.split('"').nth(1))
            .max_by_key(|v| {
                v.split('.')
                    .map(|p| p.parse::<u64>().unwrap_or(0))
                    .collect::<Vec<_>>()
            })
            .unwrap_or("unknown")
            .to_string();
        entries.push(format!("(\"{name}\", \"{version}\")"));
    }
    let out = std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into());
    let code = format!(
        "pub const DEPENDENCY_VERSIONS: &[(&str, &str)] = &[{}];\n",
        entries.join(", ")
    );
    if let Err(e) = std::fs::write(format!("{out}/dependency_versions.rs"), code) {
        println!("cargo:warning=cannot write dependency versions: {e}");
    }
    test_prerequisites();
}

/// The tests that need a Debian package (or two cores) are marked `ignore` when it is missing,
/// through a cfg set here, so that `cargo test` counts them as ignored, with the reason, instead
/// of passing them. Under CI=true nothing is marked: a missing package must fail there (each
/// test checks again at run time and panics under CI).
fn test_prerequisites() {
    const NAMES: [&str; 7] = [
        "chromium",
        "hip",
        "hipcc",
        "slurm",
        "script",
        "two_cores",
        "torch",
    ];
    for name in NAMES {
        println!("cargo::rustc-check-cfg=cfg(rocsweep_missing_{name})");
    }
    println!("cargo:rerun-if-env-changed=CI");
    println!("cargo:rerun-if-env-changed=PATH");
    for var in ["ROCSWEEP_TEST_PYTHON", "XDG_CACHE_HOME", "HOME"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    for dir in ["/usr/bin", "/usr/sbin", "/usr/lib/x86_64-linux-gnu"] {
        if std::path::Path::new(dir).is_dir() {
            println!("cargo:rerun-if-changed={dir}");
        }
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        return;
    }
    let path = std::env::var("PATH").unwrap_or_default() + ":/usr/local/sbin:/usr/sbin:/sbin";
    let on_path = |tool: &str| {
        path.split(':')
            .filter(|d| !d.is_empty())
            .any(|d| std::path::Path::new(d).join(tool).is_file())
    };
    let root = Command::new("id")
        .arg("-u")
        .output()
        .ok()
        .is_some_and(|o| o.stdout.trim_ascii() == b"0");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let missing = [
        (
            "chromium",
            std::path::Path::new("/usr/bin/chromium").exists(),
        ),
        (
            "hip",
            std::path::Path::new("/usr/lib/x86_64-linux-gnu/libamdhip64.so.5").exists(),
        ),
        ("hipcc", std::path::Path::new("/usr/bin/hipcc").exists()),
        (
            "slurm",
            root && ["sbatch", "slurmctld", "slurmd", "munged", "python3"]
                .iter()
                .all(|t| on_path(t)),
        ),
        ("script", on_path("script")),
        ("two_cores", cores >= 2),
        // The torch backend's tests: a Python with torch, from scripts/torch-venv.sh.
        ("torch", test_python().is_some_and(|p| p.is_file())),
    ];
    for (name, present) in missing {
        if !present {
            println!("cargo:rustc-cfg=rocsweep_missing_{name}");
        }
    }
}

/// The Python the torch tests use (tests/torch.rs looks in the same places).
fn test_python() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("ROCSWEEP_TEST_PYTHON").filter(|p| !p.is_empty()) {
        return Some(p.into());
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache")))?;
    Some(cache.join("rocsweep/torch-venv/bin/python"))
}

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
}

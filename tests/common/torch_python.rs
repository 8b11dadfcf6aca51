//! The Python with torch that the torch backend's tests use (scripts/torch-venv.sh makes it;
//! `.ci/run` runs that script). Shared by tests/torch.rs and tests/torch_start.rs.

use std::path::PathBuf;

/// The Python with torch: $ROCSWEEP_TEST_PYTHON, else scripts/torch-venv.sh's environment.
pub fn python() -> Option<PathBuf> {
    let p = match std::env::var_os("ROCSWEEP_TEST_PYTHON").filter(|p| !p.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?
            .join("rocsweep/torch-venv/bin/python"),
    };
    if p.is_file() {
        return Some(p);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!(
            "{} is missing, but .ci/run makes it (scripts/torch-venv.sh)",
            p.display()
        );
    }
    eprintln!("skipped: no Python with torch (run scripts/torch-venv.sh)");
    None
}

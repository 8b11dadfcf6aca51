//! Where a run writes: `reports/runs/<name>-<utc-timestamp>/` or `--out DIR`.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    #[error("run directory {0} already exists and is not empty; choose another --out")]
    NotEmpty(PathBuf),
    #[error("{0} exists and is not a directory")]
    NotADirectory(PathBuf),
    #[error("cannot create run directory {0}: {1}")]
    Create(PathBuf, std::io::Error),
}

/// The default location for a sweep named `name`, stamped with the UTC time.
pub fn default_path(name: &str, now: chrono::DateTime<chrono::Utc>) -> PathBuf {
    Path::new("reports")
        .join("runs")
        .join(format!("{name}-{}", now.format("%Y%m%dT%H%M%SZ")))
}

/// Checks that `dir` can hold a new run without creating anything (bad input must leave no trace).
pub fn check_free(dir: &Path) -> Result<(), RunDirError> {
    if dir.exists() {
        if !dir.is_dir() {
            return Err(RunDirError::NotADirectory(dir.to_path_buf()));
        }
        let empty = std::fs::read_dir(dir)
            .map(|mut d| d.next().is_none())
            .unwrap_or(false);
        if !empty {
            return Err(RunDirError::NotEmpty(dir.to_path_buf()));
        }
    }
    Ok(())
}

pub fn create(dir: &Path) -> Result<(), RunDirError> {
    check_free(dir)?;
    std::fs::create_dir_all(dir).map_err(|e| RunDirError::Create(dir.to_path_buf(), e))
}

/// A hidden sibling of `dir` where a new run is assembled before it is renamed into place.
pub fn staging_path(dir: &Path) -> PathBuf {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".into());
    dir.with_file_name(format!(".{name}.staging-{}", std::process::id()))
}

/// Moves a staged run into place. `dir` may exist only as an empty directory.
pub fn publish(staging: &Path, dir: &Path) -> std::io::Result<()> {
    if dir.exists() {
        std::fs::remove_dir(dir)?;
    }
    std::fs::rename(staging, dir)
}

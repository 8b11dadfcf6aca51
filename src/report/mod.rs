//! `rocsweep report RUN_DIR`: plots, report.html and summary.md from a run directory (not
//! implemented yet).

use crate::error::CmdError;
use std::path::Path;

/// Writes the report files into `dir` and returns their paths.
pub fn write(dir: &Path) -> Result<Vec<std::path::PathBuf>, CmdError> {
    Err(CmdError::Failure(format!(
        "{}: `report` is not implemented yet",
        dir.display()
    )))
}

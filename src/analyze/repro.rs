//! `rocsweep repro` (not implemented yet).

use crate::error::CmdError;
use std::path::Path;

pub fn command(run_dir: &Path, unit_id: &str) -> Result<String, CmdError> {
    let _ = (run_dir, unit_id);
    Err(CmdError::Failure("`repro` is not implemented yet".into()))
}

//! `rocsweep recommend` (not implemented yet).

use crate::error::CmdError;
use std::path::Path;

pub fn command(run_dir: &Path, out: Option<&Path>) -> Result<(), CmdError> {
    let _ = (run_dir, out);
    Err(CmdError::Failure(
        "`recommend` is not implemented yet".into(),
    ))
}

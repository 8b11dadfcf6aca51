//! `rocsweep compare` (not implemented yet).

use crate::error::CmdError;
use std::path::Path;

pub fn command(
    run_a: &Path,
    run_b: &Path,
    out: Option<&Path>,
    force: bool,
    fail_on_regression: bool,
) -> Result<i32, CmdError> {
    let _ = (run_a, run_b, out, force, fail_on_regression);
    Err(CmdError::Failure("`compare` is not implemented yet".into()))
}

//! The error every command returns; `main` maps it to an exit code.

use crate::spec::error::SpecError;

/// Why a command stopped; `main` maps these to exit codes.
#[derive(Debug, thiserror::Error)]
pub enum CmdError {
    #[error("{}", .0.render())]
    Spec(Box<SpecError>),
    /// Bad CLI value or run directory: nothing was written.
    #[error("error: {0}")]
    BadInput(String),
    #[error("error: {0}")]
    Failure(String),
}

/// A run directory that cannot be created is a failure; one that is taken or misnamed
/// (`--out`) is bad input.
impl From<crate::results::rundir::RunDirError> for CmdError {
    fn from(e: crate::results::rundir::RunDirError) -> Self {
        match e {
            crate::results::rundir::RunDirError::Create(..) => CmdError::Failure(e.to_string()),
            _ => CmdError::BadInput(e.to_string()),
        }
    }
}

impl From<SpecError> for CmdError {
    fn from(e: SpecError) -> Self {
        CmdError::Spec(Box::new(e))
    }
}

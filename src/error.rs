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

impl From<SpecError> for CmdError {
    fn from(e: SpecError) -> Self {
        CmdError::Spec(Box::new(e))
    }
}

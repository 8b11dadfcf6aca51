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

/// Why `path` cannot be used, in words, when it cannot even be looked at: "no such file or
/// directory", "a symbolic link loop", "permission denied" (the system's text otherwise); None
/// when it exists.
pub fn path_problem(path: &std::path::Path) -> Option<String> {
    match std::fs::metadata(path) {
        Ok(_) => None,
        Err(e) => Some(match (e.kind(), e.raw_os_error()) {
            (std::io::ErrorKind::NotFound, _) => "no such file or directory".into(),
            (_, Some(libc::ELOOP)) => "a symbolic link loop".into(),
            (std::io::ErrorKind::PermissionDenied, _) => "permission denied".into(),
            _ => e.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_a_missing_path_and_an_existing_one_are_told_apart() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        assert_eq!(path_problem(&a).as_deref(), Some("a symbolic link loop"));
        assert_eq!(
            path_problem(&tmp.path().join("x")).as_deref(),
            Some("no such file or directory")
        );
        assert_eq!(path_problem(tmp.path()), None);
    }
}

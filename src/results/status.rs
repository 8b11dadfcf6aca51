//! The outcome words of the CSV's `status` column.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Mismatch,
    Zeros,
    Nonfinite,
    Hang,
    Crash,
    Error,
    Unsupported,
    Skipped,
    Interrupted,
}

impl Status {
    pub const ALL: [Status; 10] = [
        Status::Ok,
        Status::Mismatch,
        Status::Zeros,
        Status::Nonfinite,
        Status::Hang,
        Status::Crash,
        Status::Error,
        Status::Unsupported,
        Status::Skipped,
        Status::Interrupted,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Mismatch => "mismatch",
            Status::Zeros => "zeros",
            Status::Nonfinite => "nonfinite",
            Status::Hang => "hang",
            Status::Crash => "crash",
            Status::Error => "error",
            Status::Unsupported => "unsupported",
            Status::Skipped => "skipped",
            Status::Interrupted => "interrupted",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|x| x.name() == s)
    }

    /// Outcomes that mean the library did something wrong (not merely "cannot do this").
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            Status::Mismatch
                | Status::Zeros
                | Status::Nonfinite
                | Status::Hang
                | Status::Crash
                | Status::Error
        )
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<crate::verify::Verdict> for Status {
    fn from(v: crate::verify::Verdict) -> Status {
        match v {
            crate::verify::Verdict::Ok => Status::Ok,
            crate::verify::Verdict::Mismatch => Status::Mismatch,
            crate::verify::Verdict::Zeros => Status::Zeros,
            crate::verify::Verdict::Nonfinite => Status::Nonfinite,
        }
    }
}

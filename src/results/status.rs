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
    /// Not run: a boundary search (`--strategy bisect`) placed it on the safe side of a line.
    #[serde(rename = "inferred-ok")]
    InferredOk,
    /// Not run: a boundary search placed it on the failing (hang or crash) side of a line.
    #[serde(rename = "inferred-fail")]
    InferredFail,
}

impl Status {
    pub const COUNT: usize = 12;

    pub const ALL: [Status; Status::COUNT] = [
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
        Status::InferredOk,
        Status::InferredFail,
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
            Status::InferredOk => "inferred-ok",
            Status::InferredFail => "inferred-fail",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|x| x.name() == s)
    }

    /// Outcomes that mean the library did something wrong (not merely "cannot do this"). Only
    /// measured outcomes: an `inferred-fail` unit never ran, so it is not one (see
    /// [`Status::predicts_failure`]).
    /// How much a status warns, for picking the worst of several (docs/outputs.md): hangs and
    /// crashes take the machine or worker down; wrong numbers are silent and worse than an
    /// honest library error; not running at all says nothing; `unsupported` is an honest
    /// "cannot". An inferred status ranks just below the measured one it stands for.
    pub fn severity(self) -> u8 {
        match self {
            Status::Hang => 11,
            Status::Crash => 10,
            Status::InferredFail => 9,
            Status::Nonfinite => 8,
            Status::Zeros => 7,
            Status::Mismatch => 6,
            Status::Error => 5,
            Status::Interrupted => 4,
            Status::Skipped => 3,
            Status::Unsupported => 2,
            Status::InferredOk => 1,
            Status::Ok => 0,
        }
    }

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

impl Status {
    /// Statuses a boundary search wrote without running the unit.
    pub fn is_inferred(self) -> bool {
        matches!(self, Status::InferredOk | Status::InferredFail)
    }

    /// A failure, measured or inferred: what a map of where the library fails counts.
    pub fn predicts_failure(self) -> bool {
        self.is_failure() || self == Status::InferredFail
    }

    /// `ok`, measured or inferred.
    pub fn predicts_ok(self) -> bool {
        matches!(self, Status::Ok | Status::InferredOk)
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

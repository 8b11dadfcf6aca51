//! What a sequence run found: each step's result, each env combination's replay, and what a
//! failing step needs. Plain data, shared by the replay, the search and the writers.

use crate::exec::worker::unit::Outcome;
use crate::results::status::Status;
use crate::spec::sequence::At;

/// One step's place and result in a replay of the sequence.
#[derive(Clone, Debug)]
pub struct StepResult {
    pub at: At,
    pub unit_id: String,
    pub outcome: Outcome,
}

/// What was found about a failing step (the first failing step of an env combination).
#[derive(Clone, Debug)]
pub struct Finding {
    /// Index in the run order of the failing step.
    pub index: usize,
    /// Whether the step failed alone too, in a fresh process (then no search ran).
    pub fails_alone: bool,
    /// The steps before it (indices in the run order) that it needs, when it passes alone.
    pub needs: Option<Minimal>,
}

/// Everything one env combination's replay gave.
pub struct ComboResult {
    pub env: String,
    /// The device the workers named (empty when none started).
    pub device: String,
    pub vars: Vec<(String, String)>,
    pub backend: String,
    pub steps: Vec<StepResult>,
    pub finding: Option<Finding>,
    /// Where a resumed run's replay picked up (the index in the run order of the first step
    /// run in its fresh process), when it kept earlier steps.
    pub picked_up: Option<usize>,
}

/// The steps a failure needs before it, as found.
#[derive(Clone, Debug, PartialEq)]
pub struct Minimal {
    /// Indices in the run order of the steps kept, in order.
    pub steps: Vec<usize>,
    /// Fresh worker processes the search ran (the step alone included).
    pub candidates: usize,
    /// The budget ran out before the search ended: a smaller prefix may exist.
    pub cut: bool,
    /// Candidates whose process ended (a hang or crash in a kept step) before the failing
    /// step ran: each cost one candidate, and counts as not reproducing.
    pub ended: usize,
}

/// A status word for the finding's sentence ("returns zeros", "hangs").
pub fn what_it_does(status: Status) -> &'static str {
    match status {
        Status::Zeros => "returns zeros",
        Status::Mismatch => "returns wrong values",
        Status::Nonfinite => "returns NaN or Inf",
        Status::Hang => "hangs",
        Status::Crash => "crashes",
        Status::Error => "fails with an error",
        _ => "fails",
    }
}

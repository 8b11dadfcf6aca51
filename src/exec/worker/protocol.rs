//! The supervisor <-> worker protocol: newline-delimited JSON over the worker's stdin and a
//! private copy of its stdout. Versioned: the worker announces its version in `ready` and the
//! supervisor refuses a worker that speaks another.

use crate::backend::BackendInfo;
use crate::exec::worker::unit::Outcome;
use crate::op::{Case, Problem};
use crate::spec::policy::Policies;
use serde::{Deserialize, Serialize};

pub const PROTOCOL_VERSION: u32 = 1;

/// Supervisor -> worker.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    /// Run one unit and answer with `Result`.
    Unit {
        unit_id: String,
        case: Box<Case>,
        solver: String,
        policies: Box<Policies>,
    },
    /// List the backend's solvers for a problem (what `solver = "all"` expands to).
    Enumerate { problem: Box<Problem> },
    /// Run the built-in known-good unit (after a fault) and answer with `Result`.
    Probe,
    /// Finish and exit 0.
    Shutdown,
}

/// Worker -> supervisor.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// Sent once the backend is open. `info.available == false` means it could not be opened.
    Ready {
        protocol: u32,
        pid: u32,
        info: Box<BackendInfo>,
    },
    Phase {
        phase: String,
    },
    Heartbeat,
    Solvers {
        solvers: Vec<String>,
    },
    Result {
        unit_id: String,
        outcome: Box<Outcome>,
    },
    /// The worker cannot go on (e.g. a request it could not parse); it exits after this.
    Fatal {
        message: String,
    },
}

pub fn encode<T: Serialize>(msg: &T) -> String {
    // Serialising these plain structs cannot fail; an empty object keeps the stream line-framed.
    let mut s = serde_json::to_string(msg).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}

/// Set in every worker of a slot: the slot's device index (informational; the CPU backend has
/// no devices to pick, so there it is the only variable set).
pub const INDEX_VAR: &str = "ROCSWEEP_DEVICE_INDEX";

/// Set in every worker: the trial (1-based) whose units it runs (`--trials`, `--processes`).
pub const TRIAL_VAR: &str = "ROCSWEEP_TRIAL";

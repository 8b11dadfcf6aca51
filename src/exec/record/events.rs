//! The run's events: what the runner (exec/pool.rs, and exec/strategy_run.rs through it) says
//! as it runs a plan. The journal, results.csv, the summary, the progress display and the
//! strategy's record of what was measured consume the same stream (exec/record/recorder.rs), so no
//! part of a run reads back a file the run itself wrote.

use crate::exec::worker::unit::Outcome;
use crate::op::Case;

/// Why a run ended before its last unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Interrupted,
    DeviceUnhealthy,
}

/// The signal that stopped the run, where it was SIGTERM or SIGHUP (0: Ctrl-C or none); set
/// by the signal handlers (one atomic store, async-signal-safe).
pub static STOP_SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// What stopped the run, as its messages name it: `Ctrl-C`, `SIGTERM` or `SIGHUP`.
pub fn stop_cause() -> &'static str {
    match STOP_SIGNAL.load(std::sync::atomic::Ordering::SeqCst) {
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "Ctrl-C",
    }
}

/// A unit as its events name it.
#[derive(Clone, Copy)]
pub struct Unit<'a> {
    pub id: &'a str,
    pub case: &'a Case,
    pub solver: &'a str,
    /// The env combination's key (`K=v,...`; empty without env axes).
    pub env_key: &'a str,
}

impl Unit<'_> {
    /// `params solver=.. [env]`: how messages and progress lines name the unit.
    pub fn describe(&self) -> String {
        let params = crate::op::canonical_text(self.case.problem.kind(), &self.case.values);
        let env = if self.env_key.is_empty() {
            String::new()
        } else {
            format!(" [{}]", self.env_key)
        };
        format!("{params} solver={}{env}", self.solver)
    }
}

/// One thing that happened. `slot` is the device slot's label (`--devices` index, empty
/// without).
pub enum Event<'a> {
    /// A worker was sent the unit; `phase` is where it starts (`init` for a cold worker).
    Started {
        unit: Unit<'a>,
        slot: &'a str,
        phase: &'a str,
        limit_s: f64,
        /// 1-based trial: the pass over the plan this run of the unit belongs to.
        trial: u32,
    },
    /// The running unit entered `phase`, whose limit is `limit_s`.
    Phase {
        unit: Unit<'a>,
        slot: &'a str,
        phase: &'a str,
        limit_s: f64,
    },
    /// About once a second while a unit runs: how long its worker has been silent (it sends a
    /// heartbeat every half second, even while a library call hangs).
    Heartbeat { slot: &'a str, silent_s: f64 },
    /// An ok trial that is not the unit's last: kept for the unit's row.
    TrialKept {
        unit: Unit<'a>,
        trial: u32,
        outcome: &'a Outcome,
    },
    /// A `solver = "all"` case was listed: `listed` units instead of the `counted` the plan
    /// counted for it (one where the backend lists its solvers at run time; its fixed list's
    /// length where it has one). A case whose listing failed is one unit.
    Expanded { listed: u64, counted: u64 },
    /// The unit has its row. `trials_left`: planned trials it will not run.
    Finished {
        unit: Unit<'a>,
        slot: &'a str,
        outcome: &'a Outcome,
        row: &'a [String],
        trials_left: u64,
    },
    /// A slot stopped taking units: its device failed the health probe after a hang or crash.
    /// With `others_continue`, other slots take the rest; else every remaining unit is
    /// recorded `skipped`.
    Stopped {
        slot: &'a str,
        others_continue: bool,
    },
}

/// A consumer of the run's events.
pub trait Sink {
    fn on(&mut self, ev: &Event) -> std::io::Result<()>;
}

/// A unit's measured outcome as a boundary search needs it (`exec::plan::strategy`).
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    pub status: crate::results::status::Status,
    pub phase: String,
}

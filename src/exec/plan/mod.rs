//! What a run is before anything runs: [`options`] (what the command line asked for),
//! [`setup`] (the sweep, backend, run directory, shard, env combinations, strategy and trials,
//! with every check that can refuse), [`units`] (cases in run order), [`shard`], [`trials`],
//! [`resume`] (what a resumed run starts from), [`dry_run`], [`confirm`], and the boundary
//! searches: [`strategy`] (pure logic over unit positions and statuses, with its `--along`
//! lines) and [`strategy_plan`] (a run's strategy resolved and kept in strategy.json).
//!
//! May import: `spec`, `results`, `exec::record` (a journal read back, the events' types),
//! `exec::supervise` for the types of what it plans (`--devices` slots, the worker spec) and
//! `exec::worker::unit`'s outcome type. Never the runner, and it starts no process.

pub mod confirm;
pub mod dry_run;
pub mod options;
pub mod resume;
pub mod setup;
pub mod shard;
pub mod strategy;
pub mod strategy_plan;
pub mod trials;
pub mod units;

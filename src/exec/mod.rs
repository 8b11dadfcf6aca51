//! Running a sweep, by process side. Four rooms and the runner that ties them:
//! - [`plan`]: what a run is before anything runs (options, set-up and its checks, the plan of
//!   units, shards, trials, resume, dry run, confirm, and the boundary-search strategies).
//! - [`supervise`]: the supervisor's side of a worker process (handles, the watchdog, device
//!   slots, one-off workers). Never loads a vendor library.
//! - [`worker`]: the worker process itself (its loop, one unit from inputs to outcome, the
//!   test-only faults, the protocol both sides speak). Sits just above `backend/`.
//! - [`record`]: what a run leaves behind as it goes (events, the recorder, journal, rows,
//!   progress, library hashes, ROCm trees).
//! - The runner: [`run`] (`rocsweep run`), [`pool`] (the plan over device slots) and
//!   [`strategy_run`] (the loop of `--strategy prune|bisect`) use all four; [`book`] is what
//!   they decide the next unit from (what is done, what is owed), kept beside the recorder.
//!
//! Imports run one way, down this list: the runner -> plan -> supervise -> record -> worker ->
//! `backend/` (`tests/import_graph.rs` keeps files free of loops; each folder's doc says what
//! it may import).

pub mod book;
pub mod plan;
pub mod pool;
pub mod record;
pub mod run;
pub mod sequence;
pub mod strategy_run;
pub mod supervise;
pub mod target;
pub mod worker;

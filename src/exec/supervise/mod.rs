//! The supervisor's side of worker processes: [`handle`] (one worker process), [`supervisor`]
//! (warm workers, requests, the per-phase watchdog, every way a worker fails turned into an
//! outcome), [`slots`] and [`devices`] (one supervisor per device slot of `--devices`), and
//! [`oneoff`] (the one-off workers of `probe` and `solvers`).
//!
//! May import: `exec::worker` (the protocol, the worker's own variables, the outcomes it
//! sends), `exec::record` (events, where a slot's rows ran), `spec`, `results`, and `backend`'s
//! plain types (what a worker reports). Never `exec::plan` or the runner, and never a vendor
//! library: this process does not load one.

pub mod devices;
pub mod handle;
pub mod oneoff;
pub mod slots;
pub mod supervisor;

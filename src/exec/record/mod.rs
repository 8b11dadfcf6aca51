//! What a run leaves behind as it goes: [`events`] (what the runner says), [`recorder`] (every
//! consumer of the events behind one lock: the journal first, then results.csv, the summary
//! and the progress display), [`journal`], [`row`] (a unit's results.csv row), [`progress`],
//! [`libhash`] (the vendor library files' hashes) and [`trees`] (each env combination's ROCm
//! tree).
//!
//! May import: `results`, `spec`, `exec::worker::unit` (the outcomes it records). Never
//! `exec::plan`, `exec::supervise` or the runner: the recorder writes what the runner tells it.

pub mod events;
pub mod journal;
pub mod libhash;
pub mod progress;
pub mod recorder;
pub mod row;
pub mod trees;

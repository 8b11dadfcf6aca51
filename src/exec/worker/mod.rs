//! The worker process (`rocsweep worker`): [`serve`] opens the backend once and runs the units
//! the supervisor sends, [`unit`] takes one unit from inputs to outcome, [`fault`] is the
//! test-only fault switch, and [`protocol`] is what worker and supervisor say to each other.
//!
//! May import: `backend/`, `op/`, `verify`, `timing`, `tensor`, `spec` (the case's types),
//! `results::status`. Nothing else of `exec/`: the worker knows no files, plans or processes
//! but its own.

pub mod fault;
pub mod protocol;
pub mod serve;
pub mod unit;

//! rocsweep: a benchmark and shape-sweep harness for GPU math libraries.
//!
//! Data flows one way: a sweep file ([`spec`]) expands into cases ([`op`]), the planner turns
//! cases into units (case x solver x env combination), a [`backend`] runs each unit, the result
//! is verified ([`verify`]) and timed ([`timing`]), and [`results`] writes the run directory.

pub mod analyze;
pub mod backend;
pub mod build_info;
pub mod cli;
pub mod commands;
pub mod console;
pub mod cpu;
pub mod dtype;
pub mod error;
pub mod exec;
pub mod exit;
pub mod import;
pub mod markup;
pub mod merge;
pub mod op;
pub mod pipewatch;
pub mod probe_trees;
pub mod reaper;
pub mod report;
pub mod results;
pub mod rocm_tree;
pub mod selftest;
// Sweep errors carry their source text and span for rendering; they are the cold path.
#[allow(clippy::result_large_err)]
pub mod spec;
pub mod tensor;
pub mod timing;
pub mod tune;
pub mod verify;

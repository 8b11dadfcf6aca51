//! The backend interface: plain data in (problem, solver, inputs), plain data out (timings,
//! output tensor, library error names). Backends know nothing of processes, files or CSV.

pub mod api;
pub mod cpu;
pub mod cuda;
pub mod engine;
pub mod registry;
pub mod rocm;
pub mod telemetry;
pub mod torch;

pub use api::*;

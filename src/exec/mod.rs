//! Running a sweep: planning units, executing them, and writing each result as it arrives.

pub mod plan;
pub mod progress;
pub mod run;
pub mod unit;

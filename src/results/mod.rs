//! The run directory: results.csv (one row per unit), manifest.json, and the summary.

pub mod csv;
pub mod manifest;
pub mod merge;
pub mod rundir;
pub mod status;
pub mod summary;

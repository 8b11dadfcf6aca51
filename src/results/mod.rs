//! The run directory: results.csv (one row per unit), manifest.json, and the summary.

pub mod atomic;
pub mod csv;
pub mod manifest;
pub mod rundata;
pub mod rundir;
pub mod shard;
pub mod status;
pub mod summary;
pub mod text;
pub mod weights;

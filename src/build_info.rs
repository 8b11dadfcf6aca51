//! Facts fixed when the binary was built.

pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub const GIT_COMMIT: &str = env!("ROCSWEEP_GIT_COMMIT");
include!(concat!(env!("OUT_DIR"), "/dependency_versions.rs"));

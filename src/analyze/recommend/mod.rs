//! `rocsweep recommend RUN_DIR`: which env combination to use, where each one is safe, and a
//! shell profile with the winner. [`recommend`] and the renderers are pure; [`command`] writes.
//!
//! Ranking, in order: fewest failures (hang, crash, mismatch, zeros, nonfinite, error, and
//! inferred-fail from a boundary search), then the most `ok` units (measured or inferred), then
//! the geometric mean throughput over the units that are ok in every combination (so no
//! combination is rewarded for skipping the slow cases). Ties keep the manifest's order.
//!
//! [`answer`] holds what it answers, [`build`] computes it, [`rules`] learns each combination's
//! failure rules, [`render`] writes recommend.md and the profile.

pub mod answer;
pub mod build;
pub mod render;
pub mod rules;

pub use answer::{ComboReport, Decision, PROFILE_NAME, Recommendation, Rule};
pub use build::{env_device, recommend};
pub use render::{markdown, profile};

use crate::error::CmdError;
use crate::results::rundata::RunData;
use std::path::Path;

pub fn command(run_dir: &Path, out: Option<&Path>) -> Result<(), CmdError> {
    let run = RunData::load(run_dir)?;
    let rec = recommend(&run);
    let dir = out.unwrap_or(run_dir);
    std::fs::create_dir_all(dir)
        .map_err(|e| CmdError::Failure(format!("{}: {e}", dir.display())))?;
    let md = markdown(&rec);
    for (name, text) in [
        ("recommend.md", md.as_str()),
        (PROFILE_NAME, &profile(&rec)),
    ] {
        let p = dir.join(name);
        crate::results::atomic::write(&p, text)
            .map_err(|e| CmdError::Failure(format!("{}: {e}", p.display())))?;
    }
    crate::console::say(&md);
    Ok(())
}

//! `run --resume DIR` of a sequence run: `sequence.json` says how the run was started (its
//! options), the journal which steps finished and what each found. Each env combination goes
//! on from the step after the last one finished, in a fresh worker process (the process the
//! earlier steps ran in is gone; the summary says where the replay picked up).

use crate::error::CmdError;
use crate::exec::plan::options::RunOptions;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const FILE: &str = "sequence.json";

/// What a sequence run was started with, for its resume.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub rocsweep_version: String,
    pub started_at: String,
    pub command_line: Vec<String>,
    /// `--backend`, as given.
    pub backend: Option<String>,
    /// `--set`, as given.
    pub sets: Vec<String>,
    /// `--rocm`, as given.
    pub rocm: Vec<String>,
    /// The Python the torch backend ran (`--python`), when set.
    pub python: Option<String>,
    pub minimize_budget: u32,
}

impl RunRecord {
    pub fn of(opts: &RunOptions) -> RunRecord {
        RunRecord {
            rocsweep_version: crate::build_info::VERSION.into(),
            started_at: chrono::Utc::now().to_rfc3339(),
            command_line: opts.command_line.clone(),
            backend: opts.backend.clone(),
            sets: opts.sets.clone(),
            rocm: opts.rocm.clone(),
            python: std::env::var(crate::backend::torch::PYTHON_VAR).ok(),
            minimize_budget: opts.minimize_budget,
        }
    }

    /// The options the run was started with, pointed at its own copy of the sequence file.
    pub fn options(&self, dir: &Path, now: &RunOptions) -> RunOptions {
        RunOptions {
            sweep: Some(dir.join("sequence.toml")),
            backend: self.backend.clone(),
            sets: self.sets.clone(),
            rocm: self.rocm.clone(),
            out: Some(dir.to_path_buf()),
            minimize_budget: self.minimize_budget,
            quiet: now.quiet,
            fail_on_failure: now.fail_on_failure,
            command_line: now.command_line.clone(),
            worker_exe: now.worker_exe.clone(),
            max_units: u64::MAX,
            ..RunOptions::default()
        }
    }
}

/// Whether DIR holds a sequence run (its `sequence.json`).
pub fn is_sequence_run(dir: &Path) -> bool {
    dir.join(FILE).is_file()
}

/// Reads `sequence.json`; anything wrong with it is bad input naming the file.
pub fn read(dir: &Path) -> Result<RunRecord, CmdError> {
    let path: PathBuf = dir.join(FILE);
    let text = crate::results::rundir::read_text(&path).map_err(|e| {
        CmdError::BadInput(format!(
            "cannot resume {}: {}",
            dir.display(),
            crate::results::rundir::describe(&path, &e)
        ))
    })?;
    serde_json::from_str(&text).map_err(|e| {
        CmdError::BadInput(format!(
            "cannot resume {}: {}: {e}",
            dir.display(),
            path.display()
        ))
    })
}

//! What `rocsweep run` was asked to do (the command line's options, as `main` hands them over)
//! and what it reports back.

use crate::exec::plan::shard::Shard;
use crate::exec::record::events::Stop;
use crate::exec::supervise::devices::DeviceSel;
use std::path::PathBuf;

#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// The sweep file (not used with `resume`, which reads the sweep from the manifest).
    pub sweep: Option<PathBuf>,
    /// `None` uses the sweep file's `backend` key.
    pub backend: Option<String>,
    pub out: Option<PathBuf>,
    pub axes: Vec<String>,
    pub dry_run: bool,
    pub force: bool,
    pub max_units: u64,
    pub quiet: bool,
    pub command_line: Vec<String>,
    /// Continue the run in this directory.
    pub resume: Option<PathBuf>,
    /// With `resume`: run again the units that were started and never finished.
    pub retry_interrupted: bool,
    /// The executable started as `worker` (default: this program).
    pub worker_exe: Option<PathBuf>,
    /// `--shard I/N`: run only this slice of the sweep.
    pub shard: Option<Shard>,
    /// `--shard-from-env`: take the shard from a Slurm array or Kubernetes indexed Job.
    pub shard_from_env: bool,
    /// `--shard-count N`: the shard count for `JOB_COMPLETION_INDEX`.
    pub shard_count: Option<u32>,
    /// `--devices`: one worker pool per device (a resume reuses the run's devices without it).
    pub devices: Option<DeviceSel>,
    /// `--strategy`, `--along`, `--confirm`, `--confirm-seed` (see strategy.rs).
    pub strategy: crate::exec::plan::strategy::Kind,
    pub along: Option<String>,
    pub confirm: u64,
    pub confirm_seed: Option<u64>,
    /// `--shared-caches`: workers use the user's own library caches (MIOpen's user DB and kernel
    /// cache) instead of one per env combination inside the run directory.
    pub shared_caches: bool,
    /// `--trials N`: overrides the sweep's `[timing] trials` (a resume keeps the run's).
    pub trials: Option<u32>,
    /// `--rocm PATH`, each time it was given, as written: one (already exported to every
    /// process by `main`) or several trees run side by side; empty: the sweep's `rocm` key.
    pub rocm: Vec<String>,
}

pub const DEFAULT_MAX_UNITS: u64 = 100_000;

/// What a finished run reports back to `main`.
pub struct RunReport {
    pub dir: Option<PathBuf>,
    pub failures: u64,
    pub stopped: Option<Stop>,
    /// Inferred units that measured otherwise (`--confirm`): exit code 7.
    pub disagreements: usize,
}

impl RunReport {
    /// A run that wrote nothing (Ctrl-C while counting, nothing to do, a dry run).
    pub fn nothing(stopped: Option<Stop>) -> RunReport {
        RunReport {
            dir: None,
            failures: 0,
            stopped,
            disagreements: 0,
        }
    }
}

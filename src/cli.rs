//! Command-line definitions (clap). Usage errors exit with code 2, like bad sweep files.

use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "rocsweep",
    version,
    about = "Shape sweeps for GPU math libraries: where they hang, crash, return wrong numbers or run slowly"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a sweep file and write results.csv and manifest.json into a run directory.
    Run {
        /// The sweep file (TOML). Not given with --resume.
        #[arg(required_unless_present = "resume")]
        sweep: Option<PathBuf>,
        /// Backend to run on; overrides the sweep file's `backend` key.
        #[arg(long, value_parser = ["auto", "cpu", "cuda", "rocm"])]
        backend: Option<String>,
        /// Run directory (default: reports/runs/<name>-<utc-timestamp>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Override an axis: NAME=VALUES, e.g. c_in=16,32 or h=pow2(32..=256). Repeatable.
        #[arg(long = "axis", value_name = "NAME=VALUES")]
        axes: Vec<String>,
        /// Print the expanded cases and their count; run nothing, write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Run even when the sweep's product is larger than --max-units.
        #[arg(long)]
        force: bool,
        /// The cap on the sweep's product (axes x env combinations) without --force.
        #[arg(long, default_value_t = crate::exec::run::DEFAULT_MAX_UNITS)]
        max_units: u64,
        /// No progress bar or per-unit lines, no summary.
        #[arg(long, short)]
        quiet: bool,
        /// Exit with code 3 when any unit failed (mismatch, zeros, nonfinite, hang, crash, error).
        #[arg(long)]
        fail_on_failure: bool,
        /// Continue an interrupted run in RUN_DIR: finished units are kept, the rest run.
        #[arg(long, value_name = "RUN_DIR", conflicts_with_all = ["sweep", "out", "axes", "backend"])]
        resume: Option<PathBuf>,
        /// With --resume: run again units that were started and never finished (else `interrupted`).
        #[arg(long, requires = "resume")]
        retry_interrupted: bool,
    },
    /// Runs units for a supervisor over stdin/stdout (internal).
    #[command(hide = true)]
    Worker {
        #[arg(long, default_value = "cpu")]
        backend: String,
    },
    /// Say which backends and devices are present, with library versions.
    Probe,
    /// List the ops, their parameters (axes) with defaults, and their solvers.
    ListOps,
}

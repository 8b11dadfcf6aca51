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
    /// The ROCm tree to use: a prefix (/opt/rocm-6.4.1), a lib directory, a Python
    /// environment's directory or a python interpreter (its environment's TheRock packages or
    /// torch's bundled copy). Without it: $ROCM_PATH, the active Python environment, /opt/rocm,
    /// then the system loader's path. `--rocm-lib-dir` is the old name. `run` takes it more
    /// than once (`--rocm A --rocm B`): each tree then runs the sweep in workers of its own.
    #[arg(
        long = "rocm",
        alias = "rocm-lib-dir",
        global = true,
        value_name = "PATH",
        action = clap::ArgAction::Append
    )]
    pub rocm: Vec<PathBuf>,
    /// The Python that runs the torch backend (a python executable whose environment has
    /// torch). Without it: $VIRTUAL_ENV's, $CONDA_PREFIX's, then the python3 on PATH.
    #[arg(long, global = true, value_name = "PYTHON")]
    pub python: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a sweep file and write results.csv and manifest.json into a run directory.
    Run {
        /// The sweep file (TOML). Not given with --resume.
        #[arg(required_unless_present = "resume")]
        sweep: Option<PathBuf>,
        /// Backend to run on, or several side by side (`cpu,torch`, each in workers of its
        /// own); overrides the sweep file's `backend` key.
        #[arg(long, value_name = "NAME[,NAME...]", value_parser = backend_list)]
        backend: Option<String>,
        /// Run directory (default: reports/runs/<name>-<utc-timestamp>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Override an axis: NAME=VALUES, e.g. c_in=16,32 or h=pow2(32..=256). Repeatable.
        #[arg(long = "axis", value_name = "NAME=VALUES")]
        axes: Vec<String>,
        /// Override one setting of [limits], [timing] or [verify]: SECTION.KEY=VALUE, e.g.
        /// limits.run=5 or timing.trials=1. Repeatable; recorded in the manifest with the axes.
        #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
        sets: Vec<String>,
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
        /// Independent trials of each unit, each in a worker process of its own, as passes over
        /// the plan (default: the sweep's `[timing] trials`, else 3; a boundary search runs 1).
        /// `compare` and `recommend` call a difference only beyond the spread across trials.
        #[arg(long, value_name = "N", conflicts_with = "resume",
              value_parser = clap::value_parser!(u32).range(1..=crate::spec::policy::MAX_TRIALS as i64))]
        trials: Option<u32>,
        /// Exit with code 3 when any unit failed (mismatch, zeros, nonfinite, hang, crash, error).
        #[arg(long)]
        fail_on_failure: bool,
        /// Continue an interrupted run in RUN_DIR: finished units are kept, the rest run.
        #[arg(long, value_name = "RUN_DIR", conflicts_with_all = ["sweep", "out", "axes", "sets", "backend"])]
        resume: Option<PathBuf>,
        /// With --resume: run again units that were started and never finished (else `interrupted`).
        #[arg(long, requires = "resume")]
        retry_interrupted: bool,
        /// Do not write the report (plots, report.html, summary.md) at the end of the run.
        #[arg(long)]
        no_report: bool,
        /// Let workers use the user's own library caches (MIOpen's user DB and kernel cache)
        /// instead of one per env combination under RUN_DIR/caches/.
        #[arg(long)]
        shared_caches: bool,
        /// Run only shard I of N (1-based: 1/4 .. 4/4): every N-th (case, env combination) of
        /// the plan. `rocsweep merge` joins the shards' run directories.
        #[arg(long, value_name = "I/N", value_parser = crate::exec::plan::shard::Shard::parse,
              conflicts_with_all = ["shard_from_env", "resume"])]
        shard: Option<crate::exec::plan::shard::Shard>,
        /// Take the shard from a Slurm array task (SLURM_ARRAY_TASK_ID, _MIN, _STEP, _COUNT) or a
        /// Kubernetes indexed Job (JOB_COMPLETION_INDEX with --shard-count).
        #[arg(long, conflicts_with = "resume")]
        shard_from_env: bool,
        /// With --shard-from-env: the number of shards (needed for JOB_COMPLETION_INDEX).
        #[arg(long, value_name = "N", requires = "shard_from_env",
              value_parser = clap::value_parser!(u32).range(1..))]
        shard_count: Option<u32>,
        /// One worker pool per device, run concurrently: `all`, or indices like 0,1 (sets
        /// HIP_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES per pool). A resume uses the devices of the session before it unless given.
        #[arg(long, value_name = "all|0,1,...", value_parser = crate::exec::supervise::devices::DeviceSel::parse)]
        devices: Option<crate::exec::supervise::devices::DeviceSel>,
        /// grid runs every unit; prune skips (`predicted-hang`) units larger along --along than
        /// one that hung; bisect binary-searches each line's boundary and infers the rest.
        #[arg(long, value_parser = crate::exec::plan::strategy::Kind::NAMES, default_value = "grid",
              conflicts_with = "resume")]
        strategy: String,
        /// The numeric axis that defines "larger" for prune and bisect (default: the op's size
        /// parameter when the sweep varies it, e.g. conv2d `h`; else its last numeric axis).
        #[arg(long, value_name = "AXIS", conflicts_with = "resume")]
        along: Option<String>,
        /// With bisect: run N inferred units (chosen by --confirm-seed) for real afterwards and
        /// report each disagreement (confirm.csv; exit code 7).
        #[arg(long, value_name = "N", default_value_t = 0, conflicts_with = "resume")]
        confirm: u64,
        /// The seed that chooses the --confirm units (default: from the clock; strategy.json
        /// records it).
        #[arg(long, value_name = "SEED", conflicts_with = "resume")]
        confirm_seed: Option<u64>,
    },
    /// Join the run directories of a sweep's shards (`run --shard`) into one run directory.
    Merge {
        /// The shard run directories: shards 1/N .. N/N of one sweep.
        #[arg(required = true, value_name = "DIR")]
        dirs: Vec<PathBuf>,
        /// The merged run directory (must not exist, or be empty).
        #[arg(long)]
        out: PathBuf,
        /// Write the merge even when shards or units are missing (exit code 6 otherwise); the
        /// manifest lists what is missing.
        #[arg(long)]
        allow_missing: bool,
        /// Do not write the report for the merged run.
        #[arg(long)]
        no_report: bool,
        /// No summary line.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Draw plots and write report.html and summary.md for a run directory.
    Report { run_dir: PathBuf },
    /// Compare two runs of the same sweep unit by unit (e.g. two ROCm releases on one card).
    /// A side may be RUN_DIR@LABEL: one ROCm tree of a run over several (`rocm = [..]`), so
    /// two trees of one run are compared as two runs.
    Compare {
        run_a: PathBuf,
        run_b: PathBuf,
        /// Where compare.csv, compare.md and the ratio plot go (default: RUN_B/compare-<name of RUN_A>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Compare runs of different sweeps anyway (only units with the same id are matched).
        #[arg(long)]
        force: bool,
        /// Exit with code 3 when a unit got worse (ok -> failure, or slower beyond the noise).
        #[arg(long, value_parser = ["regression"])]
        fail_on: Option<String>,
    },
    /// Rank a sweep's env combinations and describe where each is safe; writes a shell profile.
    Recommend {
        run_dir: PathBuf,
        /// Where recommend.md and the profile go (default: RUN_DIR).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Read the convolutions and GEMMs a model runs from vendor logs and profiler traces (MIOpen,
    /// hipBLASLt, rocBLAS, cuBLASLt, cuDNN, PyTorch profiler, TunableOp) and write one sweep
    /// file per op into DIR, weighted by calls, with summary.md.
    Import {
        /// The logs and traces to read.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Where the sweep files and summary.md go (must not exist, or be empty).
        #[arg(long)]
        out: PathBuf,
        /// Print nothing on success.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Print a stand-alone reproduction of one unit (environment, vendor tool command, rocsweep command).
    Repro { run_dir: PathBuf, unit_id: String },
    /// Runs units for a supervisor over stdin/stdout (internal).
    #[command(hide = true)]
    Worker {
        #[arg(long, default_value = "cpu")]
        backend: String,
    },
    /// Check that a GPU backend works on this machine: compile the kernels (ROCm: for each
    /// --arch target, no GPU needed), then run one tiny case of every op and every loaded library
    /// in workers under the watchdog, one line per check. Exit 0 when every check passed (or the
    /// library says a case is unsupported), 3 when one failed, 5 when the backend cannot run here.
    Selftest {
        #[arg(long, value_parser = ["cuda", "rocm"], default_value = "rocm")]
        backend: String,
        /// ROCm targets to compile the kernels for without a GPU, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "gfx1010,gfx1030")]
        arch: Vec<String>,
    },
    /// Compiles the kernels for one ROCm target and checks the code object (internal: selftest
    /// runs it in a child process, so a compiler that crashes or hangs takes only the child).
    #[command(hide = true)]
    CompileCheck { arch: String },
    /// Say which backends and devices are present, with library versions. With --backend, only
    /// that one, and the exit code says whether it can run here (0) or not (5).
    Probe {
        #[arg(long, value_parser = ["cpu", "cuda", "rocm", "torch"])]
        backend: Option<String>,
    },
    /// Print MIOpen's solver table (id, name, algorithm); with a ROCm device and conv2d
    /// parameters, which solvers MIOpen lists for that problem.
    Solvers {
        /// conv2d parameters as NAME=VALUE (e.g. c_in=16 c_out=32 h=64 direction=fwd); the
        /// others take their defaults.
        #[arg(value_name = "NAME=VALUE")]
        params: Vec<String>,
    },
    /// List the ops, their parameters (axes) with defaults, and their solvers.
    ListOps,
}

/// `run --backend`: one known backend or a comma-separated list of distinct ones.
fn backend_list(s: &str) -> Result<String, String> {
    crate::exec::plan::setup::parse_backends(s).map(|_| s.to_string())
}

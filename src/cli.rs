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
    Run(Box<crate::exec::plan::options::RunOptions>),
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
        /// Exit with code 3 when a unit got worse (ok -> failure, or slower beyond chance: more
        /// slower calls than the noise rule's false calls explain, or one far beyond its noise).
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
    /// From a GEMM run with the library's `default` and its named solutions timed
    /// (`solver = ["default", "all"]`, trials >= 2), write the files that make the library take
    /// its best solution where that beats the default beyond noise: hipBLASLt's
    /// HIPBLASLT_TUNING_OVERRIDE_FILE, rocBLAS's ROCBLAS_TENSILE_GEMM_OVERRIDE_PATH, PyTorch
    /// TunableOp's results file (validators from --python's torch), with tune.md and tune.csv.
    /// From a conv run on rocm: the find-db MIOpen wrote in the sandbox of the combination
    /// `recommend` ranks first, with miopen-env.sh.
    Tune {
        run_dir: PathBuf,
        /// Where the files go (created; files of an earlier tuning there are replaced).
        #[arg(long)]
        out: PathBuf,
        /// Apply each library file in fresh processes and keep only the rows where the library
        /// ran the named solution and the time moved beyond noise.
        #[arg(long)]
        verify: bool,
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

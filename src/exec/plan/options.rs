//! What `rocsweep run` was asked to do (the command line's options, as `main` hands them over)
//! and what it reports back.

use crate::exec::plan::strategy::Kind;
use crate::exec::record::events::Stop;
use clap::builder::TypedValueParser as _;
use std::path::PathBuf;

/// `rocsweep run`'s options, as the command line gives them (clap parses them straight into
/// this), plus what `main` adds: the command line itself, the worker executable (tests and
/// benches name one) and every `--rocm` given.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct RunOptions {
    /// The sweep file (TOML). Not given with --resume.
    #[arg(required_unless_present = "resume")]
    pub sweep: Option<PathBuf>,
    /// Backend to run on, or several side by side (`cpu,torch`, each in workers of its
    /// own); overrides the sweep file's `backend` key.
    #[arg(long, value_name = "NAME[,NAME...]", value_parser = backend_list)]
    pub backend: Option<String>,
    /// Run directory (default: reports/runs/<name>-<utc-timestamp>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Override an axis: NAME=VALUES, e.g. c_in=16,32 or h=pow2(32..=256). Repeatable.
    #[arg(long = "axis", value_name = "NAME=VALUES")]
    pub axes: Vec<String>,
    /// Override one setting of [limits], [timing] or [verify]: SECTION.KEY=VALUE, e.g.
    /// limits.run=5 or timing.trials=1. Repeatable; recorded in the manifest with the axes.
    #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
    pub sets: Vec<String>,
    /// Print the expanded cases and their count; run nothing, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Run even when the sweep's product is larger than --max-units.
    #[arg(long)]
    pub force: bool,
    /// The cap on the sweep's product (axes x env combinations) without --force.
    #[arg(long, default_value_t = DEFAULT_MAX_UNITS)]
    pub max_units: u64,
    /// With a sequence: the most fresh worker processes the search for what a failing step
    /// needs may run (the step alone included); the summary says when it was reached.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub minimize_budget: u32,
    /// No progress bar or per-unit lines, no summary.
    #[arg(long, short)]
    pub quiet: bool,
    /// Independent trials of each unit, each in a worker process of its own, as passes over
    /// the plan (default: the sweep's `[timing] trials`, else 3; a boundary search runs 1).
    /// `compare` and `recommend` call a difference only beyond the spread across trials.
    #[arg(long, value_name = "N", conflicts_with = "resume",
          value_parser = clap::value_parser!(u32).range(1..=crate::spec::policy::MAX_TRIALS as i64))]
    pub trials: Option<u32>,
    /// Run each unit in N fresh worker processes (at least N trials) and flag a unit whose
    /// status, output bits or library choice differ between them (the `stable` column).
    #[arg(long, value_name = "N", conflicts_with = "resume",
          value_parser = clap::value_parser!(u32).range(2..=crate::spec::policy::MAX_TRIALS as i64))]
    pub processes: Option<u32>,
    /// Exit with code 3 when any unit failed (mismatch, zeros, nonfinite, hang, crash, error).
    #[arg(long)]
    pub fail_on_failure: bool,
    /// Continue an interrupted run in RUN_DIR: finished units are kept, the rest run.
    #[arg(long, value_name = "RUN_DIR", conflicts_with_all = ["sweep", "out", "axes", "sets", "backend"])]
    pub resume: Option<PathBuf>,
    /// With --resume: run again units that were started and never finished (else `interrupted`).
    #[arg(long, requires = "resume")]
    pub retry_interrupted: bool,
    /// Do not write the report (plots, report.html, summary.md) at the end of the run.
    #[arg(long)]
    pub no_report: bool,
    /// Let workers use the user's own library caches (MIOpen's user DB and kernel cache)
    /// instead of one per env combination under RUN_DIR/caches/.
    #[arg(long)]
    pub shared_caches: bool,
    /// Run only shard I of N (1-based: 1/4 .. 4/4): every N-th (case, env combination) of
    /// the plan. `rocsweep merge` joins the shards' run directories.
    #[arg(long, value_name = "I/N", value_parser = crate::exec::plan::shard::Shard::parse,
          conflicts_with_all = ["shard_from_env", "resume"])]
    pub shard: Option<crate::exec::plan::shard::Shard>,
    /// Take the shard from a Slurm array task (SLURM_ARRAY_TASK_ID, _MIN, _STEP, _COUNT) or a
    /// Kubernetes indexed Job (JOB_COMPLETION_INDEX with --shard-count).
    #[arg(long, conflicts_with = "resume")]
    pub shard_from_env: bool,
    /// With --shard-from-env: the number of shards (needed for JOB_COMPLETION_INDEX).
    #[arg(long, value_name = "N", requires = "shard_from_env",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub shard_count: Option<u32>,
    /// One worker pool per device, run concurrently: `all`, or indices like 0,1 (sets
    /// HIP_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES per pool). A resume uses the devices of the session before it unless given.
    #[arg(long, value_name = "all|0,1,...", value_parser = crate::exec::supervise::devices::DeviceSel::parse)]
    pub devices: Option<crate::exec::supervise::devices::DeviceSel>,
    /// grid runs every unit; prune skips (`predicted-hang`) units larger along --along than
    /// one that hung; bisect binary-searches each line's boundary and infers the rest.
    #[arg(long, default_value = "grid", conflicts_with = "resume",
          value_parser = clap::builder::PossibleValuesParser::new(Kind::NAMES).map(|s| parse_strategy(&s)))]
    pub strategy: Kind,
    /// The numeric axis that defines "larger" for prune and bisect (default: the op's size
    /// parameter when the sweep varies it, e.g. conv2d `h`; else its last numeric axis).
    #[arg(long, value_name = "AXIS", conflicts_with = "resume")]
    pub along: Option<String>,
    /// With bisect: run N inferred units (chosen by --confirm-seed) for real afterwards and
    /// report each disagreement (confirm.csv; exit code 7).
    #[arg(long, value_name = "N", default_value_t = 0, conflicts_with = "resume")]
    pub confirm: u64,
    /// The seed that chooses the --confirm units (default: from the clock; strategy.json
    /// records it).
    #[arg(long, value_name = "SEED", conflicts_with = "resume")]
    pub confirm_seed: Option<u64>,
    /// The whole command line, for the manifest.
    #[arg(skip)]
    pub command_line: Vec<String>,
    /// The executable started as `worker` (default: this program).
    #[arg(skip)]
    pub worker_exe: Option<PathBuf>,
    /// `--rocm PATH`, each time it was given, as written: one (already exported to every
    /// process by `main`) or several trees run side by side; empty: the sweep's `rocm` key.
    #[arg(skip)]
    pub rocm: Vec<String>,
}

impl RunOptions {
    /// The sweep's overrides: every `--axis`, then every `--set` as the axis override it
    /// travels as (spec::sets).
    pub fn overrides(&self) -> Vec<String> {
        self.axes
            .iter()
            .cloned()
            .chain(self.sets.iter().map(|s| crate::spec::sets::override_of(s)))
            .collect()
    }
}

/// `run --backend`: one known backend or a comma-separated list of distinct ones.
fn backend_list(s: &str) -> Result<String, String> {
    parse_backends(s).map(|_| s.to_string())
}

/// A name clap has already checked against `Kind::NAMES`.
fn parse_strategy(s: &str) -> Kind {
    Kind::parse(s).unwrap_or_default()
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

/// `--backend`'s value: one name or a comma-separated list of distinct names (`cpu,torch`),
/// each one `backend::registry::check_name` knows.
pub fn parse_backends(list: &str) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for name in list.split(',').map(str::trim) {
        if name.is_empty() {
            return Err("an empty backend name; expected e.g. cpu or cpu,torch".into());
        }
        crate::backend::registry::check_name(name)?;
        if out.iter().any(|b| b == name) {
            return Err(format!("backend `{name}` is named twice"));
        }
        out.push(name.to_string());
    }
    Ok(out)
}

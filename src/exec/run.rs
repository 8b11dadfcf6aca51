//! `rocsweep run`: load, plan, create the run directory, run every unit, write rows as they
//! finish, print the summary.

use super::plan;
use super::progress::Progress;
use super::unit::{self, Policies, ReferenceCache};
use crate::backend;
use crate::build_info;
use crate::results::csv::{self as rcsv, ResultsWriter, UnitKey};
use crate::results::manifest::{self, Host, Manifest, SweepInfo};
use crate::results::rundir;
use crate::results::summary::Summary;
use crate::spec::{self, error::SpecError};
use std::path::PathBuf;

#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    pub sweep: PathBuf,
    /// `None` uses the sweep file's `backend` key.
    pub backend: Option<String>,
    pub out: Option<PathBuf>,
    pub axes: Vec<String>,
    pub dry_run: bool,
    pub force: bool,
    pub max_units: u64,
    pub quiet: bool,
    pub command_line: Vec<String>,
}

pub const DEFAULT_MAX_UNITS: u64 = 100_000;

/// Why a command stopped; `main` maps these to exit codes.
#[derive(Debug, thiserror::Error)]
pub enum CmdError {
    #[error("{}", .0.render())]
    Spec(Box<SpecError>),
    /// Bad CLI value or run directory: nothing was written.
    #[error("error: {0}")]
    BadInput(String),
    #[error("error: {0}")]
    Failure(String),
}

impl From<SpecError> for CmdError {
    fn from(e: SpecError) -> Self {
        CmdError::Spec(Box::new(e))
    }
}

/// What a finished run reports back to `main`.
pub struct RunReport {
    pub dir: Option<PathBuf>,
    pub failures: u64,
}

pub fn run(opts: &RunOptions) -> Result<RunReport, CmdError> {
    let sweep = spec::load(&opts.sweep, &opts.axes)?;
    let backend_name = opts
        .backend
        .clone()
        .unwrap_or_else(|| sweep.backend.clone());
    let mut backend = backend::open(&backend_name).map_err(CmdError::BadInput)?;
    let combos = sweep.env_combos();
    let product = sweep.product_size().saturating_mul(combos.len() as u128);
    if product > opts.max_units as u128 && !opts.force {
        return Err(CmdError::BadInput(format!(
            "{}: the sweep's product is {product} combinations (axes x env combinations), more than the cap of {}; \
             narrow the axes, raise --max-units, or pass --force",
            opts.sweep.display(),
            opts.max_units
        )));
    }

    if opts.dry_run {
        return dry_run(&sweep, &combos, backend.as_ref());
    }

    let counted = plan::count(&sweep, &combos, backend.as_ref());
    let now = chrono::Utc::now();
    let dir = opts
        .out
        .clone()
        .unwrap_or_else(|| rundir::default_path(&sweep.name, now));
    rundir::check_free(&dir).map_err(|e| CmdError::BadInput(e.to_string()))?;
    rundir::create(&dir).map_err(|e| CmdError::Failure(e.to_string()))?;

    let info = backend.info();
    let device = info.devices.first().cloned().unwrap_or_default();
    let policies = Policies {
        limits: sweep.limits.clone(),
        timing: sweep.timing.clone(),
        verify: sweep.verify.clone(),
    };
    let mut man = Manifest {
        manifest_version: 1,
        rocsweep_version: build_info::VERSION.into(),
        git_commit: build_info::GIT_COMMIT.into(),
        command_line: opts.command_line.clone(),
        started_at: now.to_rfc3339(),
        finished_at: None,
        host: Host::current(),
        backend: info,
        sweep: SweepInfo::of(&sweep),
        policies: policies.clone(),
        env_combos: combos.clone(),
        environment: manifest::environment(),
        units_planned: counted.units,
        counts: Default::default(),
        invalid_combinations: counted.invalid,
        invalid_example: counted.invalid_example.clone(),
    };
    let io = |what: &str, e: std::io::Error| {
        CmdError::Failure(format!("{}: {what}: {e}", dir.display()))
    };
    manifest::write(&dir, &man).map_err(|e| io("writing manifest.json", e))?;
    let mut csv = ResultsWriter::create(&dir.join("results.csv"), sweep.op)
        .map_err(|e| io("creating results.csv", e))?;

    let mut progress = Progress::new(counted.units, opts.quiet);
    if counted.invalid > 0 {
        progress.println(&format!(
            "note: {} combinations form no valid problem and were dropped (e.g. {})",
            counted.invalid,
            counted.invalid_example.as_deref().unwrap_or("")
        ));
    }
    let mut summary = Summary::default();
    let mut cache = ReferenceCache::default();
    let backend_id = backend.name();
    for (env_index, env_key, case) in plan::cases(&sweep, &combos) {
        for u in plan::units_of(case, env_index, &env_key, backend.as_ref()) {
            let mut no_phases = |_: &'static str| {};
            let out = unit::run_unit(
                backend.as_mut(),
                &u.case,
                &u.solver,
                &policies,
                &mut cache,
                &mut no_phases,
            );
            let key = UnitKey {
                unit_id: &u.id,
                case: &u.case,
                solver: &u.solver,
                backend: backend_id,
                device: &device,
                env: &u.env_key,
            };
            csv.append(&rcsv::record(&key, &out))
                .map_err(|e| io("writing results.csv", e))?;
            let describe = || describe_unit(&u);
            summary.add(out.status, &u.id, describe, &out.error);
            progress.unit_done(out.status, || {
                let time = out
                    .stats
                    .as_ref()
                    .map(|s| format!("{:.3} ms", s.median * 1e3))
                    .unwrap_or_default();
                format!("{} {}", describe_unit(&u), time)
            });
        }
    }
    progress.finish();
    csv.sync().map_err(|e| io("syncing results.csv", e))?;
    man.finished_at = Some(chrono::Utc::now().to_rfc3339());
    man.counts = summary.counts_by_name();
    manifest::write(&dir, &man).map_err(|e| io("writing manifest.json", e))?;
    if !opts.quiet {
        print!("{}", summary.render());
        println!("run directory: {}", dir.display());
    }
    Ok(RunReport {
        dir: Some(dir),
        failures: summary.failures_total,
    })
}

fn describe_unit(u: &plan::Unit) -> String {
    let params = crate::op::canonical_text(u.case.problem.kind(), &u.case.values);
    let env = if u.env_key.is_empty() {
        String::new()
    } else {
        format!(" [{}]", u.env_key)
    };
    format!("{params} solver={}{env}", u.solver)
}

fn dry_run(
    sweep: &spec::Sweep,
    combos: &[spec::expand::EnvCombo],
    backend: &dyn backend::Backend,
) -> Result<RunReport, CmdError> {
    use std::io::Write;
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    let mut count = plan::PlanCount::default();
    let write_err = |e: std::io::Error| CmdError::Failure(format!("writing to stdout: {e}"));
    for case in sweep.cases() {
        match case {
            Ok(case) => {
                count.cases += 1;
                let text = crate::op::canonical_text(sweep.op, &case.values);
                writeln!(w, "{} {text} solver={}", case.id, case.solver).map_err(write_err)?;
                count.units += plan::solvers_for(&case, backend).len() as u64;
            }
            Err(reason) => {
                count.invalid += 1;
                count.invalid_example.get_or_insert(reason);
            }
        }
    }
    writeln!(
        w,
        "{} cases x {} env combination(s) = {} units ({} invalid combinations dropped{})",
        count.cases,
        combos.len(),
        count.units * combos.len() as u64,
        count.invalid,
        count
            .invalid_example
            .map(|e| format!(", e.g. {e}"))
            .unwrap_or_default()
    )
    .map_err(write_err)?;
    w.flush().map_err(write_err)?;
    Ok(RunReport {
        dir: None,
        failures: 0,
    })
}

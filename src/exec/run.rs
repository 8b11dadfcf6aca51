//! `rocsweep run`: load, plan, create (or resume) the run directory, run every unit in a worker
//! process under the watchdog, journal it, write its row as it finishes, print the summary.

use super::handle::WorkerSpec;
use super::journal::{self, Journal};
use super::plan;
use super::progress::Progress;
use super::supervisor::{Env, Supervisor};
use super::unit::{Outcome, Policies};
use crate::build_info;
use crate::op::{Case, unit_id};
use crate::results::csv::{self as rcsv, ResultsWriter, UnitKey};
use crate::results::manifest::{self, Host, Manifest, SweepInfo};
use crate::results::rundir;
use crate::results::status::Status;
use crate::results::summary::Summary;
use crate::spec::{self, Sweep};
use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

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
}

pub const DEFAULT_MAX_UNITS: u64 = 100_000;

pub use crate::error::CmdError;

/// Why a run ended before its last unit.
#[derive(Clone, Debug, PartialEq)]
pub enum Stop {
    Interrupted,
    DeviceUnhealthy,
}

/// What a finished run reports back to `main`.
pub struct RunReport {
    pub dir: Option<PathBuf>,
    pub failures: u64,
    pub stopped: Option<Stop>,
}

/// Ctrl-C presses since the current run started.
fn interrupts() -> Arc<AtomicUsize> {
    static COUNT: OnceLock<Arc<AtomicUsize>> = OnceLock::new();
    COUNT
        .get_or_init(|| {
            let count = Arc::new(AtomicUsize::new(0));
            let c = Arc::clone(&count);
            // A second handler cannot be installed (e.g. in a test binary); then Ctrl-C keeps
            // its default meaning, which still leaves a resumable run directory.
            let _ = ctrlc::set_handler(move || {
                let n = c.fetch_add(1, Ordering::SeqCst) + 1;
                if n == 1 {
                    eprintln!("\nCtrl-C: finishing the running unit, then stopping (press again to kill it)");
                } else {
                    eprintln!("\nCtrl-C again: killing the worker");
                }
            });
            count
        })
        .clone()
}

struct Prepared {
    sweep: Sweep,
    backend: String,
    dir: PathBuf,
    manifest: Option<Manifest>,
}

fn load(opts: &RunOptions) -> Result<Prepared, CmdError> {
    if let Some(dir) = &opts.resume {
        let m = manifest::read(dir)
            .map_err(|e| CmdError::BadInput(format!("cannot resume {}: {e}", dir.display())))?;
        let sweep = spec::load_str(&m.sweep.path, &m.sweep.text, &m.sweep.overrides)?;
        let backend = m.backend.backend.clone();
        return Ok(Prepared {
            sweep,
            backend,
            dir: dir.clone(),
            manifest: Some(m),
        });
    }
    let path = opts
        .sweep
        .as_ref()
        .ok_or_else(|| CmdError::BadInput("a sweep file or --resume RUN_DIR is required".into()))?;
    let sweep = spec::load(path, &opts.axes)?;
    let backend = opts
        .backend
        .clone()
        .unwrap_or_else(|| sweep.backend.clone());
    let dir = opts
        .out
        .clone()
        .unwrap_or_else(|| rundir::default_path(&sweep.name, chrono::Utc::now()));
    Ok(Prepared {
        sweep,
        backend,
        dir,
        manifest: None,
    })
}

pub fn run(opts: &RunOptions) -> Result<RunReport, CmdError> {
    let Prepared {
        sweep,
        backend: backend_name,
        dir,
        manifest: old_manifest,
    } = load(opts)?;
    let combos = sweep.env_combos();
    let product = sweep.product_size().saturating_mul(combos.len() as u128);
    if product > opts.max_units as u128 && !opts.force && old_manifest.is_none() {
        return Err(CmdError::BadInput(format!(
            "{}: the sweep's product is {product} combinations (axes x env combinations), more than the cap of {}; \
             narrow the axes, raise --max-units, or pass --force",
            sweep.source.path, opts.max_units
        )));
    }
    if opts.dry_run {
        return dry_run(&sweep, combos.len());
    }
    // A dry run needs no backend; a real one needs its libraries before anything is written.
    crate::backend::check_name(&backend_name).map_err(CmdError::BadInput)?;

    let resuming = old_manifest.is_some();
    let io = |what: &str, e: std::io::Error| {
        CmdError::Failure(format!("{}: {what}: {e}", dir.display()))
    };
    // A new run is built in a staging directory and renamed into place once its manifest and
    // CSV header exist, so a run directory is never half-made.
    let (work_dir, mut lock_file) = if resuming {
        (dir.clone(), Some(lock(&dir)?))
    } else {
        rundir::check_free(&dir).map_err(|e| CmdError::BadInput(e.to_string()))?;
        let staging = rundir::staging_path(&dir);
        rundir::create(&staging).map_err(|e| CmdError::Failure(e.to_string()))?;
        (staging, None)
    };
    let logs = work_dir.join("workers");
    std::fs::create_dir_all(&logs).map_err(|e| io("creating workers/", e))?;

    let interrupts = interrupts();
    interrupts.store(0, Ordering::SeqCst);
    let exe = match &opts.worker_exe {
        Some(p) => p.clone(),
        None => std::env::current_exe()
            .map_err(|e| CmdError::Failure(format!("cannot find this program's path: {e}")))?,
    };
    let policies = Policies {
        limits: sweep.limits.clone(),
        timing: sweep.timing.clone(),
        verify: sweep.verify.clone(),
    };
    let mut sup = Supervisor::new(
        WorkerSpec {
            exe,
            backend: backend_name.clone(),
        },
        logs,
        sweep.limits.clone(),
        Arc::clone(&interrupts),
    );
    let first_env = combos.first().map(|c| c.vars.clone()).unwrap_or_default();
    let info = sup
        .start(Env {
            index: 0,
            vars: &first_env,
        })
        .map_err(|o| {
            if !resuming {
                // Nothing ran: leave no staging directory behind.
                sup.shutdown();
                let _ = std::fs::remove_dir_all(&work_dir);
            }
            CmdError::Failure(format!(
                "the {backend_name} backend's worker did not start: {}",
                o.error
            ))
        })?;
    let device = info.devices.first().cloned().unwrap_or_default();

    let counted = plan::count(&sweep, &combos);
    let mut man = match old_manifest {
        Some(m) => m,
        None => Manifest {
            manifest_version: 1,
            rocsweep_version: build_info::VERSION.into(),
            git_commit: build_info::GIT_COMMIT.into(),
            command_line: opts.command_line.clone(),
            started_at: chrono::Utc::now().to_rfc3339(),
            finished_at: None,
            host: Host::current(),
            backend: info.clone(),
            sweep: SweepInfo::of(&sweep),
            policies: policies.clone(),
            env_combos: combos.clone(),
            environment: manifest::environment(),
            units_planned: counted.units,
            counts: Default::default(),
            invalid_combinations: counted.invalid,
            invalid_example: counted.invalid_example.clone(),
            resumed: Vec::new(),
            stopped: None,
        },
    };
    if resuming {
        man.resumed.push(chrono::Utc::now().to_rfc3339());
        man.finished_at = None;
        man.stopped = None;
    }
    manifest::write(&work_dir, &man).map_err(|e| io("writing manifest.json", e))?;
    if !resuming {
        ResultsWriter::create(&work_dir.join("results.csv"), sweep.op)
            .map_err(|e| io("creating results.csv", e))?;
        rundir::publish(&work_dir, &dir).map_err(|e| io("renaming the staging directory", e))?;
        sup.logs_moved_to(dir.join("workers"));
        lock_file = Some(lock(&dir)?);
    }
    let _lock = lock_file;

    // What is already done: rows in results.csv (repaired) and units the journal finished.
    let csv_path = dir.join("results.csv");
    // Repair first (a torn last row would stop everything after it), then take out the rows of
    // units that should run now: `skipped` ones never ran (the device was unhealthy), and
    // `interrupted` ones run again when asked to.
    let repaired: HashSet<String> = rcsv::repair(&csv_path, sweep.op)
        .map_err(|e| io("repairing results.csv", e))?
        .into_iter()
        .collect();
    let mut retry: HashSet<String> = HashSet::new();
    if resuming {
        let mut take = vec![Status::Skipped];
        if opts.retry_interrupted {
            take.push(Status::Interrupted);
        }
        for st in take {
            retry.extend(
                rcsv::remove_status(&csv_path, st)
                    .map_err(|e| io("removing rows to run again from results.csv", e))?,
            );
        }
    }
    let in_csv: HashSet<String> = repaired.difference(&retry).cloned().collect();
    let state = journal::read(&dir).map_err(|e| io("reading the journal", e))?;
    let mut journal = Journal::open(&dir).map_err(|e| io("opening the journal", e))?;
    let mut csv = ResultsWriter::append_to(&csv_path).map_err(|e| io("opening results.csv", e))?;
    // A result the journal holds but results.csv lost (the row was still in the page cache when
    // the machine went down): restore the row from the journal.
    let mut in_csv = in_csv;
    // Units in `retry` are neither done nor unfinished: they simply run.
    for (id, row) in &state.finished {
        if !in_csv.contains(id) && !row.is_empty() && !retry.contains(id) {
            csv.append(row)
                .map_err(|e| io("restoring a row to results.csv", e))?;
            in_csv.insert(id.clone());
        }
    }

    let mut summary = Summary::default();
    if resuming {
        count_existing(&csv_path, &mut summary);
    }
    let done_before = in_csv.len() as u64;
    let mut progress = Progress::new(counted.units.saturating_sub(done_before), opts.quiet);
    if counted.invalid > 0 && !resuming {
        progress.println(&format!(
            "note: {} combinations form no valid problem and were dropped (e.g. {})",
            counted.invalid,
            counted.invalid_example.as_deref().unwrap_or("")
        ));
    }

    let mut ctx = Ctx {
        sup: &mut sup,
        journal: &mut journal,
        csv: &mut csv,
        summary: &mut summary,
        progress: &mut progress,
        backend: info.backend.clone(),
        device,
        policies,
        done: in_csv,
        unfinished: state.unfinished,
        retry_interrupted: opts.retry_interrupted,
        unhealthy: false,
        interrupts: Arc::clone(&interrupts),
    };
    let mut stopped = None;
    'cases: for (env_index, env_key, case) in plan::cases(&sweep, &combos) {
        if ctx.interrupts.load(Ordering::SeqCst) > 0 {
            stopped = Some(Stop::Interrupted);
            break;
        }
        let env = Env {
            index: env_index,
            vars: &combos[env_index].vars,
        };
        let solvers = if case.solver != "all" {
            vec![case.solver.clone()]
        } else if ctx.unhealthy {
            vec!["all".to_string()]
        } else if ctx.done.contains(&unit_id(&case.id, "all", &env_key)) {
            // Enumeration failed in an earlier session and that is recorded; do not retry it.
            continue;
        } else {
            match ctx.sup.enumerate(env, &case.problem) {
                Ok(s) => {
                    ctx.progress.expand_one(s.len() as u64);
                    s
                }
                Err(out) => {
                    // The enumeration itself failed: one row for the case with solver `all`.
                    let id = unit_id(&case.id, "all", &env_key);
                    let u = UnitRef {
                        id: &id,
                        case: &case,
                        solver: "all",
                        env_key: &env_key,
                        env,
                    };
                    ctx.record(&u, out).map_err(|e| io("writing results", e))?;
                    continue;
                }
            }
        };
        for solver in solvers {
            if ctx.interrupts.load(Ordering::SeqCst) > 0 {
                stopped = Some(Stop::Interrupted);
                break 'cases;
            }
            let id = unit_id(&case.id, &solver, &env_key);
            let u = UnitRef {
                id: &id,
                case: &case,
                solver: &solver,
                env_key: &env_key,
                env,
            };
            ctx.unit(&u).map_err(|e| io("writing results", e))?;
        }
    }
    if ctx.unhealthy && stopped.is_none() {
        stopped = Some(Stop::DeviceUnhealthy);
    }
    ctx.sup.shutdown();
    progress.finish();
    csv.sync().map_err(|e| io("syncing results.csv", e))?;
    man.finished_at = Some(chrono::Utc::now().to_rfc3339());
    man.counts = summary.counts_by_name();
    man.stopped = stopped.as_ref().map(|s| match s {
        Stop::Interrupted => "interrupted by Ctrl-C".to_string(),
        Stop::DeviceUnhealthy => "device unhealthy after a hang or crash".to_string(),
    });
    manifest::write(&dir, &man).map_err(|e| io("writing manifest.json", e))?;
    if !opts.quiet {
        print!("{}", summary.render());
        println!("run directory: {}", dir.display());
    }
    match &stopped {
        Some(Stop::Interrupted) => eprintln!(
            "stopped by Ctrl-C; continue with: rocsweep run --resume {}",
            dir.display()
        ),
        Some(Stop::DeviceUnhealthy) => eprintln!(
            "error: the device stayed unhealthy after {} health probes; the remaining units are recorded `skipped` (device-unhealthy). \
             Check the device (dmesg, rocm-smi/nvidia-smi), then: rocsweep run --resume {}",
            super::supervisor::PROBE_TRIES,
            dir.display()
        ),
        None => {}
    }
    Ok(RunReport {
        dir: Some(dir),
        failures: summary.failures_total,
        stopped,
    })
}

/// Holds the run directory's lock for the life of the run (released when the process ends,
/// however it ends).
fn lock(dir: &Path) -> Result<File, CmdError> {
    let path = dir.join("run.lock");
    let f = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| CmdError::Failure(format!("{}: {e}", path.display())))?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => Err(CmdError::BadInput(format!(
            "{} is in use by another rocsweep run (run.lock is held)",
            dir.display()
        ))),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(CmdError::Failure(format!("{}: {e}", path.display())))
        }
    }
}

fn count_existing(csv_path: &Path, summary: &mut Summary) {
    if let Ok((header, rows)) = rcsv::read(csv_path) {
        let id = header.iter().position(|h| h == "unit_id");
        let err = header.iter().position(|h| h == "error");
        for r in &rows {
            if let Some(st) = rcsv::status_of(&header, r) {
                let uid = id.and_then(|i| r.get(i)).cloned().unwrap_or_default();
                let detail = err.and_then(|i| r.get(i)).cloned().unwrap_or_default();
                summary.add(st, &uid, || "(earlier session)".into(), &detail);
            }
        }
    }
}

struct Ctx<'a> {
    sup: &'a mut Supervisor,
    journal: &'a mut Journal,
    csv: &'a mut ResultsWriter,
    summary: &'a mut Summary,
    progress: &'a mut Progress,
    backend: String,
    device: String,
    policies: Policies,
    done: HashSet<String>,
    unfinished: std::collections::HashMap<String, String>,
    retry_interrupted: bool,
    unhealthy: bool,
    interrupts: Arc<AtomicUsize>,
}

/// One unit as the run loop sees it.
struct UnitRef<'a> {
    id: &'a str,
    case: &'a Case,
    solver: &'a str,
    env_key: &'a str,
    env: Env<'a>,
}

impl Ctx<'_> {
    fn unit(&mut self, u: &UnitRef) -> std::io::Result<()> {
        if self.done.contains(u.id) {
            return Ok(());
        }
        if let Some(phase) = self.unfinished.get(u.id).cloned()
            && !self.retry_interrupted
        {
            let phase = if phase.is_empty() {
                "init".to_string()
            } else {
                phase
            };
            let out = Outcome::failed(
                Status::Interrupted,
                &phase,
                "started and never finished: the supervisor, its worker or the machine went down (rerun with --retry-interrupted)",
            );
            return self.write(u, out);
        }
        let out = if self.unhealthy {
            Outcome::failed(Status::Skipped, "", "device-unhealthy")
        } else {
            self.journal.started(u.id)?;
            let journal = &mut *self.journal;
            let mut on_phase = |p: &str| {
                let _ = journal.phase(u.id, p);
            };
            self.sup
                .run_unit(u.id, u.case, u.solver, &self.policies, u.env, &mut on_phase)
        };
        self.record(u, out)
    }

    /// Writes the row, journals it, and after a hang or crash checks the device's health.
    fn record(&mut self, u: &UnitRef, out: Outcome) -> std::io::Result<()> {
        let fault = matches!(out.status, Status::Hang | Status::Crash);
        if out.status == Status::Interrupted && self.interrupts.load(Ordering::SeqCst) >= 2 {
            // Left started-and-unfinished in the journal: a resume decides what to do with it.
            return Ok(());
        }
        self.write(u, out)?;
        if fault && !self.unhealthy && !self.sup.health_probe(u.env) {
            self.unhealthy = true;
            self.progress.println("error: the device failed its health probe; recording the remaining units as skipped");
        }
        Ok(())
    }

    fn write(&mut self, u: &UnitRef, out: Outcome) -> std::io::Result<()> {
        let key = UnitKey {
            unit_id: u.id,
            case: u.case,
            solver: u.solver,
            backend: &self.backend,
            device: &self.device,
            env: u.env_key,
        };
        let row = rcsv::record(&key, &out);
        self.journal.finished(u.id, out.status, &row)?;
        self.csv.append(&row)?;
        self.done.insert(u.id.to_string());
        let describe = || describe_unit(u.case, u.solver, u.env_key);
        self.summary.add(out.status, u.id, describe, &out.error);
        self.progress.unit_done(out.status, || {
            let time = out
                .stats
                .as_ref()
                .map(|s| format!("{:.3} ms", s.median * 1e3))
                .unwrap_or_default();
            let phase = if out.phase.is_empty() {
                String::new()
            } else {
                format!(" [{}]", out.phase)
            };
            format!(
                "{}{phase} {time}",
                describe_unit(u.case, u.solver, u.env_key)
            )
        });
        Ok(())
    }
}

fn describe_unit(case: &Case, solver: &str, env_key: &str) -> String {
    let params = crate::op::canonical_text(case.problem.kind(), &case.values);
    let env = if env_key.is_empty() {
        String::new()
    } else {
        format!(" [{env_key}]")
    };
    format!("{params} solver={solver}{env}")
}

fn dry_run(sweep: &Sweep, combos: usize) -> Result<RunReport, CmdError> {
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
            }
            Err(reason) => {
                count.invalid += 1;
                count.invalid_example.get_or_insert(reason);
            }
        }
    }
    writeln!(
        w,
        "{} cases x {} env combination(s) = {} units ({} invalid combinations dropped{}){}",
        count.cases,
        combos,
        count.cases * combos as u64,
        count.invalid,
        count
            .invalid_example
            .map(|e| format!(", e.g. {e}"))
            .unwrap_or_default(),
        if sweep.dims.iter().any(|d| d
            .axes
            .iter()
            .any(|a| a.values.iter().any(|v| v.as_str() == Some("all"))))
        {
            "; solver = \"all\" expands further at run time"
        } else {
            ""
        }
    )
    .map_err(write_err)?;
    w.flush().map_err(write_err)?;
    Ok(RunReport {
        dir: None,
        failures: 0,
        stopped: None,
    })
}

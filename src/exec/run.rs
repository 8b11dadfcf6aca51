//! `rocsweep run`: load, plan, create (or resume) the run directory, run every unit in a worker
//! process under the watchdog, journal it, write its row as it finishes, print the summary.

use super::devices::{self, DeviceSel};
use super::handle::WorkerSpec;
use super::journal::{self, Journal};
use super::plan;
use super::pool::{self, Slot};
use super::progress::Progress;
use super::recorder::Recorder;
use super::shard::{self, Shard, ShardRecord};
use super::supervisor::{Env, Supervisor};
use crate::backend::BackendInfo;
use crate::build_info;
use crate::results::csv::{self as rcsv, ResultsWriter};
use crate::results::manifest::{self, Host, Manifest, SweepInfo};
use crate::results::rundir;
use crate::results::status::Status;
use crate::results::summary::Summary;
use crate::spec::policy::Policies;
use crate::spec::{self, Sweep};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

pub use super::events::Stop;
pub use super::options::{DEFAULT_MAX_UNITS, RunOptions};
pub use crate::error::CmdError;

/// What a finished run reports back to `main`.
pub struct RunReport {
    pub dir: Option<PathBuf>,
    pub failures: u64,
    pub stopped: Option<Stop>,
    /// Inferred units that measured otherwise (`--confirm`): exit code 7.
    pub disagreements: usize,
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
            // SIGTERM and SIGHUP (a scheduler, a closed terminal) stop at once, as a second
            // Ctrl-C does: the running unit's worker group is killed, everything is written, and
            // the run exits 130, resumable. The handler only adds to an atomic counter.
            for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
                let c = Arc::clone(&count);
                // SAFETY: the closure is async-signal-safe (one atomic add).
                let _ = unsafe {
                    signal_hook::low_level::register(sig, move || {
                        c.fetch_add(2, Ordering::SeqCst);
                    })
                };
            }
            count
        })
        .clone()
}

struct Prepared {
    sweep: Sweep,
    backend: String,
    dir: PathBuf,
    manifest: Option<Manifest>,
    shard: Option<ShardRecord>,
}

fn load(opts: &RunOptions) -> Result<Prepared, CmdError> {
    if let Some(dir) = &opts.resume {
        let m = manifest::read(dir)
            .map_err(|e| CmdError::BadInput(format!("cannot resume {}: {e}", dir.display())))?;
        if m.merge.is_some() {
            return Err(CmdError::BadInput(format!(
                "cannot resume {}: it was merged from shards; resume the shard that is missing units, then merge again",
                dir.display()
            )));
        }
        let sweep =
            spec::load_str(&m.sweep.path, &m.sweep.text, &m.sweep.overrides).map_err(|e| {
                let stored = dir.join("manifest.json");
                e.in_file(&format!(
                    "{} (sweep.text, from {})",
                    stored.display(),
                    m.sweep.path
                ))
            })?;
        let backend = m.backend.backend.clone();
        let shard = m.shard.clone();
        return Ok(Prepared {
            sweep,
            backend,
            dir: dir.clone(),
            manifest: Some(m),
            shard,
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
    let shard = match (opts.shard, opts.shard_from_env) {
        (Some(s), _) => Some(ShardRecord {
            index: s.index,
            count: s.count,
            from: "--shard".into(),
        }),
        (None, true) => Some(
            shard::from_env(|k| std::env::var(k).ok(), opts.shard_count)
                .map_err(CmdError::BadInput)?,
        ),
        (None, false) => None,
    };
    let dir = opts.out.clone().unwrap_or_else(|| {
        let d = rundir::default_path(&sweep.name, chrono::Utc::now());
        match shard.as_ref().and_then(|s| s.shard().ok()) {
            Some(s) => PathBuf::from(format!("{}{}", d.display(), s.suffix())),
            None => d,
        }
    });
    Ok(Prepared {
        sweep,
        backend,
        dir,
        manifest: None,
        shard,
    })
}

pub fn run(opts: &RunOptions) -> Result<RunReport, CmdError> {
    let Prepared {
        sweep,
        backend: backend_name,
        dir,
        manifest: old_manifest,
        shard: shard_record,
    } = load(opts)?;
    let shard = shard_record
        .as_ref()
        .map(|r| r.shard())
        .transpose()
        .map_err(|e| CmdError::BadInput(format!("{}: manifest.json: shard: {e}", dir.display())))?;
    // Counted before they are built (the loader bounds them: spec::MAX_ENV_COMBOS).
    let n_combos = sweep.env_combo_count();
    let product = sweep.product_size().saturating_mul(n_combos);
    if product > opts.max_units as u128 && !opts.force && old_manifest.is_none() {
        return Err(CmdError::BadInput(format!(
            "{}: the sweep's product is {product} combinations (axes x env combinations), more than the cap of {}; \
             narrow the axes, raise --max-units, or pass --force",
            sweep.source.path, opts.max_units
        )));
    }
    let combos = sweep.env_combos();
    let strategy = super::strategy_plan::resolve(opts, &sweep)?;
    let trials = trials_for(opts, &sweep, old_manifest.as_ref(), strategy.is_some())?;
    if opts.dry_run {
        return dry_run(&sweep, &combos, shard);
    }
    // A dry run needs no backend. Whether a real one can run is its first worker's to say
    // (start_slots), before anything is published: this process never loads a vendor library.
    crate::backend::check_name(&backend_name).map_err(CmdError::BadInput)?;
    let device_sel = opts.devices.clone().or_else(|| {
        old_manifest
            .as_ref()
            .filter(|m| !m.devices.is_empty())
            .map(|m| DeviceSel::List(m.devices.clone()))
    });
    if device_sel.is_some()
        && let Some((name, _)) = combos.iter().flat_map(|c| &c.vars).find(|(k, _)| {
            devices::visibility_var("rocm") == Some(k) || devices::visibility_var("cuda") == Some(k)
        })
    {
        return Err(CmdError::BadInput(format!(
            "{}: the sweep sets {name} itself, which --devices sets per device; drop one of them",
            sweep.source.path
        )));
    }

    // Counted before anything is written; Ctrl-C stops the count (a --force'd sweep of 10^12
    // combinations takes that long) with nothing written.
    let interrupts = interrupts();
    interrupts.store(0, Ordering::SeqCst);
    if product > 1_000_000 {
        eprintln!("counting the sweep's {product} combinations (Ctrl-C stops)");
    }
    let Some(counted) = plan::count(&sweep, &combos, &interrupts) else {
        eprintln!("stopped by Ctrl-C while counting the sweep's units; nothing was written");
        return Ok(RunReport {
            dir: None,
            failures: 0,
            stopped: Some(Stop::Interrupted),
            disagreements: 0,
        });
    };

    let resuming = old_manifest.is_some();
    let io = |what: &str, e: std::io::Error| {
        CmdError::Failure(format!("{}: {what}: {e}", dir.display()))
    };
    // A new run is built in a staging directory and renamed into place once its manifest and
    // CSV header exist, so a run directory is never half-made.
    // The guard removes the staging directory on every way out before `publish`.
    let (work_dir, mut staging, mut lock_file) = if resuming {
        (dir.clone(), None, Some(lock(&dir)?))
    } else {
        let s = rundir::Staging::create(&dir)?;
        (s.path.clone(), Some(s), None)
    };
    // A resume reads and reconciles everything first: a run directory it cannot use is bad
    // input, with nothing in it changed.
    let resumed = if resuming {
        // Inferred rows are recomputed from the measured ones (strategy_run.rs); skipped units
        // never ran; interrupted ones run again when asked to.
        let mut again = vec![Status::Skipped, Status::InferredOk, Status::InferredFail];
        if opts.retry_interrupted {
            again.push(Status::Interrupted);
        }
        Some(super::resume::read(&dir, sweep.op, &again).map_err(CmdError::BadInput)?)
    } else {
        None
    };
    if let (Some(r), Some(m)) = (&resumed, &old_manifest)
        && m.finished_at.is_some()
        && m.stopped.is_none()
        && r.retry.is_empty()
        && r.journal.unfinished.is_empty()
        && !r.rewrite
        && r.notes.is_empty()
        && every_unit_has_a_row(&sweep, &combos, shard, &r.ids())
    {
        // Nothing is run, written or stamped.
        println!(
            "nothing to do: {} finished at {} with a row for every planned unit{}",
            dir.display(),
            m.finished_at.as_deref().unwrap_or(""),
            if opts.retry_interrupted {
                ""
            } else {
                " (interrupted units run again with --retry-interrupted)"
            }
        );
        return Ok(RunReport {
            dir: None,
            failures: 0,
            stopped: None,
            disagreements: 0,
        });
    }
    let logs = work_dir.join("workers");
    std::fs::create_dir_all(&logs).map_err(|e| io("creating workers/", e))?;

    let exe = match &opts.worker_exe {
        Some(p) => p.clone(),
        None => std::env::current_exe()
            .map_err(|e| CmdError::Failure(format!("cannot find this program's path: {e}")))?,
    };
    let policies = Policies {
        limits: sweep.limits.clone(),
        timing: crate::spec::policy::TimingPolicy {
            trials,
            ..sweep.timing.clone()
        },
        verify: sweep.verify.clone(),
    };
    let first_env = combos.first().map(|c| c.vars.clone()).unwrap_or_default();
    let spec = WorkerSpec {
        exe,
        backend: backend_name.clone(),
        cache_root: (!opts.shared_caches).then(|| dir.join("caches")),
        cache_vars: crate::backend::isolated_cache_vars(&backend_name)
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..WorkerSpec::default()
    };
    let first = Env {
        index: 0,
        trial: 1,
        vars: &first_env,
    };
    let started = start_slots(
        &spec,
        &logs,
        &sweep,
        &interrupts,
        device_sel.as_ref(),
        first,
    );
    // Nothing ran when this fails: the staging guard leaves no directory behind.
    let (mut slots, info, device_indices) = started?;

    // `auto` says what it picked and why, first thing (an AMD user whose ROCm cannot run must
    // not read CPU numbers unawares); the manifest keeps the same words.
    if let Some(note) = &info.picked {
        eprintln!("note: {note}");
    }
    let planned = shard.map_or(counted.units, |s| s.size_of(counted.units));
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
            environment: manifest::environment(
                &combos
                    .iter()
                    .flat_map(|c| c.vars.iter().map(|(k, _)| k.clone()))
                    .collect::<Vec<_>>(),
            ),
            units_planned: planned,
            counts: Default::default(),
            invalid_combinations: counted.invalid,
            invalid_example: counted.invalid_example.clone(),
            resumed: Vec::new(),
            stopped: None,
            shard: shard_record.clone(),
            devices: device_indices.clone(),
            merge: None,
            env_devices: Default::default(),
        },
    };
    if resuming {
        man.resumed.push(chrono::Utc::now().to_rfc3339());
        man.finished_at = None;
        man.stopped = None;
        man.devices = device_indices.clone();
    }
    if let Some(s) = strategy.as_ref().filter(|_| !resuming) {
        super::strategy_plan::record(&work_dir, s).map_err(|e| io("writing strategy.json", e))?;
    }
    manifest::write(&work_dir, &man).map_err(|e| io("writing manifest.json", e))?;
    if !resuming {
        ResultsWriter::create(&work_dir.join("results.csv"), sweep.op)
            .map_err(|e| io("creating results.csv", e))?;
        if let Some(s) = staging.as_mut()
            && let Err(e) = s.publish()
        {
            for s in &mut slots {
                s.sup.shutdown();
            }
            // Another run published into --out first (they started in the same instant).
            return Err(match rundir::check_free(&dir) {
                Err(taken) => CmdError::BadInput(taken.to_string()),
                Ok(()) => io("renaming the staging directory", e),
            });
        }
        for s in &mut slots {
            s.sup.logs_moved_to(dir.join("workers"));
        }
        lock_file = Some(lock(&dir)?);
    }
    let _lock = lock_file;
    // Every combination's cache directories exist from the start (workers started before the
    // run directory was published could not create theirs).
    for c in &combos {
        super::handle::create_cache_dirs(&spec, &c.vars)
            .map_err(|e| io("creating the per-combination cache directories", e))?;
    }

    // What is already done: the reconciled rows (resume.rs), written back when they differ.
    let csv_path = dir.join("results.csv");
    let mut summary = Summary::default();
    let (in_csv, state) = match resumed {
        Some(r) => {
            r.write(&dir, sweep.op)
                .map_err(|e| io("rewriting results.csv", e))?;
            for note in &r.notes {
                eprintln!("note: {}: {note}", dir.display());
            }
            count_existing(&rcsv::header(sweep.op), &r.rows, &mut summary);
            (r.measured(sweep.op), r.journal)
        }
        None => (HashMap::new(), journal::State::default()),
    };
    let journal = Journal::open(&dir).map_err(|e| io("opening the journal", e))?;
    let csv = ResultsWriter::append_to(&csv_path).map_err(|e| io("opening results.csv", e))?;

    let done_before = in_csv.len() as u64;
    // Progress counts runs of units: each unit `trials` times, less the trials already kept.
    let kept: u64 = state.trials.values().map(|v| v.len() as u64).sum();
    let progress = Progress::new(
        planned
            .saturating_sub(done_before)
            .saturating_mul(u64::from(trials))
            .saturating_sub(kept),
        opts.quiet,
    );
    if counted.invalid > 0 && !resuming {
        progress.println(&format!(
            "note: {} combinations form no valid problem and were dropped (e.g. {})",
            counted.invalid,
            counted.invalid_example.as_deref().unwrap_or("")
        ));
    }

    let shared = Mutex::new(Recorder {
        journal,
        csv,
        summary,
        progress,
        rows: in_csv,
        unfinished: state.unfinished,
        trials: state.trials,
        env_devices: man.env_devices.clone(),
    });
    let params = pool::Params {
        combos: &combos,
        backend: &info.backend,
        policies: &policies,
        retry_interrupted: opts.retry_interrupted,
        interrupts: &interrupts,
        trials,
    };
    let entries = plan::passes(&sweep, &combos, counted.cases, trials)
        .filter(move |(_, i, _)| shard.is_none_or(|s| s.contains(*i)))
        .map(|(t, _, e)| (t, e));
    let ended = match &strategy {
        None => pool::execute(&mut slots, entries, &shared, &params).map(|s| (s, 0)),
        Some(s) => {
            let entries = entries.map(|(_, e)| e).collect();
            let quiet = opts.quiet;
            super::strategy_run::run(&mut slots, entries, &shared, &params, s, &dir, quiet)
        }
    };
    for s in &mut slots {
        s.sup.shutdown();
    }
    let (stopped, disagreements) = ended.map_err(|e| io("writing results", e))?;
    let Recorder {
        mut csv,
        summary,
        progress,
        env_devices,
        ..
    } = shared.into_inner().unwrap_or_else(|e| e.into_inner());
    man.env_devices = env_devices;
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
        print!("{}", summary.render(stopped.as_ref().map(|_| planned)));
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
        disagreements,
    })
}

/// Whether every unit of the plan (this shard's) has its row. A `solver = "all"` case is not
/// known to be complete until its solvers are listed again: such a plan never reads as done.
fn every_unit_has_a_row(
    sweep: &Sweep,
    combos: &[crate::spec::expand::EnvCombo],
    shard: Option<Shard>,
    ids: &HashSet<String>,
) -> bool {
    plan::cases(sweep, combos)
        .enumerate()
        .filter(|(i, _)| shard.is_none_or(|s| s.contains(*i as u64)))
        .all(|(_, (_, env_key, case))| {
            case.solver != "all"
                && ids.contains(&crate::op::unit_id(&case.id, &case.solver, &env_key))
        })
}

/// Trials per unit: a resume keeps the run's; else `--trials`, else the sweep's `[timing]
/// trials`. A boundary search (prune, bisect) decides from statuses and runs each unit once;
/// so does a sweep with timing off (trials exist to measure run-to-run noise).
fn trials_for(
    opts: &RunOptions,
    sweep: &Sweep,
    old: Option<&Manifest>,
    strategy: bool,
) -> Result<u32, CmdError> {
    if let Some(m) = old {
        return Ok(m.policies.timing.trials.max(1));
    }
    if let Some(n) = opts.trials {
        if !(1..=crate::spec::policy::MAX_TRIALS).contains(&n) {
            return Err(CmdError::BadInput(format!(
                "--trials {n}: must be 1 to {}",
                crate::spec::policy::MAX_TRIALS
            )));
        }
        if strategy && n > 1 {
            return Err(CmdError::BadInput(format!(
                "--trials {n} with --strategy {}: a boundary search runs each unit once (it decides from statuses); \
                 drop --trials or run the grid",
                opts.strategy.name()
            )));
        }
        return Ok(n);
    }
    Ok(if strategy || !sweep.timing.enabled {
        1
    } else {
        sweep.timing.trials
    })
}

/// Starts one supervisor per device slot (one without `--devices`), each with its first worker,
/// and returns them with the backend's info for the manifest (its `devices`: one per slot) and
/// the slots' device indices. With `--devices`, an unrestricted worker first says which backend
/// `auto` is and how many devices it sees.
fn start_slots(
    spec: &WorkerSpec,
    logs: &Path,
    sweep: &Sweep,
    interrupts: &Arc<AtomicUsize>,
    sel: Option<&DeviceSel>,
    first: Env,
) -> Result<(Vec<Slot>, BackendInfo, Vec<usize>), CmdError> {
    let new_sup = |spec: WorkerSpec| {
        Supervisor::new(
            spec,
            logs.to_path_buf(),
            sweep.limits.clone(),
            Arc::clone(interrupts),
        )
    };
    // A backend that answered and cannot run here is bad input (exit 2, as a missing
    // library always was); a worker that failed before answering is a failure.
    let did_not_start = |sup: &Supervisor, backend: &str, what: &str, why: String| {
        if sup.info.as_ref().is_some_and(|i| !i.available) {
            CmdError::BadInput(format!(
                "the {backend} backend cannot run here{what}: {why}"
            ))
        } else {
            CmdError::Failure(format!(
                "the {backend} backend's worker{what} did not start: {why}"
            ))
        }
    };
    let Some(sel) = sel else {
        let mut sup = new_sup(spec.clone());
        let info = match sup.start(first) {
            Ok(i) => i,
            Err(o) => {
                sup.shutdown();
                return Err(did_not_start(&sup, &spec.backend, "", o.error));
            }
        };
        let device = info.devices.first().cloned().unwrap_or_default();
        let slot = Slot {
            sup,
            label: String::new(),
            device,
        };
        return Ok((vec![slot], info, Vec::new()));
    };
    let mut probe = new_sup(WorkerSpec {
        tag: "probe-".into(),
        ..spec.clone()
    });
    let seen = probe.start(first);
    probe.shutdown();
    let seen = seen.map_err(|o| did_not_start(&probe, &spec.backend, "", o.error))?;
    let parent = devices::visibility_var(&seen.backend).and_then(|v| std::env::var(v).ok());
    let count = if seen.device_count > 0 {
        seen.device_count
    } else {
        seen.devices.len()
    };
    let defs =
        devices::slots(sel, &seen.backend, count, parent.as_deref()).map_err(CmdError::BadInput)?;
    let mut slots = Vec::new();
    let mut names = Vec::new();
    let mut info: Option<BackendInfo> = None;
    for d in &defs {
        let mut sup = new_sup(WorkerSpec {
            // The backend `auto` resolved to, so every pool opens the same one.
            backend: seen.backend.clone(),
            extra_env: d.env.clone(),
            tag: format!("dev{}-", d.index),
            ..spec.clone()
        });
        let i = match sup.start(first) {
            Ok(i) => i,
            Err(o) => {
                sup.shutdown();
                for s in &mut slots {
                    let s: &mut Slot = s;
                    s.sup.shutdown();
                }
                let what = format!(" for device {}", d.index);
                return Err(did_not_start(&sup, &seen.backend, &what, o.error));
            }
        };
        let device = i.devices.first().cloned().unwrap_or_default();
        names.push(device.clone());
        info.get_or_insert(i);
        slots.push(Slot {
            sup,
            label: d.index.to_string(),
            device,
        });
    }
    let picked = seen.picked.clone();
    let mut info = info.unwrap_or(seen);
    info.devices = names;
    info.picked = picked;
    Ok((slots, info, defs.iter().map(|d| d.index).collect()))
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

/// Counts the rows an earlier session wrote (already read and reconciled by resume.rs).
fn count_existing(header: &[String], rows: &[Vec<String>], summary: &mut Summary) {
    let id = header.iter().position(|h| h == "unit_id");
    let err = header.iter().position(|h| h == "error");
    for r in rows {
        if let Some(st) = rcsv::status_of(header, r) {
            let uid = id.and_then(|i| r.get(i)).cloned().unwrap_or_default();
            let detail = err.and_then(|i| r.get(i)).cloned().unwrap_or_default();
            summary.add(st, &uid, || "(earlier session)".into(), &detail);
        }
    }
}

fn dry_run(
    sweep: &Sweep,
    combos: &[crate::spec::expand::EnvCombo],
    shard: Option<Shard>,
) -> Result<RunReport, CmdError> {
    use std::io::Write;
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    let write_err = |e: std::io::Error| CmdError::Failure(format!("writing to stdout: {e}"));
    if let Some(shard) = shard {
        // The shard's own entries, with their env combination: exactly what it would run.
        let (mut total, mut taken) = (0u64, 0u64);
        for (i, (_, env_key, case)) in plan::cases(sweep, combos).enumerate() {
            total += 1;
            if shard.contains(i as u64) {
                taken += 1;
                let text = crate::op::canonical_text(sweep.op, &case.values);
                let env = if env_key.is_empty() {
                    String::new()
                } else {
                    format!(" [{env_key}]")
                };
                writeln!(w, "{} {text} solver={}{env}", case.id, case.solver).map_err(write_err)?;
            }
        }
        writeln!(
            w,
            "shard {shard}: {taken} of {total} units (case x env combination)"
        )
        .map_err(write_err)?;
        w.flush().map_err(write_err)?;
        return Ok(RunReport {
            dir: None,
            failures: 0,
            stopped: None,
            disagreements: 0,
        });
    }
    let mut count = plan::PlanCount::default();
    let combos = combos.len();
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
        disagreements: 0,
    })
}

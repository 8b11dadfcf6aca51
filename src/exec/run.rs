//! `rocsweep run`: load, plan, create (or resume) the run directory, run every unit in a worker
//! process under the watchdog, journal it, write its row as it finishes, print the summary.

use crate::backend::BackendInfo;
use crate::exec::book::{Book, Shared};
use crate::exec::plan::resume::Resume;
use crate::exec::plan::setup::Setup;
use crate::exec::plan::units;
use crate::exec::pool::{self, Slot};
use crate::exec::record::journal::{self, Journal};
use crate::exec::record::progress::Progress;
use crate::exec::record::recorder::Recorder;
use crate::exec::record::trees::TreeBook;
use crate::exec::supervise::handle::WorkerSpec;
use crate::exec::supervise::supervisor::Env;
use crate::exec::target::{Workers, io, open_target};
use crate::results::csv::{self as rcsv, ResultsWriter};
use crate::results::manifest::{self, Manifest};
use crate::results::summary::Summary;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

pub use crate::error::CmdError;
pub use crate::exec::plan::options::{DEFAULT_MAX_UNITS, RunOptions, RunReport};
pub use crate::exec::record::events::Stop;

/// Before the first unit: every variable the sweep sets that makes a process load or run code,
/// so that a sweep file from someone else cannot do so unseen (a sweep file is code).
fn warn_code_vars(combos: &[crate::spec::expand::EnvCombo]) {
    let seen = crate::spec::code_vars::set_by(combos);
    if !seen.is_empty() {
        crate::noteln!(
            "warning: the sweep sets variables that make its workers load or run code: {}; a \
             sweep file is code, like a Makefile: run only sweep files you trust",
            seen.join(", ")
        );
    }
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
                    crate::noteln!("\nCtrl-C: finishing the running unit, then stopping (press again to kill it)");
                } else {
                    crate::noteln!("\nCtrl-C again: killing the worker");
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
                        crate::exec::record::events::STOP_SIGNAL.store(sig, Ordering::SeqCst);
                        c.fetch_add(2, Ordering::SeqCst);
                    })
                };
            }
            count
        })
        .clone()
}

pub fn run(opts: &RunOptions) -> Result<RunReport, CmdError> {
    if let Some(dir) = opts
        .resume
        .as_ref()
        .filter(|d| crate::exec::sequence::resume::is_sequence_run(d))
    {
        let interrupts = interrupts();
        interrupts.store(0, Ordering::SeqCst);
        return crate::exec::sequence::resume(opts, dir, interrupts);
    }
    let mut s = Setup::new(opts.clone())?;
    if let Some(seq) = s.sequence.take() {
        if s.opts.dry_run {
            return crate::exec::sequence::write::dry_run(&seq);
        }
        let interrupts = interrupts();
        interrupts.store(0, Ordering::SeqCst);
        return crate::exec::sequence::run(&s, &seq, interrupts);
    }
    if s.opts.dry_run {
        let backend = s
            .backends
            .first()
            .map_or(s.sweep.backend.as_str(), String::as_str);
        return crate::exec::plan::dry_run::print(&s.sweep, &s.combos, s.shard, backend);
    }
    // A dry run needs no backend. Whether a real one can run is its first worker's to say
    // (start_slots), before anything is published: this process never loads a vendor library.
    for b in &s.backends {
        crate::backend::registry::check_name(b).map_err(CmdError::BadInput)?;
    }
    let device_sel = s.device_sel()?;
    warn_code_vars(&s.combos);

    let interrupts = interrupts();
    interrupts.store(0, Ordering::SeqCst);
    crate::exec::record::events::STOP_SIGNAL.store(0, Ordering::SeqCst);
    let Some(counted) = count_units(&s, &interrupts) else {
        return Ok(RunReport::nothing(Some(Stop::Interrupted)));
    };

    let mut target = open_target(&mut s)?;
    let resumed = s.read_resume()?;
    if let Some(r) = &resumed
        && finished_already(&s, r)
    {
        return Ok(RunReport::nothing(None));
    }
    // Built once the run directory's name is final (its caches live in it).
    let spec = s.worker_spec()?;
    if let Some(old) = s.old.as_ref().filter(|_| s.resuming()) {
        crate::exec::record::trees::check_resume(&s.dir, old, &s.combos, &spec.extra_env)?;
        crate::exec::plan::resume::check_resume_writable(&s.dir)?;
    }
    let Workers {
        mut spec,
        mut slots,
        info,
        others,
        devices,
        group_files,
    } = target.start_workers(&s, spec, &interrupts, device_sel.as_ref())?;
    let planned = match s.shard {
        Some(sh) => sh.size_of(counted.units),
        None => units::planned(&counted, &s.combos, &info.backend, s.sweep.op),
    };
    let mut man = manifest_for(&s, &info, &counted, planned, devices);
    let seen: Vec<&BackendInfo> = std::iter::once(&info)
        .chain(&others)
        .chain(&group_files)
        .collect();
    let mut trees = TreeBook::new(&man.rocm_trees, &seen, &s.combos, &spec.extra_env);
    if !others.is_empty() && s.old.is_none() {
        man.backends = std::iter::once(info.clone()).chain(others).collect();
    }
    let named = s.dir.clone();
    let out_given = s.opts.out.is_some();
    target.publish(&mut s, &man, &mut slots, out_given)?;
    if s.dir != named {
        // Published under the next free name: the caches live in this run's directory, and
        // a worker started with the old name's caches is replaced.
        spec.cache_root = spec.cache_root.as_ref().map(|_| s.dir.join("caches"));
        for slot in &mut slots {
            slot.sup.set_cache_root(spec.cache_root.clone());
        }
    }
    create_cache_dirs(&s, &spec)?;
    let recorder = open_recorder(&s, resumed, &counted, planned, &man)?;
    trees.persist_to(&s.dir, &man);
    crate::exec::record::recorder::lock(&recorder).rec.trees = trees;
    let ended = execute(&s, &mut slots, &recorder, &info.backend, counted.cases);
    for slot in &mut slots {
        slot.sup.shutdown();
    }
    let (stopped, disagreements) = ended.map_err(|e| stopped_by(&s, e))?;
    let failures = finish(&s, recorder, &mut man, planned, stopped)?;
    Ok(RunReport {
        dir: Some(s.dir.clone()),
        failures,
        stopped,
        disagreements,
    })
}

/// Counts the sweep's units. Counted before anything is written; Ctrl-C stops the count (a
/// --force'd sweep of 10^12 combinations takes that long) with nothing written: then None, and
/// the message is printed here.
fn count_units(s: &Setup, interrupts: &AtomicUsize) -> Option<units::PlanCount> {
    if s.product > 1_000_000 {
        crate::noteln!(
            "counting the sweep's {} combinations (Ctrl-C stops)",
            s.product
        );
    }
    let counted = units::count(&s.sweep, &s.combos, interrupts);
    if counted.is_none() {
        crate::noteln!("stopped by Ctrl-C while counting the sweep's units; nothing was written");
    }
    counted
}

/// Whether a resumed run has nothing left to do (it finished, with a row for every planned
/// unit); if so, says so.
fn finished_already(s: &Setup, r: &Resume) -> bool {
    if !s.nothing_to_do(r) {
        return false;
    }
    crate::sayln!(
        "nothing to do: {} finished at {} with a row for every planned unit{}",
        s.dir.display(),
        s.old
            .as_ref()
            .and_then(|m| m.finished_at.as_deref())
            .unwrap_or(""),
        if s.opts.retry_interrupted {
            ""
        } else {
            " (interrupted units run again with --retry-interrupted)"
        }
    );
    true
}

/// The manifest this session writes: a resumed run's, stamped with this session's start and
/// devices, or a new one.
fn manifest_for(
    s: &Setup,
    info: &BackendInfo,
    counted: &units::PlanCount,
    planned: u64,
    devices: Vec<usize>,
) -> Manifest {
    match &s.old {
        Some(m) => {
            let mut m = m.clone();
            m.resumed.push(chrono::Utc::now().to_rfc3339());
            m.finished_at = None;
            m.stopped = None;
            m.devices = devices;
            m
        }
        None => s.new_manifest(info, counted, planned, devices),
    }
}

/// Every combination's cache directories exist from the start (workers started before the
/// run directory was published could not create theirs).
fn create_cache_dirs(s: &Setup, spec: &WorkerSpec) -> Result<(), CmdError> {
    for (i, c) in s.combos.iter().enumerate() {
        crate::exec::supervise::handle::create_cache_dirs(spec, &Env::of(i, 1, c))
            .map_err(|e| io(s, "creating the per-combination cache directories", e))?;
    }
    Ok(())
}

/// Why the run stopped with an error: a worker that could not be started (the unit it was for
/// has no row, so a resume runs it), or an I/O failure writing the results.
fn stopped_by(s: &Setup, e: std::io::Error) -> CmdError {
    match e
        .get_ref()
        .and_then(|r| r.downcast_ref::<crate::exec::supervise::supervisor::SpawnFailed>())
    {
        Some(why) => CmdError::Failure(format!(
            "{why}\nthe run stopped: no unit was recorded for it; once workers can start again, continue with: rocsweep run --resume {}",
            s.dir.display()
        )),
        None => io(s, "writing results", e),
    }
}

/// The recorder and the book, which holds what is already done: the reconciled rows (resume.rs, written back
/// when they differ), the journal's unfinished units and kept trials.
fn open_recorder(
    s: &Setup,
    resumed: Option<Resume>,
    counted: &units::PlanCount,
    planned: u64,
    man: &Manifest,
) -> Result<Mutex<Shared>, CmdError> {
    let dir = &s.dir;
    let mut summary = Summary::default();
    let (rows, state) = match resumed {
        Some(r) => {
            r.write(dir, s.sweep.op)
                .map_err(|e| io(s, "rewriting results.csv", e))?;
            for note in &r.notes {
                crate::noteln!("note: {}: {note}", dir.display());
            }
            count_existing(&rcsv::header(s.sweep.op), &r.rows, &mut summary);
            (r.measured(s.sweep.op), r.journal)
        }
        None => (HashMap::new(), journal::State::default()),
    };
    let journal = Journal::open(dir).map_err(|e| io(s, "opening the journal", e))?;
    let csv = ResultsWriter::append_to(&dir.join("results.csv"))
        .map_err(|e| io(s, "opening results.csv", e))?;
    // Progress counts units (each `trials` times on the bar, less the trials already kept).
    let kept: u64 = state.trials.values().map(|v| v.len() as u64).sum();
    let progress = Progress::new(
        planned.saturating_sub(rows.len() as u64),
        s.trials,
        kept,
        s.opts.quiet,
    );
    if counted.invalid > 0 && !s.resuming() {
        progress.println(&format!(
            "note: {} combinations form no valid problem and were dropped (e.g. {})",
            counted.invalid,
            counted.invalid_example.as_deref().unwrap_or("")
        ));
    }
    let rec = Recorder {
        journal,
        csv,
        summary,
        progress,
        env_devices: man.env_devices.clone(),
        contexts: crate::exec::record::recorder::Context::of_run(&s.combos),
        trees: TreeBook::default(),
    };
    Ok(Mutex::new(Shared {
        rec,
        book: Book::resumed(rows, state),
    }))
}

/// Runs the plan (this shard's) on the slots: every unit, or the strategy's choice. Returns
/// why it stopped early, if it did, and the confirmation's disagreements.
fn execute(
    s: &Setup,
    slots: &mut [Slot],
    recorder: &Mutex<Shared>,
    backend: &str,
    cases: u64,
) -> std::io::Result<(Option<Stop>, usize)> {
    let interrupts = interrupts();
    let policies = s.policies();
    let params = pool::Params {
        combos: &s.combos,
        backend,
        policies: &policies,
        retry_interrupted: s.opts.retry_interrupted,
        interrupts: &interrupts,
        trials: s.trials,
        all_counted_up_front: s.shard.is_none(),
    };
    let shard = s.shard;
    let entries = units::passes(&s.sweep, &s.combos, cases, s.trials)
        .filter(move |(_, i, _)| shard.is_none_or(|sh| sh.contains(*i)))
        .map(|(t, _, e)| (t, e));
    match &s.strategy {
        None => pool::execute(slots, entries, recorder, &params).map(|stop| (stop, 0)),
        Some(plan) => {
            let entries = entries.map(|(_, e)| e).collect();
            crate::exec::strategy_run::run(
                slots,
                entries,
                recorder,
                &params,
                plan,
                &s.dir,
                s.opts.quiet,
            )
        }
    }
}

/// Stamps the manifest with how the run ended, prints the summary and what to do next, and
/// returns the failures counted.
fn finish(
    s: &Setup,
    recorder: Mutex<Shared>,
    man: &mut Manifest,
    planned: u64,
    stopped: Option<Stop>,
) -> Result<u64, CmdError> {
    let Recorder {
        mut csv,
        summary,
        progress,
        env_devices,
        trees,
        ..
    } = recorder.into_inner().unwrap_or_else(|e| e.into_inner()).rec;
    man.env_devices = env_devices;
    man.rocm_trees = trees.records();
    // The plan's count as the `solver = "all"` listings made it: planned = rows once finished.
    let planned = planned.saturating_add_signed(progress.grown());
    man.units_planned = planned;
    progress.finish();
    csv.sync().map_err(|e| io(s, "syncing results.csv", e))?;
    man.finished_at = Some(chrono::Utc::now().to_rfc3339());
    man.counts = summary.counts_by_name();
    man.stopped = stopped.map(|st| match st {
        Stop::Interrupted => format!(
            "interrupted by {}",
            crate::exec::record::events::stop_cause()
        ),
        Stop::DeviceUnhealthy => "device unhealthy after a hang or crash".to_string(),
    });
    let dir = &s.dir;
    manifest::write(dir, man).map_err(|e| io(s, "writing manifest.json", e))?;
    if !s.opts.quiet {
        crate::console::say(&summary.render(stopped.map(|_| planned)));
        crate::sayln!("run directory: {}", dir.display());
    }
    match stopped {
        Some(Stop::Interrupted) => crate::noteln!(
            "stopped by {}; continue with: rocsweep run --resume {}",
            crate::exec::record::events::stop_cause(),
            dir.display()
        ),
        Some(Stop::DeviceUnhealthy) => crate::noteln!(
            "error: the device stayed unhealthy after {} health probes; the remaining units are recorded `skipped` (device-unhealthy). \
             Check the device (dmesg, rocm-smi/nvidia-smi), then: rocsweep run --resume {}",
            crate::exec::supervise::supervisor::PROBE_TRIES,
            dir.display()
        ),
        None => {}
    }
    Ok(summary.failures_total)
}

/// Counts the rows an earlier session wrote (already read and reconciled by resume.rs).
fn count_existing(header: &[String], rows: &[rcsv::CompactRow], summary: &mut Summary) {
    let id = header.iter().position(|h| h == "unit_id");
    let err = header.iter().position(|h| h == "error");
    for r in rows {
        let r = r.fields();
        if let Some(st) = rcsv::status_of(header, &r) {
            let uid = id.and_then(|i| r.get(i)).cloned().unwrap_or_default();
            let detail = err.and_then(|i| r.get(i)).cloned().unwrap_or_default();
            summary.add(st, &uid, || "(earlier session)".into(), &detail);
        }
    }
}

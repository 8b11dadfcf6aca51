//! Where a run happens: its run directory (a new one staged and published whole, a resumed one
//! locked) and its workers (one slot per device, and with several backends or ROCm trees the
//! first worker of each other group checked before anything is published).

use crate::backend::BackendInfo;
use crate::error::CmdError;
use crate::exec::plan::setup::{self, Setup};
use crate::exec::pool::Slot;
use crate::exec::supervise::devices::DeviceSel;
use crate::exec::supervise::handle::WorkerSpec;
use crate::exec::supervise::supervisor::Env;
use crate::results::csv::ResultsWriter;
use crate::results::manifest::{self, Manifest};
use crate::results::rundir;
use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

/// Where the run writes. Without `--out` the name comes from the clock: a run started in the
/// same second that published that name meanwhile leaves this one the next free name.
pub(crate) fn open_target(s: &mut Setup) -> Result<Target, CmdError> {
    let mut tries = 0;
    loop {
        match Target::open(s) {
            Err(_)
                if !s.resuming()
                    && s.opts.out.is_none()
                    && tries < 100
                    && rundir::check_free(&s.dir).is_err() =>
            {
                tries += 1;
                s.dir = rundir::fresh(&s.dir);
            }
            other => return other,
        }
    }
}

/// Where the run writes: a new run is built in a staging directory and renamed into place once
/// its manifest and CSV header exist, so a run directory is never half-made (the guard removes
/// the staging directory on every way out before `publish`); a resumed run is locked first.
pub(crate) struct Target {
    work_dir: PathBuf,
    staging: Option<rundir::Staging>,
    /// Held for the life of the run (released when the process ends, however it ends).
    lock: Option<File>,
}

impl Target {
    fn open(s: &Setup) -> Result<Target, CmdError> {
        Ok(if s.resuming() {
            Target {
                work_dir: s.dir.clone(),
                staging: None,
                lock: Some(setup::lock(&s.dir)?),
            }
        } else {
            let staging = rundir::Staging::create(&s.dir)?;
            Target {
                work_dir: staging.path.clone(),
                staging: Some(staging),
                lock: None,
            }
        })
    }

    /// Starts the run's workers, logging under workers/ where the run is being written: one
    /// slot per device, each with its first worker started on the first env combination.
    pub(crate) fn start_workers(
        &self,
        s: &Setup,
        spec: WorkerSpec,
        interrupts: &Arc<AtomicUsize>,
        device_sel: Option<&DeviceSel>,
    ) -> Result<Workers, CmdError> {
        let logs = self.work_dir.join("workers");
        crate::results::atomic::refuse_link(&logs).map_err(|e| io(s, "creating workers/", e))?;
        std::fs::create_dir_all(&logs).map_err(|e| io(s, "creating workers/", e))?;
        // The first combination whose worker starts (see slots::start_any).
        let envs: Vec<Env> = s
            .combos
            .iter()
            .enumerate()
            .map(|(index, c)| Env::of(index, 1, c))
            .collect();
        let no_combo = [Env {
            index: 0,
            trial: 1,
            vars: &[],
            backend: None,
            rocm: None,
        }];
        let envs = if envs.is_empty() {
            &no_combo[..]
        } else {
            &envs
        };
        // The first backend's contexts start the slots; with several backends, each other
        // backend's worker says first whether it can run (before anything is published).
        let first: Vec<Env> = envs
            .iter()
            .filter(|e| (e.backend, e.rocm) == (envs[0].backend, envs[0].rocm))
            .copied()
            .collect();
        // Nothing ran when this fails: the staging guard leaves no directory behind, and the
        // workers' logs are kept elsewhere, named in the message.
        let (mut slots, mut info, devices) = crate::exec::supervise::slots::start_slots(
            &spec, &logs, &s.sweep, interrupts, device_sel, &first,
        )
        .map_err(|e| crate::exec::supervise::slots::keep_logs(&logs, e))?;
        let (groups, others) = check_groups(s, &spec, &logs, interrupts, envs, &mut slots)
            .map_err(|e| crate::exec::supervise::slots::keep_logs(&logs, e))?;
        // The vendor library files the workers mapped get their soname and SHA-256 once per run
        // (the other groups' in `check_groups`).
        crate::exec::record::libhash::complete(&mut info.libraries);
        // `auto` says what it picked and why, first thing (an AMD user whose ROCm cannot run must
        // not read CPU numbers unawares); the manifest keeps the same words.
        // ROCm says which tree its workers use (and any mix of trees they found) first thing.
        // Several trees: each one's line.
        for versions in std::iter::once(&info.versions).chain(groups.iter().map(|g| &g.2.versions))
        {
            for line in crate::backend::rocm::provenance::first_lines(versions) {
                crate::noteln!("{line}");
            }
        }
        for picked in std::iter::once(&info)
            .chain(&others)
            .filter_map(|i| i.picked.as_ref())
        {
            crate::noteln!("note: {picked}");
        }
        let group_files = groups.into_iter().map(|g| g.2).collect();
        Ok(Workers {
            spec,
            slots,
            info,
            others,
            devices,
            group_files,
        })
    }

    /// Writes strategy.json, the manifest and (for a new run) results.csv's header, then
    /// renames a new run into place and takes its lock.
    pub(crate) fn publish(
        &mut self,
        s: &mut Setup,
        man: &Manifest,
        slots: &mut [Slot],
        out_given: bool,
    ) -> Result<(), CmdError> {
        if let Some(plan) = s.strategy.as_ref().filter(|_| !s.resuming()) {
            crate::exec::plan::strategy_plan::record(&self.work_dir, plan)
                .map_err(|e| io(s, "writing strategy.json", e))?;
        }
        manifest::write(&self.work_dir, man).map_err(|e| io(s, "writing manifest.json", e))?;
        let Some(staging) = self.staging.as_mut() else {
            return Ok(());
        };
        ResultsWriter::create(&self.work_dir.join("results.csv"), s.sweep.op)
            .map_err(|e| io(s, "creating results.csv", e))?;
        let mut published = staging.publish();
        // Without --out the name comes from the clock: a run that published the same name in
        // the same second leaves this one the next free name.
        while published.is_err() && !out_given && rundir::check_free(&s.dir).is_err() {
            s.dir = rundir::fresh(&s.dir);
            staging.retarget(&s.dir);
            published = staging.publish();
        }
        if let Err(e) = published {
            for slot in slots.iter_mut() {
                slot.sup.shutdown();
            }
            // Another run published into --out first (they started in the same instant).
            return Err(match rundir::check_free(&s.dir) {
                Err(taken) => CmdError::BadInput(taken.to_string()),
                Ok(()) => io(s, "renaming the staging directory", e),
            });
        }
        for slot in slots.iter_mut() {
            slot.sup.logs_moved_to(s.dir.join("workers"));
        }
        self.work_dir = s.dir.clone();
        self.lock = Some(setup::lock(&s.dir)?);
        Ok(())
    }
}

/// With several backends or ROCm trees: the first worker of each other (backend, tree) says
/// whether it can run, before anything is published (the slots already started are shut down
/// when one cannot). Every such group, and per backend after the first what its first worker
/// said (the manifest's `backends`).
fn check_groups(
    s: &Setup,
    spec: &WorkerSpec,
    logs: &std::path::Path,
    interrupts: &Arc<AtomicUsize>,
    envs: &[Env],
    slots: &mut [Slot],
) -> Result<(Vec<crate::exec::supervise::slots::Group>, Vec<BackendInfo>), CmdError> {
    if envs.len() < 2 {
        return Ok((Vec::new(), Vec::new()));
    }
    let checked =
        crate::exec::supervise::slots::check_other_groups(spec, logs, &s.sweep, interrupts, envs);
    if checked.is_err() {
        for slot in slots.iter_mut() {
            slot.sup.shutdown();
        }
    }
    let mut groups = checked?;
    // Hashed here, before the run: no tree's files are hashed while the recorder holds its lock,
    // and `others` (copies of some groups' infos) get the digests with them.
    for g in &mut groups {
        crate::exec::record::libhash::complete(&mut g.2.libraries);
    }
    let mut others: Vec<BackendInfo> = Vec::new();
    let mut seen: Vec<Option<String>> = vec![envs[0].backend.map(String::from)];
    for (b, _, i) in &groups {
        if !seen.contains(b) {
            seen.push(b.clone());
            others.push(i.clone());
        }
    }
    Ok((groups, others))
}

/// The run's started workers (one slot per device) and what their first handshake said.
pub(crate) struct Workers {
    pub spec: WorkerSpec,
    pub slots: Vec<Slot>,
    /// The backend's info for the manifest (its `devices`: one per slot).
    pub info: BackendInfo,
    /// With several backends: what each other backend's first worker said, in order.
    pub others: Vec<BackendInfo>,
    /// The slots' device indices (empty without `--devices`).
    pub devices: Vec<usize>,
    /// What the first worker of each other (backend, tree) group mapped, hashed before the run
    /// (so that no tree's files are hashed while the recorder holds its lock).
    pub group_files: Vec<BackendInfo>,
}

pub(crate) fn io(s: &Setup, what: &str, e: std::io::Error) -> CmdError {
    CmdError::Failure(format!("{}: {what}: {e}", s.dir.display()))
}

//! Starting a run's device slots: one supervisor per `--devices` entry (one without), each
//! with its first worker, whose handshake says whether the backend can run and what it found.
//! This process never opens a vendor library itself.

use crate::backend::BackendInfo;
use crate::error::CmdError;
use crate::exec::record::recorder::Place;
use crate::exec::supervise::devices::{self, DeviceSel};
use crate::exec::supervise::handle::WorkerSpec;
use crate::exec::supervise::supervisor::{Env, Supervisor};
use crate::exec::worker::unit::Outcome;
use crate::results::status::Status;
use crate::spec::Sweep;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

/// One worker pool: a supervisor and what its rows say about where they ran.
pub struct Slot {
    pub sup: Supervisor,
    /// The `device_index` column: the `--devices` index, empty without.
    pub label: String,
    /// The `device` column: the device this slot's worker reported.
    pub device: String,
}

impl Slot {
    /// Where a row of this slot ran; `worker`: whether its worker produced it.
    pub fn place(&self, worker: bool) -> Place<'_> {
        Place {
            label: &self.label,
            reported: worker
                .then(|| self.sup.info.as_ref().and_then(|i| i.devices.first()))
                .flatten()
                .map(String::as_str),
            fallback: &self.device,
            info: worker.then_some(self.sup.info.as_ref()).flatten(),
        }
    }
}

/// Starts one supervisor per device slot (one without `--devices`), each with its first worker,
/// and returns them with the backend's info for the manifest (its `devices`: one per slot) and
/// the slots' device indices. With `--devices`, an unrestricted worker first says which backend
/// `auto` is and how many devices it sees.
pub fn start_slots(
    spec: &WorkerSpec,
    logs: &Path,
    sweep: &Sweep,
    interrupts: &Arc<AtomicUsize>,
    sel: Option<&DeviceSel>,
    envs: &[Env],
) -> Result<(Vec<Slot>, BackendInfo, Vec<usize>), CmdError> {
    let make = Supervisors {
        logs,
        sweep,
        interrupts,
    };
    let Some(sel) = sel else {
        return make.single_slot(spec, envs);
    };
    let seen = make.probe(spec, envs)?;
    let parent = devices::visibility_var(&seen.backend).and_then(|v| std::env::var(v).ok());
    let count = if seen.device_count > 0 {
        seen.device_count
    } else {
        seen.devices.len()
    };
    let defs =
        devices::slots(sel, &seen.backend, count, parent.as_deref()).map_err(CmdError::BadInput)?;
    let (slots, info) = make.device_slots(spec, seen, &defs, envs)?;
    Ok((slots, info, defs.iter().map(|d| d.index).collect()))
}

/// What every supervisor of the run shares: where workers log, the sweep's limits, Ctrl-C.
struct Supervisors<'a> {
    logs: &'a Path,
    sweep: &'a Sweep,
    interrupts: &'a Arc<AtomicUsize>,
}

impl Supervisors<'_> {
    /// A supervisor (no worker started yet) for workers of `spec`.
    fn new_sup(&self, spec: WorkerSpec) -> Supervisor {
        Supervisor::new(
            spec,
            self.logs.to_path_buf(),
            self.sweep.limits.clone(),
            Arc::clone(self.interrupts),
        )
    }

    /// Without `--devices`: one slot, its worker on whatever devices the backend sees.
    fn single_slot(
        &self,
        spec: &WorkerSpec,
        envs: &[Env],
    ) -> Result<(Vec<Slot>, BackendInfo, Vec<usize>), CmdError> {
        let mut sup = self.new_sup(spec.clone());
        let info = match start_any(&mut sup, envs) {
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
        Ok((vec![slot], info, Vec::new()))
    }

    /// An unrestricted worker, started and ended: which backend `auto` is and how many devices
    /// it sees.
    fn probe(&self, spec: &WorkerSpec, envs: &[Env]) -> Result<BackendInfo, CmdError> {
        let mut probe = self.new_sup(WorkerSpec {
            tag: "probe-".into(),
            ..spec.clone()
        });
        let seen = start_any(&mut probe, envs);
        probe.shutdown();
        seen.map_err(|o| did_not_start(&probe, &spec.backend, "", o.error))
    }

    /// One slot per `--devices` entry, each worker restricted to its device, opening the
    /// backend the probe (`seen`) found: the slots, and the backend's info for the manifest
    /// (the first worker's, with every slot's device). When one fails, those started are shut
    /// down.
    fn device_slots(
        &self,
        spec: &WorkerSpec,
        seen: BackendInfo,
        defs: &[devices::Slot],
        envs: &[Env],
    ) -> Result<(Vec<Slot>, BackendInfo), CmdError> {
        let mut slots: Vec<Slot> = Vec::new();
        let mut names = Vec::new();
        let mut info: Option<BackendInfo> = None;
        for d in defs {
            let mut sup = self.new_sup(WorkerSpec {
                // The backend `auto` resolved to, so every pool opens the same one.
                backend: seen.backend.clone(),
                // The run's own variables (a sweep's one ROCm tree), then the device's.
                extra_env: [spec.extra_env.clone(), d.env.clone()].concat(),
                tag: format!("dev{}-", d.index),
                ..spec.clone()
            });
            let i = match start_any(&mut sup, envs) {
                Ok(i) => i,
                Err(o) => {
                    sup.shutdown();
                    for s in &mut slots {
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
        Ok((slots, info))
    }
}

/// A (backend, ROCm tree) group of a run's contexts (None: the run's one) and what its first
/// worker said.
pub type Group = (Option<String>, Option<String>, BackendInfo);

/// In a run over several backends or ROCm trees: one worker of each (backend, tree) after the
/// first (whose worker `start_slots` started), in the first of its contexts that starts,
/// handshaken and ended. Each says whether it can run here (exit 2 when one cannot, as in a run
/// of one) and what it found: (backend, tree path, info) per group, in the contexts' order.
pub fn check_other_groups(
    spec: &WorkerSpec,
    logs: &Path,
    sweep: &Sweep,
    interrupts: &Arc<AtomicUsize>,
    envs: &[Env],
) -> Result<Vec<Group>, CmdError> {
    let make = Supervisors {
        logs,
        sweep,
        interrupts,
    };
    let mut groups: Vec<(Option<&str>, Option<&str>)> = Vec::new();
    for e in envs {
        if !groups.contains(&(e.backend, e.rocm)) {
            groups.push((e.backend, e.rocm));
        }
    }
    let mut infos = Vec::new();
    for (n, (backend, rocm)) in groups.into_iter().enumerate().skip(1) {
        let mine: Vec<Env> = envs
            .iter()
            .filter(|e| (e.backend, e.rocm) == (backend, rocm))
            .copied()
            .collect();
        let mut sup = make.new_sup(WorkerSpec {
            tag: format!("probe{n}-"),
            ..spec.clone()
        });
        let seen = start_any(&mut sup, &mine);
        sup.shutdown();
        let name = backend.unwrap_or(&spec.backend);
        let what = rocm
            .map(|t| format!(" with the ROCm tree {t}"))
            .unwrap_or_default();
        let info = seen.map_err(|o| did_not_start(&sup, name, &what, o.error))?;
        infos.push((backend.map(String::from), rocm.map(String::from), info));
    }
    Ok(infos)
}

/// The first worker of `sup`, in the first env combination whose worker starts: a
/// combination whose own environment keeps its worker from starting is that combination's
/// failure (its units say so when they come), not the run's. The first combination's error
/// when none starts; a worker process that cannot be started at all is not tried further.
fn start_any(sup: &mut Supervisor, envs: &[Env]) -> Result<BackendInfo, Box<Outcome>> {
    let mut first_err = None;
    for env in envs {
        match sup.start(*env) {
            Ok(info) => return Ok(info),
            Err(o) => {
                let spawn = sup.take_spawn_error().is_some();
                first_err.get_or_insert(o);
                if spawn {
                    break;
                }
            }
        }
    }
    Err(Box::new(first_err.unwrap_or_else(|| {
        Outcome::failed(Status::Error, "init", "no env combination")
    })))
}

/// A backend that answered and cannot run here is bad input (exit 2, as a missing library
/// always was); a worker that failed before answering is a failure.
fn did_not_start(sup: &Supervisor, backend: &str, what: &str, why: String) -> CmdError {
    if sup.info.as_ref().is_some_and(|i| !i.available) {
        CmdError::BadInput(format!(
            "the {backend} backend cannot run here{what}: {why}{}",
            other_backends_hint(backend)
        ))
    } else {
        CmdError::Failure(format!(
            "the {backend} backend's worker{what} did not start: {why}"
        ))
    }
}

/// Which `--backend` runs a sweep written for a GPU backend this machine lacks (the seed
/// sweeps name `rocm` first).
fn other_backends_hint(backend: &str) -> &'static str {
    match backend {
        "rocm" => {
            "\n  hint: on this machine, run the sweep's cases with --backend cuda,torch (an NVIDIA GPU) or --backend cpu,torch (PyTorch on the CPU); `rocsweep probe` lists what runs here"
        }
        "cuda" => {
            "\n  hint: on this machine, run the sweep's cases with --backend rocm,torch (an AMD GPU) or --backend cpu,torch (PyTorch on the CPU); `rocsweep probe` lists what runs here"
        }
        _ => "",
    }
}

/// A run refused before it was published leaves no run directory; the logs of the workers that
/// tried to start are copied to a directory of their own under the temporary directory, which
/// the message names (issue 40, D3).
pub fn keep_logs(logs: &std::path::Path, e: CmdError) -> CmdError {
    let files: Vec<std::path::PathBuf> = std::fs::read_dir(logs)
        .into_iter()
        .flatten()
        .flatten()
        .map(|f| f.path())
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() > 0))
        .collect();
    if files.is_empty() {
        return e;
    }
    let Ok(kept) = tempfile::Builder::new()
        .prefix("rocsweep-refused-")
        .tempdir()
        .map(tempfile::TempDir::keep)
    else {
        return e;
    };
    for f in &files {
        if let Some(name) = f.file_name() {
            let _ = std::fs::copy(f, kept.join(name));
        }
    }
    let note = format!("; the workers' logs are kept in {}", kept.display());
    match e {
        CmdError::BadInput(m) => CmdError::BadInput(format!("{m}{note}")),
        CmdError::Failure(m) => CmdError::Failure(format!("{m}{note}")),
        other => other,
    }
}

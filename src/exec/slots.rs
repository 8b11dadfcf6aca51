//! Starting a run's device slots: one supervisor per `--devices` entry (one without), each
//! with its first worker, whose handshake says whether the backend can run and what it found.
//! This process never opens a vendor library itself.

use super::devices::{self, DeviceSel};
use super::handle::WorkerSpec;
use super::pool::Slot;
use super::supervisor::{Env, Supervisor};
use crate::backend::BackendInfo;
use crate::error::CmdError;
use crate::spec::Sweep;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

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

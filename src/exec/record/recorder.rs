//! The recorder: every consumer of a run's events behind the one lock that device slots share.
//! Each event goes to the journal first (durable before anything else says the unit is done),
//! then results.csv, the summary and the progress display. A unit's row is made in one place
//! ([`Recorder::row`]), whichever runner (grid or strategy) and whichever slot produced it.
//! What to run next is not kept here: the runner's book (`exec/book.rs`) reads the same events.

use crate::exec::record::events::{Event, Sink, Unit};
use crate::exec::record::journal::Journal;
use crate::exec::record::progress::Progress;
use crate::exec::record::row::{self, UnitKey};
use crate::exec::worker::unit::Outcome;
use crate::results::csv::ResultsWriter;
use crate::results::status::Status;
use crate::results::summary::Summary;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

pub struct Recorder {
    pub journal: Journal,
    pub csv: ResultsWriter,
    pub summary: Summary,
    pub progress: Progress,
    /// The device each env combination's worker reported (env key -> device).
    pub env_devices: BTreeMap<String, String>,
    /// In a run over several backends or ROCm trees: each worker context's key (what units
    /// name as their `env_key`) -> what its rows say. Empty in a run of one backend and one
    /// tree, whose rows take the run's backend and their env key as it is.
    pub contexts: HashMap<String, Context>,
    /// ROCm: the tree each env combination's worker used and the files it mapped (the
    /// manifest's `rocm_trees`).
    pub trees: crate::exec::record::trees::TreeBook,
}

/// What a row of one worker context says besides its unit (see `Recorder::contexts`).
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// The CSV's `env`: the env combination alone.
    pub env: String,
    /// The context's own backend, where the run names several.
    pub backend: Option<String>,
    /// The CSV's `rocm`: the tree's label, where the run names several.
    pub rocm: String,
}

impl Context {
    /// The contexts of a run's env combinations that carry a backend or a tree, by key.
    pub fn of_run(combos: &[crate::spec::expand::EnvCombo]) -> HashMap<String, Context> {
        combos
            .iter()
            .filter(|c| c.backend.is_some() || c.rocm.is_some())
            .map(|c| {
                let ctx = Context {
                    env: c.key(),
                    backend: c.backend.clone(),
                    rocm: c.rocm.as_ref().map(|t| t.label.clone()).unwrap_or_default(),
                };
                (c.context_key(), ctx)
            })
            .collect()
    }
}

/// Where a row ran: the slot's label and the device that its worker (or, failing that, the
/// env combination's or the slot's) reported.
pub struct Place<'a> {
    /// The `device_index` column.
    pub label: &'a str,
    /// What this unit's own worker reported; None for rows no worker produced.
    pub reported: Option<&'a str>,
    /// The slot's device, when neither this unit nor its env combination has one.
    pub fallback: &'a str,
    /// What this unit's own worker said in its handshake; None for rows no worker produced.
    pub info: Option<&'a crate::backend::BackendInfo>,
}

/// Locks what the slots share. A slot that panicked has already failed the run; what it shares
/// is still consistent enough to write what the others finish.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Recorder {
    /// Sends `ev` to every sink, in order; the first I/O error stops it.
    pub fn emit(&mut self, ev: &Event) -> std::io::Result<()> {
        self.journal.on(ev)?;
        self.csv.on(ev)?;
        self.summary.on(ev)?;
        self.progress.on(ev)
    }

    /// The unit's CSV row from `out` (already combined with its trials), noting the device and
    /// the tree its worker reported; the caller emits it as the unit's `Finished` event.
    pub fn row(&mut self, unit: Unit, place: &Place, backend: &str, out: &Outcome) -> Vec<String> {
        // The device as this unit's own worker reported it (an env variable can change it);
        // a unit that never reached a worker takes what its env combination's worker said.
        let device = match place.reported {
            Some(d) if out.status != Status::Skipped => {
                self.env_devices
                    .insert(unit.env_key.to_string(), d.to_string());
                d.to_string()
            }
            _ => self
                .env_devices
                .get(unit.env_key)
                .map_or(place.fallback, String::as_str)
                .to_string(),
        };
        if out.status != Status::Skipped
            && let Some(info) = place.info
        {
            let tree = self.contexts.get(unit.env_key).map(|c| c.rocm.as_str());
            let tree = tree.unwrap_or_default().to_string();
            self.trees.note(unit.env_key, &tree, info);
        }
        let (env, backend, rocm) = match self.contexts.get(unit.env_key) {
            Some(c) => (
                c.env.as_str(),
                c.backend.as_deref().unwrap_or(backend),
                c.rocm.as_str(),
            ),
            None => (unit.env_key, backend, ""),
        };
        let key = UnitKey {
            unit_id: unit.id,
            case: unit.case,
            solver: unit.solver,
            backend,
            device: &device,
            device_index: place.label,
            env,
            rocm,
        };
        row::record(&key, out)
    }
}

impl Sink for Journal {
    fn on(&mut self, ev: &Event) -> std::io::Result<()> {
        match ev {
            Event::Started { unit, .. } => self.started(unit.id),
            Event::Phase { unit, phase, .. } => self.phase(unit.id, phase),
            Event::TrialKept {
                unit,
                trial,
                outcome,
            } => self.trial(unit.id, *trial, outcome),
            Event::Finished {
                unit, outcome, row, ..
            } => self.finished(unit.id, outcome.status, row),
            Event::Heartbeat { .. } | Event::Expanded { .. } | Event::Stopped { .. } => Ok(()),
        }
    }
}

impl Sink for ResultsWriter {
    fn on(&mut self, ev: &Event) -> std::io::Result<()> {
        match ev {
            Event::Finished { row, .. } => self.append(row),
            _ => Ok(()),
        }
    }
}

impl Sink for Summary {
    fn on(&mut self, ev: &Event) -> std::io::Result<()> {
        match ev {
            Event::Finished { unit, outcome, .. } => {
                self.trials_kept.remove(unit.id);
                self.add(outcome.status, unit.id, || unit.describe(), &outcome.error);
            }
            Event::TrialKept { unit, .. } => {
                *self.trials_kept.entry(unit.id.to_string()).or_default() += 1;
            }
            _ => {}
        }
        Ok(())
    }
}

impl Sink for Progress {
    fn on(&mut self, ev: &Event) -> std::io::Result<()> {
        match ev {
            Event::Started {
                unit,
                slot,
                phase,
                limit_s,
                trial,
            } => {
                self.pass(*trial);
                self.unit_started(slot, unit.describe(), phase, *limit_s);
            }
            Event::Phase {
                slot,
                phase,
                limit_s,
                ..
            } => self.phase(slot, phase, *limit_s),
            Event::Heartbeat { slot, silent_s } => self.heartbeat(slot, *silent_s),
            Event::TrialKept { unit, trial, .. } => self.trial_done(*trial, || unit.describe()),
            Event::Expanded { listed, counted } => self.expand_one(*listed, *counted),
            Event::Finished {
                unit,
                slot,
                outcome,
                trials_left,
                ..
            } => {
                // Trials this unit will not run (it failed early) are not waited for.
                self.skip_trials(*trials_left);
                self.unit_done(outcome.status, || finished_line(unit, slot, outcome));
            }
            Event::Stopped {
                slot,
                others_continue,
            } => self.println(&stopped_line(slot, *others_continue)),
        }
        Ok(())
    }
}

/// The plain progress line of a finished unit: what, phase, time, device.
fn finished_line(unit: &Unit, slot: &str, out: &Outcome) -> String {
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
    let device = if slot.is_empty() {
        String::new()
    } else {
        format!(" (device {slot})")
    };
    format!("{}{phase} {time}{device}", unit.describe())
}

fn stopped_line(slot: &str, others_continue: bool) -> String {
    match (slot.is_empty(), others_continue) {
        (_, true) => format!(
            "error: device {slot} failed its health probe; the other devices take its remaining units"
        ),
        (true, false) => {
            "error: the device failed its health probe; recording the remaining units as skipped"
                .to_string()
        }
        (false, false) => format!(
            "error: device {slot} failed its health probe and no other device is taking units; recording the remaining units as skipped"
        ),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::op::OpKind;

    fn io<T>(e: std::io::Error) -> T {
        panic!("{e}")
    }

    /// A recorder writing into `dir`, for tests.
    pub(crate) fn recorder(dir: &std::path::Path) -> Recorder {
        Recorder {
            journal: Journal::open(dir).unwrap_or_else(io),
            csv: ResultsWriter::create(&dir.join("results.csv"), OpKind::Gemm).unwrap_or_else(io),
            summary: Summary::default(),
            progress: Progress::new(3, 1, 0, true),
            env_devices: BTreeMap::new(),
            contexts: HashMap::new(),
            trees: Default::default(),
        }
    }

    #[test]
    fn a_row_no_worker_made_takes_the_device_its_env_combination_reported() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut r = recorder(dir.path());
        r.env_devices.insert("A=1".into(), "gpu1".into());
        let case = crate::exec::record::row::tests::gemm_case();
        for (id, env_key, want) in [("u1", "A=1", "gpu1"), ("u2", "A=2", "slot device")] {
            let unit = Unit {
                id,
                case: &case,
                solver: "default",
                env_key,
            };
            let place = Place {
                label: "0",
                reported: None,
                fallback: "slot device",
                info: None,
            };
            let out = Outcome::failed(Status::Skipped, "", "device-unhealthy");
            let row = r.row(unit, &place, "cpu", &out);
            assert!(row.iter().any(|c| c == want), "{id}: {row:?}");
            assert!(row.iter().any(|c| c == "0"), "device_index: {row:?}");
        }
    }
}

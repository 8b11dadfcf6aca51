//! The recorder: every consumer of a run's events behind the one lock that device slots share.
//! Each event goes to the journal first (durable before anything else says the unit is done),
//! then results.csv, the summary and the progress display, then the record of measured units
//! that the strategies decide from. A unit's row is made in one place ([`Recorder::finish`]),
//! whichever runner (grid or strategy) and whichever slot produced it.

use super::events::{Event, Sink, Unit};
use super::journal::Journal;
use super::progress::Progress;
use super::row::{self, UnitKey};
use super::strategy::Measured;
use super::unit::Outcome;
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
    /// Units that have their row, with what it says (rows of earlier sessions, then every
    /// `Finished` event): the strategies' measurements.
    pub rows: HashMap<String, Measured>,
    /// Units started in an earlier session and never finished, with the last phase seen.
    pub unfinished: HashMap<String, String>,
    /// Ok trials of units that have no row yet: (trial, outcome).
    pub trials: HashMap<String, Vec<(u32, Outcome)>>,
    /// The device each env combination's worker reported (env key -> device).
    pub env_devices: BTreeMap<String, String>,
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
}

/// Locks what the slots share. A slot that panicked has already failed the run; what it shares
/// is still consistent enough to write what the others finish.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Recorder {
    pub fn has_row(&self, id: &str) -> bool {
        self.rows.contains_key(id)
    }

    /// Sends `ev` to every sink, in order; the first I/O error stops it.
    pub fn emit(&mut self, ev: &Event) -> std::io::Result<()> {
        self.journal.on(ev)?;
        self.csv.on(ev)?;
        self.summary.on(ev)?;
        self.progress.on(ev)?;
        if let Event::Finished { unit, outcome, .. } = ev {
            self.trials.remove(unit.id);
            self.rows.insert(
                unit.id.to_string(),
                Measured {
                    status: outcome.status,
                    phase: outcome.phase.clone(),
                },
            );
        }
        if let Event::TrialKept {
            unit,
            trial,
            outcome,
        } = ev
        {
            let kept = self.trials.entry(unit.id.to_string()).or_default();
            kept.push((*trial, (*outcome).clone()));
        }
        Ok(())
    }

    /// Makes the unit's row from `out` (already combined with its trials) and emits it.
    pub fn finish(
        &mut self,
        unit: Unit,
        place: Place,
        backend: &str,
        out: &Outcome,
        trials_left: u64,
    ) -> std::io::Result<()> {
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
        let key = UnitKey {
            unit_id: unit.id,
            case: unit.case,
            solver: unit.solver,
            backend,
            device: &device,
            device_index: place.label,
            env: unit.env_key,
        };
        let row = row::record(&key, out);
        self.emit(&Event::Finished {
            unit,
            slot: place.label,
            outcome: out,
            row: &row,
            trials_left,
        })
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
        if let Event::Finished { unit, outcome, .. } = ev {
            self.add(outcome.status, unit.id, || unit.describe(), &outcome.error);
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
            } => self.unit_started(slot, unit.describe(), phase, *limit_s),
            Event::Phase {
                slot,
                phase,
                limit_s,
                ..
            } => self.phase(slot, phase, *limit_s),
            Event::Heartbeat { slot, silent_s } => self.heartbeat(slot, *silent_s),
            Event::TrialKept { .. } => self.trial_done(),
            Event::Expanded { solvers } => self.expand_one(*solvers),
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

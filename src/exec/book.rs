//! The runner's book: what is done and what is owed, from which the runners decide what to run
//! next (grid: skip units with a row, count the trials kept, give up on an env combination whose
//! worker cannot start; strategies: what each measured unit said). The recorder writes results
//! and knows nothing of scheduling; the book reads the same events and keeps only what
//! scheduling needs. Both sit behind the one lock the device slots share ([`Shared`]).

use crate::exec::record::events::{Event, Measured, Sink, Unit};
use crate::exec::record::journal;
use crate::exec::record::recorder::{Place, Recorder};
use crate::exec::worker::unit::Outcome;
use std::collections::HashMap;

#[derive(Default)]
pub struct Book {
    /// Units that have their row, with what it says (rows of earlier sessions, then every
    /// `Finished` event): the strategies' measurements.
    pub rows: HashMap<String, Measured>,
    /// Units started in an earlier session and never finished, with the last phase seen.
    pub unfinished: HashMap<String, String>,
    /// Ok trials of units that have no row yet: (trial, outcome).
    pub trials: HashMap<String, Vec<(u32, Outcome)>>,
    /// Env combinations (by index) whose own environment keeps their worker from starting,
    /// with why: their remaining units are recorded `error` without running.
    pub cannot_start: HashMap<usize, String>,
}

impl Book {
    /// What a resumed run starts from: the rows already made and the journal's unfinished
    /// units and kept trials.
    pub fn resumed(rows: HashMap<String, Measured>, state: journal::State) -> Book {
        Book {
            rows,
            unfinished: state.unfinished,
            trials: state.trials,
            cannot_start: HashMap::new(),
        }
    }

    pub fn has_row(&self, id: &str) -> bool {
        self.rows.contains_key(id)
    }

    /// The unit's measurement, once it has its row.
    pub fn measured(&self, id: &str) -> Option<Measured> {
        self.rows.get(id).cloned()
    }
}

impl Sink for Book {
    fn on(&mut self, ev: &Event) -> std::io::Result<()> {
        match ev {
            Event::Finished { unit, outcome, .. } => {
                self.trials.remove(unit.id);
                let m = Measured {
                    status: outcome.status,
                    phase: outcome.phase.clone(),
                };
                self.rows.insert(unit.id.to_string(), m);
            }
            Event::TrialKept {
                unit,
                trial,
                outcome,
            } => {
                let kept = self.trials.entry(unit.id.to_string()).or_default();
                kept.push((*trial, (*outcome).clone()));
            }
            _ => {}
        }
        Ok(())
    }
}

/// What the runner and its device slots share behind one lock: where results go and the book.
pub struct Shared {
    pub rec: Recorder,
    pub book: Book,
}

impl Shared {
    /// Sends `ev` to the recorder's sinks (journal first), then to the book; the first I/O
    /// error stops it, so nothing counts as done that was not written.
    pub fn emit(&mut self, ev: &Event) -> std::io::Result<()> {
        self.rec.emit(ev)?;
        self.book.on(ev)
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
        let row = self.rec.row(unit, &place, backend, out);
        self.emit(&Event::Finished {
            unit,
            slot: place.label,
            outcome: out,
            row: &row,
            trials_left,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::record::recorder::tests::recorder;
    use crate::results::status::Status;

    fn io<T>(e: std::io::Error) -> T {
        panic!("{e}")
    }

    #[test]
    fn one_finished_event_reaches_the_journal_the_csv_the_summary_and_the_book() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut r = Shared {
            rec: recorder(dir.path()),
            book: Book::default(),
        };
        let case = crate::exec::record::row::tests::gemm_case();
        let unit = Unit {
            id: "u1",
            case: &case,
            solver: "default",
            env_key: "A=1",
        };
        r.emit(&Event::Started {
            unit,
            slot: "",
            phase: "init",
            limit_s: 1.0,
            trial: 1,
        })
        .unwrap_or_else(io);
        r.emit(&Event::TrialKept {
            unit,
            trial: 1,
            outcome: &Outcome::failed(Status::Ok, "", ""),
        })
        .unwrap_or_else(io);
        assert_eq!(r.book.trials.get("u1").map(Vec::len), Some(1));
        let place = Place {
            label: "",
            reported: Some("gpu0"),
            fallback: "cpu",
            info: None,
        };
        let out = Outcome::failed(Status::Hang, "run", "no progress");
        r.finish(unit, place, "cpu", &out, 0).unwrap_or_else(io);

        // The strategies' record and the bookkeeping.
        let m = r.book.measured("u1");
        assert_eq!(
            m.map(|m| (m.status, m.phase)),
            Some((Status::Hang, "run".into()))
        );
        assert!(
            !r.book.trials.contains_key("u1"),
            "a row ends the unit's kept trials"
        );
        assert_eq!(
            r.rec.env_devices.get("A=1").map(String::as_str),
            Some("gpu0")
        );
        assert_eq!(r.rec.summary.failures_total, 1);
        r.rec.csv.sync().unwrap_or_else(io);

        // The journal says started, trial, finished (with the row), in that order.
        let st = crate::exec::record::journal::read(dir.path()).unwrap_or_else(io);
        let row = st
            .finished
            .get("u1")
            .map(|r| r.fields())
            .unwrap_or_default();
        assert_eq!(row.first().map(String::as_str), Some("u1"));
        // results.csv holds the same row under its header.
        let (header, rows) = crate::results::csv::read(&dir.path().join("results.csv"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rows, vec![row.clone()]);
        let col = |name: &str| header.iter().position(|h| h == name).unwrap_or(usize::MAX);
        assert_eq!(row.get(col("device")).map(String::as_str), Some("gpu0"));
        assert_eq!(row.get(col("status")).map(String::as_str), Some("hang"));
    }
}

//! The journal: an append-only record of units started and finished, each line flushed and
//! fsynced, so a run survives its supervisor, its worker, or the whole machine going down.
//! `started` is written before a unit (or one trial of it) is sent; `trial` carries an ok trial
//! that is not the unit's last; `finished` carries the unit's CSV row and is written before that
//! row goes to results.csv. `--resume` reads it back.

use crate::exec::worker::unit::Outcome;
use crate::results::status::Status;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

pub const FILE: &str = "journal.ndjson";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "ev", rename_all = "snake_case")]
pub enum Record {
    Started {
        unit: String,
    },
    /// Phase changes are written without fsync: they say where an interrupted unit was.
    Phase {
        unit: String,
        phase: String,
    },
    /// An ok trial of a unit that runs more trials: kept until the unit's last trial makes
    /// its row (see exec/pool.rs).
    Trial {
        unit: String,
        trial: u32,
        outcome: Box<Outcome>,
    },
    /// A sequence step's outcome (exec/sequence/), written before its `finished` line, so a
    /// resume goes on from the step after the last one finished with what each found.
    Step {
        unit: String,
        outcome: Box<Outcome>,
    },
    /// The unit's result: its results.csv row, so a row lost with the page cache can be restored.
    Finished {
        unit: String,
        status: Status,
        #[serde(default)]
        row: Vec<String>,
    },
}

pub struct Journal {
    file: File,
}

impl Journal {
    pub fn open(dir: &Path) -> std::io::Result<Journal> {
        let file = crate::results::atomic::open_append(&dir.join(FILE))?;
        Ok(Journal { file })
    }

    fn write(&mut self, r: &Record, sync: bool) -> std::io::Result<()> {
        let mut line = serde_json::to_string(r).map_err(std::io::Error::other)?;
        line.push('\n');
        self.file.write_all(line.as_bytes())?;
        if sync {
            self.file.sync_data()?;
        }
        Ok(())
    }

    pub fn started(&mut self, unit: &str) -> std::io::Result<()> {
        self.write(&Record::Started { unit: unit.into() }, true)
    }

    pub fn phase(&mut self, unit: &str, phase: &str) -> std::io::Result<()> {
        self.write(
            &Record::Phase {
                unit: unit.into(),
                phase: phase.into(),
            },
            false,
        )
    }

    /// Fsynced: a trial that a resume need not run again.
    pub fn trial(&mut self, unit: &str, trial: u32, outcome: &Outcome) -> std::io::Result<()> {
        self.write(
            &Record::Trial {
                unit: unit.into(),
                trial,
                outcome: Box::new(outcome.clone()),
            },
            true,
        )
    }

    /// A sequence step's outcome (not fsynced: its `finished` line, right after, is).
    pub fn step(&mut self, unit: &str, outcome: &Outcome) -> std::io::Result<()> {
        self.write(
            &Record::Step {
                unit: unit.into(),
                outcome: Box::new(outcome.clone()),
            },
            false,
        )
    }

    /// Fsynced, with the unit's CSV row: this line is the durable record of the result, written
    /// before the row goes to results.csv.
    pub fn finished(&mut self, unit: &str, status: Status, row: &[String]) -> std::io::Result<()> {
        self.write(
            &Record::Finished {
                unit: unit.into(),
                status,
                row: row.to_vec(),
            },
            true,
        )
    }
}

/// What a journal says about a run so far.
#[derive(Debug, Default)]
pub struct State {
    /// Finished units and their CSV rows (compact: a resume of 10^5 units holds them all).
    pub finished: HashMap<String, crate::results::csv::CompactRow>,
    /// Units started and never finished, with the last phase seen.
    pub unfinished: HashMap<String, String>,
    /// Ok trials of units not yet finished: (trial, outcome).
    pub trials: HashMap<String, Vec<(u32, Outcome)>>,
    /// Lines that were not a record (torn by a power cut, invalid UTF-8, garbage): skipped.
    pub unreadable: usize,
    /// Sequence steps' outcomes, by unit, where the step also finished.
    pub steps: HashMap<String, Outcome>,
    /// A step's outcome waiting for its `finished` line.
    pending_step: Option<(String, Outcome)>,
}

/// Reads a journal; a line that is not a record (a torn last line, invalid UTF-8 from a power
/// cut inside a character, garbage) is skipped and counted, and a missing file is empty.
pub fn read(dir: &Path) -> std::io::Result<State> {
    let mut st = State::default();
    let f = match crate::results::rundir::open_file(&dir.join(FILE)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(st),
        Err(e) => return Err(e),
    };
    let mut reader = BufReader::new(f);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        let Ok(line) = std::str::from_utf8(&buf) else {
            st.unreadable += 1;
            continue;
        };
        let line = line.trim_end_matches(['\n', '\r']);
        if line.is_empty() {
            continue;
        }
        match serde_json::from_str::<Record>(line) {
            Ok(Record::Started { unit }) => {
                // A unit started again after finishing (a retry) is unfinished until it finishes.
                if st.finished.remove(&unit).is_some() {
                    st.trials.remove(&unit);
                }
                st.unfinished.insert(unit, String::new());
            }
            Ok(Record::Phase { unit, phase }) => {
                if let Some(p) = st.unfinished.get_mut(&unit) {
                    *p = phase;
                }
            }
            Ok(Record::Trial {
                unit,
                trial,
                outcome,
            }) => {
                st.unfinished.remove(&unit);
                let v = st.trials.entry(unit).or_default();
                v.retain(|(t, _)| *t != trial);
                v.push((trial, *outcome));
            }
            Ok(Record::Step { unit, outcome }) => {
                st.pending_step = Some((unit, *outcome));
            }
            Ok(Record::Finished { unit, row, .. }) => {
                st.unfinished.remove(&unit);
                st.trials.remove(&unit);
                if let Some((u, o)) = st.pending_step.take()
                    && u == unit
                {
                    st.steps.insert(unit.clone(), o);
                }
                st.finished
                    .insert(unit, crate::results::csv::CompactRow::new(&row));
            }
            Err(_) => st.unreadable += 1,
        }
    }
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok() -> Outcome {
        Outcome::failed(Status::Ok, "", "")
    }

    #[test]
    fn a_journal_reads_back_what_each_unit_reached() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let mut j = Journal::open(dir.path()).unwrap_or_else(|e| panic!("open: {e}"));
        let row = vec!["done".to_string(), "ok".to_string()];
        let wrote = [
            j.started("done"),
            j.phase("done", "run"),
            j.finished("done", Status::Ok, &row),
            j.started("hung"),
            j.phase("hung", "compile"),
            j.started("trialled"),
            j.trial("trialled", 1, &ok()),
        ];
        for w in wrote {
            w.unwrap_or_else(|e| panic!("write: {e}"));
        }
        let st = read(dir.path()).unwrap_or_else(|e| panic!("read: {e}"));
        assert_eq!(
            st.finished.get("done").map(|r| r.fields()),
            Some(row.clone())
        );
        assert_eq!(
            st.unfinished.get("hung").map(String::as_str),
            Some("compile")
        );
        assert!(!st.unfinished.contains_key("done"));
        // A kept trial is not an unfinished unit: a resume runs only the trials it lacks.
        assert!(!st.unfinished.contains_key("trialled"));
        assert_eq!(st.trials.get("trialled").map(Vec::len), Some(1));
        assert_eq!(st.unreadable, 0);
    }

    #[test]
    fn a_torn_or_garbled_line_is_skipped_and_counted_and_a_restart_reopens_the_unit() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let mut j = Journal::open(dir.path()).unwrap_or_else(|e| panic!("open: {e}"));
        j.started("u").unwrap_or_else(|e| panic!("{e}"));
        j.finished("u", Status::Ok, &["u".into()])
            .unwrap_or_else(|e| panic!("{e}"));
        // Run again (--retry-interrupted, or a resume): started after finished.
        j.started("u").unwrap_or_else(|e| panic!("{e}"));
        drop(j);
        let path = dir.path().join(FILE);
        let mut bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{e}"));
        bytes.extend_from_slice(b"\xff\xfe not utf-8\n");
        bytes.extend_from_slice(b"{\"ev\":\"finished\",\"unit\":\"v\",\"sta");
        std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{e}"));
        let st = read(dir.path()).unwrap_or_else(|e| panic!("read: {e}"));
        assert_eq!(st.unreadable, 2);
        assert!(st.unfinished.contains_key("u"));
        assert!(!st.finished.contains_key("u"));
        assert!(!st.finished.contains_key("v"));
    }

    #[test]
    fn a_missing_journal_is_an_empty_one() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let st = read(dir.path()).unwrap_or_else(|e| panic!("read: {e}"));
        assert!(st.finished.is_empty() && st.unfinished.is_empty() && st.unreadable == 0);
    }
}

//! The journal: an append-only record of units started and finished, so a run survives its
//! supervisor, its worker, or the whole machine going down. `started` is fsynced before a unit is
//! sent; `finished` follows the unit's fsynced row in results.csv. `--resume` reads both back.

use crate::results::status::Status;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
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
    Finished {
        unit: String,
        status: Status,
    },
}

pub struct Journal {
    file: File,
}

impl Journal {
    pub fn open(dir: &Path) -> std::io::Result<Journal> {
        let file = File::options()
            .create(true)
            .append(true)
            .open(dir.join(FILE))?;
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

    /// Not fsynced: the caller has already fsynced the unit's row in results.csv, which is the
    /// durable record of a finished unit (resume counts rows, and journals any it finds).
    pub fn finished(&mut self, unit: &str, status: Status) -> std::io::Result<()> {
        self.write(
            &Record::Finished {
                unit: unit.into(),
                status,
            },
            false,
        )
    }
}

/// What a journal says about a run so far.
#[derive(Debug, Default)]
pub struct State {
    pub finished: HashSet<String>,
    /// Units started and never finished, with the last phase seen.
    pub unfinished: HashMap<String, String>,
}

/// Reads a journal; a torn last line (power cut mid-write) is ignored, as is a missing file.
pub fn read(dir: &Path) -> std::io::Result<State> {
    let mut st = State::default();
    let f = match File::open(dir.join(FILE)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(st),
        Err(e) => return Err(e),
    };
    for line in BufReader::new(f).lines() {
        let line = line?;
        match serde_json::from_str::<Record>(&line) {
            Ok(Record::Started { unit }) => {
                if !st.finished.contains(&unit) {
                    st.unfinished.insert(unit, String::new());
                }
            }
            Ok(Record::Phase { unit, phase }) => {
                if let Some(p) = st.unfinished.get_mut(&unit) {
                    *p = phase;
                }
            }
            Ok(Record::Finished { unit, .. }) => {
                st.unfinished.remove(&unit);
                st.finished.insert(unit);
            }
            Err(_) => {}
        }
    }
    Ok(st)
}

//! What a resumed run starts from, read and checked in full before anything in the run
//! directory is written: a run directory that cannot be used is bad input with nothing changed.
//!
//! results.csv and the journal are reconciled here. The journal's `finished` record is the
//! durable copy of every row (fsynced before the row reaches results.csv), so where the two
//! disagree the journal wins: a row the CSV lost is restored, a conflicting or duplicated CSV
//! row is replaced by the journal's, and CSV rows that are torn, of the wrong width or with an
//! unknown status are dropped when the journal has nothing for them.

use super::journal::{self, State};
use super::strategy::Measured;
use crate::op::OpKind;
use crate::results::csv::{self as rcsv, OPTIONAL_COLUMNS};
use crate::results::status::Status;
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// A run directory's results, reconciled, and what reconciling changed.
#[derive(Debug)]
pub struct Resume {
    /// results.csv's header as found (an earlier version's layout, or this one's).
    pub old_header: Vec<String>,
    /// One row per unit, in this version's layout, in the order they were written.
    pub rows: Vec<Vec<String>>,
    /// Units whose rows were taken out to run again (skipped, inferred, and interrupted when
    /// asked).
    pub retry: HashSet<String>,
    pub journal: State,
    /// Whether results.csv must be rewritten (it differs from `rows` in this layout).
    pub rewrite: bool,
    /// What was repaired, one line each, for the user.
    pub notes: Vec<String>,
}

/// Why the header is not one a resume can extend, or None when it is.
fn header_problem(header: &[String], op: OpKind) -> Option<String> {
    let want = rcsv::header(op);
    if header == want.as_slice() {
        return None;
    }
    if let Some(h) = header.iter().find(|h| !want.contains(h)) {
        return Some(format!("unknown column `{h}`"));
    }
    if let Some(w) = want
        .iter()
        .find(|w| !OPTIONAL_COLUMNS.contains(&w.as_str()) && !header.contains(w))
    {
        return Some(format!("missing column `{w}`"));
    }
    // Every column is known and every required one is there: the order must be the layout's.
    let order: Vec<&String> = want.iter().filter(|w| header.contains(w)).collect();
    if header.iter().collect::<Vec<_>>() != order {
        return Some("the columns are not in rocsweep's order".into());
    }
    None
}

/// The row in this version's layout, when it is a whole row with a known status.
fn valid_row(op: OpKind, header: &[String], row: &[String]) -> Option<Vec<String>> {
    if row.len() != header.len() {
        return None;
    }
    let row = rcsv::upgrade_row(op, header, row)?;
    rcsv::status_of(&rcsv::header(op), &row)?;
    Some(row)
}

/// Reads results.csv and the journal of `dir` and reconciles them; writes nothing. `retry`
/// lists the statuses whose rows run again.
pub fn read(dir: &Path, op: OpKind, retry: &[Status]) -> Result<Resume, String> {
    let csv_path = dir.join("results.csv");
    let bad = |what: String| format!("{}: {what}; nothing was changed", csv_path.display());
    let bytes = match std::fs::read(&csv_path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(format!("{}: {e}", csv_path.display())),
    };
    let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut notes = Vec::new();
    let current = rcsv::header(op);
    let (old_header, records) = if whole == 0 {
        (current.clone(), Vec::new())
    } else {
        let mut rdr = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(true)
            .from_reader(&bytes[..whole]);
        let header: Vec<String> = rdr
            .byte_headers()
            .map_err(|e| bad(format!("line 1: {e}")))?
            .iter()
            .map(|h| String::from_utf8_lossy(h).into_owned())
            .collect();
        if let Some(why) = header_problem(&header, op) {
            return Err(bad(format!(
                "line 1: the header is neither this version's nor an earlier one's for {}: {why}",
                op.name()
            )));
        }
        let mut records = Vec::new();
        for rec in rdr.byte_records() {
            // A record that does not parse is torn or damaged: dropped below, like a short one.
            let fields = match rec {
                Ok(r) => r
                    .iter()
                    .map(|f| std::str::from_utf8(f).map(String::from))
                    .collect::<Result<Vec<_>, _>>()
                    .unwrap_or_default(),
                Err(_) => Vec::new(),
            };
            records.push(fields);
        }
        (header, records)
    };
    if whole != bytes.len() {
        notes.push("cut a torn last line of results.csv".into());
    }
    let journal =
        journal::read(dir).map_err(|e| format!("{}: {e}", dir.join(journal::FILE).display()))?;
    if journal.unreadable > 0 {
        notes.push(format!(
            "skipped {} unreadable line(s) of {}",
            journal.unreadable,
            journal::FILE
        ));
    }
    // The journal's rows, in this layout (it writes rows in the layout of its time).
    let mut from_journal: HashMap<&str, Vec<String>> = HashMap::new();
    for (id, row) in &journal.finished {
        let row = rcsv::upgrade_journal_row(op, &old_header, row);
        if let Some(r) = valid_row(op, &current, &row) {
            from_journal.insert(id.as_str(), r);
        }
    }
    let id_col = 0; // unit_id is the first column in every layout
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let (mut dropped, mut replaced) = (0usize, 0usize);
    for rec in &records {
        let Some(id) = rec.get(id_col).filter(|s| !s.is_empty()) else {
            dropped += 1;
            continue;
        };
        if seen.contains(id) {
            dropped += 1;
            continue;
        }
        let row = match (
            from_journal.get(id.as_str()),
            valid_row(op, &old_header, rec),
        ) {
            (Some(j), Some(c)) if *j != c => {
                replaced += 1;
                j.clone()
            }
            (Some(j), None) => {
                replaced += 1;
                j.clone()
            }
            (_, Some(c)) => c,
            (None, None) => {
                dropped += 1;
                continue;
            }
        };
        seen.insert(id.clone());
        rows.push(row);
    }
    let mut restored = 0usize;
    let mut missing: Vec<(&String, &Vec<String>)> = journal
        .finished
        .iter()
        .filter(|(id, _)| !seen.contains(*id))
        .collect();
    missing.sort_by(|a, b| a.0.cmp(b.0));
    for (id, _) in missing {
        if let Some(r) = from_journal.get(id.as_str()) {
            seen.insert(id.clone());
            rows.push(r.clone());
            restored += 1;
        }
    }
    for (n, what) in [
        (
            dropped,
            "dropped from results.csv (torn, damaged or duplicated, with no journal record)",
        ),
        (
            replaced,
            "replaced by the journal's record (results.csv disagreed with it)",
        ),
        (
            restored,
            "restored from the journal (missing from results.csv)",
        ),
    ] {
        if n > 0 {
            notes.push(format!("{n} row(s) {what}"));
        }
    }
    let mut retry_ids = HashSet::new();
    rows.retain(|r| {
        let again = rcsv::status_of(&current, r).is_some_and(|s| retry.contains(&s));
        if again {
            retry_ids.insert(r[id_col].clone());
        }
        !again
    });
    let rewrite = old_header != current
        || whole != bytes.len()
        || dropped + replaced + restored > 0
        || !retry_ids.is_empty()
        || bytes.is_empty();
    Ok(Resume {
        old_header,
        rows,
        retry: retry_ids,
        journal,
        rewrite,
        notes,
    })
}

impl Resume {
    pub fn ids(&self) -> HashSet<String> {
        self.rows.iter().map(|r| r[0].clone()).collect()
    }

    /// What each kept row says (status and phase) by unit id: where a strategy's search
    /// resumes from.
    pub fn measured(&self, op: OpKind) -> HashMap<String, Measured> {
        let header = rcsv::header(op);
        let phase = header.iter().position(|h| h == "phase");
        self.rows
            .iter()
            .filter_map(|r| {
                let status = rcsv::status_of(&header, r)?;
                let phase = phase.and_then(|i| r.get(i)).cloned().unwrap_or_default();
                Some((r[0].clone(), Measured { status, phase }))
            })
            .collect()
    }

    /// Writes results.csv as reconciled (atomically), when it differs from the file.
    pub fn write(&self, dir: &Path, op: OpKind) -> std::io::Result<()> {
        if self.rewrite {
            rcsv::rewrite_all(&dir.join("results.csv"), &rcsv::header(op), &self.rows)?;
        }
        Ok(())
    }
}

//! What a resumed run starts from, read and checked in full before anything in the run
//! directory is written: a run directory that cannot be used is bad input with nothing changed.
//!
//! results.csv and the journal are reconciled here. The journal's `finished` record is the
//! durable copy of every row (fsynced before the row reaches results.csv), so where the two
//! disagree the journal wins: a row the CSV lost is restored, a conflicting or duplicated CSV
//! row is replaced by the journal's, and CSV rows that are torn, of the wrong width or with an
//! unknown status are dropped when the journal has nothing for them.

use crate::error::CmdError;
use crate::exec::plan::strategy::Measured;
use crate::exec::record::journal::{self, State};
use crate::op::OpKind;
use crate::results::csv::{self as rcsv, CompactRow, OPTIONAL_COLUMNS};
use crate::results::status::Status;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::Path;

/// A run directory's results, reconciled, and what reconciling changed.
#[derive(Debug)]
pub struct Resume {
    /// results.csv's header as found (an earlier version's layout, or this one's).
    pub old_header: Vec<String>,
    /// One row per unit, in this version's layout, in the order they were written.
    pub rows: Vec<CompactRow>,
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
    let bytes = match crate::results::rundir::read_file(&csv_path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(crate::results::rundir::describe(&csv_path, &e)),
    };
    let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let (old_header, records) = read_records(&bytes[..whole], op)
        .map_err(|what| format!("{}: {what}; nothing was changed", csv_path.display()))?;
    let mut notes = Vec::new();
    let (torn, empty) = (whole != bytes.len(), bytes.is_empty());
    drop(bytes);
    if torn {
        notes.push("cut a torn last line of results.csv".into());
    }
    let mut journal = journal::read(dir)
        .map_err(|e| crate::results::rundir::describe(&dir.join(journal::FILE), &e))?;
    if journal.unreadable > 0 {
        notes.push(format!(
            "skipped {} unreadable line(s) of {}",
            journal.unreadable,
            journal::FILE
        ));
    }
    let (mut rows, fixes) = reconcile(op, &old_header, records, &journal);
    // Every finished row is in `rows` now; the journal's copies are not needed again.
    journal.finished = HashMap::new();
    notes.extend(fixes.notes());
    let current = rcsv::header(op);
    let mut retry_ids = HashSet::new();
    rows.retain(|compact| {
        let r = compact.fields();
        let again = rcsv::status_of(&current, &r).is_some_and(|s| retry.contains(&s));
        if again && let Some(id) = r.first() {
            retry_ids.insert(id.clone());
        }
        !again
    });
    let rewrite = old_header != current || torn || fixes.any() || !retry_ids.is_empty() || empty;
    Ok(Resume {
        old_header,
        rows,
        retry: retry_ids,
        journal,
        rewrite,
        notes,
    })
}

/// The header and records of results.csv's whole lines (an empty file has this version's
/// header and no records). A record that does not parse is kept empty, to be dropped or
/// replaced like a short one.
fn read_records(bytes: &[u8], op: OpKind) -> Result<(Vec<String>, Vec<CompactRow>), String> {
    if bytes.is_empty() {
        return Ok((rcsv::header(op), Vec::new()));
    }
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .from_reader(bytes);
    let header: Vec<String> = rdr
        .byte_headers()
        .map_err(|e| format!("line 1: {e}"))?
        .iter()
        .map(|h| String::from_utf8_lossy(h).into_owned())
        .collect();
    if let Some(why) = header_problem(&header, op) {
        return Err(format!(
            "line 1: the header is neither this version's nor an earlier one's for {}: {why}",
            op.name()
        ));
    }
    let records = rdr
        .byte_records()
        .map(|rec| match rec {
            Ok(r) => r
                .iter()
                .map(|f| std::str::from_utf8(f).map(String::from))
                .collect::<Result<Vec<_>, _>>()
                .unwrap_or_default(),
            Err(_) => Vec::new(),
        })
        .map(|fields| CompactRow::new(&fields))
        .collect();
    Ok((header, records))
}

/// What reconciling changed, counted for the notes.
#[derive(Default)]
struct Fixes {
    dropped: usize,
    replaced: usize,
    restored: usize,
}

impl Fixes {
    fn any(&self) -> bool {
        self.dropped + self.replaced + self.restored > 0
    }

    fn notes(&self) -> Vec<String> {
        [
            (
                self.dropped,
                "dropped from results.csv (torn, damaged or duplicated, with no journal record)",
            ),
            (
                self.replaced,
                "replaced by the journal's record (results.csv disagreed with it)",
            ),
            (
                self.restored,
                "restored from the journal (missing from results.csv)",
            ),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} row(s) {what}"))
        .collect()
    }
}

/// One row per unit in this version's layout: results.csv's rows in their order, each replaced
/// by the journal's record where they disagree or the row is damaged, then the journal's rows
/// that results.csv lost (by unit id). The journal is the durable record: its row was fsynced
/// before the CSV's was written. Rows are held compact (one CSV line each) and decoded one at a
/// time, so a resume's memory stays near the run's own.
fn reconcile(
    op: OpKind,
    old_header: &[String],
    records: Vec<CompactRow>,
    journal: &State,
) -> (Vec<CompactRow>, Fixes) {
    let current = rcsv::header(op);
    // The journal's row for a unit, in this layout (it writes rows in the layout of its time).
    let from_journal = |id: &str| -> Option<Vec<String>> {
        let row = journal.finished.get(id)?.fields();
        let row = rcsv::upgrade_journal_row(op, old_header, &row);
        valid_row(op, &current, &row)
    };
    let mut fixes = Fixes::default();
    let mut rows: Vec<CompactRow> = Vec::with_capacity(records.len());
    let mut seen: HashSet<String> = HashSet::new();
    for compact in records {
        let rec = compact.fields();
        // unit_id is the first column in every layout.
        let Some(id) = rec.first().filter(|s| !s.is_empty()) else {
            fixes.dropped += 1;
            continue;
        };
        if seen.contains(id) {
            fixes.dropped += 1;
            continue;
        }
        let row = match (from_journal(id), valid_row(op, old_header, &rec)) {
            (Some(j), Some(c)) if j != c => {
                fixes.replaced += 1;
                CompactRow::new(&j)
            }
            (Some(j), None) => {
                fixes.replaced += 1;
                CompactRow::new(&j)
            }
            // The row as it was read when nothing in it changed (the common case).
            (_, Some(c)) if c == rec => compact,
            (_, Some(c)) => CompactRow::new(&c),
            (None, None) => {
                fixes.dropped += 1;
                continue;
            }
        };
        seen.insert(id.clone());
        rows.push(row);
    }
    let mut missing: Vec<&String> = journal
        .finished
        .keys()
        .filter(|id| !seen.contains(*id))
        .collect();
    missing.sort();
    for id in missing {
        if let Some(r) = from_journal(id) {
            rows.push(CompactRow::new(&r));
            fixes.restored += 1;
        }
    }
    (rows, fixes)
}

impl Resume {
    pub fn ids(&self) -> HashSet<String> {
        self.rows
            .iter()
            .filter_map(|r| r.fields().into_iter().next())
            .collect()
    }

    /// What each kept row says (status and phase) by unit id: where a strategy's search
    /// resumes from.
    pub fn measured(&self, op: OpKind) -> HashMap<String, Measured> {
        let header = rcsv::header(op);
        let phase = header.iter().position(|h| h == "phase");
        self.rows
            .iter()
            .filter_map(|r| {
                let r = r.fields();
                let status = rcsv::status_of(&header, &r)?;
                let phase = phase.and_then(|i| r.get(i)).cloned().unwrap_or_default();
                Some((r[0].clone(), Measured { status, phase }))
            })
            .collect()
    }

    /// Writes results.csv as reconciled (atomically), when it differs from the file.
    pub fn write(&self, dir: &Path, op: OpKind) -> std::io::Result<()> {
        if self.rewrite {
            rcsv::rewrite_compact(&dir.join("results.csv"), &rcsv::header(op), &self.rows)?;
        }
        Ok(())
    }
}

/// Bytes a resume may write beyond a copy of the manifest and of results.csv (the manifest's
/// new entries, the first journal records).
const RESUME_MARGIN: u64 = 1 << 20;

/// Before a resume changes anything (the manifest's `resumed` entry, a rewritten results.csv,
/// a worker's log): its files can be written and its filesystem has room for a new manifest
/// and a rewritten results.csv. A failure here leaves the directory exactly as it was.
pub fn check_resume_writable(dir: &Path) -> Result<(), CmdError> {
    use std::os::unix::fs::OpenOptionsExt;
    let fail = |what: String| {
        CmdError::Failure(format!(
            "cannot resume {}: {what}; nothing was changed",
            dir.display()
        ))
    };
    // Every file is replaced through a temporary file in the directory itself.
    let c = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(dir.as_os_str()))
        .map_err(|e| fail(e.to_string()))?;
    // SAFETY: a NUL-terminated path; access(2) only reads it.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(fail(format!("the directory cannot be written: {e}")));
    }
    // Nothing a resume writes goes through a link planted in the directory (issue 40, S3).
    for name in [
        "manifest.json",
        "results.csv",
        "journal.ndjson",
        "run.lock",
        "workers",
        "caches",
    ] {
        crate::results::atomic::refuse_link(&dir.join(name)).map_err(|e| {
            CmdError::BadInput(format!(
                "cannot resume {}: {e}; nothing was changed",
                dir.display()
            ))
        })?;
    }
    let mut need = RESUME_MARGIN;
    for name in ["manifest.json", "results.csv", "journal.ndjson", "run.lock"] {
        let path = dir.join(name);
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        // The journal is appended to, never copied; the others may be rewritten whole.
        if name != "journal.ndjson" {
            need += meta.len();
        }
        File::options()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| fail(format!("{name} cannot be written: {e}")))?;
    }
    let free = free_bytes(dir).map_err(|e| fail(format!("cannot read its free space: {e}")))?;
    if free < need {
        return Err(fail(format!(
            "its filesystem has {free} bytes free and the resume needs about {need} (a new manifest, a rewritten results.csv and room for the journal)"
        )));
    }
    Ok(())
}

/// Bytes free to this user on the filesystem of `dir` (statvfs).
fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    // SAFETY: a zeroed statvfs is a valid out-parameter; `c` is a NUL-terminated path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::record::journal::Journal;
    use crate::exec::record::row::{UnitKey, record};
    use crate::exec::worker::unit::Outcome;

    fn row(id: &str, status: Status) -> Vec<String> {
        let case = crate::exec::record::row::tests::gemm_case();
        let key = UnitKey {
            unit_id: id,
            case: &case,
            solver: "default",
            backend: "cpu",
            device: "cpu",
            device_index: "",
            env: "",
            rocm: "",
        };
        record(&key, &Outcome::failed(status, "", ""))
    }

    fn line(cells: &[String]) -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(cells).unwrap_or_else(|e| panic!("{e}"));
        String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
    }

    /// A run directory whose journal finished `a`, `b` and `c` and whose results.csv holds
    /// `csv_body` under this version's header.
    fn run_dir(csv_body: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut j = Journal::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        for (id, st) in [
            ("a", Status::Ok),
            ("b", Status::Hang),
            ("c", Status::Skipped),
        ] {
            j.finished(id, st, &row(id, st))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let text = line(&rcsv::header(OpKind::Gemm)) + csv_body;
        std::fs::write(dir.path().join("results.csv"), text).unwrap_or_else(|e| panic!("{e}"));
        dir
    }

    #[test]
    fn a_damaged_results_csv_is_rebuilt_from_the_journal() {
        // `a` is whole; `b` lost a cell; `c` is missing; then a torn last line.
        let mut damaged_b = row("b", Status::Hang);
        damaged_b.pop();
        let body = line(&row("a", Status::Ok)) + &line(&damaged_b) + "c,torn";
        let dir = run_dir(&body);
        let r = read(dir.path(), OpKind::Gemm, &[]).unwrap_or_else(|e| panic!("{e}"));
        let rows: Vec<Vec<String>> = r.rows.iter().map(CompactRow::fields).collect();
        let ids: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert_eq!(rows[1], row("b", Status::Hang));
        assert!(r.rewrite);
        let notes = r.notes.join("\n");
        assert!(notes.contains("cut a torn last line"), "{notes}");
        assert!(
            notes.contains("1 row(s) replaced by the journal's record"),
            "{notes}"
        );
        assert!(
            notes.contains("1 row(s) restored from the journal"),
            "{notes}"
        );
    }

    #[test]
    fn rows_to_run_again_leave_and_a_clean_directory_is_not_rewritten() {
        let body = line(&row("a", Status::Ok))
            + &line(&row("b", Status::Hang))
            + &line(&row("c", Status::Skipped));
        let dir = run_dir(&body);
        let r = read(dir.path(), OpKind::Gemm, &[]).unwrap_or_else(|e| panic!("{e}"));
        assert!(!r.rewrite && r.notes.is_empty(), "{:?}", r.notes);
        let r =
            read(dir.path(), OpKind::Gemm, &[Status::Skipped]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.rows.len(), 2);
        assert_eq!(r.retry, HashSet::from(["c".to_string()]));
        assert!(r.rewrite);
    }

    #[test]
    fn a_foreign_header_is_refused_with_nothing_changed() {
        let dir = run_dir("");
        let path = dir.path().join("results.csv");
        std::fs::write(&path, "name,value\nx,1\n").unwrap_or_else(|e| panic!("{e}"));
        let err = match read(dir.path(), OpKind::Gemm, &[]) {
            Ok(_) => panic!("a foreign results.csv was accepted"),
            Err(e) => e,
        };
        assert!(
            err.contains("results.csv: line 1: the header is neither"),
            "{err}"
        );
        assert!(err.ends_with("nothing was changed"), "{err}");
        let after = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(after, "name,value\nx,1\n");
    }
}

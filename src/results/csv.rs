//! results.csv: fixed columns (documented in docs/outputs.md) followed by the op's parameters in their
//! canonical order. Written and flushed row by row, so a crash loses nothing already finished.

use super::status::Status;
use crate::op::OpKind;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

pub const FIXED_COLUMNS: &[&str] = &[
    "unit_id",
    "case_id",
    "op",
    "backend",
    "device",
    "device_index",
    "solver",
    "env",
    "rocm",
    "status",
    "phase",
    "error",
    "reference",
    "max_abs_err",
    "max_rel_err",
    "rms_err",
    "zero_frac",
    "nonfinite",
    "first_call_ms",
    "compile_ms",
    "compile_warm_ms",
    "median_ms",
    "p10_ms",
    "p90_ms",
    "mean_ms",
    "stdev_ms",
    "samples",
    "timing_method",
    "cache",
    "trials",
    "trial_ms",
    "trial_spread",
    "call_median_ms",
    "call_p10_ms",
    "call_p90_ms",
    "clock_mhz",
    "temp_c",
    "clock_drop",
    "gflops",
    "gbps",
    "workspace_bytes",
    "chosen",
    "stable",
    "unstable",
    "flops",
    "bytes",
    "wall_ms",
];

/// Columns newer than some run directories: a results.csv without them still loads (they read as
/// empty) and is upgraded when such a run is resumed.
pub const OPTIONAL_COLUMNS: &[&str] = &[
    "device_index",
    "rocm",
    "compile_ms",
    "compile_warm_ms",
    "call_median_ms",
    "call_p10_ms",
    "call_p90_ms",
    "clock_mhz",
    "temp_c",
    "clock_drop",
    "trials",
    "trial_ms",
    "trial_spread",
    "chosen",
    "timing_method",
    "cache",
    "stable",
    "unstable",
];

/// The fixed columns a results.csv with this header has: all of them, minus optional columns it
/// was written without.
pub fn fixed_columns_of(header: &[String]) -> Vec<&'static str> {
    FIXED_COLUMNS
        .iter()
        .copied()
        .filter(|c| !OPTIONAL_COLUMNS.contains(c) || header.iter().any(|h| h == c))
        .collect()
}

pub fn header(op: OpKind) -> Vec<String> {
    FIXED_COLUMNS
        .iter()
        .map(|s| s.to_string())
        .chain(op.params().iter().map(|p| p.name.to_string()))
        .collect()
}

pub struct ResultsWriter {
    inner: csv::Writer<BufWriter<File>>,
}

impl ResultsWriter {
    /// Creates results.csv with its header.
    pub fn create(path: &Path, op: OpKind) -> std::io::Result<ResultsWriter> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = File::options()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)?;
        let mut inner = csv::Writer::from_writer(BufWriter::new(file));
        inner
            .write_record(header(op))
            .map_err(std::io::Error::other)?;
        inner.flush()?;
        Ok(ResultsWriter { inner })
    }

    pub fn append(&mut self, record: &[String]) -> std::io::Result<()> {
        self.inner
            .write_record(record)
            .map_err(std::io::Error::other)?;
        self.inner.flush()?;
        Ok(())
    }

    pub fn sync(&mut self) -> std::io::Result<()> {
        self.inner.flush()?;
        self.inner.get_ref().get_ref().sync_data()
    }
}

/// Reads results.csv back as header + string records.
pub fn read(path: &Path) -> Result<(Vec<String>, Vec<Vec<String>>), String> {
    let file = crate::results::rundir::open_file(path)
        .map_err(|e| crate::results::rundir::describe(path, &e))?;
    let mut rdr = csv::Reader::from_reader(file);
    let header = rdr
        .headers()
        .map_err(|e| format!("{}: {e}", path.display()))?
        .iter()
        .map(String::from)
        .collect();
    let mut rows = Vec::new();
    for (i, rec) in rdr.records().enumerate() {
        let rec = rec.map_err(|e| format!("{}: row {}: {e}", path.display(), i + 2))?;
        rows.push(rec.iter().map(String::from).collect());
    }
    Ok((header, rows))
}

/// A row held as one CSV line (fields quoted as results.csv has them), for what keeps every
/// row of a run in memory (a resume): a `Vec<String>` per row costs a few KB with this
/// layout's ~60 columns, one line about a tenth of that.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactRow(Box<str>);

impl CompactRow {
    pub fn new(fields: &[String]) -> CompactRow {
        let mut w = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        // Writing to memory cannot fail.
        let _ = w.write_record(fields);
        let bytes = w.into_inner().unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        CompactRow(text.trim_end_matches('\n').into())
    }

    /// The fields again (as they were given to `new`).
    pub fn fields(&self) -> Vec<String> {
        let mut rdr = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(self.0.as_bytes());
        let mut rec = csv::StringRecord::new();
        match rdr.read_record(&mut rec) {
            Ok(true) => rec.iter().map(String::from).collect(),
            // An empty row (written from no fields) reads back as none.
            _ => Vec::new(),
        }
    }
}

pub fn status_of(header: &[String], row: &[String]) -> Option<Status> {
    let i = header.iter().position(|h| h == "status")?;
    Status::parse(row.get(i)?)
}

impl ResultsWriter {
    /// Opens an existing results.csv for appending (after exec/plan/resume.rs reconciled it).
    pub fn append_to(path: &Path) -> std::io::Result<ResultsWriter> {
        use std::os::unix::fs::OpenOptionsExt;
        crate::results::atomic::refuse_link(path)?;
        let file = File::options()
            .append(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)?;
        let inner = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(BufWriter::new(file));
        Ok(ResultsWriter { inner })
    }
}

/// [`rewrite`] with compact rows.
pub fn rewrite_compact(path: &Path, header: &[String], rows: &[CompactRow]) -> std::io::Result<()> {
    crate::results::atomic::write_via(path, |tmp| {
        let mut w = csv::Writer::from_path(tmp).map_err(std::io::Error::other)?;
        w.write_record(header).map_err(std::io::Error::other)?;
        for row in rows {
            w.write_record(row.fields())
                .map_err(std::io::Error::other)?;
        }
        w.flush()
    })
}

/// [`rewrite`] with rows as strings.
pub fn rewrite_all(path: &Path, header: &[String], rows: &[Vec<String>]) -> std::io::Result<()> {
    let recs: Vec<csv::StringRecord> = rows
        .iter()
        .map(|r| csv::StringRecord::from(r.clone()))
        .collect();
    rewrite(path, header, &recs)
}

/// Replaces results.csv with `header` and `rows`: temp file, fsync, rename, so a crash leaves
/// either the old file or the new one.
fn rewrite(path: &Path, header: &[String], rows: &[csv::StringRecord]) -> std::io::Result<()> {
    crate::results::atomic::write_via(path, |tmp| {
        let mut w = csv::Writer::from_path(tmp).map_err(std::io::Error::other)?;
        w.write_record(header).map_err(std::io::Error::other)?;
        for rec in rows {
            w.write_record(rec).map_err(std::io::Error::other)?;
        }
        w.flush()
    })
}

/// A row as `header` has it, put in the layout of `header(op)`: missing optional columns become
/// empty cells. None when a column the current layout needs is missing.
pub fn upgrade_row(op: OpKind, header: &[String], row: &[String]) -> Option<Vec<String>> {
    let want = self::header(op);
    if header == want.as_slice() {
        return Some(row.to_vec());
    }
    want.iter()
        .map(|name| match header.iter().position(|h| h == name) {
            Some(i) => Some(row.get(i).cloned().unwrap_or_default()),
            None if OPTIONAL_COLUMNS.contains(&name.as_str()) => Some(String::new()),
            None => None,
        })
        .collect()
}

/// A journal row, written in the layout of `old_header` (results.csv's header before `upgrade`)
/// or already in the current one, in the current layout; a row of neither length is returned as
/// it is (exec/plan/resume.rs drops it if it does not fit).
pub fn upgrade_journal_row(op: OpKind, old_header: &[String], row: &[String]) -> Vec<String> {
    if row.len() != header(op).len() && row.len() == old_header.len() {
        upgrade_row(op, old_header, row).unwrap_or_else(|| row.to_vec())
    } else {
        row.to_vec()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_compact_row_gives_back_its_fields_whatever_they_hold() {
        for fields in [
            vec![
                "a".to_string(),
                String::new(),
                "x,y".into(),
                "say \"hi\"".into(),
            ],
            vec!["multi\nline | tail".into(), " spaced ".into()],
            vec![String::new()],
        ] {
            assert_eq!(super::CompactRow::new(&fields).fields(), fields);
        }
    }
}

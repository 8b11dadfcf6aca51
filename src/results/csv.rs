//! results.csv: fixed columns (documented in README.md) followed by the op's parameters in their
//! canonical order. Written and flushed row by row, so a crash loses nothing already finished.

use super::status::Status;
use crate::exec::unit::Outcome;
use crate::op::{Case, OpKind};
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
    "flops",
    "bytes",
    "wall_ms",
];

/// Columns newer than some run directories: a results.csv without them still loads (they read as
/// empty) and is upgraded when such a run is resumed.
pub const OPTIONAL_COLUMNS: &[&str] = &[
    "device_index",
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

/// Everything that identifies a unit besides its outcome.
pub struct UnitKey<'a> {
    pub unit_id: &'a str,
    pub case: &'a Case,
    pub solver: &'a str,
    pub backend: &'a str,
    pub device: &'a str,
    /// The device slot (`--devices`), empty without.
    pub device_index: &'a str,
    pub env: &'a str,
}

fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.6e}")
    } else {
        v.to_string()
    }
}

fn ms(v: Option<f64>) -> String {
    v.map(|s| format!("{:.6}", s * 1e3)).unwrap_or_default()
}

/// One CSV record for a unit and its outcome.
pub fn record(key: &UnitKey, out: &Outcome) -> Vec<String> {
    let p = &key.case.problem;
    let (flops, bytes) = (p.flops(), p.bytes());
    let st = out.stats.as_ref();
    let tele = out.telemetry.as_ref();
    let m = out.verification.as_ref().map(|v| &v.metrics);
    let rate = |work: f64, scale: f64| match st {
        Some(s) if s.median > 0.0 && work > 0.0 => format!("{:.3}", work / s.median / scale),
        _ => String::new(),
    };
    let mut r = vec![
        key.unit_id.to_string(),
        key.case.id.clone(),
        p.kind().name().to_string(),
        key.backend.to_string(),
        key.device.to_string(),
        key.device_index.to_string(),
        key.solver.to_string(),
        key.env.to_string(),
        out.status.name().to_string(),
        out.phase.clone(),
        one_line(&out.error),
        out.reference.clone(),
        m.map(|m| num(m.max_abs_err)).unwrap_or_default(),
        m.map(|m| num(m.max_rel_err)).unwrap_or_default(),
        m.map(|m| num(m.rms_err)).unwrap_or_default(),
        m.map(|m| format!("{:.6}", m.zero_frac)).unwrap_or_default(),
        m.map(|m| m.nonfinite.to_string()).unwrap_or_default(),
        ms(out.first_call_s),
        ms(out.compile_s),
        ms(out.compile_warm_s),
        ms(st.map(|s| s.median)),
        ms(st.map(|s| s.p10)),
        ms(st.map(|s| s.p90)),
        ms(st.map(|s| s.mean)),
        ms(st.map(|s| s.stdev)),
        st.map(|s| s.samples.to_string()).unwrap_or_default(),
        match out.trials {
            0 => String::new(),
            n => n.to_string(),
        },
        out.trial_medians
            .iter()
            .map(|m| format!("{:.6}", m * 1e3))
            .collect::<Vec<_>>()
            .join(";"),
        trial_spread(&out.trial_medians)
            .map(|v| format!("{v:.4}"))
            .unwrap_or_default(),
        ms(out.call_stats.as_ref().map(|s| s.median)),
        ms(out.call_stats.as_ref().map(|s| s.p10)),
        ms(out.call_stats.as_ref().map(|s| s.p90)),
        tele.and_then(|t| t.clock_mhz())
            .map(|v| format!("{v:.0}"))
            .unwrap_or_default(),
        tele.and_then(|t| t.temp_c())
            .map(|v| format!("{v:.0}"))
            .unwrap_or_default(),
        tele.and_then(|t| t.clock_drop()).unwrap_or_default(),
        rate(flops, 1e9),
        rate(bytes, 1e9),
        out.workspace_bytes.to_string(),
        one_line(&out.chosen),
        format!("{flops:.0}"),
        format!("{bytes:.0}"),
        format!("{:.3}", out.wall_s * 1e3),
    ];
    r.extend(key.case.values.iter().map(|v| v.to_string()));
    r
}

/// (max - min) / median of the trials' medians, with at least two of them.
pub fn trial_spread(medians: &[f64]) -> Option<f64> {
    if medians.len() < 2 {
        return None;
    }
    let mut v = medians.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v[(v.len() - 1) / 2];
    (mid > 0.0).then(|| (v[v.len() - 1] - v[0]) / mid)
}

/// Errors can carry newlines (library messages, stderr tails); a CSV cell stays one line.
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " | ")
}

pub struct ResultsWriter {
    inner: csv::Writer<BufWriter<File>>,
}

impl ResultsWriter {
    /// Creates results.csv with its header.
    pub fn create(path: &Path, op: OpKind) -> std::io::Result<ResultsWriter> {
        let file = File::create(path)?;
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
    let mut rdr = csv::Reader::from_path(path).map_err(|e| format!("{}: {e}", path.display()))?;
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

pub fn status_of(header: &[String], row: &[String]) -> Option<Status> {
    let i = header.iter().position(|h| h == "status")?;
    Status::parse(row.get(i)?)
}

impl ResultsWriter {
    /// Opens an existing results.csv for appending (after exec/resume.rs reconciled it).
    pub fn append_to(path: &Path) -> std::io::Result<ResultsWriter> {
        let file = File::options().append(true).open(path)?;
        let inner = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(BufWriter::new(file));
        Ok(ResultsWriter { inner })
    }
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
    let tmp = path.with_extension("csv.tmp");
    {
        let mut w = csv::Writer::from_path(&tmp).map_err(std::io::Error::other)?;
        w.write_record(header).map_err(std::io::Error::other)?;
        for rec in rows {
            w.write_record(rec).map_err(std::io::Error::other)?;
        }
        w.flush()?;
        w.into_inner()
            .map_err(|e| std::io::Error::other(e.to_string()))?
            .sync_all()?;
    }
    std::fs::rename(&tmp, path)
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
/// it is (exec/resume.rs drops it if it does not fit).
pub fn upgrade_journal_row(op: OpKind, old_header: &[String], row: &[String]) -> Vec<String> {
    if row.len() != header(op).len() && row.len() == old_header.len() {
        upgrade_row(op, old_header, row).unwrap_or_else(|| row.to_vec())
    } else {
        row.to_vec()
    }
}

//! The inputs of `merge`: its options, each shard's run directory loaded and checked, and the helpers that read their rows' columns.

use crate::error::CmdError;
use crate::exec::plan::shard::Shard;
use crate::op::OpKind;
use crate::results::csv as rcsv;
use crate::results::manifest::{self, Manifest};
use std::path::{Path, PathBuf};

pub struct MergeOptions<'a> {
    pub dirs: &'a [PathBuf],
    pub out: &'a Path,
    pub allow_missing: bool,
    pub no_report: bool,
    pub quiet: bool,
    pub command_line: Vec<String>,
}

pub(super) struct Input {
    pub(super) dir: PathBuf,
    pub(super) manifest: Manifest,
    pub(super) shard: Shard,
    /// Rows in the current results.csv layout.
    pub(super) rows: Vec<Vec<String>>,
}

pub(super) fn show(p: &Path) -> String {
    p.display().to_string()
}

pub(super) fn load(dir: &Path) -> Result<Input, CmdError> {
    if !dir.is_dir() {
        return Err(CmdError::BadInput(format!(
            "{}: not a run directory ({})",
            show(dir),
            crate::error::path_problem(dir).unwrap_or_else(|| "not a directory".into())
        )));
    }
    let manifest = manifest::read(dir).map_err(CmdError::BadInput)?;
    if manifest.merge.is_some() {
        return Err(CmdError::BadInput(format!(
            "{}: this is itself a merge of shards; merge the shard directories instead",
            show(dir)
        )));
    }
    let Some(rec) = &manifest.shard else {
        return Err(CmdError::BadInput(format!(
            "{}: not a shard (it was run without --shard or --shard-from-env); merge joins the shards of one sweep",
            show(dir)
        )));
    };
    let shard = rec
        .shard()
        .map_err(|e| CmdError::BadInput(format!("{}: manifest.json: shard: {e}", show(dir))))?;
    let op = OpKind::parse(&manifest.sweep.op).ok_or_else(|| {
        CmdError::BadInput(format!(
            "{}: manifest.json: unknown op `{}`",
            show(dir),
            manifest.sweep.op
        ))
    })?;
    let path = dir.join("results.csv");
    let (header, raw) = rcsv::read(&path).map_err(CmdError::BadInput)?;
    if let Some(missing) = rcsv::header(op)
        .into_iter()
        .find(|c| !header.contains(c) && !rcsv::OPTIONAL_COLUMNS.contains(&c.as_str()))
    {
        return Err(CmdError::BadInput(format!(
            "{}: no column `{missing}` (not a rocsweep results.csv for {}, or another version)",
            show(&path),
            op.name()
        )));
    }
    let mut rows = Vec::with_capacity(raw.len());
    for (i, r) in raw.iter().enumerate() {
        let row = rcsv::upgrade_row(op, &header, r).ok_or_else(|| {
            CmdError::BadInput(format!("{}: line {}: cannot be read", show(&path), i + 2))
        })?;
        rows.push(row);
    }
    Ok(Input {
        dir: dir.to_path_buf(),
        manifest,
        shard,
        rows,
    })
}

/// The column of a fixed results.csv column.
pub(super) fn column(name: &str) -> Option<usize> {
    rcsv::FIXED_COLUMNS.iter().position(|c| *c == name)
}

/// The column of `unit_id`.
pub(super) fn id_column() -> usize {
    column("unit_id").unwrap_or(0)
}

/// A row's cell in a column, empty when there is none.
pub(super) fn cell(r: &[String], c: Option<usize>) -> String {
    c.and_then(|c| r.get(c)).cloned().unwrap_or_default()
}

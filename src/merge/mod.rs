//! `rocsweep merge DIR... --out DIR`: joins the run directories of one sweep's shards
//! (`run --shard I/N`) into one run directory, as if the sweep had run in one piece: results.csv
//! with every row (in the unsharded run's order), and a manifest that says which shards it was
//! merged from. Reads only the run directories, so it runs anywhere.
//!
//! It refuses (exit code 2, nothing written) shards of different sweeps (SHA-256 of the sweep
//! text, `--axis` overrides), of different splits (N), of different rocsweep builds (version and
//! git commit) or backends, directories that are not shards, and duplicated units (the same unit
//! id in two directories, e.g. a shard given twice). Missing work (a shard I of N with no
//! directory, a shard that did not finish, planned units with no row in any shard) is reported
//! with exit code 6 and nothing written, unless `--allow-missing`: then the merge is written,
//! and its manifest lists what is missing.

mod check;
mod missing;
mod write;

use crate::error::CmdError;
use crate::exec::plan::shard::Shard;
use crate::exit;
use crate::op::OpKind;
use crate::results::csv as rcsv;
use crate::results::manifest::{self, Manifest};
use crate::results::rundir;
use check::{check_alike, check_no_duplicates};
use missing::{Missing, Ordered, Plan};
use std::path::{Path, PathBuf};
use write::{merged_manifest, publish};

pub struct MergeOptions<'a> {
    pub dirs: &'a [PathBuf],
    pub out: &'a Path,
    pub allow_missing: bool,
    pub no_report: bool,
    pub quiet: bool,
    pub command_line: Vec<String>,
}

struct Input {
    dir: PathBuf,
    manifest: Manifest,
    shard: Shard,
    /// Rows in the current results.csv layout.
    rows: Vec<Vec<String>>,
}

/// Runs `merge` and draws the report; returns the exit code.
pub fn command(o: &MergeOptions) -> Result<i32, CmdError> {
    let (code, dir) = merge(o)?;
    if let Some(dir) = dir
        && !o.no_report
    {
        crate::report::write_after(&dir, "merge", o.quiet);
    }
    Ok(code)
}

fn show(p: &Path) -> String {
    p.display().to_string()
}

fn load(dir: &Path) -> Result<Input, CmdError> {
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

/// Loads the shards, checks they belong together (`check`), finds what is missing (`missing`),
/// then writes the merged run directory (`write`: staged, then renamed into place). Returns the
/// exit code and the directory when one was written.
pub fn merge(o: &MergeOptions) -> Result<(i32, Option<PathBuf>), CmdError> {
    rundir::check_free(o.out).map_err(|e| CmdError::BadInput(e.to_string()))?;
    let inputs = o
        .dirs
        .iter()
        .map(|d| load(d))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(first) = inputs.first() else {
        return Err(CmdError::BadInput(
            "merge needs the shard run directories".into(),
        ));
    };
    check_alike(first, &inputs[1..])?;
    check_no_duplicates(&inputs)?;
    let plan = Plan::of(first)?;
    let ordered = Ordered::of(&inputs, &plan);
    let missing = Missing::find(first.shard.count, &ordered, &plan);
    let report = missing.report(plan.planned());
    if !missing.complete() && !o.allow_missing {
        crate::noteln!(
            "error: the shards do not cover the sweep `{}`:\n  {}\nnothing was written; run or resume what is missing and merge again, or pass --allow-missing to merge what there is",
            plan.sweep.name,
            report.join("\n  ")
        );
        return Ok((exit::MERGE_INCOMPLETE, None));
    }
    let man = merged_manifest(o, first.shard.count, &ordered, &plan, &missing);
    publish(o.out, plan.sweep.op, &ordered.rows, &man)?;
    if !o.quiet {
        let counts: Vec<String> = man.counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
        crate::sayln!(
            "merged {} shard(s) of `{}` into {}: {} units ({})",
            ordered.shards.len(),
            plan.sweep.name,
            show(o.out),
            ordered.rows.len(),
            counts.join(", ")
        );
    }
    if !missing.complete() {
        crate::noteln!(
            "warning: merged with --allow-missing; missing (also in manifest.json):\n  {}",
            report.join("\n  ")
        );
    }
    Ok((exit::OK, Some(o.out.to_path_buf())))
}

/// The column of a fixed results.csv column.
fn column(name: &str) -> Option<usize> {
    rcsv::FIXED_COLUMNS.iter().position(|c| *c == name)
}

/// The column of `unit_id`.
fn id_column() -> usize {
    column("unit_id").unwrap_or(0)
}

/// A row's cell in a column, empty when there is none.
fn cell(r: &[String], c: Option<usize>) -> String {
    c.and_then(|c| r.get(c)).cloned().unwrap_or_default()
}

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
mod input;
mod missing;
mod write;
pub use input::MergeOptions;
use input::{load, show};

use crate::error::CmdError;
use crate::exit;
use crate::results::rundir;
use check::{check_alike, check_no_duplicates};
use missing::{Missing, Ordered, Plan};
use std::path::PathBuf;
use write::{merged_manifest, publish};

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

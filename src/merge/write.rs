//! The merged run directory: its manifest and results.csv, staged, then renamed into place.

use super::input::{Input, MergeOptions, cell, column, show};
use super::missing::{MergedRow, Missing, Ordered, Plan};
use crate::error::CmdError;
use crate::op::OpKind;
use crate::results::csv::ResultsWriter;
use crate::results::manifest::{self, Manifest, MergeInfo, MergedShard};
use crate::results::rundir;
use std::collections::BTreeMap;
use std::path::Path;

/// Missing units listed in messages and the manifest.
const EXAMPLES: usize = 20;

/// The merged manifest: the lowest shard's, with what differs per shard kept in `merge`.
pub(super) fn merged_manifest(
    o: &MergeOptions,
    count: u32,
    ordered: &Ordered,
    plan: &Plan,
    missing: &Missing,
) -> Manifest {
    let sorted = &ordered.shards;
    let mut man = sorted[0].manifest.clone();
    man.command_line = o.command_line.clone();
    man.started_at = sorted
        .iter()
        .map(|i| i.manifest.started_at.clone())
        .min()
        .unwrap_or_default();
    man.finished_at = sorted
        .iter()
        .filter_map(|i| i.manifest.finished_at.clone())
        .max();
    let mut devices: Vec<String> = Vec::new();
    for i in sorted {
        for d in &i.manifest.backend.devices {
            if !devices.contains(d) {
                devices.push(d.clone());
            }
        }
    }
    man.backend.devices = devices;
    man.env_devices = sorted
        .iter()
        .flat_map(|i| i.manifest.env_devices.clone())
        .collect();
    // Each shard's trees (shards on other hosts may have used other files: each kept once).
    man.rocm_trees = Vec::new();
    for r in sorted.iter().flat_map(|i| &i.manifest.rocm_trees) {
        if !man.rocm_trees.contains(r) {
            man.rocm_trees.push(r.clone());
        }
    }
    man.units_planned = plan.planned() as u64;
    let status_col = column("status");
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for (_, _, _, r) in &ordered.rows {
        *counts.entry(cell(r, status_col)).or_default() += 1;
    }
    man.counts = counts;
    man.resumed = Vec::new();
    man.stopped = None;
    man.shard = None;
    man.devices = Vec::new();
    man.merge = Some(merge_info(count, sorted, missing));
    man
}

/// The manifest's `merge` record: each shard, and what is missing.
fn merge_info(count: u32, sorted: &[&Input], missing: &Missing) -> MergeInfo {
    MergeInfo {
        merged_at: chrono::Utc::now().to_rfc3339(),
        shard_count: count,
        shards: sorted
            .iter()
            .map(|i| MergedShard {
                dir: show(&i.dir),
                shard: i.shard.to_string(),
                hostname: i.manifest.host.hostname.clone(),
                started_at: i.manifest.started_at.clone(),
                finished_at: i.manifest.finished_at.clone(),
                resumed: i.manifest.resumed.clone(),
                stopped: i.manifest.stopped.clone(),
                devices: i.manifest.backend.devices.clone(),
                rows: i.rows.len() as u64,
            })
            .collect(),
        missing_shards: missing.shards.clone(),
        missing_units: missing.units.len() as u64,
        missing_examples: missing
            .units
            .iter()
            .take(EXAMPLES)
            .map(|s| s.to_string())
            .collect(),
    }
}

/// Writes the merged run directory in a staging directory, then renames it into place.
pub(super) fn publish(
    out: &Path,
    op: OpKind,
    rows: &[MergedRow],
    man: &Manifest,
) -> Result<(), CmdError> {
    let mut staging = rundir::Staging::create(out)?;
    write(&staging.path, op, rows, man)
        .and_then(|()| staging.publish())
        .map_err(|e| CmdError::Failure(format!("{}: {e}", show(out))))
}

fn write(dir: &Path, op: OpKind, rows: &[MergedRow], man: &Manifest) -> std::io::Result<()> {
    let mut csv = ResultsWriter::create(&dir.join("results.csv"), op)?;
    for (_, _, _, r) in rows {
        csv.append(r)?;
    }
    csv.sync()?;
    manifest::write(dir, man)
}

//! Whether the shards belong together: the same sweep, split, build and backend, and no shard
//! or unit given twice.

use super::input::{Input, id_column, show};
use crate::error::CmdError;
use std::collections::{BTreeMap, HashMap};

/// Refuses shards that differ from the first in what must not differ (sweep, overrides, build,
/// backend, split), one line per difference.
pub(super) fn check_alike(first: &Input, others: &[Input]) -> Result<(), CmdError> {
    let mut problems = Vec::new();
    for b in others {
        for d in differences(first, b) {
            problems.push(format!(
                "{} cannot be merged with {}: {d}",
                show(&b.dir),
                show(&first.dir)
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(CmdError::BadInput(problems.join("\n")))
    }
}

/// What differs between two shards that must not differ, one line each.
fn differences(a: &Input, b: &Input) -> Vec<String> {
    let (ma, mb) = (&a.manifest, &b.manifest);
    let mut d = Vec::new();
    if ma.sweep.sha256 != mb.sweep.sha256 {
        d.push(format!(
            "a different sweep: its sweep text has SHA-256 {} ({}), {} has {} ({})",
            short(&mb.sweep.sha256),
            mb.sweep.path,
            show(&a.dir),
            short(&ma.sweep.sha256),
            ma.sweep.path
        ));
    }
    if ma.sweep.overrides != mb.sweep.overrides {
        d.push(format!(
            "different --axis overrides: [{}], {} has [{}]",
            mb.sweep.overrides.join(" "),
            show(&a.dir),
            ma.sweep.overrides.join(" ")
        ));
    }
    if ma.rocsweep_version != mb.rocsweep_version || ma.git_commit != mb.git_commit {
        d.push(format!(
            "a different rocsweep version: {} (commit {}), {} was made by {} (commit {})",
            mb.rocsweep_version,
            mb.git_commit,
            show(&a.dir),
            ma.rocsweep_version,
            ma.git_commit
        ));
    }
    if ma.backend.backend != mb.backend.backend {
        d.push(format!(
            "a different backend: {}, {} ran on {}",
            mb.backend.backend,
            show(&a.dir),
            ma.backend.backend
        ));
    }
    if a.shard.count != b.shard.count {
        d.push(format!(
            "a different split: it is shard {}, {} is shard {}",
            b.shard,
            show(&a.dir),
            a.shard
        ));
    }
    d
}

fn short(sha: &str) -> String {
    sha.chars().take(12).collect()
}

/// Refuses duplicates: a shard given twice, or a unit in two directories.
pub(super) fn check_no_duplicates(inputs: &[Input]) -> Result<(), CmdError> {
    let mut problems = duplicated_shards(inputs);
    if let Some(text) = duplicated_units(inputs) {
        problems.push(text);
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(CmdError::BadInput(format!(
            "cannot merge: {}",
            problems.join("\n")
        )))
    }
}

/// One line per shard index given more than once.
fn duplicated_shards(inputs: &[Input]) -> Vec<String> {
    let mut by_shard: BTreeMap<u32, Vec<&Input>> = BTreeMap::new();
    for i in inputs {
        by_shard.entry(i.shard.index).or_default().push(i);
    }
    let count = inputs.first().map_or(0, |i| i.shard.count);
    let mut problems = Vec::new();
    for (idx, v) in &by_shard {
        if v.len() > 1 {
            let dirs: Vec<String> = v.iter().map(|i| show(&i.dir)).collect();
            problems.push(format!(
                "shard {idx}/{count} is given {} times: {}",
                v.len(),
                dirs.join(", ")
            ));
        }
    }
    problems
}

/// The units whose id is in more than one place (a few named), if any.
fn duplicated_units(inputs: &[Input]) -> Option<String> {
    let id_col = id_column();
    let mut owner: HashMap<&str, usize> = HashMap::new();
    let mut dups: Vec<(String, usize, usize)> = Vec::new();
    for (n, i) in inputs.iter().enumerate() {
        for r in &i.rows {
            let id = r.get(id_col).map(String::as_str).unwrap_or("");
            if let Some(&m) = owner.get(id) {
                dups.push((id.to_string(), m, n));
            } else {
                owner.insert(id, n);
            }
        }
    }
    if dups.is_empty() {
        return None;
    }
    let mut text = format!(
        "{} duplicated unit(s): the same unit id in more than one place:",
        dups.len()
    );
    for (id, a, b) in dups.iter().take(5) {
        let (a, b) = (show(&inputs[*a].dir), show(&inputs[*b].dir));
        if a == b {
            text.push_str(&format!(
                "\n  unit {id} is twice in {a} (the same directory given twice?)"
            ));
        } else {
            text.push_str(&format!("\n  unit {id} is in {a} and in {b}"));
        }
    }
    if dups.len() > 5 {
        text.push_str(&format!("\n  ... and {} more", dups.len() - 5));
    }
    Some(text)
}

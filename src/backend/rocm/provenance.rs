//! What the worker says about where its ROCm came from: the tree it chose and why, and what the
//! check of its own mapped files found (`probe`, the run's first line and the manifest).

use super::{loader, mapped};
use std::collections::BTreeMap;

/// The `versions` key of the tree line ("TheRock packages /v/... (from $VIRTUAL_ENV=/v)").
pub const TREE_KEY: &str = "ROCm tree";
/// The key of the notes about sources passed over (`ROCM_PATH` pointing nowhere).
pub const NOTES_KEY: &str = "ROCm tree notes";
/// The key of the mapped-files check's result.
pub const MAPPED_KEY: &str = "ROCm libraries mapped";

/// Adds the tree's lines to `v`.
pub fn describe_tree(v: &mut BTreeMap<String, String>) {
    match loader::choice() {
        Ok(c) => {
            v.insert(TREE_KEY.into(), c.line());
            if !c.notes.is_empty() {
                v.insert(NOTES_KEY.into(), c.notes.join("; "));
            }
        }
        Err(why) => {
            v.insert(TREE_KEY.into(), format!("none: {why}"));
        }
    }
}

/// Checks what is mapped into this process against the chosen tree: Ok with a one-line
/// description, Err naming the files of the mix.
pub fn check_mapped() -> Result<String, String> {
    let choice = loader::choice().as_ref().map_err(|e| e.clone())?;
    let files = mapped::check_self(&choice.found.tree.roots, &loader::opened())?;
    let names: Vec<String> = files
        .iter()
        .map(|f| {
            f.file_name().map_or_else(
                || f.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        })
        .collect();
    Ok(format!(
        "{} files, one HIP runtime, all from the chosen tree ({})",
        files.len(),
        names.join(", ")
    ))
}

/// Records the check's result in `v` and returns the mix, if any.
pub fn record_check(v: &mut BTreeMap<String, String>) -> Option<String> {
    match check_mapped() {
        Ok(line) => {
            v.insert(MAPPED_KEY.into(), line);
            None
        }
        Err(why) => {
            v.insert(MAPPED_KEY.into(), format!("MIXED: {why}"));
            Some(why)
        }
    }
}

/// The run's first line: which tree its workers use (from a worker's handshake).
pub fn first_line(versions: &BTreeMap<String, String>) -> Option<String> {
    let tree = versions.get(TREE_KEY)?;
    let mut s = format!("rocm: using {tree}");
    if let Some(n) = versions.get(NOTES_KEY) {
        s.push_str(&format!("; note: {n}"));
    }
    if let Some(m) = versions.get(MAPPED_KEY).filter(|m| m.starts_with("MIXED")) {
        s.push_str(&format!("; {m}"));
    }
    Some(s)
}

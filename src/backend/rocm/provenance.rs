//! What the worker says about where its ROCm came from: the tree it chose and why, and what the
//! check of its own mapped files found (`probe`, the run's first line and the manifest).

use super::loader;
use crate::backend::{BackendInfo, LibraryFile};
use crate::rocm_tree::mapped;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The `versions` key of the tree line ("TheRock packages /v/... (from $VIRTUAL_ENV=/v)").
pub const TREE_KEY: &str = "ROCm tree";
/// The key of the notes about sources passed over (`ROCM_PATH` pointing nowhere).
pub const NOTES_KEY: &str = "ROCm tree notes";
/// The key of what MIOpen lacks for the device's target (`kernels::miopen_note`).
pub use crate::rocm_tree::kernels::MIOPEN_KEY;
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
/// description and the files, Err naming the files of the mix.
pub fn check_mapped() -> Result<(String, Vec<PathBuf>), String> {
    let choice = loader::choice().as_ref().map_err(|e| e.clone())?;
    let files = mapped::check_self(&choice.found.tree.roots, &loader::opened())
        .map_err(|why| with_ld_hint(why, std::env::var_os("LD_LIBRARY_PATH")))?;
    let names: Vec<String> = files
        .iter()
        .map(|f| {
            f.file_name().map_or_else(
                || f.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let line = format!(
        "{} files, one HIP runtime, all from the chosen tree ({})",
        files.len(),
        names.join(", ")
    );
    Ok((line, files))
}

/// A mix names `$LD_LIBRARY_PATH` when it is set: the loader searches it before a library's
/// RUNPATH, so it pulls a system ROCm's files under a venv's libraries.
fn with_ld_hint(why: String, ld: Option<std::ffi::OsString>) -> String {
    match ld.filter(|v| !v.is_empty()) {
        Some(v) => format!(
            "{why} ($LD_LIBRARY_PATH={} is searched before the libraries' own RUNPATH: unset it, \
             or name this tree with --rocm after removing the other ROCm from it)",
            v.to_string_lossy()
        ),
        None => why,
    }
}

/// The version a library's file name carries ("libamdhip64.so.5.2.21153" -> "5.2.21153").
fn file_version(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.split_once(".so.")
        .map(|(_, v)| v.to_string())
        .unwrap_or_default()
}

/// Records the check's result (and the mapped files) in `info` and returns the mix, if any.
/// `miopen`: whether MIOpen loaded (only then is what it lacks for the device worth a note).
pub fn record_check(info: &mut BackendInfo, miopen: bool) -> Option<String> {
    match check_mapped() {
        Ok((line, files)) => {
            info.versions.insert(MAPPED_KEY.into(), line);
            if miopen {
                note_miopen(&mut info.versions);
            }
            info.libraries = files
                .iter()
                .map(|f| LibraryFile {
                    path: f.display().to_string(),
                    version: file_version(f),
                    ..LibraryFile::default()
                })
                .collect();
            None
        }
        Err(why) => {
            info.versions
                .insert(MAPPED_KEY.into(), format!("MIXED: {why}"));
            Some(why)
        }
    }
}

/// What MIOpen (loaded) lacks for the device's target, when the device is known
/// (`kernels::miopen_note`).
fn note_miopen(v: &mut BTreeMap<String, String>) {
    let arch = v.get("gcnArchName").and_then(|a| a.split(':').next());
    let arch = arch.filter(|a| a.starts_with("gfx")).map(str::to_string);
    let (Some(arch), Ok(c)) = (arch, loader::choice()) else {
        return;
    };
    if let Some(note) = crate::rocm_tree::kernels::miopen_note(&c.found.tree, &arch) {
        v.insert(MIOPEN_KEY.into(), note);
    }
}

/// The run's first lines: which tree its workers use, then what MIOpen lacks for the device
/// (from a worker's handshake).
pub fn first_lines(versions: &BTreeMap<String, String>) -> Vec<String> {
    let mut v: Vec<String> = first_line(versions).into_iter().collect();
    if let Some(n) = versions.get(MIOPEN_KEY).filter(|_| !v.is_empty()) {
        v.push(format!("rocm: note: {n}"));
    }
    v
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_names_version_and_the_ld_library_path_hint() {
        assert_eq!(
            file_version(Path::new("/x/libamdhip64.so.5.2.21153")),
            "5.2.21153"
        );
        assert_eq!(file_version(Path::new("/x/libMIOpen.so.1")), "1");
        assert_eq!(file_version(Path::new("/x/libMIOpen.so")), "");
        assert_eq!(with_ld_hint("mix".into(), None), "mix");
        assert_eq!(with_ld_hint("mix".into(), Some("".into())), "mix");
        assert!(
            with_ld_hint("mix".into(), Some("/opt/rocm/lib".into()))
                .starts_with("mix ($LD_LIBRARY_PATH=/opt/rocm/lib is searched before")
        );
    }
}

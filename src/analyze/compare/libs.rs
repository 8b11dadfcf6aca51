//! The vendor library files that differ between the two sides of a comparison (issue 28's
//! provenance): each side's manifest lists every library its workers mapped, with path, soname
//! and SHA-256: per env combination and tree (`rocm_trees`; a side `RUN@LABEL` keeps its tree's
//! entries only, so two trees of one run are compared file by file), or in manifests written
//! before that, the first worker's (`backend.libraries`, and each other backend's in
//! `backends`). Files are matched by their file name; a file whose digest differs is the
//! likeliest cause of a changed row.

use crate::backend::{BackendInfo, LibraryFile};
use crate::results::manifest::Manifest;
use std::collections::BTreeMap;

/// One file name on the two sides.
#[derive(Clone, Debug, PartialEq)]
pub enum LibDiff {
    /// Both sides mapped it, with different contents (or paths, where a digest is missing).
    Differs {
        name: String,
        a: LibraryFile,
        b: LibraryFile,
    },
    OnlyA(LibraryFile),
    OnlyB(LibraryFile),
}

/// What every backend of a run said about itself.
fn infos(m: &Manifest) -> Vec<&BackendInfo> {
    std::iter::once(&m.backend).chain(&m.backends).collect()
}

/// Every library file of a run (or of its side's tree): its env combinations' trees where the
/// manifest records them, else what its backends' first workers mapped.
fn run_files(m: &Manifest) -> Vec<&LibraryFile> {
    if m.rocm_trees.is_empty() {
        infos(m).into_iter().flat_map(|i| &i.libraries).collect()
    } else {
        m.rocm_trees.iter().flat_map(|t| &t.libraries).collect()
    }
}

/// Library files by file name (the first one of a name wins).
fn files(libs: &[&LibraryFile]) -> BTreeMap<String, LibraryFile> {
    let mut out = BTreeMap::new();
    {
        for f in libs.iter().copied() {
            let name = std::path::Path::new(&f.path)
                .file_name()
                .map_or_else(|| f.path.clone(), |n| n.to_string_lossy().into_owned());
            out.entry(name).or_insert_with(|| f.clone());
        }
    }
    out
}

/// The differences, and how many files are the same on both sides.
pub fn diff(a: &[&LibraryFile], b: &[&LibraryFile]) -> (Vec<LibDiff>, usize) {
    let (fa, fb) = (files(a), files(b));
    let mut out = Vec::new();
    let mut same = 0;
    for (name, la) in &fa {
        match fb.get(name) {
            Some(lb) => {
                let differs = if la.sha256.is_empty() || lb.sha256.is_empty() {
                    la.path != lb.path
                } else {
                    la.sha256 != lb.sha256
                };
                if differs {
                    out.push(LibDiff::Differs {
                        name: name.clone(),
                        a: la.clone(),
                        b: lb.clone(),
                    });
                } else {
                    same += 1;
                }
            }
            None => out.push(LibDiff::OnlyA(la.clone())),
        }
    }
    for (name, lb) in &fb {
        if !fa.contains_key(name) {
            out.push(LibDiff::OnlyB(lb.clone()));
        }
    }
    (out, same)
}

fn short(f: &LibraryFile) -> String {
    let sha = f.sha256.get(..12).unwrap_or(&f.sha256);
    if sha.is_empty() {
        format!("`{}`", f.path)
    } else {
        format!("`{}` (sha256 {sha})", f.path)
    }
}

/// The compare page's section for two sides. Two trees of one run (RUN@A RUN@B) are compared
/// with each tree's own files; a manifest written before rocsweep recorded them per tree
/// lists only its first worker's, which cannot tell two trees of one run apart.
pub fn section(
    a: &crate::results::rundata::RunData,
    b: &crate::results::rundata::RunData,
) -> String {
    if a.dir == b.dir && (a.manifest.rocm_trees.is_empty() || b.manifest.rocm_trees.is_empty()) {
        return "\n## Library files\n\nBoth sides are ROCm trees of one run, and its manifest has no per-tree library files for one of them (a manifest written before rocsweep recorded them per tree lists only its first worker's; or no worker of that tree started), so the two trees' files are not compared here.\n".to_string();
    }
    markdown(&a.manifest, &b.manifest)
}

/// A list of what differs, or a line saying nothing does.
pub fn markdown(a: &Manifest, b: &Manifest) -> String {
    markdown_of(&run_files(a), &run_files(b))
}

fn markdown_of(a: &[&LibraryFile], b: &[&LibraryFile]) -> String {
    let (d, same) = diff(a, b);
    let mut s = String::from("\n## Library files\n\n");
    if d.is_empty() && same == 0 {
        s.push_str("Neither run recorded the library files its workers mapped.\n");
        return s;
    }
    if d.is_empty() {
        s.push_str(&format!(
            "The same {same} library files on both sides (by SHA-256).\n"
        ));
        return s;
    }
    s.push_str(&format!(
        "{} of the mapped library files differ ({same} are the same by SHA-256):\n\n",
        d.len()
    ));
    for x in &d {
        let line = match x {
            LibDiff::Differs { name, a, b } => {
                format!("- `{name}` differs: A {} · B {}", short(a), short(b))
            }
            LibDiff::OnlyA(f) => format!("- only in A: {}", short(f)),
            LibDiff::OnlyB(f) => format!("- only in B: {}", short(f)),
        };
        s.push_str(&line);
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lib(path: &str, sha: &str) -> LibraryFile {
        LibraryFile {
            path: path.into(),
            sha256: sha.into(),
            ..LibraryFile::default()
        }
    }

    #[test]
    fn files_are_matched_by_name_and_told_apart_by_digest() {
        let a = [
            lib("/opt/rocm-5.7/lib/libamdhip64.so.5", "aa"),
            lib("/opt/rocm-5.7/lib/libMIOpen.so.1", "bb"),
            lib("/opt/rocm-5.7/lib/librocblas.so.3", "cc"),
        ];
        let b = [
            lib("/v/_rocm_sdk_core/lib/libamdhip64.so.5", "aa"),
            lib("/v/_rocm_sdk_libraries/lib/libMIOpen.so.1", "b2"),
            lib("/v/_rocm_sdk_libraries/lib/libhipblaslt.so.0", "dd"),
        ];
        let (a, b): (Vec<&LibraryFile>, Vec<&LibraryFile>) =
            (a.iter().collect(), b.iter().collect());
        let (d, same) = diff(&a, &b);
        assert_eq!(
            same, 1,
            "the same HIP runtime in another place is the same file"
        );
        assert_eq!(d.len(), 3, "{d:?}");
        let text = markdown_of(&a, &b);
        assert!(text.contains("- `libMIOpen.so.1` differs"), "{text}");
        assert!(
            text.contains("- only in A: `/opt/rocm-5.7/lib/librocblas.so.3`"),
            "{text}"
        );
        assert!(
            text.contains("- only in B: `/v/_rocm_sdk_libraries/lib/libhipblaslt.so.0`"),
            "{text}"
        );
        assert!(markdown_of(&a, &a).contains("The same 3 library files"));
        assert!(markdown_of(&[], &[]).contains("Neither run"));
    }

    #[test]
    fn a_run_with_per_tree_records_is_read_from_them_not_from_its_first_worker() {
        use crate::results::manifest::TreeRecord;
        let first = lib("/a/lib/libamdhip64.so.5", "aa");
        let info = BackendInfo {
            libraries: vec![first.clone()],
            ..BackendInfo::default()
        };
        let record = |rocm: &str, f: LibraryFile| TreeRecord {
            env: format!("rocm={rocm}"),
            rocm: rocm.into(),
            tree: format!("prefix {rocm}"),
            path: rocm.into(),
            libraries: vec![f],
            note: String::new(),
        };
        let trees = vec![
            record("/a", first.clone()),
            record("/b", lib("/b/lib/libamdhip64.so.7", "bb")),
        ];
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/runs/release-a");
        let mut m = crate::results::manifest::read(&dir).expect("fixture manifest");
        m.backend = info;
        assert_eq!(run_files(&m), vec![&first]);
        m.rocm_trees = trees;
        let names: Vec<&str> = run_files(&m).iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            names,
            ["/a/lib/libamdhip64.so.5", "/b/lib/libamdhip64.so.7"]
        );
    }
}

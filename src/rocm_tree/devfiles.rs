//! The device files of a tree (rocBLAS's and hipBLASLt's kernel libraries, MIOpen's db and kdb)
//! and the gfx targets they cover. TheRock ships them in a separate `device-gfxNNNN` package:
//! without it every library loads and the first kernel fails. Pure filesystem logic.

use super::tree::Tree;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One kind of device file of a tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceFiles {
    /// "rocBLAS kernels".
    pub what: &'static str,
    /// Where they are looked for, first existing directory (or the first candidate).
    pub dir: PathBuf,
    /// The gfx targets named by the files there.
    pub archs: BTreeSet<String>,
}

/// The gfx target a device-file name is for ("TensileLibrary_lazy_gfx1100.dat" -> gfx1100,
/// "gfx1030_36.kdb" -> gfx1030).
fn arch_in(name: &str) -> Option<String> {
    let at = name.find("gfx")?;
    let rest = &name[at + 3..];
    let len = rest
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(rest.len());
    (len > 0).then(|| format!("gfx{}", &rest[..len]))
}

fn archs_in(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| arch_in(&e.file_name().to_string_lossy()))
        .collect()
}

/// The first of `candidates` that exists, else the first.
fn first_dir(candidates: Vec<PathBuf>) -> PathBuf {
    candidates
        .iter()
        .find(|d| d.is_dir())
        .or(candidates.first())
        .cloned()
        .unwrap_or_default()
}

/// rocBLAS's and hipBLASLt's kernel libraries and MIOpen's db, with the targets each covers.
pub fn of(tree: &Tree) -> Vec<DeviceFiles> {
    let under = |sub: &str| -> Vec<PathBuf> { tree.lib_dirs.iter().map(|d| d.join(sub)).collect() };
    let mut miopen: Vec<PathBuf> = tree
        .lib_dirs
        .iter()
        .flat_map(|d| d.ancestors().skip(1).take(2))
        .map(|p| p.join("share/miopen/db"))
        .collect();
    miopen.extend(tree.roots.iter().map(|r| r.join("share/miopen/db")));
    [
        ("rocBLAS kernels", first_dir(under("rocblas/library"))),
        ("hipBLASLt kernels", first_dir(under("hipblaslt/library"))),
        ("MIOpen db", first_dir(miopen)),
    ]
    .into_iter()
    .map(|(what, dir)| DeviceFiles {
        what,
        archs: archs_in(&dir),
        dir,
    })
    .collect()
}

/// "rocBLAS kernels gfx1030 gfx1100; hipBLASLt kernels none (/x/hipblaslt/library); ...".
pub fn summary(files: &[DeviceFiles]) -> String {
    let parts: Vec<String> = files
        .iter()
        .map(|f| {
            if f.archs.is_empty() {
                format!("{} none ({})", f.what, f.dir.display())
            } else {
                let a: Vec<&str> = f.archs.iter().map(String::as_str).collect();
                format!("{} {}", f.what, a.join(" "))
            }
        })
        .collect();
    parts.join("; ")
}

/// What is missing for `arch` (bare target, "gfx1151"), each naming where it was looked for.
pub fn missing_for(files: &[DeviceFiles], arch: &str) -> Vec<String> {
    files
        .iter()
        .filter(|f| !f.archs.contains(arch))
        .map(|f| format!("{} for {arch} (in {})", f.what, f.dir.display()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_read_from_the_file_names_of_each_kind() {
        assert_eq!(
            arch_in("TensileLibrary_lazy_gfx1100.dat").as_deref(),
            Some("gfx1100")
        );
        assert_eq!(arch_in("gfx1030_36.kdb").as_deref(), Some("gfx1030"));
        assert_eq!(
            arch_in("Kernels.so-000-gfx90a-xnack-.hsaco").as_deref(),
            Some("gfx90a")
        );
        assert_eq!(arch_in("TensileManifest.txt"), None);
        let tmp = tempfile::tempdir().expect("tmp");
        let lib = tmp.path().join("lib");
        std::fs::create_dir_all(lib.join("rocblas/library")).expect("mkdir");
        std::fs::write(lib.join("rocblas/library/TensileLibrary_gfx1151.dat"), b"").expect("w");
        std::fs::create_dir_all(tmp.path().join("share/miopen/db")).expect("mkdir");
        std::fs::write(tmp.path().join("share/miopen/db/gfx1151_40.kdb"), b"").expect("w");
        let tree = Tree {
            layout: super::super::tree::Layout::Prefix,
            path: tmp.path().to_path_buf(),
            lib_dirs: vec![lib.clone()],
            roots: vec![tmp.path().to_path_buf()],
            hip: lib.join("libamdhip64.so.7"),
        };
        let files = of(&tree);
        assert_eq!(
            missing_for(&files, "gfx1151"),
            vec![format!(
                "hipBLASLt kernels for gfx1151 (in {})",
                lib.join("hipblaslt/library").display()
            )]
        );
        assert_eq!(missing_for(&files, "gfx1010").len(), 3);
        assert!(summary(&files).starts_with("rocBLAS kernels gfx1151; hipBLASLt kernels none"));
    }
}

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
/// "gfx1030_36.kdb" -> gfx1030). MIOpen's older db names run a gfx9 target into its compute
/// unit count in hex ("gfx90878.kdb": gfx908 with 0x78 = 120 CUs, "gfx90a68.kdb"): gfx9 targets have three
/// characters, so the rest is the count.
pub fn arch_in(name: &str) -> Option<String> {
    let at = name.find("gfx")?;
    let rest = &name[at + 3..];
    let mut len = rest
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(rest.len());
    if rest.starts_with('9') && len > 3 {
        len = 3;
    }
    (len > 0).then(|| format!("gfx{}", &rest[..len]))
}

/// The targets named by the files in `dir` whose names start with `prefix`.
fn archs_in(dir: &Path, prefix: &str) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .filter_map(|n| arch_in(&n))
        .collect()
}

/// What names MIOpen's per-target CK grouped-convolution libraries begin with
/// (`libMIOpenCKGroupedConv_gfx942.so`): releases from 2026 `dlopen` the device's one at run
/// time; earlier ones link CK into libMIOpen and have none.
pub const CK_PREFIX: &str = "libMIOpenCK";
/// The `what` of MIOpen's CK libraries.
pub const CK_WHAT: &str = "MIOpen CK libraries";
/// The `what` of MIOpen's db.
pub const MIOPEN_DB_WHAT: &str = "MIOpen db";
/// The `what` of rocBLAS's and hipBLASLt's kernel libraries.
pub const ROCBLAS_WHAT: &str = "rocBLAS kernels";
pub const HIPBLASLT_WHAT: &str = "hipBLASLt kernels";

/// The first of `candidates` that exists, else the first.
fn first_dir(candidates: Vec<PathBuf>) -> PathBuf {
    candidates
        .iter()
        .find(|d| d.is_dir())
        .or(candidates.first())
        .cloned()
        .unwrap_or_default()
}

/// Whether a lib directory is a multiarch one (`lib/x86_64-linux-gnu`, `lib/aarch64-linux-gnu`).
fn is_multiarch(dir: &std::path::Path) -> bool {
    dir.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.contains("-linux-"))
}

/// rocBLAS's and hipBLASLt's kernel libraries and MIOpen's db, with the targets each covers.
pub fn of(tree: &Tree) -> Vec<DeviceFiles> {
    let under = |sub: &str| -> Vec<PathBuf> { tree.lib_dirs.iter().map(|d| d.join(sub)).collect() };
    // MIOpen's db is found from libMIOpen's own directory first (in TheRock, the libraries
    // package, not the core one), so that a missing db is named where MIOpen would read it.
    let mut lib_dirs: Vec<&PathBuf> = tree.lib_dirs.iter().collect();
    lib_dirs.sort_by_key(|d| !has_miopen(d));
    // The install prefix is the lib directory's parent (`PREFIX/lib`), or its grandparent for a
    // multiarch one (Debian's `/usr/lib/x86_64-linux-gnu`): that one first, so that a missing
    // db is named where MIOpen reads it.
    let mut miopen: Vec<PathBuf> = lib_dirs
        .into_iter()
        .flat_map(|d| {
            let mut up: Vec<&std::path::Path> = d.ancestors().skip(1).take(2).collect();
            if is_multiarch(d) {
                up.reverse();
            }
            up
        })
        .map(|p| p.join("share/miopen/db"))
        .collect();
    miopen.extend(tree.roots.iter().map(|r| r.join("share/miopen/db")));
    let mut v: Vec<DeviceFiles> = [
        (ROCBLAS_WHAT, first_dir(under("rocblas/library"))),
        (HIPBLASLT_WHAT, first_dir(under("hipblaslt/library"))),
        (MIOPEN_DB_WHAT, first_dir(miopen)),
    ]
    .into_iter()
    .map(|(what, dir)| DeviceFiles {
        what,
        archs: archs_in(&dir, ""),
        dir,
    })
    .collect();
    // CK's libraries lie beside libMIOpen (whose RUNPATH finds them): the lib directory that
    // holds any, else MIOpen's own.
    let ck_dir = tree
        .lib_dirs
        .iter()
        .find(|d| !archs_in(d, CK_PREFIX).is_empty())
        .or_else(|| tree.lib_dirs.iter().find(|d| has_miopen(d)))
        .or(tree.lib_dirs.first())
        .cloned()
        .unwrap_or_default();
    v.push(DeviceFiles {
        what: CK_WHAT,
        archs: archs_in(&ck_dir, CK_PREFIX),
        dir: ck_dir,
    });
    v
}

/// The files of one kind in `dir` (a directory named by an environment variable).
pub fn of_dir(what: &'static str, dir: PathBuf) -> DeviceFiles {
    DeviceFiles {
        what,
        archs: archs_in(&dir, ""),
        dir,
    }
}

fn has_miopen(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with("libMIOpen.so"))
}

/// Whether a release uses this kind of file at all: MIOpen's CK libraries exist only in
/// releases that load them per target (none for any target: CK is inside libMIOpen).
fn used(f: &DeviceFiles) -> bool {
    f.what != CK_WHAT || !f.archs.is_empty()
}

/// "rocBLAS kernels gfx1030 gfx1100; hipBLASLt kernels none (/x/hipblaslt/library); ...".
pub fn summary(files: &[DeviceFiles]) -> String {
    let parts: Vec<String> = files
        .iter()
        .filter(|f| used(f))
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
        .filter(|f| used(f) && !f.archs.contains(arch))
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
        assert_eq!(arch_in("gfx90878.kdb").as_deref(), Some("gfx908"));
        assert_eq!(arch_in("gfx90a68.kdb").as_deref(), Some("gfx90a"));
        assert_eq!(arch_in("gfx942.tn.model").as_deref(), Some("gfx942"));
        assert_eq!(
            arch_in("libMIOpenCKGroupedConv_gfx1151.so").as_deref(),
            Some("gfx1151")
        );
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
        // A release without per-target CK libraries lacks none; one with them, the device's.
        assert!(!summary(&files).contains(CK_WHAT));
        // Debian's multiarch lib dir without a db: named under the prefix (/usr/share), not
        // under /usr/lib/share.
        let usr = tmp.path().join("usr");
        let multiarch = usr.join("lib/x86_64-linux-gnu");
        std::fs::create_dir_all(&multiarch).expect("mkdir");
        let debian = Tree {
            layout: super::super::tree::Layout::Prefix,
            path: multiarch.clone(),
            lib_dirs: vec![multiarch.clone()],
            roots: vec![],
            hip: multiarch.join("libamdhip64.so.5"),
        };
        let db = of(&debian)
            .into_iter()
            .find(|f| f.what == MIOPEN_DB_WHAT)
            .map(|f| f.dir);
        assert_eq!(db, Some(usr.join("share/miopen/db")));
        std::fs::write(lib.join("libMIOpenCKGroupedConv_gfx942.so"), b"").expect("w");
        let files = of(&tree);
        assert!(summary(&files).ends_with("; MIOpen CK libraries gfx942"));
        assert_eq!(
            missing_for(&files, "gfx1151"),
            vec![
                format!(
                    "hipBLASLt kernels for gfx1151 (in {})",
                    lib.join("hipblaslt/library").display()
                ),
                format!("MIOpen CK libraries for gfx1151 (in {})", lib.display()),
            ]
        );
    }
}

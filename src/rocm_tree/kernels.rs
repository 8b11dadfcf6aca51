//! Kernel databases checked before use. rocBLAS and hipBLASLt read their kernels for the device's
//! gfx target from `rocblas/library` and `hipblaslt/library` next to the library file (or
//! `$ROCBLAS_TENSILE_LIBPATH`, `$HIPBLASLT_TENSILE_LIBPATH`); where nothing for the target is
//! there, the real libraries abort the process at their first call. TheRock ships these files
//! in a separate `device-gfxNNNN` package, so a venv without it loads everything and then dies.
//! Checked once the device's target is known (the ROCm backend's `kdb::gate`): a library
//! without its kernels is treated like a missing one, each of its units an `error` row naming
//! the missing path and what provides it. What is checked, and the messages, are here: pure
//! filesystem logic over a tree, like the rest of `rocm_tree`.
//!
//! MIOpen is different, and rocsweep never rejects what the real library accepts. Its own
//! library is target-neutral: the kernels are sources inside libMIOpen that it compiles for the
//! device at first use (cached per user). Per target it reads only its db (`share/miopen/db`:
//! tuning, find-db and precompiled-kernel `.kdb` files; `$MIOPEN_SYSTEM_DB_PATH` overrides the
//! place) and, from 2026, `dlopen`s its CK grouped-convolution solvers from
//! `libMIOpenCKGroupedConv_<gfx>.so` beside it. Without either, MIOpen warns ("Missing system
//! database file ... Performance may degrade", "CK grouped conv library not found for device
//! gfx1151") and runs: slower, compiling at first use, the CK solvers left out and others
//! (GemmFwdRest, the naive solvers) chosen instead (MIOpen issues 1218 and 2123, TheRock issue
//! 5105 on gfx1151 with neither; rocm-libraries PR 8988: the host library "degrades gracefully
//! when a plugin is absent"). So MIOpen's units run; what it lacks for the device's target is
//! a note ([`MIOPEN_KEY`]: the run's first lines, the manifest, `probe`) naming the missing
//! paths and what provides them, and where the tree is TheRock's and holds these files for
//! other targets but not this one, it says that the device package is not installed. The rows
//! of such a run measure the fallback solvers, which is what such a user's PyTorch runs too.

use crate::rocm_tree::tree::{Layout, Tree};
use std::path::{Path, PathBuf};

/// Marks a library's load error as missing kernels (`need` gives such rows `KERNELS_MISSING`).
pub const MISSING: &str = "no kernels for";

/// The kernel directory a library at `lib_path` reads: `env`'s value, else `sub` beside it.
fn kernel_dir(lib_path: &str, sub: &str, env: Option<PathBuf>) -> PathBuf {
    env.unwrap_or_else(|| {
        Path::new(lib_path)
            .parent()
            .map_or_else(|| PathBuf::from(sub), |d| d.join(sub))
    })
}

/// Whether `dir` holds a file naming `arch` ("TensileLibrary_lazy_gfx1100.dat").
fn has_arch(dir: &Path, arch: &str) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.match_indices(arch).any(|(i, _)| {
                // gfx110 must not match gfx1100's files: the next character ends the target.
                !name[i + arch.len()..].starts_with(|c: char| c.is_ascii_alphanumeric())
            })
        })
}

/// Err with the message for a unit of `library` (at `lib_path`) when its kernel directory has
/// nothing for `arch`; Ok when it has, or when the target is unknown (nothing to check).
pub fn check(library: &str, lib_path: &str, env_var: &str, arch: &str) -> Result<(), String> {
    if arch.is_empty() {
        return Ok(());
    }
    let sub = format!("{}/library", library.to_ascii_lowercase());
    let env = std::env::var_os(env_var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let from_env = env.is_some();
    let dir = kernel_dir(lib_path, &sub, env);
    if has_arch(&dir, arch) {
        return Ok(());
    }
    let what = if dir.is_dir() {
        format!("nothing for {arch} in {}", dir.display())
    } else {
        format!("{} does not exist", dir.display())
    };
    let from = if from_env {
        format!(" (from ${env_var})")
    } else {
        String::new()
    };
    Err(format!(
        "{MISSING} {arch}: {what}{from}; {library} would abort at its first call. Install the \
         device files for {arch} (TheRock: {}; a system ROCm: its {library} built for {arch})",
        device_package(arch)
    ))
}

/// What provides a TheRock tree's device files for `arch`.
pub fn device_package(arch: &str) -> String {
    format!(
        "the device-{arch} package of your ROCm, e.g. {}",
        pip_install(arch)
    )
}

fn pip_install(arch: &str) -> String {
    format!("pip install \"rocm[libraries,device-{arch}]\"")
}

/// The `versions` key of what MIOpen lacks for the device's target (see the module doc).
pub const MIOPEN_KEY: &str = "MIOpen device files";

/// What MIOpen lacks in `tree` for `arch` (bare target, "gfx1151"), as a note naming each
/// missing path and what provides it; None when it has all its release uses.
pub fn miopen_note(tree: &Tree, arch: &str) -> Option<String> {
    use crate::rocm_tree::devfiles::{self, CK_WHAT, MIOPEN_DB_WHAT};
    let mut files: Vec<devfiles::DeviceFiles> = devfiles::of(tree)
        .into_iter()
        .filter(|f| f.what == MIOPEN_DB_WHAT || f.what == CK_WHAT)
        .collect();
    let db_env = std::env::var_os("MIOPEN_SYSTEM_DB_PATH").filter(|v| !v.is_empty());
    if let (Some(dir), Some(db)) = (db_env, files.iter_mut().find(|f| f.what == MIOPEN_DB_WHAT)) {
        *db = devfiles::of_dir(MIOPEN_DB_WHAT, PathBuf::from(dir));
    }
    let missing: Vec<&devfiles::DeviceFiles> = files
        .iter()
        .filter(|f| !devfiles::missing_for(std::slice::from_ref(*f), arch).is_empty())
        .collect();
    if missing.is_empty() {
        return None;
    }
    let what: Vec<String> = missing
        .iter()
        .map(|f| match f.what {
            CK_WHAT => format!(
                "its CK grouped-convolution library {}",
                f.dir
                    .join(format!("libMIOpenCKGroupedConv_{arch}.so"))
                    .display()
            ),
            _ if f.dir.is_dir() => {
                format!("its db for {arch} (nothing for it in {})", f.dir.display())
            }
            _ => format!("its db for {arch} ({} does not exist)", f.dir.display()),
        })
        .collect();
    let others: std::collections::BTreeSet<&str> = missing
        .iter()
        .flat_map(|f| f.archs.iter().map(String::as_str))
        .collect();
    let others: Vec<&str> = others.into_iter().collect();
    let ck = missing.iter().any(|f| f.what == CK_WHAT);
    let pip = pip_install(arch);
    let advice = match (tree.layout, others.is_empty()) {
        (Layout::TheRock, false) => format!(
            "the tree has them for {} but not for {arch}: its device-{arch} package is not installed ({pip})",
            others.join(" ")
        ),
        (Layout::TheRock, true) => {
            format!("install the device-{arch} package of your ROCm ({pip})")
        }
        _ => format!(
            "install MIOpen's files for {arch} (a system ROCm: its miopen-hip-{arch}kdb package; a PyTorch wheel: one built for {arch})"
        ),
    };
    Some(format!(
        "MIOpen lacks {}: its units run (it compiles its kernels at first use{}), slower than with them; {advice}",
        what.join(" and "),
        if ck {
            " and leaves out its CK grouped-convolution solvers"
        } else {
            ""
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_directory_without_the_target_is_named_with_what_provides_it() {
        let tmp = tempfile::tempdir().expect("tmp");
        let lib = tmp.path().join("librocblas.so.4");
        let lib = lib.display().to_string();
        let dir = tmp.path().join("rocblas/library");
        let e = check("rocBLAS", &lib, "ROCSWEEP_TEST_UNSET_VAR", "gfx1151").unwrap_err();
        assert!(
            e.starts_with(&format!(
                "no kernels for gfx1151: {} does not exist;",
                dir.display()
            )),
            "{e}"
        );
        assert!(e.contains("the device-gfx1151 package of your ROCm"), "{e}");
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join("TensileLibrary_lazy_gfx1100.dat"), b"").expect("write");
        let e = check("rocBLAS", &lib, "ROCSWEEP_TEST_UNSET_VAR", "gfx110").unwrap_err();
        assert!(
            e.contains(&format!("nothing for gfx110 in {}", dir.display())),
            "{e}"
        );
        assert_eq!(
            check("rocBLAS", &lib, "ROCSWEEP_TEST_UNSET_VAR", "gfx1100"),
            Ok(())
        );
        assert_eq!(
            check("rocBLAS", &lib, "ROCSWEEP_TEST_UNSET_VAR", ""),
            Ok(())
        );
    }

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, b"").expect("write");
    }

    /// TheRock's site-packages with MIOpen, its db and CK libraries for `archs`.
    fn therock(site: &Path, archs: &[&str]) -> Tree {
        let core = site.join("_rocm_sdk_core");
        let libs = site.join("_rocm_sdk_libraries_gfx110X-all");
        touch(&core.join("lib/libamdhip64.so.6"));
        touch(&libs.join("lib/libMIOpen.so.1"));
        for a in archs {
            touch(&libs.join(format!("lib/libMIOpenCKGroupedConv_{a}.so")));
            touch(&libs.join(format!("share/miopen/db/{a}_48.kdb")));
        }
        Tree {
            layout: Layout::TheRock,
            path: site.to_path_buf(),
            lib_dirs: vec![core.join("lib"), libs.join("lib")],
            roots: vec![core, libs],
            hip: site.join("_rocm_sdk_core/lib/libamdhip64.so.6"),
        }
    }

    #[test]
    fn miopen_without_its_files_for_the_target_is_a_note_naming_them_and_the_device_package() {
        let tmp = tempfile::tempdir().expect("tmp");
        let tree = therock(tmp.path(), &["gfx1100", "gfx1101"]);
        let libs = tmp.path().join("_rocm_sdk_libraries_gfx110X-all");
        assert_eq!(miopen_note(&tree, "gfx1100"), None);
        let n = miopen_note(&tree, "gfx1151").expect("a note");
        assert_eq!(
            n,
            format!(
                "MIOpen lacks its db for gfx1151 (nothing for it in {}) and its CK grouped-convolution library {}: \
                 its units run (it compiles its kernels at first use and leaves out its CK grouped-convolution solvers), \
                 slower than with them; the tree has them for gfx1100 gfx1101 but not for gfx1151: its device-gfx1151 \
                 package is not installed (pip install \"rocm[libraries,device-gfx1151]\")",
                libs.join("share/miopen/db").display(),
                libs.join("lib/libMIOpenCKGroupedConv_gfx1151.so").display()
            )
        );
        // The device package installed: nothing lacks.
        let tree = therock(tmp.path(), &["gfx1151"]);
        assert_eq!(miopen_note(&tree, "gfx1151"), None);
    }

    #[test]
    fn a_release_without_per_target_ck_libraries_lacks_only_its_db() {
        let tmp = tempfile::tempdir().expect("tmp");
        let lib = tmp.path().join("lib");
        touch(&lib.join("libMIOpen.so.1"));
        let tree = Tree {
            layout: Layout::Prefix,
            path: tmp.path().to_path_buf(),
            lib_dirs: vec![lib.clone()],
            roots: vec![tmp.path().to_path_buf()],
            hip: lib.join("libamdhip64.so.5"),
        };
        let n = miopen_note(&tree, "gfx1010").expect("a note");
        let db = tmp.path().join("share/miopen/db");
        assert!(
            n.starts_with(&format!(
                "MIOpen lacks its db for gfx1010 ({} does not exist): its units run (it compiles its kernels at first use), slower",
                db.display()
            )),
            "{n}"
        );
        assert!(n.ends_with("a system ROCm: its miopen-hip-gfx1010kdb package; a PyTorch wheel: one built for gfx1010)"), "{n}");
        touch(&db.join("gfx90878.kdb"));
        touch(&db.join("gfx1010_40.kdb"));
        assert_eq!(miopen_note(&tree, "gfx1010"), None);
        assert!(
            miopen_note(&tree, "gfx908").is_none(),
            "gfx90878.kdb is gfx908's"
        );
    }
}

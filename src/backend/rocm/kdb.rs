//! Kernel databases checked before use. rocBLAS and hipBLASLt read their kernels for the device's
//! gfx target from `rocblas/library` and `hipblaslt/library` next to the library file (or
//! `$ROCBLAS_TENSILE_LIBPATH`, `$HIPBLASLT_TENSILE_LIBPATH`); where nothing for the target is
//! there, the real libraries abort the process at their first call. TheRock ships these files
//! in a separate `device-gfxNNNN` package, so a venv without it loads everything and then dies.
//! Checked here once the device's target is known: a library without its kernels is treated
//! like a missing one, each of its units an `error` row naming the missing path and what
//! provides it. MIOpen is only described: without its db or kdb for the target it compiles
//! its kernels at first use, slower but working.

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
         device files for {arch} (TheRock: the device-{arch} package of your ROCm, e.g. \
         pip install \"rocm[libraries,device-{arch}]\"; a system ROCm: its {library} built for \
         {arch})"
    ))
}

/// rocBLAS and hipBLASLt without kernels for the device's `arch` become missing libraries: the
/// real ones would abort the worker at their first call.
pub(super) fn gate(libs: &mut super::Libs, arch: &str) {
    let rb = libs.rocblas.as_ref().ok().and_then(|r| {
        check("rocBLAS", &r.path, "ROCBLAS_TENSILE_LIBPATH", arch)
            .err()
            .map(|why| format!("rocBLAS ({}) {why}", r.path))
    });
    if let Some(why) = rb {
        libs.rocblas = Err(why);
    }
    let lt = libs.hipblaslt.as_ref().ok().and_then(|l| {
        check("hipBLASLt", &l.path, "HIPBLASLT_TENSILE_LIBPATH", arch)
            .err()
            .map(|why| format!("hipBLASLt ({}) {why}", l.path))
    });
    if let Some(why) = lt {
        libs.hipblaslt = Err(why);
    }
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
}

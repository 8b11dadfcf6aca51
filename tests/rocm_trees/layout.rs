//! Laying ROCm trees out in temporary directories the way their packages do: TheRock's wheels
//! (soname-only regular files, no symlinks, RUNPATHs to the siblings), pytorch.org's torch/lib
//! bundle (bare names) and /opt/rocm-X.Y prefixes (versioned files behind soname symlinks).
//! The files are Debian's real HIP 5.2 pieces or the fake ROCm; RPATHs are set with Debian's
//! patchelf.

use std::path::{Path, PathBuf};
use std::process::Command;

pub const ROOT: &str = env!("CARGO_MANIFEST_DIR");
pub const DEBIAN: &str = "/usr/lib/x86_64-linux-gnu";

/// True when the test can run; panics under CI when what .ci/run installs is missing.
pub fn have(what: &str, present: bool) -> bool {
    if !present {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{what} is missing, but .ci/run installs it");
        }
        eprintln!("skipped: {what} is not installed (apt-get install it to run this test)");
    }
    present
}

pub fn have_debian_hip() -> bool {
    have(
        "libamdhip64-5",
        Path::new(DEBIAN).join("libamdhip64.so.5").exists(),
    ) && have("patchelf", Path::new("/usr/bin/patchelf").exists())
}

#[path = "../common/fake_rocm.rs"]
mod fake_rocm;
pub use fake_rocm::fake_library;

pub fn model(name: &str) -> PathBuf {
    PathBuf::from(format!("{ROOT}/tests/fake-rocm/models/{name}"))
}

/// Copies `src` to `dst` (a regular file of its own), making the directory.
pub fn put(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
    std::fs::copy(src, dst)
        .unwrap_or_else(|e| panic!("copy {} -> {}: {e}", src.display(), dst.display()));
}

/// A second name for the same file (a hard link: a regular file, as pip writes it, that the
/// loader still recognises as the same object, so the fake's state is shared).
pub fn same(first: &Path, dst: &Path) {
    std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
    std::fs::hard_link(first, dst).unwrap();
}

pub fn symlink(target: &str, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

pub fn patchelf(args: &[&str], file: &Path) {
    let o = Command::new("patchelf")
        .args(args)
        .arg(file)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "patchelf {args:?} {}: {}",
        file.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The device files for `arch` of the libraries in `lib` (what TheRock's device-gfxNNNN
/// package and a system ROCm's packages install): rocBLAS's and hipBLASLt's kernel files
/// beside them, MIOpen's db in `lib/../share/miopen/db` and its per-target CK library beside
/// it. (rocsweep reads only their names; the fake MIOpen, like the real one, runs without them.)
pub fn device_files(lib: &Path, arch: &str) {
    for sub in ["rocblas/library", "hipblaslt/library"] {
        std::fs::create_dir_all(lib.join(sub)).unwrap();
        let name = format!("TensileLibrary_lazy_{arch}.dat");
        std::fs::write(lib.join(sub).join(name), b"").unwrap();
    }
    let db = lib.join("../share/miopen/db");
    std::fs::create_dir_all(&db).unwrap();
    std::fs::write(db.join(format!("{arch}_48.kdb")), b"").unwrap();
    std::fs::write(lib.join(format!("libMIOpenCKGroupedConv_{arch}.so")), b"").unwrap();
}

/// TheRock's site-packages of a venv at `venv`.
pub fn site(venv: &Path) -> PathBuf {
    venv.join("lib/python3.12/site-packages")
}

/// The fake laid out as TheRock's wheels in `venv` (ROCm 6 names): one regular file behind every
/// soname, `_rocm_sdk_core/lib` for HIP, `_rocm_sdk_libraries_gfx1100/lib` for the libraries,
/// without the names in `omit` (`device`: without the gfx1100 device files).
pub fn fake_therock(venv: &Path, omit: &[&str]) -> PathBuf {
    let site = site(venv);
    let hip = site.join("_rocm_sdk_core/lib/libamdhip64.so.6");
    put(fake_library(), &hip);
    patchelf(
        &["--set-rpath", "$ORIGIN:$ORIGIN/../../_rocm_sdk_core/lib"],
        &hip,
    );
    patchelf(&["--set-soname", "libamdhip64.so.6"], &hip);
    let libs = site.join("_rocm_sdk_libraries_gfx1100/lib");
    for n in [
        "libMIOpen.so.1",
        "libhipblaslt.so.0",
        "librocblas.so.4",
        "libhiprand.so.1",
    ] {
        if !omit.iter().any(|o| n.starts_with(o)) {
            same(&hip, &libs.join(n));
        }
    }
    if !omit.contains(&"device") {
        device_files(&libs, "gfx1100");
    }
    std::fs::write(venv.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
    site
}

/// The fake as pytorch.org's torch/lib bundle (bare names) in a conda env at `env`.
pub fn fake_torch(env: &Path) -> PathBuf {
    let torch = env.join("lib/python3.10/site-packages/torch");
    let hip = torch.join("lib/libamdhip64.so");
    put(fake_library(), &hip);
    patchelf(&["--set-rpath", "$ORIGIN"], &hip);
    for n in [
        "libMIOpen.so",
        "libhipblaslt.so",
        "librocblas.so",
        "libhiprand.so",
    ] {
        same(&hip, &torch.join("lib").join(n));
    }
    device_files(&torch.join("lib"), "gfx1100");
    torch
}

/// The fake as a system prefix `PREFIX/lib` of ROCm `major`: a versioned file per library
/// behind soname and bare-name symlinks, as ROCm's packages install them.
pub fn fake_prefix(prefix: &Path, major: u32) {
    let lib = prefix.join("lib");
    let (hipblaslt, rocblas) = if major >= 7 {
        ("libhipblaslt.so.1", "librocblas.so.5")
    } else {
        ("libhipblaslt.so.0", "librocblas.so.4")
    };
    let hip = format!("libamdhip64.so.{major}");
    let file = format!("{hip}.0.0");
    put(fake_library(), &lib.join(&file));
    patchelf(&["--set-rpath", "$ORIGIN"], &lib.join(&file));
    symlink(&file, &lib.join(&hip));
    symlink(&hip, &lib.join("libamdhip64.so"));
    for n in ["libMIOpen.so.1", hipblaslt, rocblas, "libhiprand.so.1"] {
        symlink(&file, &lib.join(n));
    }
    device_files(&lib, "gfx1100");
}

/// Debian's HIP 5.2 runtime and what it needs (hsa, hsakmt) laid out as TheRock's core package
/// in `venv`, regular files under their sonames; `rpath`: HIP's RUNPATH points at its
/// siblings as TheRock's do (without it, hsa comes from the system: a mix).
pub fn debian_therock(venv: &Path, rpath: bool) -> PathBuf {
    let site = site(venv);
    let core = site.join("_rocm_sdk_core/lib");
    put(
        &Path::new(DEBIAN).join("libamdhip64.so.5"),
        &core.join("libamdhip64.so.5"),
    );
    put(
        &Path::new(DEBIAN).join("libhsa-runtime64.so.1"),
        &core.join("libhsa-runtime64.so.1"),
    );
    put(
        &Path::new(DEBIAN).join("libhsakmt.so.1"),
        &core.join("libhsakmt.so.1"),
    );
    if rpath {
        patchelf(&["--set-rpath", "$ORIGIN"], &core.join("libamdhip64.so.5"));
    }
    // hipRAND and rocRAND from Debian as TheRock's libraries package.
    let libs = site.join("_rocm_sdk_libraries_gfx1030/lib");
    put(
        &Path::new(DEBIAN).join("libhiprand.so.1"),
        &libs.join("libhiprand.so.1"),
    );
    put(
        &Path::new(DEBIAN).join("librocrand.so.1"),
        &libs.join("librocrand.so.1"),
    );
    patchelf(
        &["--set-rpath", "$ORIGIN:$ORIGIN/../../_rocm_sdk_core/lib"],
        &libs.join("libhiprand.so.1"),
    );
    site
}

/// Debian's HIP as torch/lib: bare names, HIP's needed hsa renamed to the bare file, RUNPATH
/// $ORIGIN (what PyTorch's wheel build does to the libraries it bundles).
pub fn debian_torch(env: &Path) -> PathBuf {
    let torch = env.join("lib/python3.10/site-packages/torch");
    let lib = torch.join("lib");
    put(
        &Path::new(DEBIAN).join("libamdhip64.so.5"),
        &lib.join("libamdhip64.so"),
    );
    put(
        &Path::new(DEBIAN).join("libhsa-runtime64.so.1"),
        &lib.join("libhsa-runtime64.so"),
    );
    put(
        &Path::new(DEBIAN).join("libhsakmt.so.1"),
        &lib.join("libhsakmt.so.1"),
    );
    // One change per patchelf call: Debian's patchelf 0.14 given --replace-needed and
    // --set-rpath together rewrites the symbol-version table but not DT_NEEDED, and ld.so then
    // stops the process ("_dl_check_map_versions: Assertion `needed != NULL' failed").
    let hip = lib.join("libamdhip64.so");
    patchelf(
        &[
            "--replace-needed",
            "libhsa-runtime64.so.1",
            "libhsa-runtime64.so",
        ],
        &hip,
    );
    patchelf(&["--set-rpath", "$ORIGIN"], &hip);
    // Each bundled file's SONAME is its bare name.
    patchelf(&["--set-soname", "libamdhip64.so"], &hip);
    patchelf(
        &["--set-soname", "libhsa-runtime64.so"],
        &lib.join("libhsa-runtime64.so"),
    );
    torch
}

/// Debian's HIP as an /opt/rocm-X.Y prefix: versioned files behind soname symlinks, RUNPATH
/// $ORIGIN (ROCm's own packages set it).
pub fn debian_prefix(prefix: &Path) {
    let lib = prefix.join("lib");
    for (file, soname) in [
        ("libamdhip64.so.5.2.21153", "libamdhip64.so.5"),
        ("libhsa-runtime64.so.1.5.0", "libhsa-runtime64.so.1"),
        ("libhsakmt.so.1.0.6", "libhsakmt.so.1"),
    ] {
        put(&Path::new(DEBIAN).join(soname), &lib.join(file));
        symlink(file, &lib.join(soname));
    }
    symlink("libamdhip64.so.5", &lib.join("libamdhip64.so"));
    patchelf(
        &["--set-rpath", "$ORIGIN"],
        &lib.join("libamdhip64.so.5.2.21153"),
    );
}

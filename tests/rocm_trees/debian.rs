//! Debian's real HIP 5.2 runtime in each layout, and the mixes a system HIP and a venv make.

use super::layout::*;
use super::{probe, sweep};
use std::path::Path;

const MAPPED_OK: &str = "files, one HIP runtime, all from the chosen tree";

#[test]
#[cfg_attr(
    rocsweep_missing_hip,
    ignore = "needs libamdhip64-5 and patchelf (apt-get install libamdhip64-5 patchelf)"
)]
fn debians_hip_as_therock_packages_is_one_tree_only_with_the_packages_rpaths() {
    if !have_debian_hip() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // Without HIP's RUNPATH the loader takes hsa from /usr/lib: a second tree in the process.
    let bare = tmp.path().join("bare");
    let site = debian_therock(&bare, false);
    let b = bare.display().to_string();
    let o = probe(tmp.path(), &["--rocm", &b], &[]);
    assert_eq!(o.code, Some(5), "no GPU: {}{}", o.stdout, o.stderr);
    assert!(
        o.stdout.contains(&format!(
            "ROCm tree: TheRock packages {} (from --rocm {b})",
            site.display()
        )),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("ROCm libraries mapped: MIXED: /usr/lib/x86_64-linux-gnu/libhsa")
            && o.stdout
                .contains("is mapped from outside the chosen ROCm tree"),
        "{}",
        o.stdout
    );
    // With RUNPATH $ORIGIN, as TheRock sets it: hsa, hsakmt, hipRAND and rocRAND from the venv.
    let venv = tmp.path().join("venv");
    let site = debian_therock(&venv, true);
    let o = probe(tmp.path(), &[], &[("VIRTUAL_ENV", &venv)]);
    let core = site.join("_rocm_sdk_core/lib/libamdhip64.so.5");
    assert!(o.stdout.contains("HIP runtime: 5.2."), "{}", o.stdout);
    assert!(
        o.stdout.contains(&format!("({})", core.display())),
        "{}",
        o.stdout
    );
    let hiprand = site.join("_rocm_sdk_libraries_gfx1030/lib/libhiprand.so.1");
    assert!(
        o.stdout.contains(&format!("({})", hiprand.display())),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains("ROCm libraries mapped: 5 "),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains(MAPPED_OK), "{}", o.stdout);
    // $LD_LIBRARY_PATH comes before RUNPATH: the system's hsa again, and the message says why.
    let o = probe(
        tmp.path(),
        &[],
        &[
            ("VIRTUAL_ENV", &venv),
            ("LD_LIBRARY_PATH", Path::new(DEBIAN)),
        ],
    );
    assert!(
        o.stdout
            .contains("ROCm libraries mapped: MIXED: /usr/lib/x86_64-linux-gnu/lib")
            && o.stdout.contains(&format!(
                "($LD_LIBRARY_PATH={DEBIAN} is searched before the libraries' own RUNPATH"
            )),
        "{}",
        o.stdout
    );
}

#[test]
#[cfg_attr(
    rocsweep_missing_hip,
    ignore = "needs libamdhip64-5 and patchelf (apt-get install libamdhip64-5 patchelf)"
)]
fn debians_hip_as_torchs_bundle_is_found_through_its_python_interpreter() {
    if !have_debian_hip() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let env = tmp.path().join("env");
    let torch = debian_torch(&env);
    std::fs::create_dir_all(env.join("bin")).unwrap();
    std::fs::write(env.join("bin/python3"), "").unwrap();
    let py = env.join("bin/python3").display().to_string();
    let o = probe(tmp.path(), &["--rocm", &py], &[]);
    assert!(
        o.stdout.contains(&format!(
            "ROCm tree: torch bundle {} (from --rocm {py})",
            torch.display()
        )),
        "{}",
        o.stdout
    );
    let hip = torch.join("lib/libamdhip64.so");
    assert!(
        o.stdout
            .contains(&format!("HIP runtime: 5.2.21153 ({})", hip.display())),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains(MAPPED_OK), "{}", o.stdout);
}

#[test]
#[cfg_attr(
    rocsweep_missing_hip,
    ignore = "needs libamdhip64-5 and patchelf (apt-get install libamdhip64-5 patchelf)"
)]
fn debians_hip_as_an_opt_rocm_prefix_is_used_before_the_system_copy() {
    if !have_debian_hip() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let opt = tmp.path().join("opt");
    debian_prefix(&opt.join("rocm-5.2.3"));
    symlink("rocm-5.2.3", &opt.join("rocm"));
    let o = probe(tmp.path(), &[], &[("ROCSWEEP_OPT_DIR", &opt)]);
    let rocm = opt.join("rocm");
    assert!(
        o.stdout.contains(&format!(
            "ROCm tree: prefix {} (from {})",
            rocm.display(),
            rocm.display()
        )),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains(MAPPED_OK), "{}", o.stdout);
    // The system's own copy is a tree of its own, listed with its versions.
    assert!(
        o.stdout.contains(&format!(
            "    system libraries {DEBIAN} (found from the system loader's path)"
        )),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("trees found: 2 ("), "{}", o.stdout);
}

#[test]
#[cfg_attr(
    rocsweep_missing_hip,
    ignore = "needs libamdhip64-5 and patchelf (apt-get install libamdhip64-5 patchelf)"
)]
fn a_system_hip_and_a_venv_holding_only_miopen_resolve_to_the_system_tree() {
    if !have_debian_hip() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let venv = tmp.path().join("venv");
    let miopen = site(&venv).join("_rocm_sdk_libraries/lib/libMIOpen.so.1");
    put(fake_library(), &miopen);
    let o = probe(tmp.path(), &[], &[("VIRTUAL_ENV", &venv)]);
    assert!(
        o.stdout.contains(&format!(
            "ROCm tree: system libraries {DEBIAN} (from the system loader's path)"
        )),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains(&format!(
            "$VIRTUAL_ENV={} holds no HIP runtime",
            venv.display()
        )),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains(&format!(
            "MIOpen: MIOpen (libMIOpen) not found in the ROCm tree system libraries {DEBIAN}"
        )),
        "{}",
        o.stdout
    );
    assert!(
        !o.stdout.contains(&miopen.display().to_string()),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains(MAPPED_OK), "{}", o.stdout);
}

#[test]
#[cfg_attr(
    rocsweep_missing_hip,
    ignore = "needs libamdhip64-5 and patchelf (apt-get install libamdhip64-5 patchelf)"
)]
fn a_venv_library_that_pulls_in_the_system_hip_makes_every_unit_an_error_naming_both() {
    if !have_debian_hip() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let venv = tmp.path().join("venv");
    // The fake's HIP in the core package; Debian's hipRAND in the libraries package, built
    // against the system's HIP (its libamdhip64.so.5 is not the venv's).
    let site = fake_therock(&venv, &["libhiprand"]);
    let hiprand = site.join("_rocm_sdk_libraries_gfx1100/lib/libhiprand.so.1");
    put(&Path::new(DEBIAN).join("libhiprand.so.1"), &hiprand);
    let (first, rows) = sweep(
        tmp.path(),
        "mixed",
        "op = \"rng\"\n[axes]\ncount = 4096\n",
        &[("VIRTUAL_ENV", &venv)],
    );
    let hip = site.join("_rocm_sdk_core/lib/libamdhip64.so.6");
    let system = "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5.2.21153";
    assert!(
        first.contains("MIXED: two HIP runtimes are mapped into this process: ")
            && first.contains(&hip.display().to_string())
            && first.contains(system),
        "{first}"
    );
    assert!(!rows.is_empty());
    for r in &rows {
        assert_eq!(r[1], "error", "{rows:?}");
        assert!(
            r[2].contains("MIXED_ROCM_TREES")
                && r[2].contains(system)
                && r[2].contains(&hip.display().to_string()),
            "{rows:?}"
        );
    }
}

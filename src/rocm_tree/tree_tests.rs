use super::*;
use std::fs;

fn touch(p: &Path) {
    fs::create_dir_all(p.parent().expect("a file in a directory")).expect("mkdir");
    fs::write(p, b"").expect("write");
}

/// A TheRock site-packages directory: core (HIP), libraries with `suffix`, soname-only files.
pub(crate) fn therock_site(site: &Path, suffix: &str) {
    touch(&site.join("_rocm_sdk_core/lib/libamdhip64.so.7"));
    touch(&site.join("_rocm_sdk_core/lib/libhiprtc.so.7"));
    touch(&site.join("_rocm_sdk_core/lib/rocm_sysdeps/lib/librocm_sysdeps_numa.so.1"));
    let libs = site.join(format!("_rocm_sdk_libraries{suffix}/lib"));
    touch(&libs.join("libMIOpen.so.1"));
    touch(&libs.join("librocblas.so.5"));
}

#[test]
fn a_prefix_and_a_lib_dir_are_trees_and_an_empty_dir_is_not() {
    let tmp = tempfile::tempdir().expect("tmp");
    let prefix = tmp.path().join("rocm-6.4.1");
    touch(&prefix.join("lib/libamdhip64.so.6"));
    let t = trees_at(&prefix);
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].layout, Layout::Prefix);
    assert_eq!(t[0].lib_dirs, vec![prefix.join("lib")]);
    assert_eq!(t[0].hip, prefix.join("lib/libamdhip64.so.6"));
    let lib = trees_at(&prefix.join("lib"));
    assert_eq!(lib[0].layout, Layout::LibDir);
    assert!(
        trees_at(tmp.path()).is_empty(),
        "no HIP directly or in lib/"
    );
}

#[test]
fn therock_packages_are_one_tree_in_every_suffix_form() {
    for suffix in ["", "_gfx1151", "_gfx110X_dgpu"] {
        let tmp = tempfile::tempdir().expect("tmp");
        let site = tmp.path().join("venv/lib/python3.12/site-packages");
        therock_site(&site, suffix);
        let t = trees_at(&tmp.path().join("venv"));
        assert_eq!(t.len(), 1, "{suffix}: {t:?}");
        assert_eq!(t[0].layout, Layout::TheRock);
        assert_eq!(t[0].path, site);
        let libs = site.join(format!("_rocm_sdk_libraries{suffix}/lib"));
        assert_eq!(
            t[0].find(&["libMIOpen.so.1", "libMIOpen.so"]),
            Some(libs.join("libMIOpen.so.1"))
        );
        assert_eq!(t[0].find(&["libhipblaslt.so.1"]), None);
        assert_eq!(t[0].hip, site.join("_rocm_sdk_core/lib/libamdhip64.so.7"));
    }
}

#[test]
fn torch_bundle_comes_after_therock_and_alone_is_found_by_bare_names() {
    let tmp = tempfile::tempdir().expect("tmp");
    let site = tmp.path().join("lib/python3.11/site-packages");
    touch(&site.join("torch/lib/libamdhip64.so"));
    touch(&site.join("torch/lib/libMIOpen.so"));
    let t = trees_at(tmp.path());
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].layout, Layout::TorchBundle);
    assert_eq!(t[0].path, site.join("torch"));
    assert_eq!(
        t[0].find(&["libMIOpen.so.1", "libMIOpen.so"]),
        Some(site.join("torch/lib/libMIOpen.so"))
    );
    // The torch directory itself names the same tree (what probe passes a worker).
    assert_eq!(trees_at(&site.join("torch"))[0], t[0]);
    therock_site(&site, "");
    let both = trees_at(tmp.path());
    assert_eq!(
        both.iter().map(|t| t.layout).collect::<Vec<_>>(),
        vec![Layout::TheRock, Layout::TorchBundle]
    );
}

#[test]
fn a_python_interpreter_names_its_environment() {
    let tmp = tempfile::tempdir().expect("tmp");
    let env = tmp.path().join("venv");
    therock_site(&env.join("lib/python3.12/site-packages"), "");
    touch(&env.join("bin/python3"));
    let t = trees_at(&env.join("bin/python3"));
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].layout, Layout::TheRock);
    assert!(
        trees_at(&env.join("bin")).is_empty(),
        "bin/ is not an environment"
    );
}

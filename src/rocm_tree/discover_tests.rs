use super::*;
use std::fs;

fn touch(p: &Path) {
    fs::create_dir_all(p.parent().expect("a file in a directory")).expect("mkdir");
    fs::write(p, b"").expect("write");
}

/// A machine under `root`: /opt/rocm (-> rocm-6.4.1's files), /opt/rocm-5.7.1, a system lib
/// dir, a venv with TheRock's packages and a conda env with torch's bundle.
fn machine(root: &Path) -> Places {
    let opt = root.join("opt");
    touch(&opt.join("rocm-6.4.1/lib/libamdhip64.so.6"));
    touch(&opt.join("rocm-5.7.1/lib/libamdhip64.so.5"));
    touch(&opt.join("rocm/lib/libamdhip64.so.6"));
    touch(&root.join("usr/lib64/libamdhip64.so.5"));
    let venv = root.join("venv");
    let site = venv.join("lib/python3.12/site-packages");
    touch(&site.join("_rocm_sdk_core/lib/libamdhip64.so.7"));
    touch(&site.join("_rocm_sdk_libraries_gfx1151/lib/libMIOpen.so.1"));
    touch(&venv.join("bin/python3"));
    let conda = root.join("conda");
    touch(&conda.join("lib/python3.10/site-packages/torch/lib/libamdhip64.so"));
    Places {
        opt,
        loader_dirs: vec![root.join("usr/lib64")],
        ..Places::default()
    }
}

#[test]
fn the_order_is_flag_rocm_path_venv_conda_python_opt_then_loader() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path();
    let mut p = machine(root);
    let pick = |p: &Places| choose(p).expect("a tree").found.tree.path;
    assert_eq!(pick(&p), root.join("opt/rocm"));
    p.path = vec![root.join("venv/bin")];
    assert_eq!(pick(&p), root.join("venv/lib/python3.12/site-packages"));
    p.conda_prefix = Some(root.join("conda"));
    assert_eq!(
        pick(&p),
        root.join("conda/lib/python3.10/site-packages/torch")
    );
    p.virtual_env = Some(root.join("venv"));
    assert_eq!(pick(&p), root.join("venv/lib/python3.12/site-packages"));
    p.rocm_path = Some(root.join("opt/rocm-5.7.1"));
    assert_eq!(pick(&p), root.join("opt/rocm-5.7.1"));
    p.flag = Some(root.join("opt/rocm-6.4.1/lib"));
    let c = choose(&p).expect("a tree");
    assert_eq!(c.found.tree.path, root.join("opt/rocm-6.4.1/lib"));
    assert_eq!(c.found.tree.layout, tree::Layout::LibDir);
    assert!(c.line().contains("(from --rocm "), "{}", c.line());
    let only_loader = Places {
        loader_dirs: vec![root.join("usr/lib64")],
        opt: root.join("no-opt"),
        ..Places::default()
    };
    assert_eq!(pick(&only_loader), root.join("usr/lib64"));
}

#[test]
fn the_system_tree_spans_the_loaders_directories_and_can_be_named() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path();
    let mut p = machine(root);
    touch(&root.join("usr/lib/librocm_smi64.so.1"));
    p.loader_dirs = vec![
        root.join("usr/lib64"),
        root.join("usr/lib"),
        root.join("none"),
    ];
    p.flag = Some(PathBuf::from(SYSTEM));
    let c = choose(&p).expect("--rocm system");
    assert_eq!(c.found.tree.layout, tree::Layout::System);
    assert_eq!(
        c.found.tree.lib_dirs,
        vec![root.join("usr/lib64"), root.join("usr/lib")]
    );
    assert_eq!(
        c.found.tree.find(&["librocm_smi64.so.1"]),
        Some(root.join("usr/lib/librocm_smi64.so.1"))
    );
}

#[test]
fn rocm_path_pointing_nowhere_is_a_note_and_a_bad_flag_is_an_error() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path();
    let mut p = machine(root);
    p.rocm_path = Some(root.join("nowhere"));
    let c = choose(&p).expect("/opt/rocm is still found");
    assert_eq!(c.found.tree.path, root.join("opt/rocm"));
    assert_eq!(
        c.notes,
        vec![format!(
            "$ROCM_PATH={} holds no HIP runtime",
            root.join("nowhere").display()
        )]
    );
    p.flag = Some(root.join("venv/bin"));
    let e = choose(&p).expect_err("--rocm is never passed over");
    assert!(
        e.starts_with(&format!(
            "--rocm {}: no HIP runtime there",
            root.join("venv/bin").display()
        )),
        "{e}"
    );
    let nothing = Places {
        opt: root.join("no-opt"),
        ..Places::default()
    };
    let e = choose(&nothing).expect_err("no tree");
    assert!(e.starts_with("no ROCm tree found"), "{e}");
}

#[test]
fn all_lists_every_tree_once_with_versioned_prefixes_after_opt_rocm() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path();
    let mut p = machine(root);
    p.virtual_env = Some(root.join("venv"));
    p.conda_prefix = Some(root.join("conda"));
    p.path = vec![root.join("venv/bin")];
    let found = all(&p);
    let paths: Vec<PathBuf> = found.iter().map(|f| f.tree.path.clone()).collect();
    assert_eq!(
        paths,
        vec![
            root.join("venv/lib/python3.12/site-packages"),
            root.join("conda/lib/python3.10/site-packages/torch"),
            root.join("opt/rocm"),
            root.join("opt/rocm-5.7.1"),
            root.join("opt/rocm-6.4.1"),
            root.join("usr/lib64"),
        ]
    );
    assert_eq!(found[0].source, Source::VirtualEnv(root.join("venv")));
    assert_eq!(
        found[3].source,
        Source::OptVersioned(root.join("opt/rocm-5.7.1"))
    );
}

#[test]
fn the_users_site_packages_come_after_the_python_on_path_and_before_opt_rocm() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path();
    let mut p = machine(root);
    let home = root.join("home");
    touch(&home.join(".local/lib/python3.12/site-packages/_rocm_sdk_core/lib/libamdhip64.so.7"));
    p.home = Some(home.clone());
    let c = choose(&p).expect("the user's site");
    assert_eq!(c.found.source, Source::UserSite(home.join(".local")));
    p.path = vec![root.join("venv/bin")];
    assert_eq!(
        choose(&p).expect("python3 on PATH").found.source,
        Source::PythonOnPath(root.join("venv/bin/python3"))
    );
}

#[test]
fn a_pyenv_shim_stands_for_the_version_pyenv_selects() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().join(".pyenv");
    touch(&root.join("shims/python3"));
    fs::write(root.join("version"), "3.12.4\n").expect("write");
    touch(&root.join("versions/3.12.4/lib/python3.12/site-packages/torch/lib/libamdhip64.so"));
    let p = Places {
        path: vec![root.join("shims")],
        opt: tmp.path().join("no-opt"),
        ..Places::default()
    };
    let c = choose(&p).expect("the shim's version");
    assert_eq!(c.found.tree.layout, tree::Layout::TorchBundle);
    assert_eq!(
        c.found.source,
        Source::PythonOnPath(root.join("shims/python3"))
    );
}

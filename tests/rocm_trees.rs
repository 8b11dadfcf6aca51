//! Where rocsweep finds ROCm, with real pieces: Debian's HIP 5.2 runtime (and its hipRAND) and
//! the fake ROCm, each laid out as TheRock's venv packages, as torch's bundled torch/lib and as
//! /opt/rocm-X.Y prefixes (tests/rocm_trees/layout.rs); one tree is chosen as a whole, and a
//! process that maps ROCm from two trees says so on every unit.

#[path = "rocm_trees/layout.rs"]
mod layout;

use layout::*;
use std::path::Path;
use std::process::Command;

struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// rocsweep with a clean ROCm environment: no $ROCM_PATH, venv, conda env or --rocm from the
/// caller, `/opt` replaced by an empty directory unless `vars` name one; the healthy fake model.
fn rocsweep(tmp: &Path, args: &[&str], vars: &[(&str, &Path)]) -> Out {
    let empty_opt = tmp.join("empty-opt");
    std::fs::create_dir_all(&empty_opt).unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_rocsweep"));
    c.args(args)
        .env_remove("ROCM_PATH")
        .env_remove("ROCSWEEP_ROCM")
        .env_remove("ROCSWEEP_ROCM_LIB_DIR")
        .env_remove("VIRTUAL_ENV")
        .env_remove("CONDA_PREFIX")
        .env_remove("LD_LIBRARY_PATH")
        .env("ROCSWEEP_OPT_DIR", &empty_opt)
        // No ~/.local of the caller's (a `pip install --user` ROCm would be a tree).
        .env("HOME", &empty_opt)
        .env("FAKE_ROCM_MODEL", model("healthy.toml"));
    for (k, v) in vars {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    Out {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn probe(tmp: &Path, extra: &[&str], vars: &[(&str, &Path)]) -> Out {
    let mut args = vec!["probe", "--backend", "rocm"];
    args.extend_from_slice(extra);
    rocsweep(tmp, &args, vars)
}

/// A one-case sweep of `op` over the named solvers, run for one trial; (first stderr line,
/// solver -> (status, error) per row).
fn sweep(tmp: &Path, name: &str, body: &str, vars: &[(&str, &Path)]) -> (String, Vec<[String; 3]>) {
    let file = tmp.join(format!("{name}.toml"));
    std::fs::write(
        &file,
        format!("name = \"{name}\"\nbackend = \"rocm\"\n{body}\n[timing]\nmin_samples = 2\nmax_time = 0.02\n"),
    )
    .unwrap();
    let dir = tmp.join(format!("run-{name}"));
    let (f, d) = (file.display().to_string(), dir.display().to_string());
    let o = rocsweep(
        tmp,
        &[
            "run",
            &f,
            "--out",
            &d,
            "--trials",
            "1",
            "--quiet",
            "--no-report",
        ],
        vars,
    );
    let (header, rows) = rocsweep::results::csv::read(&dir.join("results.csv"))
        .unwrap_or_else(|e| panic!("no results.csv ({e:?}); stderr:\n{}", o.stderr));
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let (s, st, er) = (col("solver"), col("status"), col("error"));
    let rows = rows
        .iter()
        .map(|r| [r[s].clone(), r[st].clone(), r[er].clone()])
        .collect();
    (
        o.stderr.lines().next().unwrap_or_default().to_string(),
        rows,
    )
}

const GEMM: &str = "op = \"gemm\"\n[axes]\nm = 64\nsolver = [\"rocblas\", \"hipblaslt\"]\n";

#[test]
fn the_fake_as_therock_packages_is_found_from_the_venv_and_runs_as_one_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let venv = tmp.path().join("venv");
    let site = fake_therock(&venv, &[]);
    let o = probe(tmp.path(), &[], &[("VIRTUAL_ENV", &venv)]);
    assert_eq!(o.code, Some(0), "{}{}", o.stdout, o.stderr);
    let used = format!(
        "ROCm tree: TheRock packages {} (from $VIRTUAL_ENV={})",
        site.display(),
        venv.display()
    );
    assert!(o.stdout.contains(&used), "{}", o.stdout);
    let miopen = site.join("_rocm_sdk_libraries_gfx1100/lib/libMIOpen.so.1");
    assert!(
        o.stdout.contains(&format!("({})", miopen.display())),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("ROCm libraries mapped: 1 files, one HIP runtime, all from the chosen tree"),
        "one file behind every soname, loaded once: {}",
        o.stdout
    );
    // $ROCM_PATH pointing nowhere is a note on the run's first line; the venv is still used.
    let nowhere = tmp.path().join("nowhere");
    let (first, rows) = sweep(
        tmp.path(),
        "therock-gemm",
        GEMM,
        &[("VIRTUAL_ENV", &venv), ("ROCM_PATH", &nowhere)],
    );
    assert_eq!(
        first,
        format!(
            "rocm: using TheRock packages {} (from $VIRTUAL_ENV={}); note: $ROCM_PATH={} holds no HIP runtime",
            site.display(),
            venv.display(),
            nowhere.display()
        )
    );
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows.iter().all(|r| r[1] == "ok"), "{rows:?}");
    // Provenance: the one file mapped, with its soname, version and SHA-256 (the run's own).
    let text = std::fs::read_to_string(tmp.path().join("run-therock-gemm/manifest.json")).unwrap();
    let m: serde_json::Value = serde_json::from_str(&text).unwrap();
    let libs = m["backend"]["libraries"]
        .as_array()
        .expect("backend.libraries");
    let hip = site.join("_rocm_sdk_core/lib/libamdhip64.so.6");
    use sha2::Digest as _;
    let sha: String = sha2::Sha256::digest(std::fs::read(&hip).unwrap())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(libs.len(), 1, "{libs:?}");
    assert_eq!(libs[0]["path"], hip.display().to_string());
    assert_eq!(libs[0]["soname"], "libamdhip64.so.6");
    assert_eq!(libs[0]["version"], "6");
    assert_eq!(libs[0]["sha256"], sha);
}

#[test]
fn a_tree_missing_one_library_fails_only_that_librarys_units() {
    let tmp = tempfile::tempdir().unwrap();
    let venv = tmp.path().join("venv");
    let site = fake_therock(&venv, &["libhipblaslt"]);
    let (_, rows) = sweep(tmp.path(), "no-hipblaslt", GEMM, &[("VIRTUAL_ENV", &venv)]);
    let get = |s: &str| rows.iter().find(|r| r[0] == s).cloned().unwrap();
    assert_eq!(get("rocblas")[1], "ok", "{rows:?}");
    let lt = get("hipblaslt");
    assert!(lt[1] == "error" || lt[1] == "unsupported", "{rows:?}");
    assert!(
        lt[2].contains(&format!(
            "not found in the ROCm tree TheRock packages {}",
            site.display()
        )) && lt[2].contains("libhipblaslt.so.1"),
        "the reason names the tree and what was looked for: {rows:?}"
    );
}

#[test]
fn a_venv_without_the_device_package_makes_rocblas_and_hipblaslt_units_errors_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let venv = tmp.path().join("venv");
    let site = fake_therock(&venv, &["device"]);
    let (_, rows) = sweep(tmp.path(), "no-device", GEMM, &[("VIRTUAL_ENV", &venv)]);
    let libs = site.join("_rocm_sdk_libraries_gfx1100/lib");
    assert_eq!(rows.len(), 2, "{rows:?}");
    let pr = probe(tmp.path(), &[], &[("VIRTUAL_ENV", &venv)]);
    assert!(
        pr.stdout.contains(
            "rocBLAS and hipBLASLt units without their kernels are `error` rows (KERNELS_MISSING); \
             install the device files for gfx1100 (TheRock: the device-gfx1100 package"
        ),
        "{}",
        pr.stdout
    );
    for r in &rows {
        assert_eq!(r[1], "error", "{rows:?}");
        let dir = libs.join(format!("{}/library", r[0]));
        assert!(
            r[2].contains("KERNELS_MISSING")
                && r[2].contains(&format!(
                    "no kernels for gfx1100: {} does not exist",
                    dir.display()
                ))
                && r[2].contains("the device-gfx1100 package of your ROCm"),
            "{rows:?}"
        );
    }
}

const CONV: &str = "op = \"conv2d\"\n[axes]\nn = 1\nc_in = 3\nc_out = 8\nh = 8\nsolver = \"ConvDirectNaiveConvFwd\"\n";

#[test]
fn miopen_runs_without_its_files_for_the_target_and_the_run_says_which_are_missing() {
    let tmp = tempfile::tempdir().unwrap();
    // The device package installed (the fake device is a gfx1100): nothing to say.
    let venv = tmp.path().join("venv");
    fake_therock(&venv, &[]);
    let o = rocsweep_conv(tmp.path(), "with-device", &venv);
    assert_eq!(o.0, ["ok"], "{}", o.1);
    assert!(!o.1.contains("MIOpen lacks"), "{}", o.1);
    // The device files of another target only (the gfx1151 package, not the gfx1100 one): MIOpen
    // still runs, as the real one does, and the run's second line names what it lacks and what
    // provides it.
    let other = tmp.path().join("other");
    let site = fake_therock(&other, &["device"]);
    let libs = site.join("_rocm_sdk_libraries_gfx1100/lib");
    device_files(&libs, "gfx1151");
    let o = rocsweep_conv(tmp.path(), "other-device", &other);
    assert_eq!(o.0, ["ok"], "MIOpen's units run: {}", o.1);
    let second = o.1.lines().nth(1).unwrap_or_default();
    assert_eq!(
        second,
        format!(
            "rocm: note: MIOpen lacks its db for gfx1100 (nothing for it in {}) and its CK grouped-convolution library {}: \
             its units run (it compiles its kernels at first use and leaves out its CK grouped-convolution solvers), \
             slower than with them; the tree has them for gfx1151 but not for gfx1100: its device-gfx1100 package is not \
             installed (pip install \"rocm[libraries,device-gfx1100]\")",
            site.join("_rocm_sdk_libraries_gfx1100/share/miopen/db")
                .display(),
            libs.join("libMIOpenCKGroupedConv_gfx1100.so").display()
        )
    );
    // probe says the same of this tree, under its device files.
    let pr = probe(tmp.path(), &[], &[("VIRTUAL_ENV", &other)]);
    assert!(
        pr.stdout
            .contains(&format!("      {}\n", &second["rocm: note: ".len()..])),
        "{}",
        pr.stdout
    );
    // The manifest keeps it with the backend's versions and with the tree's record.
    let m = rocsweep::results::manifest::read(&tmp.path().join("run-other-device")).unwrap();
    assert_eq!(m.rocm_trees.len(), 1, "{:?}", m.rocm_trees);
    assert_eq!(
        Some(m.rocm_trees[0].note.as_str()),
        second.strip_prefix("rocm: note: ")
    );
    assert!(
        m.backend.versions["MIOpen device files"]
            .contains("device-gfx1100 package is not installed"),
        "{:?}",
        m.backend.versions
    );
}

/// A one-unit MIOpen sweep in the venv: (statuses, stderr).
fn rocsweep_conv(tmp: &Path, name: &str, venv: &Path) -> (Vec<String>, String) {
    let file = tmp.join(format!("{name}.toml"));
    std::fs::write(
        &file,
        format!("name = \"{name}\"\nbackend = \"rocm\"\n{CONV}[timing]\nenabled = false\n"),
    )
    .unwrap();
    let dir = tmp.join(format!("run-{name}"));
    let (f, d) = (file.display().to_string(), dir.display().to_string());
    let args = [
        "run",
        &f,
        "--out",
        &d,
        "--trials",
        "1",
        "--quiet",
        "--no-report",
    ];
    let o = rocsweep(tmp, &args, &[("VIRTUAL_ENV", venv)]);
    let statuses = rocsweep::results::rundata::RunData::load(&dir)
        .map(|r| r.rows.iter().map(|r| r.status.name().to_string()).collect())
        .unwrap_or_default();
    (statuses, o.stderr)
}

#[test]
fn the_fake_as_torchs_bundle_is_found_from_the_conda_env_by_bare_names() {
    let tmp = tempfile::tempdir().unwrap();
    let env = tmp.path().join("conda");
    let torch = fake_torch(&env);
    let o = probe(tmp.path(), &[], &[("CONDA_PREFIX", &env)]);
    assert_eq!(o.code, Some(0), "{}{}", o.stdout, o.stderr);
    assert!(
        o.stdout.contains(&format!(
            "ROCm tree: torch bundle {} (from $CONDA_PREFIX={})",
            torch.display(),
            env.display()
        )),
        "{}",
        o.stdout
    );
    for lib in ["libMIOpen.so", "librocblas.so", "libhiprand.so"] {
        let p = torch.join("lib").join(lib);
        assert!(
            o.stdout.contains(&format!("({})", p.display())),
            "{lib}: {}",
            o.stdout
        );
    }
}

#[test]
fn opt_prefixes_are_all_listed_and_one_is_used_when_named() {
    let tmp = tempfile::tempdir().unwrap();
    let opt = tmp.path().join("opt");
    fake_prefix(&opt.join("rocm-5.7.1"), 5);
    fake_prefix(&opt.join("rocm-7.1.0"), 7);
    symlink("rocm-7.1.0", &opt.join("rocm"));
    let o = probe(tmp.path(), &[], &[("ROCSWEEP_OPT_DIR", &opt)]);
    assert_eq!(o.code, Some(0), "{}{}", o.stdout, o.stderr);
    let out = &o.stdout;
    let rocm = opt.join("rocm");
    assert!(
        out.contains(&format!(
            "a run uses prefix {} (from {})",
            rocm.display(),
            rocm.display()
        )),
        "{out}"
    );
    // /opt/rocm and /opt/rocm-7.1.0 are one tree (one HIP runtime file): listed once.
    let v5 = opt.join("rocm-5.7.1");
    assert!(
        out.contains(&format!(
            "  * prefix {} (found from {})",
            rocm.display(),
            rocm.display()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "    prefix {} (found from {} (used only when named))",
            v5.display(),
            v5.display()
        )),
        "{out}"
    );
    assert!(!out.contains("rocm-7.1.0 (found from"), "{out}");
    let debian = Path::new(DEBIAN).join("libamdhip64.so.5").exists();
    assert!(
        out.contains(&format!("trees found: {} (", 2 + usize::from(debian))),
        "{out}"
    );
    let v5s = v5.display().to_string();
    let o = probe(tmp.path(), &["--rocm", &v5s], &[("ROCSWEEP_OPT_DIR", &opt)]);
    assert!(
        o.stdout
            .contains(&format!("ROCm tree: prefix {v5s} (from --rocm {v5s})"))
            && o.stdout.contains(&format!("({v5s}/lib/libamdhip64.so.5)")),
        "{}",
        o.stdout
    );
}

#[test]
fn a_rocm_path_without_a_hip_runtime_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let e = empty.display().to_string();
    for flag in ["--rocm", "--rocm-lib-dir"] {
        let o = probe(tmp.path(), &[flag, &e], &[]);
        assert_eq!(o.code, Some(2), "{}", o.stderr);
        assert!(
            o.stderr.contains(&format!(
                "error: --rocm {e}: no HIP runtime there; looked for libamdhip64.so, libamdhip64.so.7, libamdhip64.so.6, libamdhip64.so.5 in {e}, {e}/lib"
            )),
            "{}",
            o.stderr
        );
    }
    let o = probe(tmp.path(), &["--rocm", "/no/such/dir"], &[]);
    assert_eq!(o.code, Some(2));
    assert!(
        o.stderr
            .contains("error: --rocm /no/such/dir: no such file or directory"),
        "{}",
        o.stderr
    );
}

#[path = "rocm_trees/debian.rs"]
mod debian;

/// Issue 40, D6: a tree whose path holds a newline (the kernel writes it `\012` in
/// /proc/self/maps) is the tree its libraries are mapped from, not a mix.
#[test]
fn a_tree_with_a_newline_in_its_path_is_one_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("rocm\nnew");
    let lib = prefix.join("lib");
    put(fake_library(), &lib.join("libamdhip64.so.5"));
    for n in [
        "libMIOpen.so.1",
        "libhipblaslt.so.0",
        "librocblas.so.3",
        "libhiprand.so.1",
    ] {
        same(&lib.join("libamdhip64.so.5"), &lib.join(n));
    }
    let copy = "op = \"copy\"\n[axes]\nbytes = [64, 4096]\n";
    let (_, rows) = sweep(tmp.path(), "newline", copy, &[("ROCSWEEP_ROCM", &lib)]);
    assert_eq!(rows.len(), 2, "{rows:?}");
    for r in &rows {
        assert_eq!(r[1], "ok", "{rows:?}");
    }
}

/// Issue 40, D5: a rocBLAS cut short (a partial download) costs only rocBLAS's units, each
/// naming the file and what is wrong with it (it killed the worker with SIGBUS before, and
/// with it the whole backend); an empty or garbage HIP runtime is named with its reason.
#[test]
fn a_broken_library_file_is_named_and_costs_only_its_own_units() {
    let tmp = tempfile::tempdir().unwrap();
    let lib = tmp.path().join("broken/lib");
    put(fake_library(), &lib.join("libamdhip64.so.5"));
    for n in ["libMIOpen.so.1", "libhipblaslt.so.0", "libhiprand.so.1"] {
        same(&lib.join("libamdhip64.so.5"), &lib.join(n));
    }
    let bytes = std::fs::read(fake_library()).unwrap();
    let rocblas = lib.join("librocblas.so.3");
    std::fs::write(&rocblas, &bytes[..200_000]).unwrap();
    device_files(&lib, "gfx1100");
    let (_, rows) = sweep(tmp.path(), "broken", GEMM, &[("ROCSWEEP_ROCM", &lib)]);
    let get = |s: &str| rows.iter().find(|r| r[0] == s).cloned().unwrap();
    assert_eq!(get("hipblaslt")[1], "ok", "{rows:?}");
    let rb = get("rocblas");
    assert_eq!(rb[1], "error", "{rows:?}");
    assert!(
        rb[2].contains("LIBRARY_UNLOADABLE")
            && rb[2].contains(&format!(
                "{} cannot be loaded: it is cut short",
                rocblas.display()
            )),
        "{rows:?}"
    );

    for (content, why) in [
        (&b""[..], "the file is empty (0 bytes)"),
        (&b"garbage\n"[..], "not an ELF file"),
    ] {
        let hip = tmp.path().join("bad-hip/lib/libamdhip64.so.5");
        std::fs::create_dir_all(hip.parent().unwrap()).unwrap();
        std::fs::write(&hip, content).unwrap();
        let o = probe(tmp.path(), &[], &[("ROCSWEEP_ROCM", hip.parent().unwrap())]);
        let text = format!("{}{}", o.stdout, o.stderr);
        assert!(
            text.contains(&format!("{} cannot be loaded: ", hip.display())) && text.contains(why),
            "{text}"
        );
        assert!(!text.contains("HIP missing"), "{text}");
    }
}

/// Issue 40, minor: `--rocm` on a symbolic link loop says so, and on a pyenv shim names the
/// environment the shim selects and the places looked at there (not the shim's path + /lib).
#[test]
fn rocm_flag_names_a_link_loop_and_a_shims_environment() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    let o = probe(tmp.path(), &["--rocm", a.to_str().unwrap()], &[]);
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(
        o.stderr
            .contains(&format!("--rocm {}: a symbolic link loop", a.display())),
        "{}",
        o.stderr
    );
    let pyenv = tmp.path().join("pyenv");
    let shim = pyenv.join("shims/python3");
    std::fs::create_dir_all(shim.parent().unwrap()).unwrap();
    std::fs::write(&shim, "#!/bin/sh\n").unwrap();
    std::fs::write(pyenv.join("version"), "3.12.1\n").unwrap();
    let env = pyenv.join("versions/3.12.1");
    std::fs::create_dir_all(env.join("lib/python3.12/site-packages")).unwrap();
    let o = probe(tmp.path(), &["--rocm", shim.to_str().unwrap()], &[]);
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(
        o.stderr.contains(&format!(
            "no HIP runtime in this Python's environment {}; looked for",
            env.display()
        )) && !o.stderr.contains("shims/python3/lib"),
        "{}",
        o.stderr
    );
}

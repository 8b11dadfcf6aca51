//! The ROCm backend against the real thing that exists without an AMD GPU: Debian's HIP 5.2
//! runtime (libamdhip64-5) and its hipcc. `.ci/run` installs both; under CI=true a missing
//! package fails the test instead of skipping it.

use std::path::Path;
use std::process::Command;

const DEBIAN_HIP: &str = "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5";

/// True when the test can run; panics under CI when what .ci/run installs is missing.
fn have(what: &str, present: bool) -> bool {
    if !present {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{what} is missing, but .ci/run installs it");
        }
        eprintln!("skipped: {what} is not installed (apt-get install it to run this test)");
    }
    present
}

#[test]
#[cfg_attr(
    rocsweep_missing_hip,
    ignore = "needs libamdhip64-5 (apt-get install libamdhip64-5)"
)]
fn probe_loads_debians_hip_runtime_and_says_no_gpu() {
    if !have("libamdhip64-5", Path::new(DEBIAN_HIP).exists()) {
        return;
    }
    let o = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .args(["probe", "--backend", "rocm"])
        // Only the system's own search path: no ROCM_PATH or lib dir from the caller.
        .env_remove("ROCM_PATH")
        .env_remove("ROCSWEEP_ROCM_LIB_DIR")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    // Exit code 5: the backend's libraries load but it cannot run here.
    assert_eq!(o.status.code(), Some(5), "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        out.contains("rocm: unavailable (no AMD GPU is present"),
        "{out}"
    );
    assert!(
        out.contains("hipErrorNoDevice") || out.contains("hipErrorInvalidDevice"),
        "the runtime's own error name is shown: {out}"
    );
    assert!(
        out.contains("HIP runtime: 5.2.") && out.contains("libamdhip64.so.5"),
        "version and the file it came from: {out}"
    );
    // Debian has hipRAND and HIP's built-in hipRTC but no MIOpen, hipBLASLt or rocBLAS: each
    // missing one says what was looked for where.
    assert!(
        out.contains("hipRTC: ") && out.contains("(built in)"),
        "{out}"
    );
    assert!(
        out.contains("MIOpen: MIOpen (libMIOpen) not found in the ROCm tree system libraries"),
        "{out}"
    );
    assert!(out.contains("libMIOpen.so.1"), "{out}");
    assert!(
        out.contains("rocBLAS: rocBLAS (librocblas) not found"),
        "{out}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
#[cfg_attr(
    rocsweep_missing_hip,
    ignore = "needs libamdhip64-5 (apt-get install libamdhip64-5)"
)]
fn a_rocm_run_without_a_gpu_is_refused_before_anything_is_written() {
    if !have("libamdhip64-5", Path::new(DEBIAN_HIP).exists()) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .arg("run")
        .arg(format!(
            "{}/sweeps/rocm-smoke.toml",
            env!("CARGO_MANIFEST_DIR")
        ))
        .arg("--out")
        .arg(&out)
        .args(["--quiet", "--no-report"])
        .env_remove("ROCM_PATH")
        .env_remove("ROCSWEEP_ROCM_LIB_DIR")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("no AMD GPU is present"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!out.exists(), "no run directory is left behind");
}

/// The glibc loader's own record (LD_DEBUG=files) of which libraries one process loaded: the
/// CLI process's goes to its stderr, each worker's to the worker's log.
fn cli_loads(args: &[&str], dir: &Path) -> (Option<i32>, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .args(args)
        .current_dir(dir)
        .env("LD_DEBUG", "files")
        .env_remove("ROCM_PATH")
        .env_remove("ROCSWEEP_ROCM_LIB_DIR")
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
#[cfg_attr(
    rocsweep_missing_hip,
    ignore = "needs libamdhip64-5 (apt-get install libamdhip64-5)"
)]
fn the_cli_process_never_loads_a_vendor_library() {
    if !have("libamdhip64-5", Path::new(DEBIAN_HIP).exists()) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let smoke = format!("{}/sweeps/rocm-smoke.toml", env!("CARGO_MANIFEST_DIR"));
    let auto = tmp.path().join("auto.toml");
    std::fs::write(
        &auto,
        "name = \"auto\"\nop = \"gemm\"\nbackend = \"auto\"\n[axes]\nm = 8\nn = 8\nk = 8\n",
    )
    .unwrap();
    let auto = auto.to_string_lossy().into_owned();
    let cases: [(&[&str], Option<i32>, &str); 4] = [
        (
            &["probe", "--backend", "rocm"],
            Some(5),
            "HIP runtime: 5.2.",
        ),
        (&["solvers", "c_in=16"], Some(5), "no AMD GPU is present"),
        (
            &["run", &smoke, "--out", "rocm-run", "--quiet", "--no-report"],
            Some(2),
            "no AMD GPU is present",
        ),
        (
            &[
                "run",
                &auto,
                "--out",
                "auto-run",
                "--quiet",
                "--no-report",
                "--trials",
                "1",
            ],
            Some(0),
            "backend auto picked cpu; rocm cannot run: no AMD GPU is present",
        ),
    ];
    for (args, code, says) in cases {
        let (got, out, err) = cli_loads(args, tmp.path());
        let loader: Vec<&str> = err.lines().filter(|l| l.contains("file=")).collect();
        assert!(
            !loader.is_empty(),
            "{args:?}: LD_DEBUG shows the CLI's own loads: {err}"
        );
        for lib in [
            "libamdhip64",
            "libMIOpen",
            "librocblas",
            "libhipblaslt",
            "libcuda",
            "libnvidia-ml",
            "librocm_smi",
        ] {
            assert!(
                !loader.iter().any(|l| l.contains(lib)),
                "{args:?}: the CLI process loaded {lib}: {loader:?}"
            );
        }
        assert_eq!(got, code, "{args:?}: stdout:\n{out}\nstderr:\n{err}");
        // The worker did load HIP, and said what it found.
        assert!(
            out.contains(says) || err.contains(says),
            "{args:?}: {out}\n{err}"
        );
    }
    assert!(!tmp.path().join("rocm-run").exists(), "nothing written");
    let manifest = std::fs::read_to_string(tmp.path().join("auto-run/manifest.json")).unwrap();
    assert!(
        manifest.contains(
            "\"picked\": \"backend auto picked cpu; rocm cannot run: no AMD GPU is present"
        ),
        "the manifest says what auto picked and why: {manifest}"
    );
}

#[test]
fn a_missing_rocm_lib_dir_is_a_usage_error() {
    let o = Command::new(env!("CARGO_BIN_EXE_rocsweep"))
        .args([
            "probe",
            "--backend",
            "rocm",
            "--rocm-lib-dir",
            "/no/such/dir",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--rocm /no/such/dir: no such file or directory"),
        "{err}"
    );
}

/// Debian's hipcc (HIP 5.2, clang 15) compiles the same kernel files hipRTC and NVRTC compile
/// into real AMD code objects. gfx1100 is not tried: Debian's rocm-device-libs 5.2 has no
/// device library for it (clang says so), so only RDNA1 and RDNA2 targets are checked.
#[test]
#[cfg_attr(rocsweep_missing_hipcc, ignore = "needs hipcc (apt-get install hipcc)")]
fn hipcc_compiles_the_kernels_for_rdna1_and_rdna2() {
    let hipcc = Path::new("/usr/bin/hipcc");
    if !have("hipcc", hipcc.exists()) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let k = format!("{}/kernels", env!("CARGO_MANIFEST_DIR"));
    let src = tmp.path().join("all.hip");
    std::fs::write(
        &src,
        format!(
            "#include \"{k}/prelude.h\"\n#include \"{k}/cast.cu\"\n#include \"{k}/conv_ref.cu\"\n"
        ),
    )
    .unwrap();
    let co = tmp.path().join("kernels.co");
    let o = Command::new(hipcc)
        .args([
            "--genco",
            "--offload-arch=gfx1010",
            "--offload-arch=gfx1030",
        ])
        .arg(&src)
        .arg("-o")
        .arg(&co)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "hipcc failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let bundle = std::fs::read(&co).unwrap();
    assert!(
        bundle.starts_with(b"__CLANG_OFFLOAD_BUNDLE__"),
        "an offload bundle"
    );
    let text = String::from_utf8_lossy(&bundle);
    for target in ["gfx1010", "gfx1030"] {
        assert!(
            text.contains(&format!("amdgcn-amd-amdhsa--{target}")),
            "{target} code object in the bundle"
        );
    }
    for kernel in [
        "cast_bf16_f32",
        "relu_f16",
        "conv_fwd_ref_f32",
        "spin_forever",
    ] {
        assert!(text.contains(kernel), "{kernel} is in the code objects");
    }
}

/// Every target Debian's hipRTC 5.2 compiles for. It aborts (SIGABRT in comgr) on gfx940 and
/// newer and on gfx1100 and newer, whose device libraries 5.2 does not ship.
const HIPRTC_52_TARGETS: &[&str] = &[
    "gfx803", "gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c",
    "gfx1010", "gfx1011", "gfx1012", "gfx1013", "gfx1030", "gfx1031", "gfx1032", "gfx1033",
    "gfx1034", "gfx1035", "gfx1036",
];

const HIP_HEADERS: &str = "/usr/include/hip";

/// `rocsweep selftest --backend rocm --arch ...` with only the system's search path; with
/// `hide_headers`, in a mount namespace where /usr/include/hip is an empty directory (as on a
/// machine without libamdhip64-dev).
fn selftest(archs: &[&str], hide_headers: bool) -> (Option<i32>, String) {
    let exe = env!("CARGO_BIN_EXE_rocsweep");
    let arch = archs.join(",");
    let mut cmd = if hide_headers {
        let empty = tempfile::tempdir().unwrap().keep();
        let mut c = Command::new("unshare");
        c.args(["--mount", "--propagation", "private", "sh", "-c"])
            .arg(format!(
                "mount --bind {} {HIP_HEADERS} && exec \"$0\" \"$@\"",
                empty.display()
            ))
            .arg(exe);
        c
    } else {
        Command::new(exe)
    };
    // A failing selftest keeps its worker logs under TMPDIR: here, removed with the test's.
    let logs = tempfile::tempdir().unwrap();
    let o = cmd
        .args(["selftest", "--backend", "rocm", "--arch", &arch])
        .env("TMPDIR", logs.path())
        .env_remove("ROCM_PATH")
        .env_remove("ROCSWEEP_ROCM_LIB_DIR")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.code(), text)
}

fn assert_every_target_compiled(code: Option<i32>, out: &str) {
    for t in HIPRTC_52_TARGETS {
        let line = out
            .lines()
            .find(|l| l.contains(&format!("compile kernels for {t} ")))
            .unwrap_or_else(|| panic!("no line for {t}:\n{out}"));
        assert!(line.starts_with("PASS"), "{line}\n{out}");
        assert!(
            line.contains("16 kernels") && line.contains("HIP 5.2."),
            "{line}"
        );
    }
    assert!(
        out.contains("the rocm backend cannot run here: no AMD GPU is present"),
        "{out}"
    );
    assert_eq!(code, Some(5), "no GPU after passing compile checks:\n{out}");
}

/// Issue: hipRTC sees only the headers given to hiprtcCreateProgram, so `#include
/// <hip/hip_fp16.h>` failed with "file not found" without system HIP headers and with
/// "redefinition of '__half_raw'" with them. The kernels are compiled here exactly as the
/// backend assembles them, through its own loader and hipRTC calls, by Debian's real hipRTC,
/// and each code object is checked (AMDGPU ELF for the target, every kernel the backend looks up).
#[test]
#[cfg_attr(
    rocsweep_missing_hip,
    ignore = "needs libamdhip64-5 (apt-get install libamdhip64-5)"
)]
fn real_hiprtc_compiles_the_kernels_with_and_without_system_hip_headers() {
    if !have("libamdhip64-5", Path::new(DEBIAN_HIP).exists()) {
        return;
    }
    let headers = Path::new(HIP_HEADERS).join("hip_fp16.h").exists();
    // .ci/run installs hipcc, which brings libamdhip64-dev and its headers.
    if have("libamdhip64-dev (HIP headers in /usr/include/hip)", headers) {
        let (code, out) = selftest(HIPRTC_52_TARGETS, false);
        assert_every_target_compiled(code, &out);
        let (code, out) = selftest(HIPRTC_52_TARGETS, true);
        let namespaces = !out.contains("unshare:") && !out.contains("mount:");
        if have("mount namespaces (unshare --mount, as root)", namespaces) {
            assert_every_target_compiled(code, &out);
        }
    } else {
        let (code, out) = selftest(HIPRTC_52_TARGETS, false);
        assert_every_target_compiled(code, &out);
    }
}

/// A compiler that dies on one target costs that target's line, not the selftest.
#[test]
#[cfg_attr(
    rocsweep_missing_hip,
    ignore = "needs libamdhip64-5 (apt-get install libamdhip64-5)"
)]
fn a_crashing_compiler_fails_one_target_and_the_others_still_pass() {
    if !have("libamdhip64-5", Path::new(DEBIAN_HIP).exists()) {
        return;
    }
    let (code, out) = selftest(&["gfx1100", "gfx1030"], false);
    let crashed = out
        .lines()
        .find(|l| l.contains("compile kernels for gfx1100 "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(crashed.starts_with("FAIL"), "{crashed}");
    assert!(crashed.contains("killed by SIGABRT"), "{crashed}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("PASS") && l.contains("compile kernels for gfx1030 ")),
        "{out}"
    );
    assert_eq!(
        code,
        Some(3),
        "a failed check outranks the missing GPU:\n{out}"
    );
    assert!(out.contains("To report it, send this output"), "{out}");
}

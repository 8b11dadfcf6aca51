//! The fake ROCm library, built once per test binary (release: its CPU convolutions stand in
//! for a GPU) into its own target directory, so it never waits on the lock of the `cargo test`
//! that runs us. Shared by tests/rocm_fake.rs and tests/rocm_trees.rs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub fn fake_library() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let exe = PathBuf::from(env!("CARGO_BIN_EXE_rocsweep"));
        let target = exe
            .parent()
            .and_then(Path::parent)
            .expect("the binary lives in <target>/<profile>/")
            .join("fake-rocm-build");
        let o = Command::new(env!("CARGO"))
            .args(["build", "--release", "-p", "fake-rocm", "--target-dir"])
            .arg(&target)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "building the fake ROCm failed:\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let lib = target.join("release/libfake_rocm.so");
        assert!(lib.exists(), "{} was not built", lib.display());
        lib
    })
}

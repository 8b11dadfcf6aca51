//! A worker is any program that speaks the protocol: these are shell scripts, real
//! processes that really hang, print garbage and die.
use super::*;
use crate::exec::worker::protocol::encode;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

pub(crate) fn ready(protocol: u32) -> String {
    encode(&Event::Ready {
        protocol,
        pid: 0,
        info: Box::new(BackendInfo {
            backend: "cpu".into(),
            available: true,
            devices: vec!["test device".into()],
            ..BackendInfo::default()
        }),
    })
}

pub(crate) fn phase(p: &str) -> String {
    encode(&Event::Phase { phase: p.into() })
}

/// A supervisor whose workers run `body` (after the handshake line `ready`), with a limit
/// of `run_s` seconds on the run phase.
pub(crate) fn supervisor(dir: &Path, ready: &str, body: &str, run_s: f64) -> Supervisor {
    let exe = dir.join("worker.sh");
    let text = format!("#!/bin/sh\necho '{ready}'\n{body}\n");
    std::fs::write(&exe, text).unwrap_or_else(|e| panic!("{e}"));
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("{e}"));
    let spec = WorkerSpec {
        exe,
        backend: "cpu".into(),
        ..WorkerSpec::default()
    };
    let limits = Limits {
        run: run_s,
        grace: 0.2,
        ..Limits::default()
    };
    Supervisor::new(spec, dir.to_path_buf(), limits, Arc::default())
}

fn env() -> Env<'static> {
    Env {
        index: 0,
        trial: 1,
        vars: &[],
        backend: None,
        rocm: None,
    }
}

fn run(sup: &mut Supervisor, seen: &mut Vec<String>) -> Outcome {
    let case = crate::exec::record::row::tests::gemm_case();
    let mut watch = |w: Watch| match w {
        Watch::Phase(p) => seen.push(format!("phase {p}")),
        Watch::Beat { silent_s } => seen.push(format!("beat {silent_s:.0}")),
    };
    sup.run_unit(
        "u",
        &case,
        "default",
        &Policies::default(),
        env(),
        &mut watch,
    )
}

#[test]
fn a_silent_worker_is_a_hang_in_its_phase_and_is_killed() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let body = format!("read req\necho '{}'\nexec sleep 600", phase("run"));
    let mut sup = supervisor(dir.path(), &ready(PROTOCOL_VERSION), &body, 3.0);
    let mut seen = Vec::new();
    let out = run(&mut sup, &mut seen);
    assert_eq!(out.status, Status::Hang, "{out:?}");
    assert_eq!(out.phase, "run");
    assert!(
        out.error.contains("no progress in phase run"),
        "{}",
        out.error
    );
    assert_eq!(seen.first().map(String::as_str), Some("phase run"));
    // Heartbeats stopped with the script: the watch saw the silence grow.
    assert!(seen.iter().any(|s| s == "beat 2"), "{seen:?}");
    let pid: i32 = out
        .error
        .split("worker ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("a pid in {}", out.error));
    // SAFETY: signal 0 only asks whether the process exists.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    assert!(!alive, "worker {pid} still exists after its hang");
}

#[test]
fn a_worker_that_dies_is_a_crash_with_its_exit_and_last_stray_line() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let body = format!(
        "read req\necho '{}'\necho 'not json'\nexit 3",
        phase("alloc")
    );
    let mut sup = supervisor(dir.path(), &ready(PROTOCOL_VERSION), &body, 3.0);
    let out = run(&mut sup, &mut Vec::new());
    assert_eq!(out.status, Status::Crash, "{out:?}");
    assert_eq!(out.phase, "alloc");
    assert!(out.error.contains("exited with code 3"), "{}", out.error);
    assert!(
        out.error.contains("last non-protocol line: not json"),
        "{}",
        out.error
    );
}

#[test]
fn a_worker_of_another_protocol_is_refused_at_the_handshake() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut sup = supervisor(
        dir.path(),
        &ready(PROTOCOL_VERSION + 1),
        "exec sleep 600",
        3.0,
    );
    let err = match sup.start(env()) {
        Ok(info) => panic!("started: {info:?}"),
        Err(o) => o,
    };
    assert_eq!((err.status, err.phase.as_str()), (Status::Error, "init"));
    assert!(err.error.contains("speaks protocol"), "{}", err.error);
    assert!(!sup.is_warm(env()));
}

#[test]
fn a_worker_that_answers_is_kept_warm_for_its_env_combination() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut sup = supervisor(dir.path(), &ready(PROTOCOL_VERSION), "exec sleep 600", 3.0);
    let info = sup.start(env()).unwrap_or_else(|o| panic!("{o:?}"));
    assert_eq!(info.devices, ["test device"]);
    assert!(sup.is_warm(env()));
    let other = Env { index: 1, ..env() };
    assert!(!sup.is_warm(other));
    sup.shutdown();
    assert!(!sup.is_warm(env()));
    assert_eq!(sup.workers_spawned(), 1);
}

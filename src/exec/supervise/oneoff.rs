//! One-off workers for the informational commands (`probe`, `solvers`): what a backend says
//! about itself, and what it lists for a problem, come from a worker process under the
//! watchdog, so the CLI process never loads a vendor library (a driver that hangs in its
//! initialisation hangs a worker, which is killed at the init limit).

use crate::backend::BackendInfo;
use crate::exec::supervise::handle::WorkerSpec;
use crate::exec::supervise::supervisor::{Env, Supervisor};
use crate::op::Problem;
use crate::spec::policy::Limits;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

const ENV: Env<'static> = Env {
    index: 0,
    trial: 1,
    vars: &[],
    backend: None,
    rocm: None,
};

/// A worker of one backend, handshaken; shut down on drop (its logs go with the temporary
/// directory unless the worker failed, when the error carries their tail).
pub struct OneOff {
    sup: Supervisor,
    pub info: BackendInfo,
    _logs: tempfile::TempDir,
}

impl OneOff {
    /// Starts a worker for `backend` and waits for its handshake. Ok also when the backend
    /// cannot run here (`info.available == false`, `info.missing` says why); Err when the
    /// worker itself failed (could not start, crashed or hung in init).
    pub fn start(backend: &str) -> Result<OneOff, String> {
        OneOff::start_with(backend, &[])
    }

    /// [`OneOff::start`] with environment variables set for the worker (`probe` asks one
    /// worker per ROCm tree, each told its tree this way).
    pub fn start_with(backend: &str, vars: &[(String, String)]) -> Result<OneOff, String> {
        let exe =
            std::env::current_exe().map_err(|e| format!("cannot find this program's path: {e}"))?;
        let logs = tempfile::Builder::new()
            .prefix("rocsweep-worker-")
            .tempdir()
            .map_err(|e| format!("cannot create a directory for the worker's log: {e}"))?;
        let spec = WorkerSpec {
            exe,
            backend: backend.to_string(),
            tag: "oneoff-".into(),
            ..WorkerSpec::default()
        };
        let mut sup = Supervisor::new(
            spec,
            PathBuf::from(logs.path()),
            Limits::default(),
            Arc::new(AtomicUsize::new(0)),
        );
        let env = Env { vars, ..ENV };
        let info = sup.handshake(env).map_err(|o| {
            format!(
                "the {backend} backend's worker failed in {}: {}",
                o.phase, o.error
            )
        })?;
        Ok(OneOff {
            sup,
            info,
            _logs: logs,
        })
    }

    /// The solvers the backend lists for a problem (what `solver = "all"` expands to).
    pub fn solvers(&mut self, problem: &Problem) -> Result<Vec<String>, String> {
        self.sup
            .enumerate(ENV, problem)
            .map_err(|o| format!("{} in {}: {}", o.status.name(), o.phase, o.error))
    }
}

impl Drop for OneOff {
    fn drop(&mut self) {
        self.sup.shutdown();
    }
}

/// What each backend this build knows says about itself, each from a worker of its own.
pub fn probe_all(only: Option<&str>) -> Vec<BackendInfo> {
    crate::backend::registry::KNOWN
        .iter()
        .copied()
        .filter(|name| only.is_none_or(|o| o == *name))
        .map(|name| match OneOff::start(name) {
            Ok(w) => w.info.clone(),
            Err(why) => BackendInfo {
                backend: name.to_string(),
                missing: Some(why),
                ..BackendInfo::default()
            },
        })
        .collect()
}

//! One replay: steps run in order in one fresh worker process, each journaled as it ends.

use super::model::StepResult;
use crate::exec::record::journal::Journal;
use crate::exec::supervise::supervisor::{Env, Supervisor};
use crate::exec::worker::unit::Outcome;
use crate::results::status::Status;
use crate::spec::policy::Policies;
use crate::spec::sequence::{At, Step};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Where the workers of a sequence run go, and what they are given.
pub struct Rig<'a> {
    pub spec: crate::exec::supervise::handle::WorkerSpec,
    pub logs: PathBuf,
    pub policies: Policies,
    pub interrupts: Arc<AtomicUsize>,
    pub journal: Option<&'a mut Journal>,
    /// The backend as the rows name it, the env combination's key, and the device the last
    /// worker named.
    pub backend: String,
    pub env_key: String,
    pub device: String,
    /// Replays so far: each one's worker logs are named apart (`workers/r003-...`).
    pub replays: usize,
}

impl Rig<'_> {
    /// Runs `steps` in order in one fresh worker process. A step after one that ended the
    /// process (a hang, a crash, a worker that would not start) is not run: its outcome is
    /// `skipped` and says which step ended the process. Stops at Ctrl-C (the rest
    /// `interrupted`).
    pub fn replay(&mut self, env: Env, steps: &[(At, &Step)]) -> Vec<StepResult> {
        self.replays += 1;
        let spec = crate::exec::supervise::handle::WorkerSpec {
            tag: format!("r{:03}-", self.replays),
            ..self.spec.clone()
        };
        let mut sup = Supervisor::new(
            spec,
            self.logs.clone(),
            self.policies.limits.clone(),
            Arc::clone(&self.interrupts),
        );
        let mut out: Vec<StepResult> = Vec::with_capacity(steps.len());
        let mut ended: Option<String> = None;
        for (at, step) in steps {
            let unit_id = unit_id(env.index, at, step);
            let outcome = if let Some(why) = &ended {
                Outcome::failed(Status::Skipped, "", why.clone())
            } else if self.interrupts.load(Ordering::SeqCst) > 0 {
                Outcome::failed(Status::Interrupted, "", "stopped before this step")
            } else {
                self.run_step(&mut sup, env, &unit_id, step)
            };
            if ended.is_none() && !sup.is_warm(env) && outcome.status != Status::Interrupted {
                ended = Some(format!(
                    "not run: the sequence's worker process ended at step {} (iteration {}): {}",
                    at.position, at.iteration, outcome.status
                ));
            }
            let r = StepResult {
                at: *at,
                unit_id,
                outcome,
            };
            if let Some(info) = &sup.info {
                self.device = info.devices.join(",");
            }
            // A step Ctrl-C kept from running (or stopped) is not a result: a resume runs it.
            if let Some(j) = self.journal.as_deref_mut()
                && r.outcome.status != Status::Interrupted
            {
                let row =
                    super::write::row(&r, step, &self.backend, &self.device, &self.env_key, None);
                let _ = j.step(&r.unit_id, &r.outcome);
                let _ = j.finished(&r.unit_id, r.outcome.status, &row);
            }
            out.push(r);
        }
        sup.shutdown();
        out
    }

    fn run_step(&mut self, sup: &mut Supervisor, env: Env, unit_id: &str, step: &Step) -> Outcome {
        if let Some(j) = self.journal.as_deref_mut() {
            let _ = j.started(unit_id);
        }
        sup.run_unit(
            unit_id,
            &step.case,
            &step.solver,
            &self.policies,
            env,
            &mut |_| {},
        )
    }
}

/// A step's unit id: its case, solver, env combination and place in the run order, so that the
/// same call at two places has two ids.
pub fn unit_id(env_index: usize, at: &At, step: &Step) -> String {
    let text = format!(
        "{}|{}|env{env_index}|{}|{}",
        step.case.id, step.solver, at.position, at.iteration
    );
    crate::op::short_hash(text.as_bytes())
}

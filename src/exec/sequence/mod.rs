//! Sequences (issue 43): a model's calls replayed in order in one worker process per env
//! combination, each step prepared, run, verified and timed like a unit, journaled as it ends,
//! under the watchdog per step. When a step fails, it runs alone in a fresh process; when it
//! passes there, the failure depends on what ran before it, and [`minimize`] shrinks that
//! prefix (delta debugging, each candidate in a fresh worker) to the steps it needs and writes
//! `minimal.toml`. [`write`] makes results.csv, summary.md and the minimal sequence.
//!
//! May import: `plan` (the set-up), `supervise` (workers), `record` (journal, rows), `spec`.

pub mod minimize;
pub mod model;
pub mod replay;
pub mod write;

use crate::error::CmdError;
use crate::exec::plan::options::RunReport;
use crate::exec::plan::setup::Setup;
use crate::exec::record::events::Stop;
use crate::exec::record::journal::Journal;
use crate::exec::supervise::supervisor::Env;
use crate::results::rundir::Staging;
use crate::spec::policy::Policies;
use crate::spec::sequence::Sequence;
use model::ComboResult;
use replay::Rig;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `rocsweep run SEQ.toml`: the sequence in every env combination, then what each first
/// failing step needs, then results.csv, summary.md and minimal.toml.
pub fn run(s: &Setup, seq: &Sequence, interrupts: Arc<AtomicUsize>) -> Result<RunReport, CmdError> {
    if s.resuming() || s.opts.resume.is_some() {
        return Err(CmdError::BadInput(
            "--resume of a sequence run is not built yet; run the sequence again".into(),
        ));
    }
    let mut staging = Staging::create(&s.dir).map_err(CmdError::from)?;
    let work = staging.path.clone();
    let text = seq
        .sweep
        .masked_text
        .as_deref()
        .unwrap_or(&seq.sweep.source.text);
    crate::results::atomic::write(&work.join("sequence.toml"), text)
        .map_err(|e| CmdError::Failure(format!("{}: {e}", work.display())))?;
    std::fs::create_dir_all(work.join("workers"))
        .map_err(|e| CmdError::Failure(format!("{}: {e}", work.display())))?;
    staging
        .publish()
        .map_err(|e| CmdError::Failure(format!("{}: {e}", s.dir.display())))?;
    let dir = s.dir.clone();
    let mut journal = Journal::open(&dir)
        .map_err(|e| CmdError::Failure(format!("{}: journal: {e}", dir.display())))?;
    let mut spec = s.worker_spec()?;
    spec.cache_root = Some(dir.join("caches"));
    let policies = Policies {
        timing: crate::spec::policy::TimingPolicy {
            trials: 1,
            ..seq.sweep.timing.clone()
        },
        ..s.policies()
    };
    let order = seq.order();
    let mut results = Vec::new();
    for (ci, combo) in s.combos.iter().enumerate() {
        let env = Env::of(ci, 1, combo);
        let backend = combo.backend.clone().unwrap_or_else(|| s.backend.clone());
        let mut rig = Rig {
            spec: spec.clone(),
            logs: dir.join("workers"),
            policies: policies.clone(),
            interrupts: Arc::clone(&interrupts),
            journal: Some(&mut journal),
            backend: backend.clone(),
            env_key: combo.context_key(),
            device: String::new(),
            replays: 0,
        };
        let steps = rig.replay(env, &order);
        rig.journal = None;
        let finding = if interrupts.load(Ordering::SeqCst) > 0 {
            None
        } else {
            minimize::find(&mut rig, env, &order, &steps, s.opts.minimize_budget)
        };
        results.push(ComboResult {
            device: rig.device.clone(),
            env: combo.context_key(),
            vars: combo.vars.clone(),
            backend,
            steps,
            finding,
        });
        write::all(&dir, seq, &order, &results, &policies)?;
        if interrupts.load(Ordering::SeqCst) > 0 {
            break;
        }
    }
    let failures = results
        .iter()
        .flat_map(|r| &r.steps)
        .filter(|r| r.outcome.status.is_failure())
        .count() as u64;
    if !s.opts.quiet {
        say_done(&dir, &results);
    }
    Ok(RunReport {
        dir: None,
        failures,
        stopped: (interrupts.load(Ordering::SeqCst) > 0).then_some(Stop::Interrupted),
        disagreements: 0,
    })
}

fn say_done(dir: &Path, results: &[ComboResult]) {
    let steps: usize = results.iter().map(|r| r.steps.len()).sum();
    let failed = results
        .iter()
        .flat_map(|r| &r.steps)
        .filter(|r| r.outcome.status.is_failure())
        .count();
    crate::sayln!(
        "sequence: {steps} steps run in {} env combination(s), {failed} failed",
        results.len()
    );
    for line in write::finding_lines(results) {
        crate::sayln!("{line}");
    }
    crate::sayln!("written: {}", dir.join("summary.md").display());
}

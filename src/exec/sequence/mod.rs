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
pub mod repro;
pub mod resume;
pub mod summary;
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

/// `rocsweep run SEQ.toml`: a new run directory holding the sequence and how it was started,
/// then [`go`].
pub fn run(s: &Setup, seq: &Sequence, interrupts: Arc<AtomicUsize>) -> Result<RunReport, CmdError> {
    let mut staging = Staging::create(&s.dir).map_err(CmdError::from)?;
    let work = staging.path.clone();
    let fail = |e: std::io::Error| CmdError::Failure(format!("{}: {e}", work.display()));
    let text = seq
        .sweep
        .masked_text
        .as_deref()
        .unwrap_or(&seq.sweep.source.text);
    crate::results::atomic::write(&work.join("sequence.toml"), text).map_err(fail)?;
    let record = serde_json::to_string_pretty(&resume::RunRecord::of(&s.opts))
        .map_err(|e| CmdError::Failure(e.to_string()))?;
    crate::results::atomic::write(&work.join(resume::FILE), record).map_err(fail)?;
    std::fs::create_dir_all(work.join("workers")).map_err(fail)?;
    staging
        .publish()
        .map_err(|e| CmdError::Failure(format!("{}: {e}", s.dir.display())))?;
    go(s, seq, interrupts, None, None)
}

/// `rocsweep run --resume DIR` of a sequence run: the run's own options and copy of the file,
/// and what its journal says finished.
pub fn resume(
    now: &crate::exec::plan::options::RunOptions,
    dir: &Path,
    interrupts: Arc<AtomicUsize>,
) -> Result<RunReport, CmdError> {
    let record = resume::read(dir)?;
    let s = Setup::new(record.options(dir, now))?;
    let Some(seq) = s.sequence.clone() else {
        return Err(CmdError::BadInput(format!(
            "cannot resume {}: its sequence.toml is not a sequence",
            dir.display()
        )));
    };
    let state = crate::exec::record::journal::read(dir).map_err(|e| {
        CmdError::BadInput(format!("cannot resume {}: journal: {e}", dir.display()))
    })?;
    go(&s, &seq, interrupts, Some(&state), record.python)
}

/// Replays the sequence in every env combination (after the steps `done` holds, when
/// resuming), looks into each first failing step, and writes the run's files as it goes.
fn go(
    s: &Setup,
    seq: &Sequence,
    interrupts: Arc<AtomicUsize>,
    done: Option<&crate::exec::record::journal::State>,
    python: Option<String>,
) -> Result<RunReport, CmdError> {
    let dir = s.dir.clone();
    let mut journal = Journal::open(&dir)
        .map_err(|e| CmdError::Failure(format!("{}: journal: {e}", dir.display())))?;
    let mut spec = s.worker_spec()?;
    // The torch layer's steps share one Python process, as the model's calls do.
    spec.extra_env.push((
        crate::backend::torch::ONE_PROCESS_VAR.to_string(),
        "1".to_string(),
    ));
    let python_var = crate::backend::torch::PYTHON_VAR;
    if let Some(p) = python.filter(|_| std::env::var(python_var).is_err()) {
        spec.extra_env.push((python_var.to_string(), p));
    }
    // One trial (the sequence is the process); the processes asked for, so that workers hash
    // the outputs the replays compare.
    let policies = Policies {
        timing: crate::spec::policy::TimingPolicy {
            trials: 1,
            processes: seq.processes.max(s.processes),
            ..seq.sweep.timing.clone()
        },
        ..s.policies()
    };
    let order = seq.order();
    // A resume's worker logs go beside the earlier session's, never over them.
    let earlier_logs = std::fs::read_dir(dir.join("workers")).map_or(0, |d| d.count());
    let mut results = Vec::new();
    for (ci, combo) in s.combos.iter().enumerate() {
        let mut rig = Rig {
            spec: spec.clone(),
            logs: dir.join("workers"),
            policies: policies.clone(),
            interrupts: Arc::clone(&interrupts),
            journal: Some(&mut journal),
            backend: combo.backend.clone().unwrap_or_else(|| s.backend.clone()),
            env_key: combo.context_key(),
            device: String::new(),
            replays: earlier_logs,
        };
        let stopped = || interrupts.load(Ordering::SeqCst) > 0;
        results.push(one_combo(
            &mut rig,
            (ci, combo),
            &order,
            done,
            s.opts.minimize_budget,
            stopped,
        ));
        write::all(&dir, seq, &order, &results, &policies)?;
        if stopped() {
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

/// One env combination: the replay (after the steps a resumed run kept), the other processes
/// `--processes` asks for, and what the first failing step needs.
fn one_combo(
    rig: &mut Rig,
    (ci, combo): (usize, &crate::spec::expand::EnvCombo),
    order: &[(crate::spec::sequence::At, &crate::spec::sequence::Step)],
    done: Option<&crate::exec::record::journal::State>,
    budget: u32,
    stopped: impl Fn() -> bool,
) -> ComboResult {
    let env = Env::of(ci, 1, combo);
    let (mut steps, picked_up) = kept(ci, order, done);
    if steps.len() < order.len() {
        steps.extend(rig.replay(env, &order[steps.len()..]));
    }
    rig.journal = None;
    let processes = rig.policies.timing.processes;
    if processes > 1 && !stopped() {
        // Process k of the sequence is its trial k (`ROCSWEEP_TRIAL` in its worker).
        let others: Vec<Vec<model::StepResult>> = (2..=processes)
            .map(|k| rig.replay(Env::of(ci, k, combo), order))
            .collect();
        mark_stability(&mut steps, &others);
    }
    let finding = if stopped() {
        None
    } else {
        minimize::find(rig, env, order, &steps, budget)
    };
    ComboResult {
        device: rig.device.clone(),
        env: combo.context_key(),
        vars: combo.vars.clone(),
        backend: rig.backend.clone(),
        steps,
        finding,
        picked_up,
    }
}

/// `--processes` / `[sequence] processes` on a sequence: each step of the first replay marked
/// `stable` or not against the same step in the other replays (each its own fresh process).
fn mark_stability(steps: &mut [model::StepResult], others: &[Vec<model::StepResult>]) {
    for (i, step) in steps.iter_mut().enumerate() {
        let mut all = vec![&step.outcome];
        all.extend(others.iter().filter_map(|o| o.get(i)).map(|r| &r.outcome));
        if let Some((stable, why)) = crate::exec::plan::trials::stability(&all) {
            (step.outcome.stable, step.outcome.unstable) = (stable.into(), why);
        }
    }
}

/// The steps of env combination `ci` a resumed run finished already, from the start of the run
/// order up to the first one it did not, and where the replay picks up (None when nothing was
/// kept or nothing is left).
fn kept(
    ci: usize,
    order: &[(crate::spec::sequence::At, &crate::spec::sequence::Step)],
    done: Option<&crate::exec::record::journal::State>,
) -> (Vec<model::StepResult>, Option<usize>) {
    let Some(done) = done else {
        return (Vec::new(), None);
    };
    let mut out = Vec::new();
    for (at, step) in order {
        let unit_id = replay::unit_id(ci, at, step);
        match done.steps.get(&unit_id) {
            Some(outcome) => out.push(model::StepResult {
                at: *at,
                unit_id,
                outcome: outcome.clone(),
            }),
            None => break,
        }
    }
    let picked = (!out.is_empty() && out.len() < order.len()).then_some(out.len());
    (out, picked)
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
    for line in summary::finding_lines(results) {
        crate::sayln!("{line}");
    }
    crate::sayln!("written: {}", dir.join("summary.md").display());
}

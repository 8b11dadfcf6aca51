//! Planning: cases in run order, env combination outermost (one warm worker each), and counts.
//! A unit is a case x solver x env combination; `solver = "all"` is expanded at run time by the
//! worker, and counted up front where the backend's list is fixed (the CPU's, torch's: see
//! `backend::registry::solver_count_up_front`), so that the plan's count is the rows' count.

use crate::op::Case;
use crate::spec::Sweep;
use crate::spec::expand::EnvCombo;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts of what planning found, without running anything.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlanCount {
    pub cases: u64,
    /// Units, counting a `solver = "all"` case as one until its solvers are known.
    pub units: u64,
    /// Cases (of one env combination) whose solver is `all`.
    pub all_cases: u64,
    pub invalid: u64,
    pub invalid_example: Option<String>,
}

/// Streams (env combination index, env key, case) in run order.
pub fn cases<'a>(
    sweep: &'a Sweep,
    combos: &'a [EnvCombo],
) -> impl Iterator<Item = (usize, String, Case)> + 'a {
    combos
        .iter()
        .enumerate()
        .flat_map(move |(env_index, combo)| {
            let env_key = combo.context_key();
            sweep
                .cases()
                .filter_map(Result::ok)
                .map(move |case| (env_index, env_key.clone(), case))
        })
}

/// The plan `trials` times over: pass t is trial t of every unit, with env combinations in
/// order on odd passes and in reverse on even ones, so that drift over the run does not always
/// favour the same combination. Each entry comes with its index in one pass (what a shard
/// selects by, the same as in [`cases`]); `n_cases` is the number of valid cases.
pub fn passes<'a>(
    sweep: &'a Sweep,
    combos: &'a [EnvCombo],
    n_cases: u64,
    trials: u32,
) -> impl Iterator<Item = (u32, u64, (usize, String, Case))> + 'a {
    (1..=trials).flat_map(move |trial| {
        let order: Vec<usize> = if trial % 2 == 1 {
            (0..combos.len()).collect()
        } else {
            (0..combos.len()).rev().collect()
        };
        order.into_iter().flat_map(move |env_index| {
            let env_key = combos[env_index].context_key();
            sweep
                .cases()
                .filter_map(Result::ok)
                .enumerate()
                .map(move |(k, case)| {
                    let index = env_index as u64 * n_cases + k as u64;
                    (trial, index, (env_index, env_key.clone(), case))
                })
        })
    })
}

/// Counts the sweep's cases. None when `stop` was raised meanwhile (Ctrl-C while a huge
/// `--force`d sweep is counted): it is looked at every 4096 combinations.
pub fn count(sweep: &Sweep, combos: &[EnvCombo], stop: &AtomicUsize) -> Option<PlanCount> {
    let mut c = PlanCount::default();
    for (i, case) in sweep.cases().enumerate() {
        if i % 4096 == 4095 && stop.load(Ordering::SeqCst) > 0 {
            return None;
        }
        match case {
            Ok(case) => {
                c.cases += 1;
                c.all_cases += u64::from(case.solver == "all");
            }
            Err(reason) => {
                c.invalid += 1;
                c.invalid_example.get_or_insert(reason);
            }
        }
    }
    c.units = c.cases * combos.len() as u64;
    Some(c)
}

/// How many units one `solver = "all"` case of `op` counts for in the plan on `backend`: its
/// solvers where the list is fixed, else 1 (the total grows as a worker lists them).
pub fn counted_for_all(backend: &str, op: crate::op::OpKind) -> u64 {
    crate::backend::registry::solver_count_up_front(backend, op).unwrap_or(1)
}

/// The units the plan counts: each env combination's cases, a `solver = "all"` case as
/// [`counted_for_all`] on the combination's backend (`run_backend` where it names none).
pub fn planned(
    c: &PlanCount,
    combos: &[EnvCombo],
    run_backend: &str,
    op: crate::op::OpKind,
) -> u64 {
    combos
        .iter()
        .map(|combo| {
            let backend = combo.backend.as_deref().unwrap_or(run_backend);
            c.cases - c.all_cases + c.all_cases * counted_for_all(backend, op)
        })
        .sum()
}

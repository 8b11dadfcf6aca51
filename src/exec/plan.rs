//! Units: every case x solver x env combination, streamed. `solver = "all"` asks the backend for
//! its solvers for the problem, one unit each.

use crate::backend::Backend;
use crate::op::{Case, unit_id};
use crate::spec::Sweep;
use crate::spec::expand::EnvCombo;

#[derive(Clone, Debug)]
pub struct Unit {
    pub id: String,
    pub case: Case,
    pub solver: String,
    pub env_index: usize,
    pub env_key: String,
}

/// Counts of what planning found, without running anything.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlanCount {
    pub cases: u64,
    pub units: u64,
    pub invalid: u64,
    pub invalid_example: Option<String>,
}

/// Streams (env combination, case) pairs in run order: env combination outermost (one worker
/// pool each), then cases. Solvers are expanded per case with `solvers_for`, which needs the
/// backend only for `solver = "all"`.
pub fn cases<'a>(
    sweep: &'a Sweep,
    combos: &'a [EnvCombo],
) -> impl Iterator<Item = (usize, String, Case)> + 'a {
    combos
        .iter()
        .enumerate()
        .flat_map(move |(env_index, combo)| {
            let env_key = combo.key();
            sweep
                .cases()
                .filter_map(Result::ok)
                .map(move |case| (env_index, env_key.clone(), case))
        })
}

pub fn solvers_for(case: &Case, backend: &dyn Backend) -> Vec<String> {
    if case.solver == "all" {
        backend.solvers(&case.problem)
    } else {
        vec![case.solver.clone()]
    }
}

/// The units of one case under one env combination.
pub fn units_of(case: Case, env_index: usize, env_key: &str, backend: &dyn Backend) -> Vec<Unit> {
    solvers_for(&case, backend)
        .into_iter()
        .map(|solver| Unit {
            id: unit_id(&case.id, &solver, env_key),
            case: case.clone(),
            solver,
            env_index,
            env_key: env_key.to_string(),
        })
        .collect()
}

pub fn count(sweep: &Sweep, combos: &[EnvCombo], backend: &dyn Backend) -> PlanCount {
    let mut c = PlanCount::default();
    for case in sweep.cases() {
        match case {
            Ok(case) => {
                c.cases += 1;
                c.units += solvers_for(&case, backend).len() as u64;
            }
            Err(reason) => {
                c.invalid += 1;
                c.invalid_example.get_or_insert(reason);
            }
        }
    }
    c.units *= combos.len() as u64;
    c
}

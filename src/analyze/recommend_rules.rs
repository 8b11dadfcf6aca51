//! The rules of `rocsweep recommend`: where one env combination fails and where it is ok, read
//! off the leaves of a failure tree (tree.rs) grown over the combination's units.

use super::recommend::Rule;
use super::tree::{self, Column, Data, Leaf};
use crate::results::rundata::Row;
use crate::results::status::Status;
use std::collections::{BTreeMap, BTreeSet};

/// The features of the failure tree: parameters (and the solver) that take more than one value
/// in the run, numeric when every value parses as a number.
pub(super) fn features(rows: &[Row], param_names: &[String]) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut names: Vec<&str> = param_names.iter().map(String::as_str).collect();
    names.push("solver");
    for name in names {
        let vals: Vec<&str> = rows
            .iter()
            .map(|r| {
                if name == "solver" {
                    r.solver.as_str()
                } else {
                    r.param(name).unwrap_or("")
                }
            })
            .collect();
        let distinct: BTreeSet<&str> = vals.iter().copied().collect();
        if distinct.len() < 2 {
            continue;
        }
        let numeric = vals
            .iter()
            .all(|v| v.parse::<f64>().is_ok_and(f64::is_finite));
        out.push((name.to_string(), numeric));
    }
    out
}

/// The failure rules and the ok rules of one combination's rows, each list largest first.
pub(super) fn learn(rows: &[&Row], feats: &[(String, bool)]) -> (Vec<Rule>, Vec<Rule>) {
    // Skipped and interrupted units never got an answer, so they say nothing about safety.
    let rows: Vec<&Row> = rows
        .iter()
        .copied()
        .filter(|r| !matches!(r.status, Status::Skipped | Status::Interrupted))
        .collect();
    if rows.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let data = tree_data(&rows, feats);
    let mut fails = Vec::new();
    let mut oks = Vec::new();
    for leaf in tree::grow(&data, tree::MAX_DEPTH, tree::MIN_LEAF) {
        let when = tree::describe(&data, &leaf.conds);
        let exceptions = leaf.exceptions(&data);
        if !leaf.predicts_failure {
            oks.push(Rule {
                status: None,
                phase: String::new(),
                when,
                units: leaf.members.len(),
                exceptions,
                also: Vec::new(),
            });
            continue;
        }
        fails.push(fail_rule(&rows, &leaf, when, exceptions));
    }
    let order = |a: &Rule, b: &Rule| b.units.cmp(&a.units).then_with(|| a.when.cmp(&b.when));
    fails.sort_by(order);
    oks.sort_by(order);
    (fails, oks)
}

/// A feature's value in a row: the solver, or a parameter as written.
fn feature_value(r: &Row, name: &str) -> String {
    if name == "solver" {
        r.solver.clone()
    } else {
        r.param(name).unwrap_or("").to_string()
    }
}

/// The tree's samples: one column per feature (numbers or categories), labelled by whether the
/// unit failed.
fn tree_data(rows: &[&Row], feats: &[(String, bool)]) -> Data {
    Data {
        names: feats.iter().map(|f| f.0.clone()).collect(),
        columns: feats
            .iter()
            .map(|(name, numeric)| {
                if *numeric {
                    Column::Num(
                        rows.iter()
                            .map(|r| feature_value(r, name).parse().unwrap_or(f64::NAN))
                            .collect(),
                    )
                } else {
                    Column::Cat(rows.iter().map(|r| feature_value(r, name)).collect())
                }
            })
            .collect(),
        labels: rows.iter().map(|r| r.status.predicts_failure()).collect(),
    }
}

/// The rule of a leaf that predicts failure: its most common status and that status's most
/// common phase, with the other failures in it.
fn fail_rule(rows: &[&Row], leaf: &Leaf, when: String, exceptions: usize) -> Rule {
    let mut by_status: BTreeMap<Status, usize> = BTreeMap::new();
    for &i in &leaf.members {
        if rows[i].status.predicts_failure() {
            *by_status.entry(rows[i].status).or_default() += 1;
        }
    }
    // Most common measured status; ties go to the earlier (more severe-listed) status. An
    // inferred failure names the rule only when nothing in the leaf was measured failing.
    let top = by_status
        .iter()
        .filter(|(s, _)| s.is_failure())
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(s, _)| *s)
        .or_else(|| by_status.keys().next().copied());
    let mut phases: BTreeMap<&str, usize> = BTreeMap::new();
    for &i in &leaf.members {
        if Some(rows[i].status) == top {
            *phases.entry(rows[i].phase.as_str()).or_default() += 1;
        }
    }
    let phase = phases
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(p, _)| p.to_string())
        .unwrap_or_default();
    Rule {
        status: top,
        phase,
        when,
        units: leaf.members.len(),
        exceptions,
        also: by_status
            .into_iter()
            .filter(|(s, _)| Some(*s) != top)
            .collect(),
    }
}

//! The rules of `rocsweep recommend`: where one env combination fails and where it is ok, read
//! off the leaves of a failure tree (tree.rs) grown over the combination's units.
//!
//! A zip group (a channel pair) is one categorical feature, and the axis's followers (conv2d `w`
//! equal to `h`) are left out: a rule never reads `c_in >= 32` as if channel counts were a scale.
//! Each failing status is a class of its own, and the tree goes deeper while that makes its
//! leaves pure (`tree::grow_pure`); a leaf that still mixes outcomes is written "mostly", with its
//! exceptions named.

use super::answer::Rule;
use crate::analyze::boundary::Axes;
use crate::analyze::tree::{self, Column, Data, Leaf};
use crate::results::rundata::Row;
use crate::results::status::Status;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Exceptions named in a rule's text; the rest are counted.
const SHOWN_EXCEPTIONS: usize = 6;

/// A feature of the failure tree: a parameter, a zip group (its parameters together) or the
/// solver.
#[derive(Clone, Debug, PartialEq)]
pub struct Feature {
    /// `h`, `c_in→c_out`, `solver`.
    pub name: String,
    /// The parameters whose values make the feature's (empty for the solver).
    pub params: Vec<String>,
    pub numeric: bool,
}

impl Feature {
    fn value(&self, r: &Row) -> String {
        if self.params.is_empty() {
            r.solver.to_string()
        } else {
            Axes::group_value(r, &self.params)
        }
    }
}

/// The features: the varying parameters in CSV order (the axis's followers left out, a zip
/// group once, where its first parameter is), then the solver when it varies. Numeric when every
/// value of a single parameter parses as a number.
pub(super) fn features(rows: &[Row], param_names: &[String], axes: &Axes) -> Vec<Feature> {
    let mut out = Vec::new();
    for p in param_names {
        let params: Vec<String> = if axes.along.as_ref() == Some(p) {
            vec![p.clone()]
        } else if let Some(g) = axes.groups.iter().find(|g| g.first() == Some(p)) {
            g.clone()
        } else {
            continue;
        };
        let numeric = params.len() == 1
            && rows.iter().all(|r| {
                r.param(p)
                    .and_then(|v| v.parse::<f64>().ok())
                    .is_some_and(f64::is_finite)
            });
        out.push(Feature {
            name: Axes::group_name(&params),
            params,
            numeric,
        });
    }
    let solvers: BTreeSet<&str> = rows.iter().map(|r| r.solver.as_str()).collect();
    if solvers.len() > 1 {
        out.push(Feature {
            name: "solver".into(),
            params: Vec::new(),
            numeric: false,
        });
    }
    out
}

/// The tree's class of a status: 0 for anything that is not a failure, else the status's
/// severity (so a tie between two failures goes to the more severe one).
fn class_of(s: Status) -> usize {
    if s.predicts_failure() {
        usize::from(s.severity()).max(1)
    } else {
        0
    }
}

/// The status a row stands for: its own, except that an inferred failure stands for the
/// measured failure it was inferred from (named last in its error as `[unit ID]`), so that a
/// bisect line's hang and the failures inferred above it make one class.
fn stands_for(r: &Row, status_of: &HashMap<&str, Status>) -> Status {
    if r.status != Status::InferredFail {
        return r.status;
    }
    r.error
        .rfind("[unit ")
        .and_then(|at| r.error[at + "[unit ".len()..].split(']').next())
        .and_then(|id| status_of.get(id))
        .copied()
        .filter(|s| s.is_failure())
        .unwrap_or(Status::InferredFail)
}

/// The failure rules and the ok rules of one combination's rows, each list largest first.
pub(super) fn learn(rows: &[&Row], feats: &[Feature]) -> (Vec<Rule>, Vec<Rule>) {
    // Skipped and interrupted units never got an answer, so they say nothing about safety.
    let rows: Vec<&Row> = rows
        .iter()
        .copied()
        .filter(|r| !matches!(r.status, Status::Skipped | Status::Interrupted))
        .collect();
    if rows.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let status_of: HashMap<&str, Status> = rows
        .iter()
        .map(|r| (r.unit_id.as_str(), r.status))
        .collect();
    let classes: Vec<usize> = rows
        .iter()
        .map(|r| class_of(stands_for(r, &status_of)))
        .collect();
    let data = tree_data(&rows, feats, classes);
    let mut fails = Vec::new();
    let mut oks = Vec::new();
    for leaf in tree::grow_pure(&data, tree::MIN_LEAF, tree::MAX_LEAVES) {
        let when = tree::describe(&data, &leaf.conds);
        let rule = leaf_rule(&rows, feats, &data, &leaf, when);
        if leaf.predicts_failure {
            fails.push(rule);
        } else {
            oks.push(rule);
        }
    }
    let order = |a: &Rule, b: &Rule| b.units.cmp(&a.units).then_with(|| a.when.cmp(&b.when));
    fails.sort_by(order);
    oks.sort_by(order);
    (fails, oks)
}

/// The tree's samples: one column per feature (numbers or categories), labelled by status class.
fn tree_data(rows: &[&Row], feats: &[Feature], labels: Vec<usize>) -> Data {
    Data {
        names: feats.iter().map(|f| f.name.clone()).collect(),
        columns: feats
            .iter()
            .map(|f| {
                if f.numeric {
                    Column::Num(
                        rows.iter()
                            .map(|r| f.value(r).parse().unwrap_or(f64::NAN))
                            .collect(),
                    )
                } else {
                    Column::Cat(rows.iter().map(|r| f.value(r)).collect())
                }
            })
            .collect(),
        labels,
    }
}

/// The rule of a leaf: its status (the leaf's class; for a safe leaf none) with that status's
/// most common phase, and the members that disagree, named.
fn leaf_rule(rows: &[&Row], feats: &[Feature], data: &Data, leaf: &Leaf, when: String) -> Rule {
    // The measured status of the leaf's class; inferred-fail only when none of it was measured.
    let in_class: Vec<usize> = leaf
        .members
        .iter()
        .copied()
        .filter(|&i| leaf.predicts_failure && data.labels[i] == leaf.class)
        .collect();
    let status = in_class
        .iter()
        .map(|&i| rows[i].status)
        .max_by_key(|s| (s.is_failure(), s.severity()));
    let inferred = in_class
        .iter()
        .filter(|&&i| rows[i].status.is_inferred())
        .count();
    let mut phases: BTreeMap<&str, usize> = BTreeMap::new();
    for &i in &leaf.members {
        if Some(rows[i].status) == status {
            *phases.entry(rows[i].phase.as_str()).or_default() += 1;
        }
    }
    let phase = phases
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(p, _)| p.to_string())
        .unwrap_or_default();
    let odd = leaf.exception_members(data);
    // Name only what varies inside the leaf: the rule's own conditions fix the rest.
    let varying: Vec<&Feature> = feats
        .iter()
        .filter(|f| {
            leaf.members
                .iter()
                .map(|&i| f.value(rows[i]))
                .collect::<BTreeSet<_>>()
                .len()
                > 1
        })
        .collect();
    let mut named: Vec<String> = odd
        .iter()
        .take(SHOWN_EXCEPTIONS)
        .map(|&i| {
            let r = rows[i];
            let at: Vec<String> = varying
                .iter()
                .map(|f| format!("{}={}", f.name, f.value(r)))
                .collect();
            let what = crate::analyze::boundary_render::how(r.status, &r.phase);
            format!("{what} at {}", at.join(" "))
        })
        .collect();
    if odd.len() > SHOWN_EXCEPTIONS {
        named.push(format!("{} more", odd.len() - SHOWN_EXCEPTIONS));
    }
    Rule {
        status,
        phase,
        when,
        units: leaf.members.len(),
        exceptions: odd.len(),
        exception_list: named,
        inferred: if status == Some(Status::InferredFail) {
            0
        } else {
            inferred
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(exceptions: usize, list: &[&str]) -> Rule {
        Rule {
            status: Some(Status::Hang),
            phase: "compile".into(),
            when: "c_in→c_out = 16→32 and h >= 40".into(),
            units: 8,
            exceptions,
            exception_list: list.iter().map(|s| s.to_string()).collect(),
            inferred: 0,
        }
    }

    /// Issue 31: a leaf with exceptions is never written "hangs when ...".
    #[test]
    fn a_rule_with_exceptions_says_mostly_and_names_them() {
        assert_eq!(
            rule(0, &[]).text(),
            "hangs in compile when c_in→c_out = 16→32 and h >= 40 (8 units; exceptions: 0)"
        );
        let t = rule(2, &["ok at h=48", "crash in run at h=56"]).text();
        assert_eq!(
            t,
            "mostly hangs in compile when c_in→c_out = 16→32 and h >= 40 (8 units; exceptions: 2: ok at h=48, crash in run at h=56)"
        );
    }

    #[test]
    fn each_failing_status_is_its_own_class_and_the_rest_are_safe() {
        assert_eq!(class_of(Status::Ok), 0);
        assert_eq!(class_of(Status::Unsupported), 0);
        assert_eq!(class_of(Status::InferredOk), 0);
        assert_ne!(class_of(Status::Hang), class_of(Status::Crash));
        assert!(class_of(Status::Hang) > class_of(Status::Crash));
        assert!(class_of(Status::Mismatch) > 0);
    }
}

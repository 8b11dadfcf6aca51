//! What a failing step needs (issue 43, point 2): the step alone in a fresh process first; if
//! it passes there, the steps before it are shrunk by delta debugging (Zeller's ddmin), each
//! candidate prefix replayed with the step in a fresh worker under the watchdog. A candidate
//! reproduces when the step ends with the same status as in the sequence; a hang anywhere costs
//! that one candidate. The search stops at the budget (`run --minimize-budget`) and says so.

use super::model::{Finding, Minimal, StepResult};
use super::replay::Rig;
use crate::exec::supervise::supervisor::Env;
use crate::results::status::Status;
use crate::spec::sequence::{At, Step};
use std::collections::HashMap;

/// The first failing step of a replay, and what it needs. None when no step failed.
pub fn find(
    rig: &mut Rig,
    env: Env,
    order: &[(At, &Step)],
    steps: &[StepResult],
    budget: u32,
) -> Option<Finding> {
    let index = steps.iter().position(|r| r.outcome.status.is_failure())?;
    let want = steps[index].outcome.status;
    let target = order[index];
    let alone = rig.replay(env, &[target]);
    let fails_alone = alone.last().is_some_and(|r| r.outcome.status.is_failure());
    if fails_alone {
        return Some(Finding {
            index,
            fails_alone,
            needs: None,
        });
    }
    let mut search = Search {
        budget: budget.saturating_sub(1) as usize,
        ran: 1,
        cut: false,
        // The step alone is the empty prefix: it ran, and passed.
        seen: HashMap::from([(Vec::new(), false)]),
    };
    let prefix: Vec<usize> = (0..index).collect();
    let mut ended = 0;
    let kept = ddmin(prefix, &mut |subset: &[usize]| {
        search.test(subset, &mut |s| {
            let mut run: Vec<(At, &Step)> = s.iter().map(|&i| order[i]).collect();
            run.push(target);
            let got = rig.replay(env, &run);
            let last = got.last().map(|r| r.outcome.status);
            ended += usize::from(last == Some(Status::Skipped));
            last == Some(want)
        })
    });
    Some(Finding {
        index,
        fails_alone,
        needs: Some(Minimal {
            steps: kept,
            candidates: search.ran,
            cut: search.cut,
            ended,
        }),
    })
}

/// The candidates tried so far and the budget left.
struct Search {
    budget: usize,
    ran: usize,
    cut: bool,
    seen: HashMap<Vec<usize>, bool>,
}

impl Search {
    /// Whether `subset` reproduces: remembered, else run while the budget lasts (a candidate
    /// past the budget counts as not reproducing, and the search is marked cut).
    fn test(&mut self, subset: &[usize], run: &mut dyn FnMut(&[usize]) -> bool) -> bool {
        if let Some(&r) = self.seen.get(subset) {
            return r;
        }
        if self.budget == 0 {
            self.cut = true;
            return false;
        }
        self.budget -= 1;
        self.ran += 1;
        let r = run(subset);
        self.seen.insert(subset.to_vec(), r);
        r
    }
}

/// Zeller's ddmin: a 1-minimal subset of `items` (in order) for which `test` holds, given that
/// it holds for all of `items`.
pub fn ddmin(mut items: Vec<usize>, test: &mut dyn FnMut(&[usize]) -> bool) -> Vec<usize> {
    if items.is_empty() || test(&[]) {
        return Vec::new();
    }
    let mut n = 2usize;
    while items.len() >= 2 {
        let chunks = split(&items, n);
        if let Some(c) = chunks.iter().find(|c| test(c)) {
            items = c.clone();
            n = 2;
            continue;
        }
        let complements: Vec<Vec<usize>> = (0..chunks.len())
            .map(|skip| {
                chunks
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != skip)
                    .flat_map(|(_, c)| c.iter().copied())
                    .collect()
            })
            .collect();
        if chunks.len() > 2
            && let Some(c) = complements.iter().find(|c| test(c))
        {
            items = c.clone();
            n = (n - 1).max(2);
            continue;
        }
        if n >= items.len() {
            break;
        }
        n = (n * 2).min(items.len());
    }
    items
}

/// `items` in `n` nearly equal consecutive parts.
fn split(items: &[usize], n: usize) -> Vec<Vec<usize>> {
    let n = n.min(items.len()).max(1);
    let (size, extra) = (items.len() / n, items.len() % n);
    let mut out = Vec::with_capacity(n);
    let mut at = 0;
    for i in 0..n {
        let len = size + usize::from(i < extra);
        out.push(items[at..at + len].to_vec());
        at += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs(all: usize, want: &[usize]) -> (Vec<usize>, usize) {
        let mut runs = 0;
        let got = ddmin((0..all).collect(), &mut |s| {
            runs += 1;
            want.iter().all(|w| s.contains(w))
        });
        (got, runs)
    }

    #[test]
    fn ddmin_finds_the_steps_a_failure_needs() {
        assert_eq!(needs(8, &[1, 5]).0, vec![1, 5]);
        assert_eq!(needs(10, &[9]).0, vec![9]);
        assert_eq!(needs(3, &[0, 1, 2]).0, vec![0, 1, 2]);
        // Nothing needed: the empty prefix is tried first.
        assert_eq!(needs(6, &[]), (vec![], 1));
        let (_, runs) = needs(64, &[17]);
        assert!(runs <= 20, "{runs} candidates for one step of 64");
    }

    #[test]
    fn a_search_past_its_budget_is_cut_and_says_so() {
        let mut s = Search {
            budget: 2,
            ran: 0,
            cut: false,
            seen: HashMap::new(),
        };
        let mut calls = 0;
        let mut run = |_: &[usize]| {
            calls += 1;
            false
        };
        assert!(!s.test(&[1], &mut run));
        assert!(!s.test(&[1], &mut run), "remembered, not run again");
        assert!(!s.test(&[2], &mut run));
        assert!(!s.cut);
        assert!(!s.test(&[3], &mut run));
        assert!(s.cut && calls == 2 && s.ran == 2);
    }
}

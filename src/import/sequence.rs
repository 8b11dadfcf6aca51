//! `sequence.toml` (issue 43): the model's calls in the order the sources saw them, one
//! `[[step]]` per call, for the formats that record call order (profiler traces and the
//! libraries' call logs; not TunableOp's list or the YAML profiles, which count calls). A list
//! that is one shorter list seen several times over (a training loop the trace shows) becomes
//! that list with `[sequence] repeat`.

use super::ledger::{Ledger, clip};
use crate::op::value::Value;
use crate::spec::sequence::MAX_STEPS;
use std::fmt::Write as _;

/// The smallest p dividing the list's length such that the list is its first p items repeated.
pub fn period<T: PartialEq>(calls: &[T]) -> usize {
    let n = calls.len();
    (1..=n)
        .find(|&p| n.is_multiple_of(p) && (p..n).all(|i| calls[i] == calls[i % p]))
        .unwrap_or(n)
}

/// What `sequence.toml` holds: the calls, the steps written and the repeat.
pub struct Written {
    pub text: String,
    pub calls: usize,
    pub steps: usize,
    pub repeat: usize,
    /// Calls left out past the step limit.
    pub left_out: usize,
}

/// The sequence file for the ledger's ordered calls; None when no source recorded an order.
pub fn text(name: &str, ledger: &Ledger) -> Option<Written> {
    let calls = &ledger.order;
    if calls.is_empty() {
        return None;
    }
    let p = period(calls);
    let (steps, repeat) = (&calls[..p], calls.len() / p);
    let kept = &steps[..steps.len().min(MAX_STEPS)];
    let left_out = (steps.len() - kept.len()) * repeat;
    let files: Vec<&str> = ledger.files.iter().map(|f| f.path.as_str()).collect();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Imported by `rocsweep import` from {}: the model's {} calls in the order the sources saw",
        clip(&files.join(", ")),
        calls.len()
    );
    let _ = writeln!(
        s,
        "# them, one [[step]] per call{}. Replay it: rocsweep run sequence.toml",
        if repeat > 1 {
            format!(" (a loop of {p} calls seen {repeat} times: `repeat`)")
        } else {
            String::new()
        }
    );
    let _ = writeln!(s, "name = \"{name}-sequence\"");
    let _ = writeln!(
        s,
        "description = \"{} calls in order, imported from {} file(s)\"",
        calls.len(),
        files.len()
    );
    let _ = writeln!(s, "backend = \"auto\"");
    if repeat > 1 {
        let _ = writeln!(s, "\n[sequence]\nrepeat = {repeat}");
    }
    for &(op, i) in kept {
        let Some(case) = ledger.cases.get(op.name()).and_then(|v| v.get(i)) else {
            continue;
        };
        let _ = writeln!(s, "\n[[step]]");
        let _ = writeln!(s, "op = \"{}\"", op.name());
        for (k, v) in &case.problem.params {
            let _ = match v {
                Value::Str(t) => writeln!(s, "{k} = \"{t}\""),
                other => writeln!(s, "{k} = {other}"),
            };
        }
    }
    Some(Written {
        text: s,
        calls: calls.len(),
        steps: kept.len(),
        repeat,
        left_out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_is_found_as_its_period() {
        assert_eq!(period(&[1, 2, 3, 1, 2, 3, 1, 2, 3]), 3);
        assert_eq!(period(&[1, 1, 1]), 1);
        assert_eq!(period(&[1, 2, 1]), 3);
        assert_eq!(period(&[1, 2, 3, 1, 2]), 5);
        assert_eq!(period::<u8>(&[]), 0);
    }
}

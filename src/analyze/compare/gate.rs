//! What `compare --fail-on regression` fails on, and the exit code: every unit that newly
//! fails; the units called slower when there are more of them than the noise rule's false calls
//! explain; else only those slower far beyond their noise.

use super::comparison::{Comparison, UnitCmp, Verdict};
use crate::analyze::noise;
use crate::exit;

impl Comparison {
    /// Units timed in both runs, and how many of them were called slower.
    pub fn slower_calls(&self) -> (usize, usize) {
        let timed = self.units.iter().filter(|u| u.ratio.is_some());
        let slower = timed
            .clone()
            .filter(|u| matches!(u.ratio, Some((_, Verdict::Slower))));
        (timed.count(), slower.count())
    }

    /// Whether the slower calls are more than the noise rule's false calls explain, the test
    /// `recommend` applies to a variable (effect.rs): P(Binomial(timed, 1 %) >= slower) < 1 %.
    pub fn slower_beyond_chance(&self) -> bool {
        let (timed, slower) = self.slower_calls();
        crate::analyze::effect::beyond_chance(timed, slower)
    }

    /// What `--fail-on regression` fails on: every unit that newly fails; the units called
    /// slower when there are more of them than false calls explain; else only those slower far
    /// beyond the noise (`noise::far`). Among many identical units a few are called slower by
    /// chance (the rule's rate, docs/backends.md), and a gate must not fail on those.
    pub fn gated(&self) -> Vec<&UnitCmp> {
        let all_slower = self.slower_beyond_chance();
        self.units
            .iter()
            .filter(|u| u.regressed())
            .filter(|u| !u.transition().is_empty() || all_slower || u.far)
            .collect()
    }

    pub fn regressions(&self) -> usize {
        self.gated().len()
    }

    /// Why the units called slower do not fail `--fail-on regression` (None when they do, or
    /// when none was called slower).
    pub fn slower_within_chance(&self) -> Option<String> {
        let (timed, slower) = self.slower_calls();
        let left = self
            .units
            .iter()
            .filter(|u| u.regressed() && u.transition().is_empty() && !u.far)
            .count();
        if slower == 0 || self.slower_beyond_chance() || left == 0 {
            return None;
        }
        let p = crate::analyze::effect::binomial_tail(
            timed,
            slower,
            crate::analyze::effect::FALSE_CALL_RATE,
        );
        Some(format!(
            "{left} of the {slower} units called slower (of {timed} timed in both) are no more \
             than the noise rule's false calls explain (P(Binomial({timed}, 1 %) >= {slower}) = \
             {p:.2}) and moved less than {} times their noise: not a regression for --fail-on",
            noise::FAR_FACTOR
        ))
    }

    /// One line per regressed unit: its id, what it is, and the status change or slowdown.
    pub fn regression_lines(&self) -> Vec<String> {
        self.gated()
            .into_iter()
            .map(|u| {
                let what = match u.ratio {
                    Some((r, Verdict::Slower)) if u.transition().is_empty() => {
                        format!("slower: B/A throughput {r:.3}, beyond the noise")
                    }
                    _ => u.transition(),
                };
                let env = if u.env.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", u.env)
                };
                format!(
                    "{} {} {} solver={}{env}: {what}",
                    u.unit_id, u.op, u.params, u.solver
                )
            })
            .collect()
    }
}

/// The exit code: 3 with `fail_on_regression` when a unit regressed (`gated`), else 0.
pub fn exit_code(c: &Comparison, fail_on_regression: bool) -> i32 {
    if fail_on_regression && c.regressions() > 0 {
        exit::UNITS_FAILED
    } else {
        exit::OK
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::compare::comparison::tests::comparison;

    #[test]
    fn one_chance_slower_call_among_many_units_does_not_fail_the_gate() {
        let c = comparison(71, 1, 0, 0);
        assert_eq!(c.tally().count(Verdict::Slower), 1);
        assert_eq!(exit_code(&c, true), exit::OK);
        assert!(c.regression_lines().is_empty());
        let why = c.slower_within_chance().unwrap_or_default();
        assert!(
            why.starts_with("1 of the 1 units called slower (of 72 timed in both)")
                && why.contains("P(Binomial(72, 1 %) >= 1) = 0.52"),
            "{why}"
        );
    }

    #[test]
    fn slower_calls_beyond_chance_fail_the_gate_each_listed() {
        // P(Binomial(72, 1 %) >= 4) is 0.7 %: beyond chance.
        let c = comparison(68, 4, 0, 0);
        assert_eq!(exit_code(&c, true), exit::UNITS_FAILED);
        assert_eq!(c.regression_lines().len(), 4);
        assert_eq!(c.slower_within_chance(), None);
        // Three is within chance (3.5 %).
        assert_eq!(exit_code(&comparison(69, 3, 0, 0), true), exit::OK);
    }

    #[test]
    fn one_unit_far_beyond_its_noise_or_one_new_failure_fails_the_gate_alone() {
        let c = comparison(70, 1, 1, 0);
        assert_eq!(exit_code(&c, true), exit::UNITS_FAILED);
        let lines = c.regression_lines();
        assert!(
            lines.len() == 1 && lines[0].starts_with("u71 gemm"),
            "{lines:?}"
        );
        // The 8.5 % one is left out, and the note says so.
        assert!(
            c.slower_within_chance()
                .is_some_and(|w| w.starts_with("1 of the 2 units called slower")),
            "{:?}",
            c.slower_within_chance()
        );
        let c = comparison(72, 0, 0, 1);
        assert_eq!(exit_code(&c, true), exit::UNITS_FAILED);
        assert!(c.regression_lines()[0].ends_with(": ok->hang"));
        assert_eq!(exit_code(&c, false), exit::OK);
    }
}

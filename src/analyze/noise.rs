//! The noise model behind every "faster", "slower" and "no measurable effect": how far one
//! unit's time moves between identical runs, measured, not assumed.
//!
//! A run with trials (`[timing] trials`, `run --trials`) times each unit in several worker
//! processes, one pass over the whole plan per trial, so a unit's trials are minutes apart and
//! see what separate runs see: other processes, clocks, thermals, where memory landed. The
//! spread of one unit's trials, `ln(max / min)` of their medians, is its run-to-run noise. A
//! unit's few trials can agree by chance, so the noise used for a unit is never below its
//! run's *noise floor*: the median spread over the run's units.
//!
//! The rule (the same for `compare`, between two runs, and `recommend`, between two env
//! combinations of one run): with `change = |ln(time A / time B)|` and `noise` the largest of
//! both units' spreads and both runs' floors,
//! - **faster** / **slower**: `change > 2 x noise` and the change is at least 5 %;
//! - **same**: the change is under 5 %;
//! - **ambiguous**: anything else: a change of 5 % or more that the noise could explain, or
//!   any change of 5 % or more where a side has fewer than two trials (its noise is unknown).
//!
//! Why twice the spread: with three trials per side and normal noise of standard deviation s,
//! the range of three is about 1.7 s and the difference of two medians of three has a standard
//! deviation of about 0.95 s, so `2 x range` sits about 3.5 standard deviations out: under
//! 0.1 % of identical units are called (the floor makes it rarer still). docs/backends.md "Comparing runs"
//! gives the rates measured on identical runs.

use crate::results::rundata::Row;
use crate::results::status::Status;

/// Changes smaller than this (5 %) are reported as the same, whatever the noise.
pub const MIN_CHANGE: f64 = 0.05;
/// A change is called when it is larger than this many times the noise.
pub const NOISE_FACTOR: f64 = 2.0;
/// A change this many times the noise (about 7 standard deviations under the model below) is
/// beyond any false call, however many units a comparison holds: `compare --fail-on
/// regression` fails on one such slower unit alone (compare/comparison.rs).
pub const FAR_FACTOR: f64 = 4.0;

/// The rule in one paragraph, for compare.md and recommend.md.
pub const RULE: &str = "Each unit is timed in several trials (separate worker processes, one pass \
over the plan per trial); its noise is the spread of its trials' medians, ln(max/min), and never \
less than its run's noise floor (the median spread over the run's units). A difference is \
**faster** or **slower** when |ln(ratio)| is more than twice the larger noise of the two sides \
and the change is at least 5 %; **same** when the change is under 5 %; **ambiguous** otherwise \
(a change the noise could explain, or a side with fewer than two trials, whose noise is \
unknown).";

/// How one unit's timing compares with another's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    Faster,
    Slower,
    Same,
    Ambiguous,
    /// A side's processes disagreed (`run --processes`: the `stable` column says `no`): its
    /// time is not one thing to compare, whatever the change.
    Unstable,
}

impl Verdict {
    pub const ALL: [Verdict; 4] = [
        Verdict::Faster,
        Verdict::Slower,
        Verdict::Same,
        Verdict::Ambiguous,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::Same => "same",
            Verdict::Ambiguous => "ambiguous",
            Verdict::Unstable => "unstable",
        }
    }
}

/// One unit's time and its run-to-run noise.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timing {
    pub median_ms: f64,
    /// ln(max / min) of the trials' medians, with at least two trials.
    pub spread: Option<f64>,
    pub trials: usize,
    /// Its processes disagreed (`stable` = `no`, `run --processes`).
    pub unstable: bool,
}

impl Timing {
    /// An ok row's timing; None for other statuses and rows without a usable time.
    pub fn of(row: &Row) -> Option<Timing> {
        if row.status != Status::Ok {
            return None;
        }
        let m = row.median_ms.filter(|m| *m > 0.0 && m.is_finite())?;
        Some(Timing {
            median_ms: m,
            spread: spread(&row.trial_ms),
            trials: row.trial_ms.len(),
            unstable: row.stable.as_str() == "no",
        })
    }
}

/// ln(max / min) of positive values, with at least two of them.
pub fn spread(values: &[f64]) -> Option<f64> {
    if values.len() < 2 || values.iter().any(|v| !(*v > 0.0 && v.is_finite())) {
        return None;
    }
    let max = values.iter().copied().fold(f64::MIN, f64::max);
    let min = values.iter().copied().fold(f64::MAX, f64::min);
    Some((max / min).ln())
}

/// A run's noise floor: the median spread over its ok units with two or more trials.
pub fn floor<'a>(rows: impl IntoIterator<Item = &'a Row>) -> Option<f64> {
    median(
        rows.into_iter()
            .filter_map(Timing::of)
            .filter_map(|t| t.spread)
            .collect(),
    )
}

/// The median of the trial spreads of a run's timed units: its noise floor ([`floor`]).
pub fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// The noise a comparison of `a` and `b` is judged against: the larger spread and floor, or
/// None when a side has fewer than two trials.
pub fn noise(a: Timing, b: Timing, floor: f64) -> Option<f64> {
    Some(a.spread?.max(b.spread?).max(floor))
}

/// Whether B's time moved from A's by more than [`FAR_FACTOR`] times the noise (and at least
/// [`MIN_CHANGE`]); false when a side's noise is unknown.
pub fn far(a: Timing, b: Timing, floor: f64) -> bool {
    let change = (a.median_ms / b.median_ms).ln().abs();
    !(a.unstable || b.unstable)
        && change >= (1.0 + MIN_CHANGE).ln()
        && noise(a, b, floor).is_some_and(|n| change > FAR_FACTOR * n)
}

/// B's throughput over A's (`time A / time B`: above 1 is faster) and the verdict.
pub fn verdict(a: Timing, b: Timing, floor: f64) -> (f64, Verdict) {
    let r = a.median_ms / b.median_ms;
    let change = r.ln().abs();
    let small = change < (1.0 + MIN_CHANGE).ln();
    let v = match noise(a, b, floor) {
        _ if a.unstable || b.unstable => Verdict::Unstable,
        _ if small => Verdict::Same,
        Some(n) if change > NOISE_FACTOR * n => {
            if r > 1.0 {
                Verdict::Faster
            } else {
                Verdict::Slower
            }
        }
        _ => Verdict::Ambiguous,
    };
    (r, v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(trials: &[f64]) -> Timing {
        let mut v = trials.to_vec();
        v.sort_by(f64::total_cmp);
        Timing {
            median_ms: v[(v.len() - 1) / 2],
            spread: spread(trials),
            trials: trials.len(),
            unstable: false,
        }
    }

    #[test]
    fn the_rule() {
        // 2x with 5 % trial spreads: called, in the right direction.
        let slow = t(&[2.0, 2.05, 2.1]);
        let fast = t(&[1.0, 1.02, 1.05]);
        assert_eq!(verdict(slow, fast, 0.0).1, Verdict::Faster);
        assert_eq!(verdict(fast, slow, 0.0).1, Verdict::Slower);
        // Identical: same.
        assert_eq!(verdict(fast, fast, 0.0), (1.0, Verdict::Same));
        // 30 % inside a trial spread of 40 %: ambiguous.
        let noisy = t(&[1.0, 1.3, 1.4]);
        assert_eq!(
            verdict(noisy, t(&[1.0, 1.0, 1.01]), 0.0).1,
            Verdict::Ambiguous
        );
        // 3 % with tiny spreads: same (under 5 %).
        assert_eq!(
            verdict(t(&[1.03, 1.0301, 1.0302]), t(&[1.0, 1.0001, 1.0002]), 0.0).1,
            Verdict::Same
        );
        // 20 % with quiet units, but the run's floor is 15 %: ambiguous.
        let (a, b) = (t(&[1.2, 1.2, 1.201]), t(&[1.0, 1.0, 1.001]));
        assert_eq!(verdict(a, b, 0.0).1, Verdict::Faster);
        assert_eq!(verdict(a, b, 0.15).1, Verdict::Ambiguous);
        // One trial: the noise is unknown, so only "same" or "ambiguous".
        let one = t(&[2.0]);
        assert_eq!(verdict(one, fast, 0.0).1, Verdict::Ambiguous);
        assert_eq!(verdict(t(&[1.0]), t(&[1.01]), 0.0).1, Verdict::Same);
    }

    #[test]
    fn an_unstable_side_is_never_faster_slower_or_far() {
        let (a, b) = (t(&[1.0, 1.0, 1.001]), t(&[2.0, 2.0, 2.001]));
        assert_eq!(verdict(a, b, 0.0).1, Verdict::Slower);
        let flagged = Timing {
            unstable: true,
            ..b
        };
        assert_eq!(verdict(a, flagged, 0.0).1, Verdict::Unstable);
        assert_eq!(verdict(flagged, a, 0.0).1, Verdict::Unstable);
        assert!(!far(a, flagged, 0.0));
    }

    #[test]
    fn far_is_four_times_the_noise() {
        // 8.4 % slower with 3 % spreads: called slower, but not far beyond the noise.
        let (a, b) = (t(&[1.0, 1.015, 1.03]), t(&[1.09, 1.1, 1.11]));
        assert_eq!(verdict(a, b, 0.0).1, Verdict::Slower);
        assert!(!far(a, b, 0.0));
        // 2x with the same spreads: far, either way round.
        let slow = t(&[2.0, 2.01, 2.02]);
        assert!(far(a, slow, 0.0) && far(slow, a, 0.0));
        // A run floor of 20 % hides it; an unknown noise never calls it far.
        assert!(!far(a, slow, 0.2));
        assert!(!far(t(&[1.0]), t(&[2.0]), 0.0));
    }

    #[test]
    fn floor_is_the_median_spread() {
        assert_eq!(spread(&[1.0]), None);
        assert_eq!(spread(&[1.0, 0.0]), None);
        let s = spread(&[1.0, 2.0]).unwrap();
        assert!((s - 2f64.ln()).abs() < 1e-12);
    }
}

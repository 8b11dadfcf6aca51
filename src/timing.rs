//! Sampling and statistics: the first call is kept apart (compile, first touch), then warm-up,
//! then samples until a minimum count and either the noise target or the time cap is met.

use crate::spec::policy::TimingPolicy;
use serde::{Deserialize, Serialize};

/// Statistics of the measured samples, in seconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub median: f64,
    pub p10: f64,
    pub p90: f64,
    pub mean: f64,
    pub stdev: f64,
    pub samples: usize,
    /// Coefficient of variation of the samples (stdev / mean).
    pub rel_noise: f64,
}

impl Stats {
    pub fn from_samples(samples: &[f64]) -> Stats {
        let n = samples.len();
        if n == 0 {
            return Stats::default();
        }
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let mean = s.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            s.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        let stdev = var.sqrt();
        Stats {
            median: quantile(&s, 0.5),
            p10: quantile(&s, 0.1),
            p90: quantile(&s, 0.9),
            mean,
            stdev,
            samples: n,
            rel_noise: if mean > 0.0 { stdev / mean } else { 0.0 },
        }
    }
}

/// Linear interpolation between closest ranks, on sorted data.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => 0.0,
        1 => sorted[0],
        n => {
            let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
            let lo = pos.floor() as usize;
            let hi = (lo + 1).min(n - 1);
            sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
        }
    }
}

/// Runs `call` (which returns the seconds one execution took) under `policy`. The argument of
/// `call` says whether to evict caches first (for cold samples); that time is not counted.
pub fn measure<E>(
    policy: &TimingPolicy,
    mut call: impl FnMut(bool) -> Result<f64, E>,
) -> Result<Stats, E> {
    for _ in 0..policy.warmup {
        call(false)?;
    }
    let mut samples = Vec::with_capacity(policy.min_samples as usize);
    let mut total = 0.0;
    loop {
        let t = call(policy.flush_cache)?;
        samples.push(t);
        total += t;
        let n = samples.len() as u32;
        if n >= policy.max_samples {
            break;
        }
        if n >= policy.min_samples {
            if total >= policy.max_time {
                break;
            }
            if policy.target_noise > 0.0
                && Stats::from_samples(&samples).rel_noise <= policy.target_noise
            {
                break;
            }
        }
    }
    Ok(Stats::from_samples(&samples))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_of_known_samples() {
        let s = Stats::from_samples(&[5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!(s.median, 3.0);
        assert_eq!(s.mean, 3.0);
        assert!((s.stdev - 2.5f64.sqrt()).abs() < 1e-12);
        assert!((s.p10 - 1.4).abs() < 1e-12);
        assert!((s.p90 - 4.6).abs() < 1e-12);
        assert_eq!(s.samples, 5);
    }

    fn policy() -> TimingPolicy {
        TimingPolicy {
            warmup: 2,
            min_samples: 5,
            max_samples: 50,
            target_noise: 0.05,
            max_time: 10.0,
            flush_cache: false,
            enabled: true,
        }
    }

    #[test]
    fn steady_samples_stop_at_the_minimum() {
        let mut calls = 0;
        let s = measure::<()>(&policy(), |_| {
            calls += 1;
            Ok(1e-3)
        })
        .unwrap();
        assert_eq!(s.samples, 5);
        assert_eq!(calls, 7, "two warm-up calls plus five samples");
    }

    #[test]
    fn noisy_samples_run_to_the_cap() {
        let mut i = 0u32;
        let s = measure::<()>(&policy(), |_| {
            i += 1;
            Ok(if i.is_multiple_of(2) { 1e-3 } else { 3e-3 })
        })
        .unwrap();
        assert_eq!(s.samples, 50, "noise of 50% never meets a 5% target");
    }

    #[test]
    fn time_cap_stops_sampling() {
        let p = TimingPolicy {
            max_time: 0.45,
            target_noise: 0.0,
            ..policy()
        };
        let s = measure::<()>(&p, |_| Ok(0.1)).unwrap();
        assert_eq!(s.samples, 5, "five samples of 0.1 s pass the 0.45 s cap");
    }

    #[test]
    fn flush_runs_before_each_sample_only_when_asked() {
        let mut flushes = 0;
        let p = TimingPolicy {
            flush_cache: true,
            ..policy()
        };
        measure::<()>(&p, |flush| {
            flushes += flush as u32;
            Ok(1e-3)
        })
        .unwrap();
        assert_eq!(flushes, 5);
    }

    #[test]
    fn errors_stop_measurement() {
        let r = measure(&policy(), |_| Err::<f64, &str>("boom"));
        assert_eq!(r, Err("boom"));
    }
}

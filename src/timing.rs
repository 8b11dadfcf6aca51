//! Sampling and statistics: the first call is kept apart (compile, first touch), then warm-up,
//! then samples until a minimum count and either the noise target or the time cap is met.
//!
//! Every sample carries two figures. `device` is launch-free device time: on a GPU, the calls
//! are queued behind a kernel that holds the stream until they are all enqueued, so the events
//! around them see only the device's work, never the host's launch cost (nvbench's method);
//! `median_ms` and the throughput columns come from it. `call` is one call between two events,
//! launch included: what a framework sees per call (the `call_*_ms` columns). On the CPU the two
//! are the same wall time.

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

/// How a sample's device figure was taken (the `timing_method` column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// The sample's calls captured in a CUDA/HIP graph, its one replay queued behind a kernel
    /// that holds the stream: launch-free, with a graph's gaps between kernels.
    Graph,
    /// The calls queued in the stream behind a kernel that holds it: launch-free, with the
    /// stream's gaps between kernels (also a cold sample's one call).
    Held,
    /// One call between two events, unheld: a call that waits for the host cannot be queued.
    Events,
    /// The host's clock (the CPU backend).
    Wall,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Graph => "graph",
            Method::Held => "held",
            Method::Events => "events",
            Method::Wall => "wall",
        }
    }

    /// The method a child process names (the torch worker's `method`); None for another word.
    pub fn parse(name: &str) -> Option<Method> {
        [Method::Graph, Method::Held, Method::Events, Method::Wall]
            .into_iter()
            .find(|m| m.name() == name)
    }
}

/// One timed execution, in seconds: launch-free device time per call, and one call with its
/// launch (see the module docs), and how the device figure was taken.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    pub device: f64,
    pub call: f64,
    pub method: Method,
}

impl Sample {
    /// A sample of the host's clock, both figures the same (the CPU backend).
    pub fn wall(s: f64) -> Sample {
        Sample {
            device: s,
            call: s,
            method: Method::Wall,
        }
    }

    /// A sample of one call between two events, both figures the same (a host-synchronous call).
    pub fn events(s: f64) -> Sample {
        Sample {
            device: s,
            call: s,
            method: Method::Events,
        }
    }
}

/// How many calls one launch-free sample may queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Batch {
    /// As many as make the sample long enough for event resolution (`calls_per_sample`).
    Auto,
    /// One: a cold sample, whose caches were just flushed.
    Single,
}

/// A launch-free sample lasts at least this long, so the events' resolution (about 0.5 us on
/// CUDA) is under 0.5% of it.
pub const TARGET_SAMPLE_S: f64 = 200e-6;
/// At most this many calls are queued behind the blocking kernel: launch queues are finite
/// (a full one would block the host, and the blocking kernel would time out).
pub const MAX_CALLS_PER_SAMPLE: usize = 64;

/// Calls to queue for one launch-free sample, from one call's time with its launch (an upper
/// bound of its device time).
pub fn calls_per_sample(batch: Batch, call_s: f64) -> usize {
    match batch {
        Batch::Single => 1,
        Batch::Auto if call_s > 0.0 && call_s.is_finite() => {
            ((TARGET_SAMPLE_S / call_s).ceil() as usize).clamp(1, MAX_CALLS_PER_SAMPLE)
        }
        Batch::Auto => MAX_CALLS_PER_SAMPLE,
    }
}

/// How many input sets (the original and its copies) make up `bytes` of rotating inputs, for
/// inputs of `set_bytes` each: at least 1, at most 256.
pub fn rotating_sets(bytes: u64, set_bytes: u64) -> usize {
    if bytes == 0 || set_bytes == 0 {
        return 1;
    }
    bytes.div_ceil(set_bytes).clamp(1, 256) as usize
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

/// The statistics of one unit's samples: launch-free device time, and per call with launch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Measured {
    pub device: Stats,
    pub call: Stats,
    /// How the samples' device figures were taken: one method's name, or several joined by
    /// `+` in the order they first appeared (a graph that could not be captured every time).
    pub method: String,
}

/// Runs `call` (one timed execution) under `policy`. The argument of `call` says whether to evict
/// caches first (a cold sample); that time is not counted. The stopping rule (noise target, time
/// cap) follows the device figure.
pub fn measure<E>(
    policy: &TimingPolicy,
    mut call: impl FnMut(bool) -> Result<Sample, E>,
) -> Result<Measured, E> {
    for _ in 0..policy.warmup {
        call(false)?;
    }
    let mut device = Vec::with_capacity(policy.min_samples as usize);
    let mut per_call = Vec::with_capacity(policy.min_samples as usize);
    let mut total = 0.0;
    let mut methods: Vec<Method> = Vec::new();
    loop {
        let t = call(policy.flush_cache)?;
        device.push(t.device);
        per_call.push(t.call);
        if !methods.contains(&t.method) {
            methods.push(t.method);
        }
        total += t.device.max(t.call);
        let n = device.len() as u32;
        if n >= policy.max_samples {
            break;
        }
        if n >= policy.min_samples {
            if total >= policy.max_time {
                break;
            }
            if policy.target_noise > 0.0
                && Stats::from_samples(&device).rel_noise <= policy.target_noise
            {
                break;
            }
        }
    }
    let method: Vec<&str> = methods.iter().map(|m| m.name()).collect();
    Ok(Measured {
        device: Stats::from_samples(&device),
        call: Stats::from_samples(&per_call),
        method: method.join("+"),
    })
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
            flush_mib: 0,
            rotating_mib: 0,
            trials: 1,
            processes: 0,
            enabled: true,
        }
    }

    #[test]
    fn steady_samples_stop_at_the_minimum() {
        let mut calls = 0;
        let s = measure::<()>(&policy(), |_| {
            calls += 1;
            Ok(Sample {
                device: 1e-3,
                call: 1.2e-3,
                method: Method::Held,
            })
        })
        .unwrap()
        .device;
        assert_eq!(s.samples, 5);
        assert_eq!(calls, 7, "two warm-up calls plus five samples");
    }

    #[test]
    fn noisy_samples_run_to_the_cap() {
        let mut i = 0u32;
        let s = measure::<()>(&policy(), |_| {
            i += 1;
            Ok(Sample::wall(if i.is_multiple_of(2) { 1e-3 } else { 3e-3 }))
        })
        .unwrap()
        .device;
        assert_eq!(s.samples, 50, "noise of 50% never meets a 5% target");
    }

    #[test]
    fn time_cap_stops_sampling() {
        let p = TimingPolicy {
            max_time: 0.45,
            target_noise: 0.0,
            ..policy()
        };
        let s = measure::<()>(&p, |_| Ok(Sample::wall(0.1))).unwrap();
        assert_eq!(
            s.device.samples, 5,
            "five samples of 0.1 s pass the 0.45 s cap"
        );
        assert_eq!(s.call.samples, 5);
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
            Ok(Sample::wall(1e-3))
        })
        .unwrap();
        assert_eq!(flushes, 5);
    }

    #[test]
    fn errors_stop_measurement() {
        let r = measure(&policy(), |_| Err::<Sample, &str>("boom"));
        assert_eq!(r, Err("boom"));
    }

    #[test]
    fn device_and_per_call_figures_are_kept_apart() {
        let s = measure::<()>(&policy(), |_| {
            Ok(Sample {
                device: 4e-6,
                call: 13e-6,
                method: Method::Graph,
            })
        })
        .unwrap();
        assert_eq!(s.device.median, 4e-6);
        assert_eq!(s.call.median, 13e-6);
        assert_eq!(s.method, "graph");
    }

    #[test]
    fn the_methods_of_the_samples_are_named_in_the_order_they_first_appeared() {
        let mut i = 0u32;
        let s = measure::<()>(&policy(), |_| {
            i += 1;
            let method = if i <= 3 { Method::Graph } else { Method::Held };
            Ok(Sample {
                device: 1e-3,
                call: 1e-3,
                method,
            })
        })
        .unwrap();
        // Two warm-up calls and the first sample were graphs; the rest held streams.
        assert_eq!(s.method, "graph+held");
        for m in [Method::Graph, Method::Held, Method::Events, Method::Wall] {
            assert_eq!(Method::parse(m.name()), Some(m));
        }
        assert_eq!(Method::parse("stream"), None);
    }

    #[test]
    fn rotating_sets_cover_the_requested_bytes() {
        assert_eq!(rotating_sets(0, 100), 1);
        assert_eq!(rotating_sets(512 << 20, 96 << 20), 6);
        assert_eq!(rotating_sets(1, 96 << 20), 1);
        assert_eq!(rotating_sets(u64::MAX, 1), 256);
    }

    #[test]
    fn calls_per_sample_fill_the_target_and_respect_the_queue() {
        assert_eq!(calls_per_sample(Batch::Single, 1e-6), 1);
        assert_eq!(calls_per_sample(Batch::Auto, 1e-3), 1, "long calls: one");
        assert_eq!(calls_per_sample(Batch::Auto, 10e-6), 20);
        assert_eq!(calls_per_sample(Batch::Auto, 1e-9), MAX_CALLS_PER_SAMPLE);
        assert_eq!(calls_per_sample(Batch::Auto, 0.0), MAX_CALLS_PER_SAMPLE);
    }
}

//! Per-sweep policies: phase time limits, timing and verification. Plain data, so a worker can
//! receive them and the manifest can record them.

use serde::{Deserialize, Serialize};

/// Phases a unit goes through; the watchdog has a limit for each.
pub const PHASES: &[&str] = &["init", "enumerate", "compile", "alloc", "run", "verify"];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// Seconds allowed per phase, in `PHASES` order.
    pub init: f64,
    pub enumerate: f64,
    pub compile: f64,
    pub alloc: f64,
    pub run: f64,
    pub verify: f64,
    /// Seconds between SIGTERM and SIGKILL when a limit expires.
    pub grace: f64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            init: 60.0,
            enumerate: 60.0,
            compile: 300.0,
            alloc: 30.0,
            run: 60.0,
            verify: 120.0,
            grace: 2.0,
        }
    }
}

impl Limits {
    pub fn get_mut(&mut self, key: &str) -> Option<&mut f64> {
        Some(match key {
            "init" => &mut self.init,
            "enumerate" => &mut self.enumerate,
            "compile" => &mut self.compile,
            "alloc" => &mut self.alloc,
            "run" => &mut self.run,
            "verify" => &mut self.verify,
            "grace" => &mut self.grace,
            _ => return None,
        })
    }

    pub fn for_phase(&self, phase: &str) -> f64 {
        match phase {
            "init" => self.init,
            "enumerate" => self.enumerate,
            "compile" => self.compile,
            "alloc" => self.alloc,
            "verify" => self.verify,
            _ => self.run,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimingPolicy {
    /// Calls after the first one that are not measured.
    pub warmup: u32,
    pub min_samples: u32,
    pub max_samples: u32,
    /// Stop once the relative spread ((p90 - p10) / median) is at most this (0 turns it off).
    pub target_noise: f64,
    /// Stop sampling after this many seconds of measured time (once min_samples are in).
    pub max_time: f64,
    /// Evict caches before each sample (GPU backends write a buffer larger than their caches):
    /// `[timing] cache = "cold"`, the default as in nvbench; `"warm"` turns it off (the older
    /// spelling `flush_cache = true | false` still reads).
    pub flush_cache: bool,
    /// MiB written by a flush; 0 = the backend's default for the device (CUDA: twice the L2;
    /// ROCm: twice the L2 and at least 512 MiB, past MI300's 256 MiB Infinity Cache).
    #[serde(default)]
    pub flush_mib: u32,
    /// gemm: copies of the inputs, this many MiB in all, used in turn by consecutive calls, so a
    /// call does not find its inputs in a cache the previous call warmed (as hipblaslt-bench
    /// `--rotating`); 0 = off.
    #[serde(default)]
    pub rotating_mib: u32,
    /// Independent trials of each unit, each in a worker process of its own, run as passes over
    /// the whole plan (see exec/pool.rs); the row is the median trial's, and `compare` and
    /// `recommend` take run-to-run noise from the spread across trials. Runs made before
    /// trials existed read as 1.
    #[serde(default = "one")]
    pub trials: u32,
    /// `run --processes N` / `[timing] processes = N` (issue 43): each unit runs in N fresh
    /// worker processes (at least N trials), and a unit whose status, output bits or library
    /// choice differ between them is flagged (the `stable` column); 0: not asked.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub processes: u32,
    /// Skip timing altogether (verification only).
    pub enabled: bool,
}

fn one() -> u32 {
    1
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Trials per unit unless the sweep or `--trials` says otherwise.
pub const DEFAULT_TRIALS: u32 = 3;
/// More trials than this is a mistake, not a measurement plan.
pub const MAX_TRIALS: u32 = 100;
/// Upper bounds of the other [timing] counts (docs/sweep-files.md "Limits").
pub const MAX_WARMUP: u32 = 1000;
pub const MAX_SAMPLES: u32 = 100_000;
/// `max_samples` only caps a sampling loop that `max_time` ends (samples are kept, 16 bytes
/// each), so it may be larger.
pub const MAX_MAX_SAMPLES: u32 = 10_000_000;
/// `flush_mib` and `rotating_mib`: 64 GiB, past any cache by far.
pub const MAX_BUFFER_MIB: u32 = 65_536;

impl Default for TimingPolicy {
    fn default() -> Self {
        TimingPolicy {
            warmup: 2,
            min_samples: 5,
            max_samples: 200,
            target_noise: 0.05,
            max_time: 1.0,
            flush_cache: true,
            flush_mib: 0,
            rotating_mib: 0,
            trials: DEFAULT_TRIALS,
            processes: 0,
            enabled: true,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VerifyPolicy {
    pub enabled: bool,
    /// Multiplies every op's tolerance (raise it for algorithms known to lose precision).
    pub tolerance_scale: f64,
    /// Cases whose reference would cost more than this many GFLOP are not verified on the CPU.
    pub max_reference_gflop: f64,
}

impl Default for VerifyPolicy {
    fn default() -> Self {
        VerifyPolicy {
            enabled: true,
            tolerance_scale: 1.0,
            max_reference_gflop: 200.0,
        }
    }
}

/// The sweep's policies a unit runs under.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Policies {
    pub limits: Limits,
    pub timing: TimingPolicy,
    pub verify: VerifyPolicy,
}

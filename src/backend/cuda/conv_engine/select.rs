//! Engine selection: which cuDNN engine configurations a convolution's units are, and what a
//! configuration's solver name is (`eng12-k3=2,k5=1`; see the parent module's doc).
//!
//! Which configurations `all` gets, in this order, without repeats:
//! - the first `HEURISTIC_LIMIT` (10, as many as PyTorch's benchmark mode times:
//!   `torch.backends.cudnn.benchmark_limit`) of mode A's list, then
//! - up to `FALLBACK_LIMIT` (10) of the fallback list that mode A did not already name (both
//!   counts can be set per run with the environment variables `HEURISTIC_LIMIT_VAR` and
//!   `FALLBACK_LIMIT_VAR`, e.g. in the sweep's `[env]`);
//! - leaving out what PyTorch leaves out with TF32 off: configurations whose numerical notes say
//!   they down-convert their inputs, and, for f32 data, configurations on tensor cores (TF32).
//!   f32 convolutions thus stay FMA math, as on the legacy path.
//!
//! Nothing here calls cuDNN: the heuristics' lists come in as `Candidate`s (the graph layer
//! reads them), so the rules can be tested on a machine without a GPU.

use crate::dtype::DType;
use cudarc::cudnn::sys as s;
use std::fmt;

use s::cudnnBackendNumericalNote_t as N;

/// The solver that runs mode A's first usable configuration (what `all` falls back to).
pub const HEURISTIC: &str = "engine_heuristic";
/// Mode A configurations kept per problem by default: as many as PyTorch's benchmark mode times
/// (`benchmark_limit`), so rocsweep's search covers what PyTorch's does.
pub const HEURISTIC_LIMIT: usize = 10;
/// Fallback configurations kept per problem by default, beyond those mode A named. With TF32 off,
/// mode A's list for an f32 problem can hold only two or three usable configurations; on the
/// H200 PyTorch's pick for 512->512 3x3 stride 2 at 14x14 came from the fallback list (with 2
/// from it rocsweep's best was 0.80x PyTorch's, with 10 it matched).
pub const FALLBACK_LIMIT: usize = 10;
/// Environment variables that override the two counts (read by the worker).
pub const HEURISTIC_LIMIT_VAR: &str = "ROCSWEEP_CUDNN_HEURISTIC_CONFIGS";
pub const FALLBACK_LIMIT_VAR: &str = "ROCSWEEP_CUDNN_FALLBACK_CONFIGS";

/// (mode A, fallback) configurations kept per problem: the variables' values, else the defaults.
pub fn limits() -> (usize, usize) {
    let read = |var: &str, default: usize| {
        std::env::var(var)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(default)
    };
    (
        read(HEURISTIC_LIMIT_VAR, HEURISTIC_LIMIT),
        read(FALLBACK_LIMIT_VAR, FALLBACK_LIMIT),
    )
}

/// One engine configuration: cuDNN's global engine index and its knob choices, sorted by knob
/// type. Its `Display` form is the solver name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineConfig {
    pub engine: i64,
    pub knobs: Vec<(u32, i64)>,
}

impl EngineConfig {
    pub fn new(engine: i64, mut knobs: Vec<(u32, i64)>) -> EngineConfig {
        knobs.sort_unstable();
        knobs.dedup();
        EngineConfig { engine, knobs }
    }

    /// Parses a solver name; only the canonical form (the one `Display` writes) is accepted, so
    /// one configuration has exactly one name.
    pub fn parse(name: &str) -> Option<EngineConfig> {
        let rest = name.strip_prefix("eng")?;
        let (index, knobs) = match rest.split_once('-') {
            Some((i, k)) => (i, Some(k)),
            None => (rest, None),
        };
        if index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let engine = index.parse().ok()?;
        let mut parsed = Vec::new();
        for knob in knobs.map(|k| k.split(',')).into_iter().flatten() {
            let (ty, value) = knob.strip_prefix('k')?.split_once('=')?;
            if ty.is_empty() || !ty.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            parsed.push((ty.parse().ok()?, value.parse().ok()?));
        }
        let config = EngineConfig::new(engine, parsed);
        (config.to_string() == name).then_some(config)
    }
}

impl fmt::Display for EngineConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "eng{}", self.engine)?;
        for (i, (ty, value)) in self.knobs.iter().enumerate() {
            let sep = if i == 0 { '-' } else { ',' };
            write!(f, "{sep}k{ty}={value}")?;
        }
        Ok(())
    }
}

/// Whether a solver name belongs to this module (an engine configuration or `engine_heuristic`).
pub fn is_engine_solver(name: &str) -> bool {
    name == HEURISTIC || EngineConfig::parse(name).is_some()
}

fn has(notes: &[u32], n: N) -> bool {
    notes.contains(&(n as u32))
}

/// FFT and Winograd engines round in the transformed domain too (see conv.rs).
pub fn is_transform(notes: &[u32]) -> bool {
    [
        N::CUDNN_NUMERICAL_NOTE_FFT,
        N::CUDNN_NUMERICAL_NOTE_WINOGRAD,
        N::CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4,
        N::CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6,
        N::CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13,
    ]
    .into_iter()
    .any(|n| has(notes, n))
}

/// Why `all` leaves a configuration out, from its engine's numerical notes (None: kept).
pub fn excluded(notes: &[u32], dtype: DType) -> Option<&'static str> {
    if has(notes, N::CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) {
        Some("it down-converts its inputs")
    } else if dtype == DType::F32 && has(notes, N::CUDNN_NUMERICAL_NOTE_TENSOR_CORE) {
        Some("it runs f32 data on tensor cores (TF32)")
    } else {
        None
    }
}

/// One configuration a heuristic named, with its engine's numerical notes.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub config: EngineConfig,
    pub notes: Vec<u32>,
}

/// The configurations `all` runs, from mode A's list and the fallback list (see the module doc).
pub fn select(
    mode_a: &[Candidate],
    fallback: &[Candidate],
    dtype: DType,
    (limit_a, limit_fallback): (usize, usize),
) -> Vec<EngineConfig> {
    let mut out: Vec<EngineConfig> = Vec::new();
    for (list, limit) in [(mode_a, limit_a), (fallback, limit_fallback)] {
        let mut taken = 0;
        for c in list {
            if taken == limit {
                break;
            }
            if excluded(&c.notes, dtype).is_none() && !out.contains(&c.config) {
                out.push(c.config.clone());
                taken += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_canonical_and_round_trip() {
        let c = EngineConfig::new(12, vec![(5, 1), (3, 2)]);
        assert_eq!(c.to_string(), "eng12-k3=2,k5=1");
        assert_eq!(EngineConfig::parse("eng12-k3=2,k5=1"), Some(c));
        let plain = EngineConfig::new(0, vec![]);
        assert_eq!(plain.to_string(), "eng0");
        assert_eq!(EngineConfig::parse("eng0"), Some(plain));
        let negative = EngineConfig::new(7, vec![(14, -1)]);
        assert_eq!(negative.to_string(), "eng7-k14=-1");
        assert_eq!(EngineConfig::parse("eng7-k14=-1"), Some(negative));
    }

    #[test]
    fn non_canonical_or_malformed_names_are_refused() {
        for bad in [
            "eng",
            "eng-k1=2",
            "eng012",
            "eng12-k5=1,k3=2", // knobs out of order
            "eng12-k3=2,",
            "eng12-",
            "eng12-k=2",
            "eng12-kx=2",
            "eng12-k3",
            "eng12-k3=two",
            "eng+1",
            "implicit_gemm",
            "engine_heuristic",
            "eng12-k3=+2",
        ] {
            assert_eq!(EngineConfig::parse(bad), None, "{bad}");
        }
        assert!(is_engine_solver("engine_heuristic"));
        assert!(is_engine_solver("eng3-k2=4"));
        assert!(!is_engine_solver("algo_0"));
        assert!(!is_engine_solver("winograd_nonfused"));
    }

    #[test]
    fn notes_decide_tolerance_and_exclusion() {
        let tc = N::CUDNN_NUMERICAL_NOTE_TENSOR_CORE as u32;
        let down = N::CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS as u32;
        let fft = N::CUDNN_NUMERICAL_NOTE_FFT as u32;
        let wino = N::CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4 as u32;
        let nondet = N::CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC as u32;
        assert!(is_transform(&[fft]));
        assert!(is_transform(&[tc, wino]));
        assert!(!is_transform(&[tc, nondet]));
        assert!(!is_transform(&[]));
        assert!(excluded(&[tc], DType::F32).is_some());
        assert!(excluded(&[tc], DType::Bf16).is_none());
        assert!(excluded(&[down], DType::F16).is_some());
        assert!(excluded(&[nondet, fft], DType::F32).is_none());
        // A note value newer than these bindings is carried, not misread.
        assert!(excluded(&[999], DType::F32).is_none());
    }

    #[test]
    fn selection_keeps_order_drops_repeats_and_caps_each_list() {
        let tc = N::CUDNN_NUMERICAL_NOTE_TENSOR_CORE as u32;
        let cand = |e: i64, notes: Vec<u32>| Candidate {
            config: EngineConfig::new(e, vec![(2, e)]),
            notes,
        };
        let a: Vec<Candidate> = (0..15)
            .map(|e| cand(e, if e == 1 { vec![tc] } else { vec![] }))
            .collect();
        let fallback = vec![
            cand(3, vec![]),
            cand(40, vec![]),
            cand(41, vec![]),
            cand(42, vec![]),
        ];
        let engines = |dtype| -> Vec<i64> {
            select(&a, &fallback, dtype, (10, 2))
                .iter()
                .map(|c| c.engine)
                .collect()
        };
        // Engine 1 is TF32 on f32 data and is skipped there; then the fallback list's first
        // configuration that mode A did not already name (3 is a repeat).
        let mut f32: Vec<i64> = (0..=10).filter(|&e| e != 1).collect();
        f32.extend(&[40, 41]);
        assert_eq!(engines(DType::F32), f32);
        let mut bf16: Vec<i64> = (0..10).collect();
        bf16.extend([3, 40, 41].iter().filter(|&&e| e >= 10).take(2));
        assert_eq!(engines(DType::Bf16), bf16);
        assert!(select(&[], &[], DType::F32, (5, 1)).is_empty());
        // Same engine, other knobs: a different configuration.
        let twins = vec![
            Candidate {
                config: EngineConfig::new(5, vec![(1, 1)]),
                notes: vec![],
            },
            Candidate {
                config: EngineConfig::new(5, vec![(1, 2)]),
                notes: vec![],
            },
        ];
        assert_eq!(select(&twins, &twins, DType::F16, (5, 1)).len(), 2);
    }
}

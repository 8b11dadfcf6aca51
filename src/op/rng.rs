//! Normal random numbers (seeds 000-002: `torch.randn_like` returning zeros on Strix Halo).

use super::param::{Default as D, ParamDef, ParamKind as K, ParamSlice};
use crate::dtype::DType;
use crate::verify::Check;
use serde::{Deserialize, Serialize};

const DTYPES: &[DType] = &[DType::F32, DType::F16, DType::Bf16];

pub const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "count",
        kind: K::Int { min: 2 },
        default: D::Int(1 << 20),
        doc: "number of samples",
    },
    ParamDef {
        name: "mean",
        kind: K::Float { min: f64::MIN },
        default: D::Float(0.0),
        doc: "distribution mean",
    },
    ParamDef {
        name: "std",
        kind: K::Float { min: 0.0 },
        default: D::Float(1.0),
        doc: "distribution standard deviation",
    },
    ParamDef {
        name: "dtype",
        kind: K::DType(DTYPES),
        default: D::Str("f32"),
        doc: "f32, f16 or bf16",
    },
];

pub const CPU_SOLVERS: &[&str] = &["pcg64"];

/// Statistical verdicts use this many standard errors: a correct generator fails about once in
/// 1.7 million checks, a zero or constant one always.
pub const SIGMAS: f64 = 5.0;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rng {
    pub count: usize,
    pub mean: f64,
    pub std: f64,
    pub dtype: DType,
}

impl Rng {
    pub fn from_params(p: &ParamSlice) -> Result<Rng, String> {
        Ok(Rng {
            count: p.usize("count")?,
            mean: p.f64("mean")?,
            std: p.f64("std")?,
            dtype: p.dtype("dtype")?,
        })
    }

    /// Box-Muller style generators spend a handful of operations per sample; count 1.
    pub fn flops(&self) -> f64 {
        self.count as f64
    }

    pub fn bytes(&self) -> f64 {
        (self.count * self.dtype.size()) as f64
    }

    pub fn check(&self) -> Check {
        // Rounding to a narrow type adds variance of about (u * value)^2: far below the test's reach.
        Check::Normal {
            mean: self.mean,
            std: self.std,
            sigmas: SIGMAS,
        }
    }
}

//! Element type conversion with round-to-nearest-even (seed 001: bf16 casts that return zeros).

use super::param::{Default as D, ParamDef, ParamKind as K, ParamSlice};
use crate::dtype::DType;
use crate::op::inputs;
use crate::tensor::HostData;
use crate::verify::Check;
use serde::{Deserialize, Serialize};

const DTYPES: &[DType] = &[DType::F32, DType::F16, DType::Bf16];

pub const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "from",
        kind: K::DType(DTYPES),
        default: D::Str("f32"),
        doc: "source type",
    },
    ParamDef {
        name: "to",
        kind: K::DType(DTYPES),
        default: D::Str("bf16"),
        doc: "destination type",
    },
    ParamDef {
        name: "count",
        kind: K::Int { min: 1 },
        default: D::Int(1 << 20),
        doc: "elements converted",
    },
];

pub const CPU_SOLVERS: &[&str] = &["half-slice"];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cast {
    pub from: DType,
    pub to: DType,
    pub count: usize,
}

impl Cast {
    pub fn from_params(p: &ParamSlice) -> Result<Cast, String> {
        Ok(Cast {
            from: p.dtype("from")?,
            to: p.dtype("to")?,
            count: p.usize("count")?,
        })
    }

    pub fn bytes(&self) -> f64 {
        (self.count * (self.from.size() + self.to.size())) as f64
    }

    pub fn check(&self) -> Check {
        Check::BitExact
    }

    /// Random values in a wide range, with the edge cases of rounding planted among them: exact
    /// ties, values just past a tie, subnormals, overflow to Inf, signed zeros, Inf and NaN.
    pub fn make_input(&self, seed: u64) -> HostData {
        let base = inputs::uniform(DType::F32, self.count, seed).to_f32_vec();
        let specials: [f32; 12] = [
            1.0 + 2f32.powi(-8),                   // bf16 tie: rounds to even (1.0)
            1.0 + 3.0 * 2f32.powi(-8),             // bf16 tie: rounds up
            1.0 + 2f32.powi(-11),                  // f16 tie
            1.0 + 2f32.powi(-11) + 2f32.powi(-20), // just past the f16 tie
            6.0e-8,                                // f16 subnormal range
            1.0e-40,                               // f32 subnormal
            70000.0,                               // overflows f16 to Inf
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            3.0e38,
        ];
        let v: Vec<f32> = base
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                if i % 7 == 3 {
                    specials[(i / 7) % specials.len()]
                } else {
                    // Spread magnitudes over many binades so every exponent path is taken.
                    x * 2f32.powi((i % 41) as i32 - 20)
                }
            })
            .collect();
        HostData::from_f32(self.from, &v)
    }

    /// The reference conversion, element by element through `half`'s scalar conversions.
    pub fn reference(&self, input: &HostData) -> HostData {
        let widened: Vec<f32> = (0..input.len()).map(|i| input.get_f64(i) as f32).collect();
        match self.to {
            DType::F16 => HostData::F16(widened.iter().map(|&x| half::f16::from_f32(x)).collect()),
            DType::Bf16 => {
                HostData::Bf16(widened.iter().map(|&x| half::bf16::from_f32(x)).collect())
            }
            _ => HostData::F32(widened),
        }
    }
}

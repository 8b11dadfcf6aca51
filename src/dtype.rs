//! Element types a case can name, with the rounding facts the tolerances need.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    F64,
    F32,
    /// f32 storage with TF32 (10-bit mantissa) multiplies: a compute type only.
    Tf32,
    F16,
    Bf16,
}

impl DType {
    pub const ALL: [DType; 5] = [DType::F64, DType::F32, DType::Tf32, DType::F16, DType::Bf16];
    /// The types a tensor can be stored in (tf32 is a compute mode, not a storage type).
    pub const STORAGE: [DType; 4] = [DType::F64, DType::F32, DType::F16, DType::Bf16];

    pub fn name(self) -> &'static str {
        match self {
            DType::F64 => "f64",
            DType::F32 => "f32",
            DType::Tf32 => "tf32",
            DType::F16 => "f16",
            DType::Bf16 => "bf16",
        }
    }

    pub fn parse(s: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == s)
    }

    /// Bytes per element in memory (tf32 lives in f32 storage).
    pub fn size(self) -> usize {
        match self {
            DType::F64 => 8,
            DType::F32 | DType::Tf32 => 4,
            DType::F16 | DType::Bf16 => 2,
        }
    }

    /// Unit roundoff (half the machine epsilon) of the type's significand.
    pub fn unit_roundoff(self) -> f64 {
        let mantissa_bits = match self {
            DType::F64 => 52,
            DType::F32 => 23,
            DType::Tf32 => 10,
            DType::F16 => 10,
            DType::Bf16 => 7,
        };
        0.5 * 2f64.powi(-mantissa_bits)
    }

    pub fn is_storage(self) -> bool {
        self != DType::Tf32
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Round an f64 to the nearest value representable in `dt` (round to nearest even), returned as f64.
pub fn round_to(dt: DType, v: f64) -> f64 {
    match dt {
        DType::F64 => v,
        DType::F32 => v as f32 as f64,
        DType::Tf32 => round_f32_to_tf32(v as f32) as f64,
        DType::F16 => half::f16::from_f64(v).to_f64(),
        DType::Bf16 => half::bf16::from_f64(v).to_f64(),
    }
}

/// Round an f32 to TF32 precision (10 explicit mantissa bits), ties to even, keeping NaN/Inf.
pub fn round_f32_to_tf32(v: f32) -> f32 {
    if !v.is_finite() {
        return v;
    }
    let bits = v.to_bits();
    let lsb = (bits >> 13) & 1;
    let rounded = bits.wrapping_add(0x0fff + lsb) & !0x1fff;
    f32::from_bits(rounded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_round_trips_every_name() {
        for d in DType::ALL {
            assert_eq!(DType::parse(d.name()), Some(d));
        }
        assert_eq!(DType::parse("f42"), None);
    }

    #[test]
    fn tf32_rounds_ties_to_even() {
        // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties go to the even significand (1.0).
        let halfway = 1.0f32 + 2f32.powi(-11);
        assert_eq!(round_f32_to_tf32(halfway), 1.0);
        // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
        let halfway_up = 1.0f32 + 3.0 * 2f32.powi(-11);
        assert_eq!(round_f32_to_tf32(halfway_up), 1.0 + 2f32.powi(-9));
        assert!(round_f32_to_tf32(f32::NAN).is_nan());
    }

    #[test]
    fn unit_roundoff_matches_half_crate_epsilon() {
        assert_eq!(
            DType::F16.unit_roundoff() * 2.0,
            half::f16::EPSILON.to_f64()
        );
        assert_eq!(
            DType::Bf16.unit_roundoff() * 2.0,
            half::bf16::EPSILON.to_f64()
        );
        assert_eq!(DType::F32.unit_roundoff() * 2.0, f32::EPSILON as f64);
    }
}

//! Deterministic inputs: the same case gets the same tensors on every machine, seeded from its id.

use crate::dtype::DType;
use crate::tensor::HostData;
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// Seed derived from a case id (16 hex digits); a malformed id still gives a fixed seed.
pub fn seed_from_id(id: &str) -> u64 {
    u64::from_str_radix(id.get(..16).unwrap_or(id), 16).unwrap_or(0x5eed)
}

/// Uniform values in [-1, 1), rounded to `dtype` so the reference sees exactly what the device sees.
pub fn uniform(dtype: DType, len: usize, seed: u64) -> HostData {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let v: Vec<f32> = (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    HostData::from_f32(dtype, &v)
}

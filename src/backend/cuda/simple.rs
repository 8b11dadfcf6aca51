//! cuRAND's normal generator for the engine's rng probe (backend::engine::probes); the copy
//! and cast probes are the engine's own.

use super::buffers::Gpu;
use crate::backend::UnitError;
use crate::backend::engine::probes::Normals;
use crate::backend::engine::runtime::Ptr;
use cudarc::curand::{result as cr, sys as cs};

fn curand_err(what: &str, e: cr::CurandError) -> UnitError {
    UnitError::library("curand", format!("{:?}", e.0), what)
}

/// A Philox generator seeded and bound to the worker's stream, destroyed on drop.
pub struct Generator(cs::curandGenerator_t);

impl Generator {
    pub fn new(gpu: &Gpu, seed: u64) -> Result<Generator, UnitError> {
        let g = cr::create_generator_kind(cs::curandRngType_t::CURAND_RNG_PSEUDO_PHILOX4_32_10)
            .map_err(|e| curand_err("curandCreateGenerator", e))?;
        let g = Generator(g);
        // SAFETY: a fresh generator bound to our stream.
        unsafe {
            cr::set_seed(g.0, seed)
                .map_err(|e| curand_err("curandSetPseudoRandomGeneratorSeed", e))?;
            cr::set_stream(g.0, gpu.stream.cu_stream() as _)
                .map_err(|e| curand_err("curandSetStream", e))?;
        }
        Ok(g)
    }
}

impl Drop for Generator {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once.
        unsafe {
            let _ = cr::destroy_generator(self.0);
        }
    }
}

impl Normals for Generator {
    fn generate(&mut self, out: Ptr, n: usize, mean: f32, std: f32) -> Result<(), UnitError> {
        // SAFETY: `out` holds n f32 values (the engine's contract).
        unsafe { cr::generate::normal_f32(self.0, out.cast(), n, mean, std) }
            .map_err(|e| curand_err("curandGenerateNormal", e))
    }
}

//! hipRAND: normal samples from a counter-based generator (splitmix64 + Box-Muller),
//! deterministic per seed. Each call continues the sequence where the last one stopped; a call
//! recorded into a graph keeps the offset it was recorded with, like a captured kernel's
//! arguments, so every replay draws the same numbers.

use crate::Registry;
use crate::capture;
use crate::faults::{self, Action, Lib, V};
use crate::memory;
use crate::model::{self, Model};
use std::ffi::c_void;
use std::sync::Arc;

const SUCCESS: i32 = 0;
const NOT_INITIALIZED: i32 = 101;
const TYPE_ERROR: i32 = 103;
const LENGTH_NOT_MULTIPLE: i32 = 105;
const LAUNCH_FAILURE: i32 = 201;
const INTERNAL_ERROR: i32 = 999;
const NOT_IMPLEMENTED: i32 = 1000;

#[derive(Clone, Copy)]
struct Generator {
    seed: u64,
    offset: u64,
    stream: usize,
}

static GENERATORS: Registry<Generator> = Registry::new();

fn call(f: impl FnOnce(&'static Model) -> i32) -> i32 {
    crate::guard(INTERNAL_ERROR, || match model::get() {
        Ok(m) if m.device.count > 0 => f(m),
        _ => NOT_INITIALIZED,
    })
}

fn ok_or(b: bool, err: i32) -> i32 {
    if b { SUCCESS } else { err }
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A uniform in (0, 1] from 53 random bits.
fn uniform(bits: u64) -> f64 {
    ((bits >> 11) + 1) as f64 / (1u64 << 53) as f64
}

/// Normal sample number `i` of the sequence for `seed`.
pub fn sample(seed: u64, i: u64) -> f64 {
    let pair = i / 2;
    let key = splitmix(seed ^ 0x6a09_e667_f3bc_c909);
    let u1 = uniform(splitmix(key ^ pair.wrapping_mul(2)));
    let u2 = uniform(splitmix(key ^ pair.wrapping_mul(2).wrapping_add(1)));
    let r = (-2.0 * u1.ln()).sqrt();
    let t = 2.0 * std::f64::consts::PI * u2;
    if i.is_multiple_of(2) {
        r * t.cos()
    } else {
        r * t.sin()
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hiprandCreateGenerator(generator: *mut *mut c_void, kind: i32) -> i32 {
    call(|_| {
        // PSEUDO_DEFAULT 400, XORWOW 401, MRG32K3A 402, MTGP32 403, MT19937 404, PHILOX4_32_10 405:
        // all draw from the same fake sequence.
        if !(400..=405).contains(&kind) {
            return TYPE_ERROR;
        }
        let g = Generator {
            seed: 0,
            offset: 0,
            stream: 0,
        };
        // SAFETY: null is checked by create.
        ok_or(
            unsafe { crate::create(&GENERATORS, generator, g) },
            NOT_INITIALIZED,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hiprandDestroyGenerator(generator: *mut c_void) -> i32 {
    call(|_| {
        ok_or(
            GENERATORS.remove(generator as usize).is_some(),
            NOT_INITIALIZED,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hiprandSetPseudoRandomGeneratorSeed(
    generator: *mut c_void,
    seed: u64,
) -> i32 {
    call(|_| {
        let set = GENERATORS.with(generator as usize, |g| {
            g.seed = seed;
            g.offset = 0;
        });
        ok_or(set.is_some(), NOT_INITIALIZED)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hiprandSetStream(generator: *mut c_void, stream: *mut c_void) -> i32 {
    call(|_| {
        if !capture::stream_known(stream as usize) {
            return LAUNCH_FAILURE;
        }
        ok_or(
            GENERATORS
                .with(generator as usize, |g| g.stream = stream as usize)
                .is_some(),
            NOT_INITIALIZED,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hiprandGenerateNormal(
    generator: *mut c_void,
    out: *mut f32,
    n: usize,
    mean: f32,
    std: f32,
) -> i32 {
    call(|_| {
        let Some(g) = GENERATORS.get(generator as usize) else {
            return NOT_INITIALIZED;
        };
        if !n.is_multiple_of(2) || !(out as usize).is_multiple_of(8) {
            return LENGTH_NOT_MULTIPLE;
        }
        let dst = out as usize;
        if !memory::check(dst, n * 4) {
            return LAUNCH_FAILURE;
        }
        let action = faults::check(Lib::Hiprand, None, &[("n", V::N(n as i64))], |_| true);
        match action {
            Some(Action::Error) => return LAUNCH_FAILURE,
            Some(Action::NotSupported) => return NOT_IMPLEMENTED,
            _ => {}
        }
        GENERATORS.with(generator as usize, |g| g.offset += n as u64);
        let (seed, offset) = (g.seed, g.offset);
        capture::submit(
            g.stream,
            Arc::new(move || {
                if !memory::check(dst, n * 4) {
                    return LAUNCH_FAILURE;
                }
                let fill = match action {
                    Some(Action::Zeros) => Some(0.0f32),
                    Some(Action::Nan) => Some(f32::NAN),
                    Some(a) => {
                        faults::trap(a);
                        None
                    }
                    None => None,
                };
                let p = dst as *mut f32;
                for i in 0..n {
                    let v = fill.unwrap_or_else(|| {
                        (mean as f64 + std as f64 * sample(seed, offset + i as u64)) as f32
                    });
                    // SAFETY: i < n, inside the checked range.
                    unsafe { p.add(i).write(v) };
                }
                SUCCESS
            }),
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hiprandGetVersion(version: *mut i32) -> i32 {
    call(|m| {
        let v = m.versions.hiprand;
        // SAFETY: null is checked by put.
        ok_or(
            unsafe {
                crate::put(
                    version,
                    (v.major * 100_000 + v.minor * 100 + v.patch) as i32,
                )
            },
            NOT_INITIALIZED,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_standard_normal_and_seeded() {
        let n = 200_000u64;
        let v: Vec<f64> = (0..n).map(|i| sample(42, i)).collect();
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var - 1.0).abs() < 0.02, "variance {var}");
        assert_eq!(sample(42, 17), sample(42, 17));
        assert_ne!(sample(42, 17), sample(43, 17));
    }
}

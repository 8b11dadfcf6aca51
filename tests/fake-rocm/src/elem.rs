//! Element types and raw loads/stores through "device" addresses (plain host memory here).
//! Conversions round to nearest even, as the GPU intrinsics (__float2half_rn, __float2bfloat16_rn)
//! do.

use half::{bf16, f16};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    F32,
    F16,
    Bf16,
}

impl DType {
    pub fn size(self) -> usize {
        match self {
            DType::F32 => 4,
            _ => 2,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::Bf16 => "bf16",
        }
    }
}

/// Element `i` of the array at `base`, widened to f32.
///
/// # Safety
/// `base` must point to at least `i + 1` elements of `dt`.
pub unsafe fn load(base: usize, dt: DType, i: usize) -> f32 {
    // SAFETY: the caller guarantees the element exists; reads are unaligned-safe.
    unsafe {
        match dt {
            DType::F32 => (base as *const f32).add(i).read_unaligned(),
            DType::F16 => f16::from_bits((base as *const u16).add(i).read_unaligned()).to_f32(),
            DType::Bf16 => bf16::from_bits((base as *const u16).add(i).read_unaligned()).to_f32(),
        }
    }
}

/// Stores `v` (an f32, as the cast kernels hold it) as element `i`.
///
/// # Safety
/// `base` must point to at least `i + 1` writable elements of `dt`.
pub unsafe fn store_f32(base: usize, dt: DType, i: usize, v: f32) {
    // SAFETY: the caller guarantees the element exists.
    unsafe {
        match dt {
            DType::F32 => (base as *mut f32).add(i).write_unaligned(v),
            DType::F16 => (base as *mut u16)
                .add(i)
                .write_unaligned(f16::from_f32(v).to_bits()),
            DType::Bf16 => (base as *mut u16)
                .add(i)
                .write_unaligned(bf16::from_f32(v).to_bits()),
        }
    }
}

/// Stores an f64 accumulator as element `i`, rounded once to the target type.
///
/// # Safety
/// `base` must point to at least `i + 1` writable elements of `dt`.
pub unsafe fn store(base: usize, dt: DType, i: usize, v: f64) {
    // SAFETY: the caller guarantees the element exists.
    unsafe {
        match dt {
            DType::F32 => (base as *mut f32).add(i).write_unaligned(v as f32),
            DType::F16 => (base as *mut u16)
                .add(i)
                .write_unaligned(f16::from_f64(v).to_bits()),
            DType::Bf16 => (base as *mut u16)
                .add(i)
                .write_unaligned(bf16::from_f64(v).to_bits()),
        }
    }
}

/// What a data fault writes instead of the result.
pub fn fill_value(zeros: bool) -> f64 {
    if zeros { 0.0 } else { f64::NAN }
}

/// Evaluates `f` for every index of `0..len` on all cores (outputs are independent).
pub fn par_map(len: usize, f: impl Fn(usize) -> f64 + Sync) -> Vec<f64> {
    let mut out = vec![0.0f64; len];
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(len.div_ceil(4096).max(1));
    let chunk = len.div_ceil(threads).max(1);
    let f = &f;
    std::thread::scope(|s| {
        for (c, part) in out.chunks_mut(chunk).enumerate() {
            s.spawn(move || {
                for (j, slot) in part.iter_mut().enumerate() {
                    *slot = f(c * chunk + j);
                }
            });
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_is_nearest_even() {
        let mut b = [0u16; 2];
        let p = b.as_mut_ptr() as usize;
        // 1 + 2^-11 lies halfway between two f16 values: ties go to the even one (1.0).
        unsafe { store_f32(p, DType::F16, 0, 1.0 + 2f32.powi(-11)) };
        assert_eq!(b[0], f16::from_f32(1.0).to_bits());
        // 1 + 3*2^-8 is halfway for bf16 (7 fraction bits) between 1+2^-7 and 1+2^-6: even is 1+2^-6.
        unsafe { store_f32(p, DType::Bf16, 1, 1.0 + 3.0 * 2f32.powi(-8)) };
        assert_eq!(unsafe { load(p, DType::Bf16, 1) }, 1.0 + 2f32.powi(-6));
    }

    #[test]
    fn par_map_covers_every_index() {
        let v = par_map(100_003, |i| i as f64);
        assert!(v.iter().enumerate().all(|(i, x)| *x == i as f64));
        assert!(par_map(0, |_| 1.0).is_empty());
    }
}

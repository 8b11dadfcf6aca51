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

/// A `rows` x `len` result computed row by row on all cores: `f(row, out)` fills one row
/// (zeroed beforehand). Rows are independent, so no locking.
pub fn par_rows(rows: usize, len: usize, f: impl Fn(usize, &mut [f64]) + Sync) -> Vec<f64> {
    let mut out = vec![0.0f64; rows * len];
    if out.is_empty() {
        return out;
    }
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(rows)
        .min((rows * len).div_ceil(4096))
        .max(1);
    let per = rows.div_ceil(threads);
    let f = &f;
    std::thread::scope(|s| {
        for (t, part) in out.chunks_mut(per * len).enumerate() {
            s.spawn(move || {
                for (j, row) in part.chunks_mut(len).enumerate() {
                    f(t * per + j, row);
                }
            });
        }
    });
    out
}

/// Sum of a[i] * b[i], in f64. Plain indexed loops with four accumulators: this library is
/// mostly run unoptimised (tests build it in the dev profile), where iterator adapters cost a
/// call per element.
pub fn dot(a: &[f32], b: &[f32]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let (mut s0, mut s1, mut s2, mut s3) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    let mut i = 0;
    while i + 4 <= n {
        s0 += a[i] as f64 * b[i] as f64;
        s1 += a[i + 1] as f64 * b[i + 1] as f64;
        s2 += a[i + 2] as f64 * b[i + 2] as f64;
        s3 += a[i + 3] as f64 * b[i + 3] as f64;
        i += 4;
    }
    while i < n {
        s0 += a[i] as f64 * b[i] as f64;
        i += 1;
    }
    (s0 + s1) + (s2 + s3)
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
    fn par_rows_covers_every_row() {
        let v = par_rows(10_007, 3, |r, out| {
            out.iter_mut().for_each(|x| *x = r as f64)
        });
        assert!(v.chunks(3).enumerate().all(|(r, row)| row == [r as f64; 3]));
        assert!(par_rows(0, 5, |_, _| ()).is_empty());
        assert!(par_rows(5, 0, |_, _| ()).is_empty());
    }

    #[test]
    fn dot_products() {
        let a: Vec<f32> = (0..11).map(|i| i as f32).collect();
        assert_eq!(dot(&a, &a), (0..11).map(|i| (i * i) as f64).sum::<f64>());
        assert_eq!(dot(&a[..3], &a), 5.0);
    }
}

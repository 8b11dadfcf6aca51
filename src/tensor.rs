//! Host-side tensors in their storage type, so verification can compare bit patterns exactly.

use crate::dtype::DType;
use half::{bf16, f16};

#[derive(Clone, Debug, PartialEq)]
pub enum HostData {
    F32(Vec<f32>),
    F16(Vec<f16>),
    Bf16(Vec<bf16>),
}

impl HostData {
    pub fn zeros(dtype: DType, len: usize) -> HostData {
        match dtype {
            DType::F16 => HostData::F16(vec![f16::ZERO; len]),
            DType::Bf16 => HostData::Bf16(vec![bf16::ZERO; len]),
            DType::F32 | DType::Tf32 | DType::F64 => HostData::F32(vec![0.0; len]),
        }
    }

    /// Rounds each f32 to `dtype` with round-to-nearest-even (the `half` crate's conversion).
    pub fn from_f32(dtype: DType, v: &[f32]) -> HostData {
        match dtype {
            DType::F16 => HostData::F16(v.iter().map(|&x| f16::from_f32(x)).collect()),
            DType::Bf16 => HostData::Bf16(v.iter().map(|&x| bf16::from_f32(x)).collect()),
            DType::F32 | DType::Tf32 | DType::F64 => HostData::F32(v.to_vec()),
        }
    }

    pub fn dtype(&self) -> DType {
        match self {
            HostData::F32(_) => DType::F32,
            HostData::F16(_) => DType::F16,
            HostData::Bf16(_) => DType::Bf16,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            HostData::F32(v) => v.len(),
            HostData::F16(v) => v.len(),
            HostData::Bf16(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn byte_len(&self) -> usize {
        self.len() * self.dtype().size()
    }

    pub fn get_f64(&self, i: usize) -> f64 {
        match self {
            HostData::F32(v) => v[i] as f64,
            HostData::F16(v) => v[i].to_f64(),
            HostData::Bf16(v) => v[i].to_f64(),
        }
    }

    /// Widens every element to f32 (exact for all three storage types).
    pub fn to_f32_vec(&self) -> Vec<f32> {
        match self {
            HostData::F32(v) => v.clone(),
            HostData::F16(v) => v.iter().map(|x| x.to_f32()).collect(),
            HostData::Bf16(v) => v.iter().map(|x| x.to_f32()).collect(),
        }
    }

    pub fn to_f64_vec(&self) -> Vec<f64> {
        (0..self.len()).map(|i| self.get_f64(i)).collect()
    }

    /// The element's bit pattern, widened to u32.
    pub fn bits(&self, i: usize) -> u32 {
        match self {
            HostData::F32(v) => v[i].to_bits(),
            HostData::F16(v) => v[i].to_bits() as u32,
            HostData::Bf16(v) => v[i].to_bits() as u32,
        }
    }

    pub fn is_nan(&self, i: usize) -> bool {
        self.get_f64(i).is_nan()
    }

    /// The raw bytes, little-endian as in device memory.
    pub fn as_bytes(&self) -> Vec<u8> {
        self.le_bytes().to_vec()
    }

    /// The elements' storage as little-endian bytes, borrowed (what a device copy reads).
    pub fn le_bytes(&self) -> &[u8] {
        const _: () = assert!(
            cfg!(target_endian = "little"),
            "device bytes are little-endian"
        );
        match self {
            HostData::F32(v) => bytemuck::cast_slice(v),
            HostData::F16(v) => bytemuck::cast_slice(v),
            HostData::Bf16(v) => bytemuck::cast_slice(v),
        }
    }

    /// Reads `len` elements of `dtype` from little-endian bytes (as copied from a device);
    /// missing bytes read as zero.
    pub fn from_le_bytes(dtype: DType, bytes: &[u8], len: usize) -> HostData {
        let mut h = HostData::zeros(dtype, len);
        // Whole elements only: an element whose bytes are cut short stays zero.
        let w = h.dtype().size();
        let whole = (bytes.len() / w * w).min(h.byte_len());
        h.le_bytes_mut()[..whole].copy_from_slice(&bytes[..whole]);
        h
    }

    /// The elements' storage as little-endian bytes, to be written in place (a device's output
    /// copied straight into its host tensor). f32, f16 and bf16 take any bit pattern.
    pub fn le_bytes_mut(&mut self) -> &mut [u8] {
        match self {
            HostData::F32(v) => bytemuck::cast_slice_mut(v),
            HostData::F16(v) => bytemuck::cast_slice_mut(v),
            HostData::Bf16(v) => bytemuck::cast_slice_mut(v),
        }
    }

    /// Keeps the first `n` elements (device buffers are at least one element long).
    pub fn truncate(&mut self, n: usize) {
        match self {
            HostData::F32(v) => v.truncate(n),
            HostData::F16(v) => v.truncate(n),
            HostData::Bf16(v) => v.truncate(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_and_missing_bytes_read_as_zero() {
        let h = HostData::from_f32(DType::Bf16, &[1.5, -2.0, 3.25]);
        let b = h.as_bytes();
        assert_eq!(b.len(), 6);
        assert_eq!(HostData::from_le_bytes(DType::Bf16, &b, 3), h);
        // Five bytes for three elements: the third is incomplete and reads as zero, as does a
        // fourth that is missing entirely.
        let short = HostData::from_le_bytes(DType::Bf16, &b[..5], 4);
        assert_eq!(
            short,
            HostData::from_f32(DType::Bf16, &[1.5, -2.0, 0.0, 0.0])
        );
        let f = HostData::from_f32(DType::F32, &[0.1, -7.0]);
        assert_eq!(HostData::from_le_bytes(DType::F32, &f.as_bytes(), 2), f);
        // Written in place, the same elements as read from the bytes.
        let mut g = HostData::zeros(DType::F32, 2);
        g.le_bytes_mut().copy_from_slice(&f.as_bytes());
        assert_eq!(g, f);
        let mut z = HostData::zeros(DType::Bf16, 3);
        z.le_bytes_mut().copy_from_slice(&b);
        assert_eq!(z, h);
    }
}

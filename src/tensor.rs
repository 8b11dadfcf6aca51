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
        match self {
            HostData::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            HostData::F16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            HostData::Bf16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }

    /// Reads `len` elements of `dtype` from little-endian bytes (as copied from a device);
    /// missing bytes read as zero.
    pub fn from_le_bytes(dtype: DType, bytes: &[u8], len: usize) -> HostData {
        let w = dtype.size();
        let get = |i: usize| -> &[u8] { bytes.get(i * w..(i + 1) * w).unwrap_or(&[0; 8][..w]) };
        match dtype {
            DType::F16 => HostData::F16(
                (0..len)
                    .map(|i| f16::from_le_bytes([get(i)[0], get(i)[1]]))
                    .collect(),
            ),
            DType::Bf16 => HostData::Bf16(
                (0..len)
                    .map(|i| bf16::from_le_bytes([get(i)[0], get(i)[1]]))
                    .collect(),
            ),
            _ => HostData::F32(
                (0..len)
                    .map(|i| {
                        let b = get(i);
                        f32::from_le_bytes([b[0], b[1], b[2], b[3]])
                    })
                    .collect(),
            ),
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

//! Memory copies between host and device (seed 002: tensors that arrive as zeros after `.to()`).

use super::param::{Default as D, ParamDef, ParamKind as K, ParamSlice};
use crate::op::inputs;
use crate::tensor::HostData;
use crate::verify::Check;
use serde::{Deserialize, Serialize};

pub const DIRECTIONS: &[&str] = &["h2d", "d2h", "d2d"];
pub const MEMORY: &[&str] = &["pageable", "pinned", "mmap"];

/// Why a backend other than torch cannot copy from `memory = "mmap"`.
pub const MMAP_TORCH_ONLY: &str = "memory = mmap (a memory-mapped file, as safetensors loads one) is copied through the torch backend only";

pub const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "direction",
        kind: K::Choice(DIRECTIONS),
        default: D::Str("h2d"),
        doc: "h2d, d2h or d2d",
    },
    ParamDef {
        name: "memory",
        kind: K::Choice(MEMORY),
        default: D::Str("pageable"),
        doc: "host memory: pageable, pinned or mmap (a memory-mapped file; torch only)",
    },
    ParamDef {
        name: "bytes",
        kind: K::Int { min: 4 },
        default: D::Int(1 << 24),
        doc: "bytes copied (rounded down to whole f32 words)",
    },
];

pub const CPU_SOLVERS: &[&str] = &["memcpy"];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CopyDir {
    H2d,
    D2h,
    D2d,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Copy {
    pub direction: CopyDir,
    pub pinned: bool,
    /// Host memory is a memory-mapped file (the torch backend only).
    #[serde(default)]
    pub mmap: bool,
    pub bytes: usize,
}

impl Copy {
    pub fn from_params(p: &ParamSlice) -> Result<Copy, String> {
        let direction = match p.str("direction")? {
            "h2d" => CopyDir::H2d,
            "d2h" => CopyDir::D2h,
            _ => CopyDir::D2d,
        };
        Ok(Copy {
            direction,
            pinned: p.str("memory")? == "pinned",
            mmap: p.str("memory")? == "mmap",
            bytes: p.usize("bytes")?,
        })
    }

    pub fn words(&self) -> usize {
        self.bytes / 4
    }

    /// GB/s conventions count the bytes moved once (not read + write), as bandwidth tests do.
    pub fn bytes(&self) -> f64 {
        (self.words() * 4) as f64
    }

    pub fn check(&self) -> Check {
        Check::BitExact
    }

    /// Random bit patterns, including NaN payloads: a copy must move every bit.
    pub fn make_input(&self, seed: u64) -> HostData {
        match inputs::uniform(crate::dtype::DType::F32, self.words(), seed) {
            HostData::F32(mut v) => {
                v.iter_mut()
                    .enumerate()
                    .filter(|(i, _)| i % 97 == 0)
                    .for_each(|(i, x)| {
                        *x = f32::from_bits(0x7fc0_0000 | (i as u32 & 0x3f_ffff));
                    });
                HostData::F32(v)
            }
            other => other,
        }
    }
}

//! Memory copies between host and device (seed 002: tensors that arrive as zeros after `.to()`).

use super::param::{Default as D, ParamDef, ParamKind as K, ParamSlice};
use crate::op::inputs;
use crate::tensor::HostData;
use crate::verify::Check;
use serde::{Deserialize, Serialize};

pub const DIRECTIONS: &[&str] = &["h2d", "d2h", "d2d"];
pub const MEMORY: &[&str] = &[
    "pageable",
    "pinned",
    "mmap",
    "shared",
    "dataloader",
    "accelerate",
];

/// Why a backend other than torch cannot copy from `memory = "mmap"`.
pub const MMAP_TORCH_ONLY: &str = "memory = mmap (a memory-mapped file, as safetensors loads one) is copied through the torch backend only";

/// Memory kinds that are a batch of a DataLoader: copied host to device only.
pub const BATCH_KINDS: &[&str] = &["dataloader", "accelerate"];

/// How a DataLoader's workers hand their tensors to the main process
/// (`torch.multiprocessing.set_sharing_strategy`); `default` leaves the platform's own.
pub const SHARING: &[&str] = &["default", "file_descriptor", "file_system"];

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
        doc: "host memory: pageable, pinned, mmap (a memory-mapped file; torch only), shared (shared memory, as a DataLoader worker's tensor arrives), dataloader (the first batch of a DataLoader with 2 workers; torch; the library copies from pageable memory, or pinned with pin_memory) or accelerate (that batch moved by accelerate's send_to_device)",
    },
    ParamDef {
        name: "bytes",
        kind: K::Int { min: 4 },
        default: D::Int(1 << 24),
        doc: "bytes copied (rounded down to whole f32 words)",
    },
    ParamDef {
        name: "pin_memory",
        kind: K::Bool,
        default: D::Bool(false),
        doc: "memory = dataloader or accelerate: the DataLoader's pin_memory (its batch pinned by the pin-memory thread); unsupported with other kinds",
    },
    ParamDef {
        name: "sharing_strategy",
        kind: K::Choice(SHARING),
        default: D::Str("default"),
        doc: "memory = dataloader or accelerate: torch.multiprocessing's sharing strategy for the DataLoader's workers (default: the platform's own; file_descriptor or file_system; one the platform does not offer is unsupported, with the ones it does); unsupported with other kinds",
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
    /// The library's host memory is pinned: `memory = "pinned"`, or a DataLoader batch with
    /// `pin_memory` (which the pin-memory thread pins).
    pub pinned: bool,
    /// Host memory is a memory-mapped file (the torch backend only).
    #[serde(default)]
    pub mmap: bool,
    pub bytes: usize,
    /// The case's `memory` as written (the torch backend makes each kind as it is).
    #[serde(default)]
    pub memory: String,
    #[serde(default)]
    pub pin_memory: bool,
    /// The DataLoader's sharing strategy (`default`: the platform's).
    #[serde(default = "default_sharing")]
    pub sharing_strategy: String,
}

fn default_sharing() -> String {
    "default".into()
}

impl Copy {
    pub fn from_params(p: &ParamSlice) -> Result<Copy, String> {
        let direction = match p.str("direction")? {
            "h2d" => CopyDir::H2d,
            "d2h" => CopyDir::D2h,
            _ => CopyDir::D2d,
        };
        let memory = p.str("memory")?;
        let pin_memory = p.bool("pin_memory").unwrap_or(false);
        let sharing_strategy = p.str("sharing_strategy").unwrap_or("default").to_string();
        let batch = BATCH_KINDS.contains(&memory);
        Ok(Copy {
            direction,
            pinned: memory == "pinned" || (batch && pin_memory),
            mmap: memory == "mmap",
            bytes: p.usize("bytes")?,
            memory: memory.to_string(),
            pin_memory,
            sharing_strategy,
        })
    }

    /// Why no backend runs this case, where the combination has no meaning: `pin_memory` is a
    /// DataLoader's, and a DataLoader batch goes host to device (`Problem::unsupported`).
    pub fn unsupported(&self) -> Option<String> {
        let batch = BATCH_KINDS.contains(&self.memory.as_str());
        if self.pin_memory && !batch {
            return Some(format!(
                "pin_memory is a DataLoader's (memory = dataloader or accelerate), not memory = {}'s",
                self.memory
            ));
        }
        if self.sharing_strategy != "default" && !batch {
            return Some(format!(
                "sharing_strategy is a DataLoader's (memory = dataloader or accelerate), not memory = {}'s",
                self.memory
            ));
        }
        if batch && self.direction != CopyDir::H2d {
            return Some(format!(
                "memory = {} is a DataLoader's batch, moved host to device (direction = h2d)",
                self.memory
            ));
        }
        None
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

//! The ROCm backend's device types over the engine, and its libraries: each one loaded, or the
//! message saying why not.

use super::hip::Hip;
use super::runtime::HipRt;
use super::{hipblaslt, hiprand, hiprtc, loader, miopen, rocblas};
use crate::backend::UnitError;
use crate::backend::engine;
use std::sync::Arc;

/// The device: the engine over the HIP runtime and its one stream.
pub type Dev = engine::Device<HipRt>;
pub type DevRef = engine::Dev<HipRt>;
pub type DevMem = engine::mem::DevMem<HipRt>;
pub type Kernels = engine::kernels::Kernels<HipRt>;

/// A library that loaded, or the message saying why not.
pub(crate) type Lib<T> = Result<T, String>;

pub(super) struct Libs {
    pub(super) hiprtc: Lib<Arc<hiprtc::Hiprtc>>,
    pub(super) miopen: Lib<miopen::MiopenRef>,
    pub(super) hipblaslt: Lib<hipblaslt::HipblasltRef>,
    pub(super) rocblas: Lib<rocblas::RocblasRef>,
    pub(super) hiprand: Lib<hiprand::HiprandRef>,
}

impl Libs {
    pub(super) fn load(hip: &Hip) -> Libs {
        Libs {
            hiprtc: hiprtc::Hiprtc::load(hip).map(Arc::new),
            miopen: miopen::Miopen::load(),
            hipblaslt: hipblaslt::Hipblaslt::load(hip.version),
            rocblas: rocblas::Rocblas::load(),
            hiprand: hiprand::Hiprand::load(),
        }
    }
}

/// The library, or an error row naming it and where it was looked for (or which kernels it
/// lacks).
pub(super) fn need<T: Clone>(lib: &Lib<T>, library: &str) -> Result<T, UnitError> {
    lib.clone().map_err(|why| {
        let missing = why.contains(crate::rocm_tree::kernels::MISSING);
        let code = if missing {
            "KERNELS_MISSING"
        } else if why.contains(loader::UNLOADABLE) {
            "LIBRARY_UNLOADABLE"
        } else {
            "LIBRARY_NOT_FOUND"
        };
        UnitError::library(library, code, why)
    })
}

//! The graph op's sequence on CUDA (the engine's graph op, backend::engine::graph, replays it):
//! cuBLASLt's heuristic GEMM, then cuDNN's implicit_precomp_gemm convolution.

use super::buffers::{Addr, Gpu};
use super::conv::ConvCall;
use super::gemm::GemmCall;
use crate::backend::UnitError;
use crate::backend::engine::cuda::CudaRt;
use crate::backend::engine::graph::{self, Buffers};
use crate::backend::engine::run::Call;
use crate::op::graph::Graph;

pub use graph::SOLVERS;

/// The graph's GEMM and convolution, made once per unit.
pub struct Sequence {
    gemm: GemmCall,
    conv: ConvCall,
}

impl Sequence {
    pub fn new(gpu: &Gpu, p: &Graph) -> Result<Sequence, UnitError> {
        Ok(Sequence {
            gemm: GemmCall::new(gpu, &p.gemm(), "heuristic")?,
            conv: ConvCall::new(gpu, &p.conv(), "implicit_precomp_gemm")?,
        })
    }
}

impl graph::Sequence<CudaRt> for Sequence {
    fn launch(&mut self, b: &Buffers<CudaRt>) -> Result<(), UnitError> {
        self.gemm.launch(b.mix.ptr(), b.x.ptr(), b.mixed.ptr())?;
        self.conv
            .launch(b.mixed.addr(), b.filter.addr(), b.y.addr())
    }
}

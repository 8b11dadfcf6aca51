//! The graph op's sequence on CUDA (the engine's graph op, backend::engine::graph, replays it):
//! cuBLASLt's heuristic GEMM, then cuDNN's implicit_precomp_gemm convolution.

use super::buffers::Gpu;
use super::conv::ConvCall;
use super::gemm::GemmCall;
use crate::backend::UnitError;
use crate::backend::engine::graph::GemmThenConv;
use crate::op::graph::Graph;

pub use crate::backend::engine::graph::SOLVERS;

/// The graph's GEMM and convolution, made once per unit.
pub fn sequence(gpu: &Gpu, p: &Graph) -> Result<GemmThenConv<GemmCall, ConvCall>, UnitError> {
    Ok(GemmThenConv {
        gemm: GemmCall::new(gpu, &p.gemm(), "heuristic")?,
        conv: ConvCall::new(gpu, &p.conv(), "implicit_precomp_gemm")?,
    })
}

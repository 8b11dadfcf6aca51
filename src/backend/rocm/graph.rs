//! The graph op's sequence on ROCm (the engine's graph op, backend::engine::graph, replays it):
//! hipBLASLt's or rocBLAS's GEMM, then MIOpen's first listed convolution.

use super::DevRef;
use super::conv::ConvCall;
use super::gemm::GemmCall;
use super::hipblaslt::HipblasltRef;
use super::miopen::MiopenRef;
use super::rocblas::RocblasRef;
use crate::backend::UnitError;
use crate::backend::engine::graph::{self, Buffers};
use crate::backend::engine::hip::HipRt;
use crate::backend::engine::run::Call;
use crate::op::graph::Graph;

pub use graph::SOLVERS;

/// The graph's GEMM and convolution, made once per unit.
pub struct Sequence {
    gemm: GemmCall,
    conv: ConvCall,
}

impl Sequence {
    pub fn new(
        dev: &DevRef,
        miopen: &MiopenRef,
        lt: &super::Lib<HipblasltRef>,
        rb: &super::Lib<RocblasRef>,
        p: &Graph,
    ) -> Result<Sequence, UnitError> {
        Ok(Sequence {
            gemm: GemmCall::new(dev, lt, rb, &p.gemm())?,
            conv: ConvCall::first_listed(dev, miopen, &p.conv())?,
        })
    }
}

impl graph::Sequence<HipRt> for Sequence {
    fn launch(&mut self, b: &Buffers<HipRt>) -> Result<(), UnitError> {
        self.gemm.launch(b.mix.ptr(), b.x.ptr(), b.mixed.ptr())?;
        self.conv.launch(
            b.mixed.ptr().cast_const(),
            b.filter.ptr().cast_const(),
            b.y.ptr(),
        )
    }
}

//! The graph op on ROCm: the sequence (hipBLASLt or rocBLAS GEMM -> MIOpen conv -> ReLU kernel)
//! captured on the stream into a HIP graph and replayed, each replay fed a new input copied into
//! the captured input buffer (`stream-capture`), or launched eagerly (`eager`). With
//! `keep_outputs` each replay's output is copied into its own buffer and all are read at the end
//! (seed 003: a later replay overwriting, or failing to refresh, an earlier replay's output).

use super::DevRef;
use super::conv::ConvCall;
use super::gemm::GemmCall;
use super::hip::{GraphExec, MEMCPY_D2D};
use super::hipblaslt::HipblasltRef;
use super::kernels::Kernels;
use super::miopen::MiopenRef;
use super::rocblas::RocblasRef;
use super::simple::DevTensor;
use crate::backend::{PhaseSink, Prepared, UnitError};
use crate::op::graph::{Graph, GraphInputs};
use crate::tensor::HostData;
use crate::timing::{Batch, Sample};

pub const SOLVERS: &[&str] = &["stream-capture", "eager"];

struct Steps {
    gemm: GemmCall,
    conv: ConvCall,
    k: Kernels,
    mix: DevTensor,
    filter: DevTensor,
    x: DevTensor,
    mixed: DevTensor,
    y: DevTensor,
    p: Graph,
}

impl Steps {
    fn launch(&self, dev: &DevRef) -> Result<(), UnitError> {
        self.gemm.launch(
            dev,
            self.mix.mem.ptr.cast_const(),
            self.x.mem.ptr.cast_const(),
            self.mixed.mem.ptr,
        )?;
        self.conv.launch(
            self.mixed.mem.ptr.cast_const(),
            self.filter.mem.ptr.cast_const(),
            self.y.mem.ptr,
        )?;
        self.k
            .relu(dev, self.p.dtype, self.y.mem.ptr, self.p.activation_len())
    }
}

fn copy_d2d(dev: &DevRef, to: &DevTensor, from: &DevTensor, what: &str) -> Result<(), UnitError> {
    let n = to.mem.bytes.min(from.mem.bytes);
    // SAFETY: both buffers hold at least n bytes.
    dev.hip.check(
        unsafe {
            (dev.hip.api.hipMemcpyAsync)(
                to.mem.ptr,
                from.mem.ptr.cast_const(),
                n,
                MEMCPY_D2D,
                dev.stream.raw,
            )
        },
        what,
    )
}

pub struct GraphRun {
    dev: DevRef,
    steps: Steps,
    graph: Option<GraphExec>,
    acts: Vec<DevTensor>,
    kept: Vec<DevTensor>,
    host_outs: Vec<Option<HostData>>,
    next: usize,
}

#[allow(clippy::too_many_arguments)]
pub fn prepare(
    dev: &DevRef,
    miopen: &MiopenRef,
    lt: &super::Lib<HipblasltRef>,
    rb: &super::Lib<RocblasRef>,
    k: Kernels,
    p: &Graph,
    solver: &str,
    i: &GraphInputs,
    phases: &mut dyn PhaseSink,
) -> Result<Box<dyn Prepared>, UnitError> {
    let capture = match solver {
        "default" | "stream-capture" => true,
        "eager" => false,
        other => {
            return Err(UnitError::Unsupported(format!(
                "the rocm backend has no graph solver `{other}` (it has: {})",
                SOLVERS.join(", ")
            )));
        }
    };
    let gemm = GemmCall::new(dev, lt, rb, &p.gemm())?;
    let conv = ConvCall::first_listed(dev, miopen, &p.conv())?;
    phases.phase("alloc");
    let n_out = p.activation_len();
    let acts = i
        .activations
        .iter()
        .map(|a| DevTensor::upload(dev, a))
        .collect::<Result<Vec<_>, _>>()?;
    let kept = if p.keep_outputs {
        (0..p.replays)
            .map(|_| DevTensor::zeros(dev, p.dtype, n_out))
            .collect::<Result<Vec<_>, _>>()?
    } else {
        Vec::new()
    };
    let steps = Steps {
        gemm,
        conv,
        k,
        mix: DevTensor::upload(dev, &i.mix)?,
        filter: DevTensor::upload(dev, &i.filter)?,
        x: DevTensor::zeros(dev, p.dtype, n_out)?,
        mixed: DevTensor::zeros(dev, p.dtype, n_out)?,
        y: DevTensor::zeros(dev, p.dtype, n_out)?,
        p: p.clone(),
    };
    let graph = if capture {
        phases.phase("compile");
        // One eager run first, so the libraries allocate their workspaces and compile their
        // kernels outside the capture: rocBLAS grows its workspace with hipMalloc, which a
        // capture rejects unless ROCBLAS_STREAM_ORDER_ALLOC is set, and MIOpen may poll the
        // stream during its first launch.
        steps.launch(dev)?;
        dev.stream.sync()?;
        Some(GraphExec::capture(&dev.hip, &dev.stream, || {
            steps.launch(dev)
        })?)
    } else {
        None
    };
    Ok(Box::new(GraphRun {
        dev: dev.clone(),
        steps,
        graph,
        acts,
        kept,
        host_outs: vec![None; p.replays],
        next: 0,
    }))
}

impl Prepared for GraphRun {
    fn run(&mut self, batch: Batch) -> Result<Sample, UnitError> {
        let d = self.dev.clone();
        let r = self.next % self.acts.len().max(1);
        self.next += 1;
        // New input into the captured input buffer (not timed).
        if let Some(a) = self.acts.get(r) {
            copy_d2d(&d, &self.steps.x, a, "copying the replay's input")?;
        }
        let secs = match &self.graph {
            Some(g) => d.timed(batch, || g.launch(&d.stream))?,
            None => {
                let steps = &self.steps;
                d.timed(batch, || steps.launch(&d))?
            }
        };
        if r < self.host_outs.len() && self.host_outs[r].is_none() {
            if let Some(k) = self.kept.get(r) {
                copy_d2d(&d, k, &self.steps.y, "keeping the replay's output")?;
                self.host_outs[r] = Some(HostData::zeros(self.steps.p.dtype, 0));
            } else {
                self.host_outs[r] = Some(self.steps.y.download(&d)?);
            }
        }
        Ok(secs)
    }

    fn flush_cache(&mut self, bytes: u64) {
        self.dev.flush_cache(bytes);
    }

    fn output(&mut self) -> Result<HostData, UnitError> {
        while self.host_outs.iter().any(Option::is_none) {
            self.run(Batch::Single)?;
        }
        let d = self.dev.clone();
        let mut replays = Vec::with_capacity(self.host_outs.len());
        for r in 0..self.host_outs.len() {
            replays.push(match self.kept.get(r) {
                Some(k) => k.download(&d)?,
                None => self.host_outs[r]
                    .clone()
                    .unwrap_or_else(|| HostData::zeros(self.steps.p.dtype, 0)),
            });
        }
        Ok(self.steps.p.join_replays(replays))
    }
}

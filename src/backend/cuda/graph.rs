//! The graph op on CUDA: the sequence (cuBLASLt GEMM -> cuDNN conv -> ReLU kernel) captured on
//! the stream into a CUDA graph and replayed, each replay fed a new input by copying it into the
//! captured input buffer (solver `stream-capture`), or launched eagerly (solver `eager`), so a
//! sweep over both compares replay time with eager time. With `keep_outputs` each replay's
//! output is cloned into its own buffer and all are read at the end (seed 003's failure is a
//! later replay overwriting an earlier replay's output).

use super::blocker::timed;
use super::buffers::{DevBuf, Gpu};
use super::conv::ConvCall;
use super::gemm::GemmCall;
use super::kernels::Kernels;
use super::{driver_err, internal_err};
use crate::backend::{PhaseSink, Prepared, UnitError};
use crate::op::graph::{Graph, GraphInputs};
use crate::tensor::HostData;
use crate::timing::{Batch, Sample};
use cudarc::driver::{result as dr, sys as dsys};

pub const SOLVERS: &[&str] = &["stream-capture", "eager"];

struct Steps {
    gemm: GemmCall,
    conv: ConvCall,
    k: Kernels,
    mix: DevBuf,
    filter: DevBuf,
    x: DevBuf,
    mixed: DevBuf,
    y: DevBuf,
    n_out: usize,
    p: Graph,
}

impl Steps {
    fn launch(&mut self, g: &Gpu) -> Result<(), UnitError> {
        let (mix, x, mixed) = (self.mix.ptr(g), self.x.ptr(g), self.mixed.ptr_mut(g));
        self.gemm.launch(g, mix, x, mixed)?;
        let (filter, y) = (self.filter.ptr(g), self.y.ptr_mut(g));
        self.conv.launch(g, mixed, filter, y)?;
        self.k.relu(g, self.p.dtype, y, self.n_out)
    }
}

/// A captured and instantiated graph; capture and instantiation fail with their own codes.
struct Exec {
    graph: dsys::CUgraph,
    exec: dsys::CUgraphExec,
}

impl Drop for Exec {
    fn drop(&mut self) {
        // SAFETY: both were created by capture_graph and are destroyed once.
        unsafe {
            let _ = dr::graph::exec_destroy(self.exec);
            let _ = dr::graph::destroy(self.graph);
        }
    }
}

fn graph_err(stage: &str, e: cudarc::driver::DriverError) -> UnitError {
    UnitError::Library {
        library: "cuda-graph".into(),
        code: format!("{:?}", e.0),
        message: stage.to_string(),
    }
}

fn capture_graph(gpu: &Gpu, steps: &mut Steps) -> Result<Exec, UnitError> {
    gpu.stream
        .synchronize()
        .map_err(|e| driver_err("before capture", e))?;
    gpu.stream
        .begin_capture(dsys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .map_err(|e| graph_err("stream capture failed to begin (cuStreamBeginCapture)", e))?;
    let launched = steps.launch(gpu);
    // End the capture whatever happened, so the stream is usable again.
    // SAFETY: ends the capture begun above on our own stream.
    let ended = unsafe { dr::stream::end_capture(gpu.stream.cu_stream()) };
    if launched.is_err()
        && let Ok(g) = &ended
        && !g.is_null()
    {
        // SAFETY: a graph the failed capture made; destroyed once, here.
        let _ = unsafe { dr::graph::destroy(*g) };
    }
    launched.map_err(|e| match e {
        UnitError::Library {
            library,
            code,
            message,
        } => UnitError::Library {
            library,
            code,
            message: format!("{message} (while capturing the graph)"),
        },
        other => other,
    })?;
    let graph = ended.map_err(|e| graph_err("stream capture failed (cuStreamEndCapture)", e))?;
    if graph.is_null() {
        return Err(UnitError::Library {
            library: "cuda-graph".into(),
            code: "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED".into(),
            message: "stream capture produced no graph".into(),
        });
    }
    // SAFETY: a graph just produced by the capture.
    match unsafe { dr::graph::instantiate(graph, dsys::CUgraphInstantiate_flags(0)) } {
        Ok(exec) => Ok(Exec { graph, exec }),
        Err(e) => {
            // SAFETY: the graph is ours and not instantiated.
            unsafe {
                let _ = dr::graph::destroy(graph);
            }
            Err(graph_err(
                "graph instantiation failed (cuGraphInstantiate)",
                e,
            ))
        }
    }
}

pub struct GraphRun {
    gpu: Gpu,
    steps: Steps,
    graph: Option<Exec>,
    acts: Vec<DevBuf>,
    kept: Vec<DevBuf>,
    host_outs: Vec<Option<HostData>>,
    next: usize,
}

pub fn prepare(
    gpu: &Gpu,
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
                "the cuda backend has no graph solver `{other}` (it has: {})",
                SOLVERS.join(", ")
            )));
        }
    };
    let gemm = GemmCall::new(gpu, &p.gemm(), "heuristic")?;
    let conv = ConvCall::new(gpu, &p.conv(), "implicit_precomp_gemm")?;
    phases.phase("alloc");
    let n_out = p.activation_len();
    let acts = i
        .activations
        .iter()
        .map(|a| DevBuf::upload(gpu, a))
        .collect::<Result<Vec<_>, _>>()?;
    let kept = if p.keep_outputs {
        (0..p.replays)
            .map(|_| DevBuf::zeros(gpu, p.dtype, n_out))
            .collect::<Result<Vec<_>, _>>()?
    } else {
        Vec::new()
    };
    let mut steps = Steps {
        gemm,
        conv,
        k,
        mix: DevBuf::upload(gpu, &i.mix)?,
        filter: DevBuf::upload(gpu, &i.filter)?,
        x: DevBuf::zeros(gpu, p.dtype, n_out)?,
        mixed: DevBuf::zeros(gpu, p.dtype, n_out)?,
        y: DevBuf::zeros(gpu, p.dtype, n_out)?,
        n_out,
        p: p.clone(),
    };
    let graph = if capture {
        phases.phase("compile");
        // One eager run first, so the libraries allocate workspaces and load kernels outside
        // the capture (as on ROCm).
        steps.launch(gpu)?;
        Some(capture_graph(gpu, &mut steps)?)
    } else {
        None
    };
    Ok(Box::new(GraphRun {
        gpu: gpu.clone(),
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
        let g = self.gpu.clone();
        let r = self.next % self.acts.len().max(1);
        self.next += 1;
        // New input into the captured input buffer (not timed).
        let e = |e| driver_err("copying the replay's input", e);
        match (&self.acts[r], &mut self.steps.x) {
            (DevBuf::F32(a), DevBuf::F32(x)) => g.stream.memcpy_dtod(a, x).map_err(e)?,
            (DevBuf::F16(a), DevBuf::F16(x)) => g.stream.memcpy_dtod(a, x).map_err(e)?,
            (DevBuf::Bf16(a), DevBuf::Bf16(x)) => g.stream.memcpy_dtod(a, x).map_err(e)?,
            _ => return Err(internal_err("input types differ", "INPUT_MISMATCH")),
        }
        let secs = match &self.graph {
            Some(graph) => timed(&g, batch, || {
                // SAFETY: a live graph exec launched on our stream.
                unsafe { dr::graph::launch(graph.exec, g.stream.cu_stream()) }
                    .map_err(|e| graph_err("graph replay failed (cuGraphLaunch)", e))
            })?,
            None => {
                let steps = &mut self.steps;
                timed(&g, batch, || steps.launch(&g))?
            }
        };
        if r < self.host_outs.len() && self.host_outs[r].is_none() {
            if let Some(k) = self.kept.get_mut(r) {
                let ek = |e| driver_err("keeping the replay's output", e);
                match (&self.steps.y, k) {
                    (DevBuf::F32(y), DevBuf::F32(o)) => g.stream.memcpy_dtod(y, o).map_err(ek)?,
                    (DevBuf::F16(y), DevBuf::F16(o)) => g.stream.memcpy_dtod(y, o).map_err(ek)?,
                    (DevBuf::Bf16(y), DevBuf::Bf16(o)) => g.stream.memcpy_dtod(y, o).map_err(ek)?,
                    _ => return Err(internal_err("output types differ", "INPUT_MISMATCH")),
                }
                self.host_outs[r] = Some(HostData::zeros(self.steps.p.dtype, 0));
            } else {
                self.host_outs[r] = Some(self.steps.y.download(&g)?);
            }
        }
        Ok(secs)
    }

    fn flush_cache(&mut self, bytes: u64) {
        self.gpu.flush_cache(bytes);
    }
    fn output(&mut self) -> Result<HostData, UnitError> {
        while self.host_outs.iter().any(Option::is_none) {
            self.run(Batch::Single)?;
        }
        let g = self.gpu.clone();
        let mut replays = Vec::with_capacity(self.host_outs.len());
        for r in 0..self.host_outs.len() {
            replays.push(match self.kept.get(r) {
                Some(k) => k.download(&g)?,
                None => self.host_outs[r]
                    .clone()
                    .unwrap_or_else(|| HostData::zeros(self.steps.p.dtype, 0)),
            });
        }
        Ok(self.steps.p.join_replays(replays))
    }
}

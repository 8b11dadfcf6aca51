//! Graph capture, and the graph op written once: a sequence (the backend's GEMM -> the
//! backend's convolution -> the engine's ReLU kernel) captured on the stream into a graph and
//! replayed, each replay fed a new input copied into the captured input buffer (solver
//! `stream-capture`), or launched eagerly (`eager`), so a sweep over both compares replay time
//! with eager time. With `keep_outputs` each replay's output is copied into its own buffer and
//! all are read at the end (seed 003: a later replay overwriting, or failing to refresh, an
//! earlier replay's output). Both backends' sequences are a `GemmThenConv` of their library
//! calls.

use super::device::{Dev, Device};
use super::kernels::Kernels;
use super::mem::Tensor;
use super::run::Call;
use super::runtime::{Ptr, Runtime, Stage};
use crate::backend::{PhaseSink, Prepared, UnitError};
use crate::op::graph::{Graph, GraphInputs};
use crate::tensor::HostData;
use crate::timing::{Batch, Sample};
use std::rc::Rc;

pub const SOLVERS: &[&str] = &["stream-capture", "eager"];

/// A captured graph and its executable form, destroyed on drop.
pub struct Exec<R: Runtime> {
    rt: Rc<R>,
    graph: Ptr,
    exec: Ptr,
}

impl<R: Runtime> Exec<R> {
    /// Captures what `f` queues on the stream (after waiting for what is queued already) and
    /// instantiates it. Each failing step is reported as the runtime names it
    /// (`Runtime::graph_error`).
    pub fn capture(
        rt: &Rc<R>,
        f: impl FnOnce() -> Result<(), UnitError>,
    ) -> Result<Exec<R>, UnitError> {
        rt.sync()?;
        rt.begin_capture()
            .map_err(|e| rt.graph_error(Stage::Begin, e))?;
        let body = f();
        // Ended whatever the body did, so the stream is usable again.
        let ended = rt.end_capture();
        if body.is_err()
            && let Ok(g) = &ended
            && !g.is_null()
        {
            // SAFETY: a graph the failed capture made; destroyed once, here.
            unsafe { rt.destroy_graph(*g) };
        }
        body.map_err(|e| rt.graph_error(Stage::Body, e))?;
        let graph = ended.map_err(|e| rt.graph_error(Stage::End, e))?;
        // SAFETY: a graph just produced by the capture.
        match unsafe { rt.instantiate(graph) } {
            Ok(exec) => Ok(Exec {
                rt: rt.clone(),
                graph,
                exec,
            }),
            Err(e) => {
                // SAFETY: the graph is ours and not instantiated; destroyed once.
                unsafe { rt.destroy_graph(graph) };
                Err(rt.graph_error(Stage::Instantiate, e))
            }
        }
    }

    /// Queues one replay.
    pub fn launch(&self) -> Result<(), UnitError> {
        // SAFETY: a live executable graph.
        unsafe { self.rt.launch_graph(self.exec) }
    }
}

impl<R: Runtime> Drop for Exec<R> {
    fn drop(&mut self) {
        // SAFETY: both created in `capture`, destroyed once, the executable first.
        unsafe {
            self.rt.destroy_exec(self.exec);
            self.rt.destroy_graph(self.graph);
        }
    }
}

/// Whether a graph solver captures (`default`, `stream-capture`) or runs eagerly (`eager`).
pub fn captures(backend: &str, solver: &str) -> Result<bool, UnitError> {
    match solver {
        "default" | "stream-capture" => Ok(true),
        "eager" => Ok(false),
        other => Err(UnitError::Unsupported(format!(
            "the {backend} backend has no graph solver `{other}` (it has: {})",
            SOLVERS.join(", ")
        ))),
    }
}

/// The graph op's device buffers.
pub struct Buffers<R: Runtime> {
    pub mix: Tensor<R>,
    pub filter: Tensor<R>,
    /// The captured input, refreshed before every replay.
    pub x: Tensor<R>,
    /// The GEMM's output, the convolution's input.
    pub mixed: Tensor<R>,
    /// The convolution's output, ReLU'd in place: the replay's output.
    pub y: Tensor<R>,
}

/// The backend's part of the sequence: mixed = GEMM(mix, x), then y = conv(mixed, filter).
pub trait Sequence<R: Runtime> {
    fn launch(&mut self, b: &Buffers<R>) -> Result<(), UnitError>;
}

/// The sequence as both backends make it: a GEMM call, then a convolution call.
pub struct GemmThenConv<G, C> {
    pub gemm: G,
    pub conv: C,
}

impl<R: Runtime, G: Call, C: Call> Sequence<R> for GemmThenConv<G, C> {
    fn launch(&mut self, b: &Buffers<R>) -> Result<(), UnitError> {
        self.gemm.launch(b.mix.ptr(), b.x.ptr(), b.mixed.ptr())?;
        self.conv.launch(b.mixed.ptr(), b.filter.ptr(), b.y.ptr())
    }
}

struct Steps<R: Runtime, S> {
    seq: S,
    k: Kernels<R>,
    b: Buffers<R>,
    p: Graph,
}

impl<R: Runtime, S: Sequence<R>> Steps<R, S> {
    fn launch(&mut self) -> Result<(), UnitError> {
        self.seq.launch(&self.b)?;
        self.k
            .relu(self.p.dtype, self.b.y.ptr(), self.p.activation_len())
    }
}

struct GraphRun<R: Runtime, S> {
    dev: Dev<R>,
    steps: Steps<R, S>,
    graph: Option<Exec<R>>,
    acts: Vec<Tensor<R>>,
    kept: Vec<Tensor<R>>,
    host_outs: Vec<Option<HostData>>,
    next: usize,
}

/// The graph op's unit over the backend's `seq`: buffers set up, and with `capture` one eager
/// run (so the libraries allocate their workspaces and compile their kernels outside the
/// capture: rocBLAS grows its workspace with hipMalloc, which a capture rejects unless
/// ROCBLAS_STREAM_ORDER_ALLOC is set, and MIOpen may poll the stream during its first launch)
/// and the capture.
pub fn prepare<R: Runtime, S: Sequence<R> + 'static>(
    dev: &Dev<R>,
    seq: S,
    k: Kernels<R>,
    p: &Graph,
    capture: bool,
    i: &GraphInputs,
    phases: &mut dyn PhaseSink,
) -> Result<Box<dyn Prepared>, UnitError> {
    phases.phase("alloc");
    let n_out = p.activation_len();
    let acts = i
        .activations
        .iter()
        .map(|a| dev.upload(a))
        .collect::<Result<Vec<_>, _>>()?;
    let kept = if p.keep_outputs {
        (0..p.replays)
            .map(|_| dev.zeros(p.dtype, n_out))
            .collect::<Result<Vec<_>, _>>()?
    } else {
        Vec::new()
    };
    let b = Buffers {
        mix: dev.upload(&i.mix)?,
        filter: dev.upload(&i.filter)?,
        x: dev.zeros(p.dtype, n_out)?,
        mixed: dev.zeros(p.dtype, n_out)?,
        y: dev.zeros(p.dtype, n_out)?,
    };
    let mut steps = Steps {
        seq,
        k,
        b,
        p: p.clone(),
    };
    let graph = if capture {
        phases.phase("compile");
        steps.launch()?;
        Some(Exec::capture(&dev.rt, || steps.launch())?)
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

impl<R: Runtime, S: Sequence<R>> Prepared for GraphRun<R, S> {
    fn run(&mut self, batch: Batch) -> Result<Sample, UnitError> {
        let d: &Device<R> = &self.dev;
        let r = self.next % self.acts.len().max(1);
        self.next += 1;
        // New input into the captured input buffer (not timed).
        if let Some(a) = self.acts.get(r) {
            self.steps.b.x.mem.copy_from(&a.mem)?;
        }
        let secs = match &self.graph {
            Some(g) => d.timed(batch, || g.launch())?,
            None => {
                let steps = &mut self.steps;
                d.timed(batch, || steps.launch())?
            }
        };
        if r < self.host_outs.len() && self.host_outs[r].is_none() {
            if let Some(k) = self.kept.get(r) {
                k.mem.copy_from(&self.steps.b.y.mem)?;
                self.host_outs[r] = Some(HostData::zeros(self.steps.p.dtype, 0));
            } else {
                self.host_outs[r] = Some(self.steps.b.y.download()?);
            }
        }
        Ok(secs)
    }

    fn flush_cache(&mut self, bytes: u64) -> bool {
        self.dev.flush_cache(bytes)
    }

    fn output(&mut self) -> Result<HostData, UnitError> {
        while self.host_outs.iter().any(Option::is_none) {
            self.run(Batch::Single)?;
        }
        let mut replays = Vec::with_capacity(self.host_outs.len());
        for r in 0..self.host_outs.len() {
            replays.push(match self.kept.get(r) {
                Some(k) => k.download()?,
                None => self.host_outs[r]
                    .clone()
                    .unwrap_or_else(|| HostData::zeros(self.steps.p.dtype, 0)),
            });
        }
        Ok(self.steps.p.join_replays(replays))
    }
}

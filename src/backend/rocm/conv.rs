//! conv2d through MIOpen. Immediate mode: the solutions MIOpen lists for the problem, each run as
//! its own unit (workspace size, compile with its own phase and timing, run, verify). The `find`
//! solver takes the miopenFindConvolution*Algorithm path that PyTorch uses, where seed 004's hangs
//! happened.

use super::hip::Ptr;
use super::libs::DevMem;
use super::libs::DevRef;
use super::miopen::{self, ConvAlgoPerf, ConvDesc, ConvSolution, Handle, MiopenRef, TensorDesc};
use super::solvers::{self, Algo};
use crate::backend::engine;
use crate::backend::{PhaseSink, Prepared, UnitError};
use crate::dtype::DType;
use crate::op::conv2d::{Conv2d, ConvInputs, Direction, Layout};
use std::ffi::{c_int, c_void};
use std::time::Instant;

/// Descriptors of one problem: x, w, y (dx/dw/dy share the shapes of x/w/y).
struct Descs {
    h: Handle,
    x: TensorDesc,
    w: TensorDesc,
    y: TensorDesc,
    conv: ConvDesc,
    dir: Direction,
}

fn dtype(d: DType) -> Result<c_int, UnitError> {
    match d {
        DType::F32 => Ok(miopen::FLOAT),
        DType::F16 => Ok(miopen::HALF),
        DType::Bf16 => Ok(miopen::BFLOAT16),
        other => Err(UnitError::Unsupported(format!(
            "MIOpen convolutions take f32, f16 or bf16, not {}",
            other.name()
        ))),
    }
}

impl Descs {
    fn new(dev: &DevRef, lib: &MiopenRef, p: &Conv2d) -> Result<Descs, UnitError> {
        let g = &p.geom;
        let t = dtype(p.dtype)?;
        let nhwc = p.layout == Layout::Nhwc;
        Ok(Descs {
            h: miopen::handle(lib, dev.stream.raw)?,
            x: miopen::tensor(lib, t, [g.n, g.c_in, g.h, g.w], nhwc)?,
            w: miopen::tensor(
                lib,
                t,
                [g.c_out, g.c_in / g.groups.max(1), g.kh, g.kw],
                nhwc,
            )?,
            y: miopen::tensor(lib, t, [g.n, g.c_out, g.out_h(), g.out_w()], nhwc)?,
            conv: miopen::convolution(
                lib,
                (g.pad_h, g.pad_w),
                (g.stride_h, g.stride_w),
                (g.dil_h, g.dil_w),
                g.groups,
            )?,
            dir: p.direction,
        })
    }

    fn lib(&self) -> &MiopenRef {
        &self.h.lib
    }

    fn desc(&self, t: T) -> Ptr {
        match t {
            T::X => self.x.raw,
            T::W => self.w.raw,
            T::Y => self.y.raw,
        }
    }

    /// The direction's two inputs and output in the order MIOpen's calls take them; `queries`:
    /// the solution queries' and Immediate's order, which takes forward's inputs as (w, x).
    fn order(&self, queries: bool) -> [T; 3] {
        match self.dir {
            Direction::Fwd if queries => [T::W, T::X, T::Y],
            Direction::Fwd => [T::X, T::W, T::Y],
            Direction::BwdData => [T::Y, T::W, T::X],
            Direction::BwdWeights => [T::Y, T::X, T::W],
        }
    }

    /// The handle, the two inputs, the convolution and the output, as the queries take them.
    fn query(&self) -> (Ptr, Ptr, Ptr, Ptr, Ptr) {
        let [a, b, out] = self.order(true).map(|t| self.desc(t));
        (self.h.raw, a, b, self.conv.raw, out)
    }

    /// The descriptors of `order(queries)`, each with its buffer of `ptrs` ([`ConvCall::launch`]'s
    /// a, b and out).
    fn bound(&self, queries: bool, ptrs: [Ptr; 3]) -> [(Ptr, Ptr); 3] {
        let roles = roles(self.dir);
        self.order(queries).map(|t| {
            let i = roles.iter().position(|&r| r == t).unwrap_or(0);
            (self.desc(t), ptrs[i])
        })
    }

    /// The solutions MIOpen lists for the problem (in its own order, best first).
    fn solutions(&self) -> Result<Vec<ConvSolution>, UnitError> {
        let (l, a) = (self.lib(), &self.lib().api);
        let (count_of, get) = match self.dir {
            Direction::Fwd => (
                a.miopenConvolutionForwardGetSolutionCount,
                a.miopenConvolutionForwardGetSolution,
            ),
            Direction::BwdData => (
                a.miopenConvolutionBackwardDataGetSolutionCount,
                a.miopenConvolutionBackwardDataGetSolution,
            ),
            Direction::BwdWeights => (
                a.miopenConvolutionBackwardWeightsGetSolutionCount,
                a.miopenConvolutionBackwardWeightsGetSolution,
            ),
        };
        let (h, d1, d2, c, out) = self.query();
        let mut count = 0usize;
        // SAFETY: live descriptors in the order the query takes them; out-pointer to a usize.
        let rc = unsafe { count_of(h, d1, d2, c, out, &mut count) };
        l.check(rc, "GetSolutionCount")?;
        let mut v = vec![ConvSolution::default(); count.max(1)];
        let (mut got, max) = (0usize, v.len());
        // SAFETY: the buffer holds `max` solutions.
        let rc = unsafe { get(h, d1, d2, c, out, max, &mut got, v.as_mut_ptr()) };
        l.check(rc, "GetSolution")?;
        v.truncate(got.min(max));
        Ok(v)
    }

    fn workspace(&self, id: u64) -> Result<usize, UnitError> {
        let a = &self.lib().api;
        let f = match self.dir {
            Direction::Fwd => a.miopenConvolutionForwardGetSolutionWorkspaceSize,
            Direction::BwdData => a.miopenConvolutionBackwardDataGetSolutionWorkspaceSize,
            Direction::BwdWeights => a.miopenConvolutionBackwardWeightsGetSolutionWorkspaceSize,
        };
        let (h, d1, d2, c, out) = self.query();
        let mut bytes = 0usize;
        // SAFETY: live descriptors; out-pointer to a usize.
        let rc = unsafe { f(h, d1, d2, c, out, id, &mut bytes) };
        self.lib().check(rc, "GetSolutionWorkspaceSize")?;
        Ok(bytes)
    }

    fn compile(&self, id: u64) -> Result<(), UnitError> {
        let a = &self.lib().api;
        let f = match self.dir {
            Direction::Fwd => a.miopenConvolutionForwardCompileSolution,
            Direction::BwdData => a.miopenConvolutionBackwardDataCompileSolution,
            Direction::BwdWeights => a.miopenConvolutionBackwardWeightsCompileSolution,
        };
        let (h, d1, d2, c, out) = self.query();
        // SAFETY: live descriptors.
        let rc = unsafe { f(h, d1, d2, c, out, id) };
        self.lib().check(rc, "CompileSolution")
    }

    /// Runs miopenFindConvolution*Algorithm on device buffers (`bufs` as [`ConvCall::launch`]
    /// takes them) with the workspace `wsp` of `ws_bytes`: its best algorithm and the seconds
    /// the search took.
    fn find(
        &self,
        bufs: [Ptr; 3],
        wsp: Ptr,
        ws_bytes: usize,
    ) -> Result<(ConvAlgoPerf, f64), UnitError> {
        let l = self.lib().clone();
        let api = &l.api;
        let f = match self.dir {
            Direction::Fwd => api.miopenFindConvolutionForwardAlgorithm,
            Direction::BwdData => api.miopenFindConvolutionBackwardDataAlgorithm,
            Direction::BwdWeights => api.miopenFindConvolutionBackwardWeightsAlgorithm,
        };
        let mut perf = [ConvAlgoPerf::default(); 8];
        let mut got: c_int = 0;
        let [(d1, p1), (d2, p2), (o, po)] = self.bound(false, bufs);
        let (h, c) = (self.h.raw, self.conv.raw);
        let (p1, p2) = (p1.cast_const(), p2.cast_const());
        let t = Instant::now();
        // SAFETY: live descriptors and device buffers sized for them; `perf` holds 8 entries.
        let rc = unsafe {
            f(
                h,
                d1,
                p1,
                d2,
                p2,
                c,
                o,
                po,
                8,
                &mut got,
                perf.as_mut_ptr(),
                wsp,
                ws_bytes,
                false,
            )
        };
        l.check(rc, "miopenFindConvolution*Algorithm")?;
        let found = t.elapsed().as_secs_f64();
        if got <= 0 {
            return Err(UnitError::Unsupported(
                "miopenFindConvolution*Algorithm found no algorithm".into(),
            ));
        }
        Ok((perf[0], found))
    }
}

/// One of a convolution's three tensors.
#[derive(Clone, Copy, PartialEq, Eq)]
enum T {
    X,
    W,
    Y,
}

/// The tensors a call of `dir` reads and writes, as [`ConvCall::launch`] takes them (a, b, out):
/// (x, w) -> y forward, (dy, w) -> dx backward-data, (x, dy) -> dw backward-weights.
fn roles(dir: Direction) -> [T; 3] {
    match dir {
        Direction::Fwd => [T::X, T::W, T::Y],
        Direction::BwdData => [T::Y, T::W, T::X],
        Direction::BwdWeights => [T::X, T::Y, T::W],
    }
}

/// The solver names for a problem: every listed solution, then `find`.
pub fn enumerate(dev: &DevRef, lib: &MiopenRef, p: &Conv2d) -> Result<Vec<String>, UnitError> {
    let d = Descs::new(dev, lib, p)?;
    let mut v: Vec<String> = d
        .solutions()?
        .iter()
        .map(|s| solvers::name(s.solution_id))
        .collect();
    v.push(solvers::FIND.to_string());
    Ok(v)
}

/// How a prepared convolution runs.
enum How {
    Immediate { id: u64 },
    Found { algo: c_int },
}

/// A configured convolution (descriptors, how it runs, workspace), launchable on any operands,
/// and what a unit's row says about it.
pub struct ConvCall {
    d: Descs,
    how: How,
    ws: Option<DevMem>,
    ws_bytes: usize,
    algo: Option<Algo>,
    compile_s: Option<(f64, f64)>,
}

pub fn prepare(
    dev: &DevRef,
    lib: &MiopenRef,
    p: &Conv2d,
    solver: &str,
    i: &ConvInputs,
    phases: &mut dyn PhaseSink,
) -> Result<Box<dyn Prepared>, UnitError> {
    phases.phase("enumerate");
    let d = Descs::new(dev, lib, p)?;
    let listed = d.solutions()?;
    if solver == solvers::FIND || solver == "default" {
        return prepare_find(dev, d, &listed, p, i, phases);
    }
    let id = solvers::id(solver).ok_or_else(|| {
        UnitError::Unsupported(format!(
            "`{solver}` is not a MIOpen solver name (see `rocsweep solvers`)"
        ))
    })?;
    if !listed.iter().any(|s| s.solution_id == id) {
        let names: Vec<String> = listed
            .iter()
            .map(|s| solvers::name(s.solution_id))
            .collect();
        return Err(UnitError::Unsupported(format!(
            "MIOpen does not list {solver} for this problem (it lists: {})",
            if names.is_empty() {
                "nothing".into()
            } else {
                names.join(", ")
            }
        )));
    }
    let ws_bytes = d.workspace(id)?;
    phases.phase("compile");
    // The first compile fills this combination's own cache (cold); the second hits it (warm).
    let t = Instant::now();
    d.compile(id)?;
    let cold = t.elapsed().as_secs_f64();
    let t = Instant::now();
    d.compile(id)?;
    let warm = t.elapsed().as_secs_f64();
    phases.phase("alloc");
    let ops = engine::run::conv_operands(dev, p, i)?;
    let unit = ConvCall {
        d,
        how: How::Immediate { id },
        ws: dev.workspace(ws_bytes)?,
        ws_bytes,
        algo: solvers::algo(id).or_else(|| algo_of(lib, id)),
        compile_s: Some((cold, warm)),
    };
    Ok(engine::run::prepare(dev, unit, ops))
}

fn algo_of(lib: &MiopenRef, id: u64) -> Option<Algo> {
    let f = lib.api.miopenGetSolverIdConvAlgorithm?;
    let mut a = 0;
    // SAFETY: out-pointer to a live int.
    (unsafe { f(id, &mut a) } == 0)
        .then(|| Algo::from_raw(a))
        .flatten()
}

/// The `find` solver (and `default`): miopenFind*Algorithm benchmarks every applicable
/// algorithm on the unit's own buffers, and its best becomes the call.
fn prepare_find(
    dev: &DevRef,
    d: Descs,
    listed: &[ConvSolution],
    p: &Conv2d,
    i: &ConvInputs,
    phases: &mut dyn PhaseSink,
) -> Result<Box<dyn Prepared>, UnitError> {
    phases.phase("alloc");
    let (a, b, out) = engine::run::conv_operands(dev, p, i)?;
    // Find benchmarks every applicable algorithm: give it the largest workspace any listed
    // solution asks for.
    let ws_bytes = listed.iter().map(|s| s.workspace_size).max().unwrap_or(0);
    let ws = dev.workspace(ws_bytes)?;
    let wsp = ws.as_ref().map_or(std::ptr::null_mut(), |w| w.ptr);
    phases.phase("compile");
    let bufs = [a.mem.ptr, b.mem.ptr, out.mem.ptr];
    let (best, found) = d.find(bufs, wsp, ws_bytes)?;
    let unit = ConvCall {
        d,
        how: How::Found { algo: best.algo },
        ws,
        ws_bytes,
        algo: Algo::from_raw(best.algo),
        compile_s: Some((found, f64::NAN)),
    };
    Ok(engine::run::prepare(dev, unit, (a, b, out)))
}

impl ConvCall {
    /// MIOpen's first listed solution for the problem, compiled (the graph op's convolution).
    pub fn first_listed(dev: &DevRef, lib: &MiopenRef, p: &Conv2d) -> Result<ConvCall, UnitError> {
        let d = Descs::new(dev, lib, p)?;
        let Some(first) = d.solutions()?.first().copied() else {
            return Err(UnitError::Unsupported(
                "MIOpen lists no solution for the graph's convolution".into(),
            ));
        };
        let id = first.solution_id;
        let ws_bytes = d.workspace(id)?;
        d.compile(id)?;
        Ok(ConvCall {
            d,
            how: How::Immediate { id },
            ws: dev.workspace(ws_bytes)?,
            ws_bytes,
            algo: None,
            compile_s: None,
        })
    }
}

impl engine::run::Call for ConvCall {
    /// `a`/`b` are (x, w) fwd, (dy, w) bwd-data, (x, dy) bwd-weights; `out` is the result.
    fn launch(&mut self, a: Ptr, b: Ptr, out: Ptr) -> Result<(), UnitError> {
        let l = self.d.lib();
        let api = &l.api;
        let (h, c) = (self.d.h.raw, self.d.conv.raw);
        let ws = self.ws.as_ref().map_or(std::ptr::null_mut(), |m| m.ptr);
        let n = self.ws_bytes;
        let (alpha, beta) = (1.0f32, 0.0f32);
        let (al, be) = (
            (&alpha as *const f32).cast::<c_void>(),
            (&beta as *const f32).cast::<c_void>(),
        );
        let bufs = [a, b, out];
        let immediate = matches!(self.how, How::Immediate { .. });
        let [(d1, p1), (d2, p2), (o, po)] = self.d.bound(immediate, bufs);
        let (p1, p2) = (p1.cast_const(), p2.cast_const());
        // SAFETY: live descriptors, device buffers sized for them, and a workspace of `n` bytes.
        let rc = unsafe {
            match self.how {
                How::Immediate { id } => {
                    let f = match self.d.dir {
                        Direction::Fwd => api.miopenConvolutionForwardImmediate,
                        Direction::BwdData => api.miopenConvolutionBackwardDataImmediate,
                        Direction::BwdWeights => api.miopenConvolutionBackwardWeightsImmediate,
                    };
                    f(h, d1, p1, d2, p2, c, o, po, ws, n, id)
                }
                How::Found { algo } => {
                    let f = match self.d.dir {
                        Direction::Fwd => api.miopenConvolutionForward,
                        Direction::BwdData => api.miopenConvolutionBackwardData,
                        Direction::BwdWeights => api.miopenConvolutionBackwardWeights,
                    };
                    f(h, al, d1, p1, d2, p2, c, algo, be, o, po, ws, n)
                }
            }
        };
        l.check(rc, "running the convolution")
    }

    fn chosen(&self) -> String {
        let algo = self.algo.map_or("algorithm unknown", Algo::name);
        match self.how {
            How::Immediate { id } => format!("miopen {} ({algo})", solvers::name(id)),
            How::Found { .. } => format!("miopen find: {algo}"),
        }
    }

    fn workspace_bytes(&self) -> u64 {
        self.ws_bytes as u64
    }

    fn tolerance_factor(&self) -> f64 {
        self.algo.map_or(1.0, Algo::tolerance_factor)
    }

    fn compile_seconds(&self) -> Option<(f64, f64)> {
        self.compile_s
    }
}

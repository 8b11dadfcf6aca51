//! conv2d through MIOpen. Immediate mode: the solutions MIOpen lists for the problem, each run as
//! its own unit (workspace size, compile with its own phase and timing, run, verify). The `find`
//! solver takes the miopenFindConvolution*Algorithm path that PyTorch uses, where seed 004's hangs
//! happened.

use super::DevMem;
use super::DevRef;
use super::hip::Ptr;
use super::miopen::{self, ConvAlgoPerf, ConvDesc, ConvSolution, Handle, MiopenRef, TensorDesc};
use super::solvers::{self, Algo};
use crate::backend::engine::{self, hip::HipRt};
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
            h: Handle::new(lib, dev.stream.raw)?,
            x: TensorDesc::new(lib, t, [g.n, g.c_in, g.h, g.w], nhwc)?,
            w: TensorDesc::new(
                lib,
                t,
                [g.c_out, g.c_in / g.groups.max(1), g.kh, g.kw],
                nhwc,
            )?,
            y: TensorDesc::new(lib, t, [g.n, g.c_out, g.out_h(), g.out_w()], nhwc)?,
            conv: ConvDesc::new(
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

    /// The solutions MIOpen lists for the problem (in its own order, best first).
    fn solutions(&self) -> Result<Vec<ConvSolution>, UnitError> {
        let l = self.lib();
        let a = &l.api;
        let (h, x, w, y, c) = (
            self.h.raw,
            self.x.raw,
            self.w.raw,
            self.y.raw,
            self.conv.raw,
        );
        let mut count = 0usize;
        // SAFETY: live descriptors in the order each query takes them; out-pointer to a usize.
        let rc = unsafe {
            match self.dir {
                Direction::Fwd => {
                    (a.miopenConvolutionForwardGetSolutionCount)(h, w, x, c, y, &mut count)
                }
                Direction::BwdData => {
                    (a.miopenConvolutionBackwardDataGetSolutionCount)(h, y, w, c, x, &mut count)
                }
                Direction::BwdWeights => {
                    (a.miopenConvolutionBackwardWeightsGetSolutionCount)(h, y, x, c, w, &mut count)
                }
            }
        };
        l.check(rc, "GetSolutionCount")?;
        let mut v = vec![ConvSolution::default(); count.max(1)];
        let mut got = 0usize;
        let max = v.len();
        // SAFETY: the buffer holds `max` solutions.
        let rc = unsafe {
            match self.dir {
                Direction::Fwd => (a.miopenConvolutionForwardGetSolution)(
                    h,
                    w,
                    x,
                    c,
                    y,
                    max,
                    &mut got,
                    v.as_mut_ptr(),
                ),
                Direction::BwdData => (a.miopenConvolutionBackwardDataGetSolution)(
                    h,
                    y,
                    w,
                    c,
                    x,
                    max,
                    &mut got,
                    v.as_mut_ptr(),
                ),
                Direction::BwdWeights => (a.miopenConvolutionBackwardWeightsGetSolution)(
                    h,
                    y,
                    x,
                    c,
                    w,
                    max,
                    &mut got,
                    v.as_mut_ptr(),
                ),
            }
        };
        l.check(rc, "GetSolution")?;
        v.truncate(got.min(max));
        Ok(v)
    }

    fn workspace(&self, id: u64) -> Result<usize, UnitError> {
        let l = self.lib();
        let a = &l.api;
        let (h, x, w, y, c) = (
            self.h.raw,
            self.x.raw,
            self.w.raw,
            self.y.raw,
            self.conv.raw,
        );
        let mut bytes = 0usize;
        // SAFETY: live descriptors; out-pointer to a usize.
        let rc = unsafe {
            match self.dir {
                Direction::Fwd => (a.miopenConvolutionForwardGetSolutionWorkspaceSize)(
                    h, w, x, c, y, id, &mut bytes,
                ),
                Direction::BwdData => (a.miopenConvolutionBackwardDataGetSolutionWorkspaceSize)(
                    h, y, w, c, x, id, &mut bytes,
                ),
                Direction::BwdWeights => (a
                    .miopenConvolutionBackwardWeightsGetSolutionWorkspaceSize)(
                    h, y, x, c, w, id, &mut bytes,
                ),
            }
        };
        l.check(rc, "GetSolutionWorkspaceSize")?;
        Ok(bytes)
    }

    fn compile(&self, id: u64) -> Result<(), UnitError> {
        let l = self.lib();
        let a = &l.api;
        let (h, x, w, y, c) = (
            self.h.raw,
            self.x.raw,
            self.w.raw,
            self.y.raw,
            self.conv.raw,
        );
        // SAFETY: live descriptors.
        let rc = unsafe {
            match self.dir {
                Direction::Fwd => (a.miopenConvolutionForwardCompileSolution)(h, w, x, c, y, id),
                Direction::BwdData => {
                    (a.miopenConvolutionBackwardDataCompileSolution)(h, y, w, c, x, id)
                }
                Direction::BwdWeights => {
                    (a.miopenConvolutionBackwardWeightsCompileSolution)(h, y, x, c, w, id)
                }
            }
        };
        l.check(rc, "CompileSolution")
    }

    /// Runs miopenFindConvolution*Algorithm on device buffers (`pa`/`pb` as [`ConvCall::launch`]
    /// takes them, `po` the result) with the workspace `wsp` of `ws_bytes`: its best algorithm
    /// and the seconds the search took.
    fn find(
        &self,
        (pa, pb, po): (Ptr, Ptr, Ptr),
        wsp: Ptr,
        ws_bytes: usize,
    ) -> Result<(ConvAlgoPerf, f64), UnitError> {
        let l = self.lib().clone();
        let api = &l.api;
        let mut perf = [ConvAlgoPerf::default(); 8];
        let mut got: c_int = 0;
        let (h, x, w, y, c) = (
            self.h.raw,
            self.x.raw,
            self.w.raw,
            self.y.raw,
            self.conv.raw,
        );
        let t = Instant::now();
        // SAFETY: live descriptors and device buffers sized for them; `perf` holds 8 entries.
        let rc = unsafe {
            match self.dir {
                Direction::Fwd => (api.miopenFindConvolutionForwardAlgorithm)(
                    h,
                    x,
                    pa,
                    w,
                    pb,
                    c,
                    y,
                    po,
                    8,
                    &mut got,
                    perf.as_mut_ptr(),
                    wsp,
                    ws_bytes,
                    false,
                ),
                Direction::BwdData => (api.miopenFindConvolutionBackwardDataAlgorithm)(
                    h,
                    y,
                    pa,
                    w,
                    pb,
                    c,
                    x,
                    po,
                    8,
                    &mut got,
                    perf.as_mut_ptr(),
                    wsp,
                    ws_bytes,
                    false,
                ),
                Direction::BwdWeights => (api.miopenFindConvolutionBackwardWeightsAlgorithm)(
                    h,
                    y,
                    pb,
                    x,
                    pa,
                    c,
                    w,
                    po,
                    8,
                    &mut got,
                    perf.as_mut_ptr(),
                    wsp,
                    ws_bytes,
                    false,
                ),
            }
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

/// A configured convolution (descriptors, how it runs, workspace), launchable on any operands.
pub struct ConvCall {
    d: Descs,
    how: How,
    ws: Option<DevMem>,
    ws_bytes: usize,
}

/// A convolution unit's call: what MIOpen runs, and what the row says about it.
struct ConvUnit {
    call: ConvCall,
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
    let ops = buffers(dev, p, i)?;
    let unit = ConvUnit {
        call: ConvCall {
            d,
            how: How::Immediate { id },
            ws: dev.workspace(ws_bytes)?,
            ws_bytes,
        },
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

fn buffers(
    dev: &DevRef,
    p: &Conv2d,
    i: &ConvInputs,
) -> Result<engine::run::Operands<HipRt>, UnitError> {
    engine::run::operands(dev, &i.a, &i.b, p.dtype, p.output_len())
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
    let (a, b, out) = buffers(dev, p, i)?;
    // Find benchmarks every applicable algorithm: give it the largest workspace any listed
    // solution asks for.
    let ws_bytes = listed.iter().map(|s| s.workspace_size).max().unwrap_or(0);
    let ws = dev.workspace(ws_bytes)?;
    let wsp = ws.as_ref().map_or(std::ptr::null_mut(), |w| w.ptr);
    phases.phase("compile");
    let bufs = (a.mem.ptr, b.mem.ptr, out.mem.ptr);
    let (best, found) = d.find(bufs, wsp, ws_bytes)?;
    let unit = ConvUnit {
        call: ConvCall {
            d,
            how: How::Found { algo: best.algo },
            ws,
            ws_bytes,
        },
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
        })
    }

    /// `pa`/`pb` are (x, w) fwd, (dy, w) bwd-data, (x, dy) bwd-weights; `po` is the result.
    pub fn launch(&self, pa: *const c_void, pb: *const c_void, po: Ptr) -> Result<(), UnitError> {
        let l = self.d.lib();
        let api = &l.api;
        let d = &self.d;
        let (h, x, w, y, c) = (d.h.raw, d.x.raw, d.w.raw, d.y.raw, d.conv.raw);
        let ws = self.ws.as_ref().map_or(std::ptr::null_mut(), |m| m.ptr);
        let n = self.ws_bytes;
        let (alpha, beta) = (1.0f32, 0.0f32);
        let (al, be) = (
            (&alpha as *const f32).cast::<c_void>(),
            (&beta as *const f32).cast::<c_void>(),
        );
        // SAFETY: live descriptors, device buffers sized for them, and a workspace of `n` bytes.
        let rc = unsafe {
            match (&self.how, d.dir) {
                (How::Immediate { id }, Direction::Fwd) => {
                    (api.miopenConvolutionForwardImmediate)(h, w, pb, x, pa, c, y, po, ws, n, *id)
                }
                (How::Immediate { id }, Direction::BwdData) => (api
                    .miopenConvolutionBackwardDataImmediate)(
                    h, y, pa, w, pb, c, x, po, ws, n, *id,
                ),
                (How::Immediate { id }, Direction::BwdWeights) => (api
                    .miopenConvolutionBackwardWeightsImmediate)(
                    h, y, pb, x, pa, c, w, po, ws, n, *id,
                ),
                (How::Found { algo }, Direction::Fwd) => {
                    (api.miopenConvolutionForward)(h, al, x, pa, w, pb, c, *algo, be, y, po, ws, n)
                }
                (How::Found { algo }, Direction::BwdData) => (api.miopenConvolutionBackwardData)(
                    h, al, y, pa, w, pb, c, *algo, be, x, po, ws, n,
                ),
                (How::Found { algo }, Direction::BwdWeights) => (api
                    .miopenConvolutionBackwardWeights)(
                    h, al, y, pb, x, pa, c, *algo, be, w, po, ws, n,
                ),
            }
        };
        l.check(rc, "running the convolution")
    }
}

impl engine::run::Call for ConvUnit {
    fn launch(&mut self, a: Ptr, b: Ptr, out: Ptr) -> Result<(), UnitError> {
        self.call.launch(a.cast_const(), b.cast_const(), out)
    }

    fn chosen(&self) -> String {
        let algo = self.algo.map_or("algorithm unknown", Algo::name);
        match self.call.how {
            How::Immediate { id } => format!("miopen {} ({algo})", solvers::name(id)),
            How::Found { .. } => format!("miopen find: {algo}"),
        }
    }

    fn workspace_bytes(&self) -> u64 {
        self.call.ws_bytes as u64
    }

    fn tolerance_factor(&self) -> f64 {
        self.algo.map_or(1.0, Algo::tolerance_factor)
    }

    fn compile_seconds(&self) -> Option<(f64, f64)> {
        self.compile_s
    }
}

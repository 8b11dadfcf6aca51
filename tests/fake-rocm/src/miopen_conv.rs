//! MIOpen convolutions: the immediate-mode API (solutions, workspace, compile, run with a solver
//! id) and the find API (Find, then Forward/BackwardData/BackwardWeights with an algorithm), in
//! three directions. Fault rules: `find` rules in Find, `compile` rules in CompileSolution,
//! Immediate and Find, `run` rules when the convolution runs.

use crate::capture;
use crate::conv::{self, Shape, Tensor};
use crate::elem::{self, DType};
use crate::faults::{self, Action, Lib, Phase, V};
use crate::memory;
use crate::miopen::*;
use crate::model::{self, Model};
use std::ffi::c_void;
use std::sync::Arc;
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    Fwd,
    BwdData,
    BwdWeights,
}

impl Dir {
    fn name(self) -> &'static str {
        match self {
            Dir::Fwd => "fwd",
            Dir::BwdData => "bwd_data",
            Dir::BwdWeights => "bwd_weights",
        }
    }

    fn listed(self, m: &Model) -> &[u64] {
        match self {
            Dir::Fwd => &m.miopen.fwd,
            Dir::BwdData => &m.miopen.bwd_data,
            Dir::BwdWeights => &m.miopen.bwd_weights,
        }
    }

    /// The algorithm's name in MIOpen's enums (`miopenConvolutionFwdAlgoWinograd`).
    fn algo_name(self, a: i32) -> String {
        let kind = match a {
            0 => "GEMM",
            1 => "Direct",
            2 => "FFT",
            3 => "Winograd",
            4 => "TransposeGEMM",
            _ => "ImplicitGEMM",
        };
        let dir = match self {
            Dir::Fwd => "Fwd",
            Dir::BwdData => "BwdData",
            Dir::BwdWeights => "BwdWeights",
        };
        format!("miopenConvolution{dir}Algo{kind}")
    }

    fn valid_algo(self, a: i32) -> bool {
        match self {
            Dir::Fwd => matches!(a, 0 | 1 | 2 | 3 | 5),
            Dir::BwdData => (0..=5).contains(&a),
            Dir::BwdWeights => matches!(a, 0 | 1 | 3 | 5),
        }
    }
}

impl Problem {
    /// The find-db's key of the problem, in the manner of MIOpen's (input C-H-W, filter, output
    /// C-H-W, batch, padding, strides, dilations, groups, layout, type, direction).
    fn db_key(&self) -> String {
        let s = &self.s;
        let dt = match self.dt {
            DType::F32 => "FP32",
            DType::F16 => "FP16",
            DType::Bf16 => "BF16",
        };
        let dir = match self.dir {
            Dir::Fwd => "F",
            Dir::BwdData => "B",
            Dir::BwdWeights => "W",
        };
        format!(
            "{}-{}-{}-{}x{}-{}-{}-{}-{}-{}x{}-{}x{}-{}x{}-{}-NCHW-{dt}-{dir}",
            s.c_in,
            s.h,
            s.w,
            s.kh,
            s.kw,
            s.c_out,
            s.oh,
            s.ow,
            s.n,
            s.pad[0],
            s.pad[1],
            s.stride[0],
            s.stride[1],
            s.dil[0],
            s.dil[1],
            s.groups
        )
    }
}

/// One convolution: x, w, y are the forward roles (for backward data x is dx and y is dy; for
/// backward weights w is dw and y is dy).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Problem {
    dir: Dir,
    dt: DType,
    x: Tensor,
    w: Tensor,
    y: Tensor,
    s: Shape,
}

pub(crate) fn tensor(desc: *mut c_void) -> Result<(DType, Tensor), i32> {
    match TENSORS.get(desc as usize) {
        Some(TensorDesc {
            dtype: Some(dt),
            nd: 4,
            t: Some(t),
        }) => Ok((dt, t)),
        _ => Err(BAD_PARM),
    }
}

pub(crate) fn problem(
    dir: Dir,
    x: *mut c_void,
    w: *mut c_void,
    cd: *mut c_void,
    y: *mut c_void,
) -> Result<Problem, i32> {
    let ((dx, x), (dw, w), (dy, y)) = (tensor(x)?, tensor(w)?, tensor(y)?);
    let c = CONVS.get(cd as usize).ok_or(BAD_PARM)?;
    if c.mode == 1 {
        return Err(NOT_IMPLEMENTED);
    }
    if dx != dw || dx != dy {
        return Err(BAD_PARM);
    }
    let ([n, ci, h, wd], [k, cpg, kh, kw]) = (x.dims, w.dims);
    let g = c.groups;
    if ci % g != 0 || ci / g != cpg || k % g != 0 {
        return Err(BAD_PARM);
    }
    let oh = conv::out_dim(h, kh, c.pad[0], c.stride[0], c.dil[0]).ok_or(BAD_PARM)?;
    let ow = conv::out_dim(wd, kw, c.pad[1], c.stride[1], c.dil[1]).ok_or(BAD_PARM)?;
    if y.dims != [n, k, oh, ow] {
        return Err(BAD_PARM);
    }
    let s = Shape {
        n,
        c_in: ci,
        c_out: k,
        h,
        w: wd,
        kh,
        kw,
        oh,
        ow,
        pad: c.pad,
        stride: c.stride,
        dil: c.dil,
        groups: g,
    };
    Ok(Problem {
        dir,
        dt: dx,
        x,
        w,
        y,
        s,
    })
}

fn keys(p: &Problem, solver: Option<u64>) -> Vec<(&'static str, V)> {
    let s = &p.s;
    let mut k = vec![
        ("n", V::N(s.n as i64)),
        ("c_in", V::N(s.c_in as i64)),
        ("c_out", V::N(s.c_out as i64)),
        ("h", V::N(s.h as i64)),
        ("w", V::N(s.w as i64)),
        ("kh", V::N(s.kh as i64)),
        ("kw", V::N(s.kw as i64)),
        ("dtype", V::S(p.dt.name())),
        ("direction", V::S(p.dir.name())),
        ("groups", V::N(s.groups as i64)),
        ("layout", V::S(p.x.layout())),
    ];
    if let Some(id) = solver {
        k.push(("solver", V::N(id as i64)));
    }
    k
}

fn rule(p: &Problem, phase: Phase, solver: Option<u64>) -> Option<Action> {
    faults::check(Lib::Miopen, Some(phase), &keys(p, solver), |_| true)
}

/// Carries out a trap; the status a failing rule gives (0 when the rule does not fail the call).
fn fails(a: Option<Action>) -> i32 {
    match a {
        Some(a) if a.is_trap() => {
            faults::trap(a);
            SUCCESS
        }
        Some(Action::NotSupported) => UNSUPPORTED_OP,
        Some(Action::Error) => INTERNAL_ERROR,
        _ => SUCCESS,
    }
}

fn workspace(m: &Model, id: u64) -> u64 {
    if matches!(id, 85..=87) {
        0
    } else {
        m.miopen.workspace_bytes
    }
}

/// Listed solvers of the direction whose algorithm the environment leaves enabled.
fn solutions(m: &Model, dir: Dir) -> Vec<(u64, i32)> {
    dir.listed(m)
        .iter()
        .map(|id| (*id, algo_of(*id)))
        .filter(|(_, a)| algo_enabled(*a))
        .collect()
}

fn flops(p: &Problem) -> f64 {
    let s = &p.s;
    2.0 * (s.n * s.c_out * s.oh * s.ow * (s.c_in / s.groups) * s.kh * s.kw) as f64
}

/// Buffers in forward roles: [x, w, y].
fn buffers_valid(p: &Problem, b: [usize; 3]) -> bool {
    let e = p.dt.size();
    memory::check(b[0], p.x.span() * e)
        && memory::check(b[1], p.w.span() * e)
        && memory::check(b[2], p.y.span() * e)
}

/// Computes the direction's output into its buffer: out = alpha*conv + beta*out, or a fill.
fn compute(p: &Problem, b: [usize; 3], alpha: f64, beta: f64, fill: Option<f64>) {
    let (out, t) = match p.dir {
        Dir::Fwd => (b[2], &p.y),
        Dir::BwdData => (b[0], &p.x),
        Dir::BwdWeights => (b[1], &p.w),
    };
    // SAFETY: the caller checked every buffer against its tensor's span.
    unsafe {
        let v = match (fill, p.dir) {
            (Some(_), _) => vec![0.0; t.len()],
            (None, Dir::Fwd) => conv::forward(
                &p.s,
                &conv::gather(b[0], p.dt, &p.x),
                &conv::gather(b[1], p.dt, &p.w),
            ),
            (None, Dir::BwdData) => conv::backward_data(
                &p.s,
                &conv::gather(b[2], p.dt, &p.y),
                &conv::gather(b[1], p.dt, &p.w),
            ),
            (None, Dir::BwdWeights) => conv::backward_weights(
                &p.s,
                &conv::gather(b[2], p.dt, &p.y),
                &conv::gather(b[0], p.dt, &p.x),
            ),
        };
        conv::scatter(out, p.dt, t, &v, alpha, beta, fill);
    }
}

/// Runs (or records, on a capturing stream) one convolution after the `run` rules.
fn execute(
    stream: usize,
    p: Problem,
    solver: Option<u64>,
    b: [usize; 3],
    alpha: f64,
    beta: f64,
) -> i32 {
    let action = rule(&p, Phase::Run, solver);
    if matches!(action, Some(Action::NotSupported | Action::Error)) {
        return fails(action);
    }
    faults::ran(faults::Ran::Conv);
    if !buffers_valid(&p, b) {
        return BAD_PARM;
    }
    capture::submit(
        stream,
        Arc::new(move || {
            if !buffers_valid(&p, b) {
                return BAD_PARM;
            }
            let fill = match action {
                Some(a) if a.is_trap() => {
                    faults::trap(a);
                    None
                }
                Some(Action::Zeros) => Some(elem::fill_value(true)),
                Some(Action::Nan) => Some(elem::fill_value(false)),
                _ => None,
            };
            compute(&p, b, alpha, beta, fill);
            SUCCESS
        }),
    )
}

/// Shared front of every convolution export: the handle's stream, the model and the problem.
fn front(
    handle: *mut c_void,
    p: Result<Problem, i32>,
) -> Result<(usize, &'static Model, Problem), i32> {
    let h = HANDLES.get(handle as usize).ok_or(BAD_PARM)?;
    let m = model::get().map_err(|_| NOT_INITIALIZED)?;
    Ok((h.stream, m, p?))
}

fn status(r: Result<i32, i32>) -> i32 {
    r.unwrap_or_else(|e| e)
}

pub(crate) fn solution_count(
    handle: *mut c_void,
    p: Result<Problem, i32>,
    count: *mut usize,
) -> i32 {
    status(front(handle, p).map(|(_, m, p)| {
        // SAFETY: null is checked by put.
        let n = solutions(m, p.dir).len();
        if unsafe { crate::put(count, n) } {
            SUCCESS
        } else {
            BAD_PARM
        }
    }))
}

pub(crate) fn solution_list(
    handle: *mut c_void,
    p: Result<Problem, i32>,
    max: usize,
    count: *mut usize,
    out: *mut u8,
) -> i32 {
    status(front(handle, p).map(|(_, m, p)| {
        if out.is_null() || count.is_null() {
            return BAD_PARM;
        }
        let sols = solutions(m, p.dir);
        let n = sols.len().min(max);
        let est = (flops(&p) / 1e9).max(0.001) as f32;
        for (i, (id, algo)) in sols.iter().take(n).enumerate() {
            // SAFETY: the caller's array holds `max` 32-byte miopenConvSolution_t.
            unsafe {
                let e = out.add(i * 32);
                std::ptr::write_bytes(e, 0, 32);
                crate::put(e.cast::<f32>(), est * (1.0 + i as f32 * 0.1));
                crate::put(e.add(8).cast::<u64>(), workspace(m, *id));
                crate::put(e.add(16).cast::<u64>(), *id);
                crate::put(e.add(24).cast::<i32>(), *algo);
            }
        }
        // SAFETY: checked non-null.
        unsafe { crate::put(count, n) };
        SUCCESS
    }))
}

pub(crate) fn solution_workspace(
    handle: *mut c_void,
    p: Result<Problem, i32>,
    id: u64,
    size: *mut usize,
) -> i32 {
    status(front(handle, p).map(|(_, m, p)| {
        if !p.dir.listed(m).contains(&id) {
            return BAD_PARM;
        }
        // SAFETY: null is checked by put.
        if unsafe { crate::put(size, workspace(m, id) as usize) } {
            SUCCESS
        } else {
            BAD_PARM
        }
    }))
}

pub(crate) fn compile(handle: *mut c_void, p: Result<Problem, i32>, id: u64) -> i32 {
    status(front(handle, p).map(|(_, m, p)| {
        if !p.dir.listed(m).contains(&id) {
            return BAD_PARM;
        }
        fails(rule(&p, Phase::Compile, Some(id)))
    }))
}

pub(crate) fn immediate(
    handle: *mut c_void,
    p: Result<Problem, i32>,
    b: [usize; 3],
    ws: usize,
    ws_size: usize,
    id: u64,
) -> i32 {
    status(front(handle, p).map(|(stream, m, p)| {
        if !p.dir.listed(m).contains(&id) {
            return BAD_PARM;
        }
        let need = workspace(m, id) as usize;
        if need > 0 && (ws == 0 || ws_size < need || !memory::check(ws, need)) {
            return BAD_PARM;
        }
        let st = fails(rule(&p, Phase::Compile, Some(id)));
        if st != SUCCESS {
            return st;
        }
        execute(stream, p, Some(id), b, 1.0, 0.0)
    }))
}

pub(crate) fn find(
    handle: *mut c_void,
    p: Result<Problem, i32>,
    b: [usize; 3],
    req: i32,
    ret: *mut i32,
    perf: *mut u8,
    ws: usize,
    ws_size: usize,
) -> i32 {
    status(front(handle, p).map(|(_, m, p)| {
        if req < 1 || ret.is_null() || perf.is_null() || !buffers_valid(&p, b) {
            return BAD_PARM;
        }
        let room = if ws == 0 { 0 } else { ws_size as u64 };
        let mut failed = SUCCESS;
        let mut usable = Vec::new();
        for (id, algo) in solutions(m, p.dir)
            .into_iter()
            .filter(|(id, _)| workspace(m, *id) <= room)
        {
            let st = match fails(rule(&p, Phase::Find, Some(id))) {
                SUCCESS => fails(rule(&p, Phase::Compile, Some(id))),
                st => st,
            };
            match st {
                SUCCESS => usable.push((id, algo)),
                st => failed = st,
            }
        }
        if usable.is_empty() {
            return if failed != SUCCESS {
                failed
            } else {
                UNKNOWN_ERROR
            };
        }
        // Real Find runs the candidates and leaves a result in the output buffer.
        let t0 = Instant::now();
        compute(&p, b, 1.0, 0.0, None);
        let ms = (t0.elapsed().as_secs_f64() * 1e3).max(1e-3) as f32;
        let mut algos: Vec<(i32, u64)> = Vec::new();
        let mut found = Vec::new();
        for (id, algo) in usable {
            if !algos.iter().any(|(a, _)| *a == algo) {
                algos.push((algo, workspace(m, id)));
                let t = ms * (1.0 + found.len() as f32 * 0.1);
                found.push((p.dir.algo_name(algo), id, t, workspace(m, id)));
            }
        }
        crate::find_db::record(m, &p.db_key(), &found);
        let n = algos.len().min(req as usize);
        for (i, (algo, mem)) in algos.iter().take(n).enumerate() {
            // SAFETY: the caller's array holds reqCount 16-byte miopenConvAlgoPerf_t.
            unsafe {
                let e = perf.add(i * 16);
                std::ptr::write_bytes(e, 0, 16);
                crate::put(e.cast::<i32>(), *algo);
                crate::put(e.add(4).cast::<f32>(), ms * (1.0 + i as f32 * 0.1));
                crate::put(e.add(8).cast::<u64>(), *mem);
            }
        }
        // SAFETY: checked non-null.
        unsafe { crate::put(ret, n as i32) };
        SUCCESS
    }))
}

/// Forward / BackwardData / BackwardWeights with an algorithm from Find.
pub(crate) fn run(
    handle: *mut c_void,
    p: Result<Problem, i32>,
    algo: i32,
    b: [usize; 3],
    alpha: *const f32,
    beta: *const f32,
    ws: usize,
    ws_size: usize,
) -> i32 {
    status(front(handle, p).map(|(stream, m, p)| {
        // SAFETY: nulls are checked by get.
        let (Some(alpha), Some(beta)) = (unsafe { crate::get(alpha) }, unsafe { crate::get(beta) })
        else {
            return BAD_PARM;
        };
        if !p.dir.valid_algo(algo) {
            return BAD_PARM;
        }
        let room = if ws == 0 { 0 } else { ws_size as u64 };
        let of_algo: Vec<u64> = p
            .dir
            .listed(m)
            .iter()
            .copied()
            .filter(|id| algo_of(*id) == algo)
            .collect();
        let solver = of_algo
            .iter()
            .copied()
            .find(|id| algo_enabled(algo) && workspace(m, *id) <= room)
            .or_else(|| of_algo.iter().copied().find(|id| workspace(m, *id) <= room));
        if solver.is_none() && !of_algo.is_empty() {
            return BAD_PARM;
        }
        execute(stream, p, solver, b, alpha as f64, beta as f64)
    }))
}

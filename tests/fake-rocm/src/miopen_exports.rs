//! The C exports of MIOpen's convolution API: argument orders exactly as the headers have them
//! (the weight descriptor comes before the input descriptor in the forward solution queries;
//! backward data takes (dy, w, conv, dx), backward weights (dy, x, conv, dw)), mapped onto the
//! forward roles x, w, y that miopen_conv.rs works in.

use crate::miopen::call;
use crate::miopen_conv::{
    Dir, compile, find, immediate, problem, run, solution_count, solution_list, solution_workspace,
};
use std::ffi::c_void;

// Forward: descriptors (wDesc, xDesc, convDesc, yDesc).
type D = *mut c_void;
type P = *const c_void;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenConvolutionForwardGetSolutionCount(
    h: D,
    w: D,
    x: D,
    c: D,
    y: D,
    n: *mut usize,
) -> i32 {
    call(|| solution_count(h, problem(Dir::Fwd, x, w, c, y), n))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenConvolutionForwardGetSolution(
    h: D,
    w: D,
    x: D,
    c: D,
    y: D,
    max: usize,
    n: *mut usize,
    s: *mut c_void,
) -> i32 {
    call(|| solution_list(h, problem(Dir::Fwd, x, w, c, y), max, n, s.cast()))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenConvolutionForwardGetSolutionWorkspaceSize(
    h: D,
    w: D,
    x: D,
    c: D,
    y: D,
    id: u64,
    sz: *mut usize,
) -> i32 {
    call(|| solution_workspace(h, problem(Dir::Fwd, x, w, c, y), id, sz))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenConvolutionForwardCompileSolution(
    h: D,
    w: D,
    x: D,
    c: D,
    y: D,
    id: u64,
) -> i32 {
    call(|| compile(h, problem(Dir::Fwd, x, w, c, y), id))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenConvolutionForwardImmediate(
    h: D,
    wd: D,
    w: P,
    xd: D,
    x: P,
    c: D,
    yd: D,
    y: D,
    ws: D,
    wss: usize,
    id: u64,
) -> i32 {
    call(|| {
        immediate(
            h,
            problem(Dir::Fwd, xd, wd, c, yd),
            [x as usize, w as usize, y as usize],
            ws as usize,
            wss,
            id,
        )
    })
}

// Backward data: descriptors (dyDesc, wDesc, convDesc, dxDesc).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenConvolutionBackwardDataGetSolutionCount(
    h: D,
    dy: D,
    w: D,
    c: D,
    dx: D,
    n: *mut usize,
) -> i32 {
    call(|| solution_count(h, problem(Dir::BwdData, dx, w, c, dy), n))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenConvolutionBackwardDataGetSolution(
    h: D,
    dy: D,
    w: D,
    c: D,
    dx: D,
    max: usize,
    n: *mut usize,
    s: *mut c_void,
) -> i32 {
    call(|| solution_list(h, problem(Dir::BwdData, dx, w, c, dy), max, n, s.cast()))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenConvolutionBackwardDataGetSolutionWorkspaceSize(
    h: D,
    dy: D,
    w: D,
    c: D,
    dx: D,
    id: u64,
    sz: *mut usize,
) -> i32 {
    call(|| solution_workspace(h, problem(Dir::BwdData, dx, w, c, dy), id, sz))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenConvolutionBackwardDataCompileSolution(
    h: D,
    dy: D,
    w: D,
    c: D,
    dx: D,
    id: u64,
) -> i32 {
    call(|| compile(h, problem(Dir::BwdData, dx, w, c, dy), id))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenConvolutionBackwardDataImmediate(
    h: D,
    dyd: D,
    dy: P,
    wd: D,
    w: P,
    c: D,
    dxd: D,
    dx: D,
    ws: D,
    wss: usize,
    id: u64,
) -> i32 {
    call(|| {
        immediate(
            h,
            problem(Dir::BwdData, dxd, wd, c, dyd),
            [dx as usize, w as usize, dy as usize],
            ws as usize,
            wss,
            id,
        )
    })
}

// Backward weights: descriptors (dyDesc, xDesc, convDesc, dwDesc).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenConvolutionBackwardWeightsGetSolutionCount(
    h: D,
    dy: D,
    x: D,
    c: D,
    dw: D,
    n: *mut usize,
) -> i32 {
    call(|| solution_count(h, problem(Dir::BwdWeights, x, dw, c, dy), n))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenConvolutionBackwardWeightsGetSolution(
    h: D,
    dy: D,
    x: D,
    c: D,
    dw: D,
    max: usize,
    n: *mut usize,
    s: *mut c_void,
) -> i32 {
    call(|| solution_list(h, problem(Dir::BwdWeights, x, dw, c, dy), max, n, s.cast()))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenConvolutionBackwardWeightsGetSolutionWorkspaceSize(
    h: D,
    dy: D,
    x: D,
    c: D,
    dw: D,
    id: u64,
    sz: *mut usize,
) -> i32 {
    call(|| solution_workspace(h, problem(Dir::BwdWeights, x, dw, c, dy), id, sz))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenConvolutionBackwardWeightsCompileSolution(
    h: D,
    dy: D,
    x: D,
    c: D,
    dw: D,
    id: u64,
) -> i32 {
    call(|| compile(h, problem(Dir::BwdWeights, x, dw, c, dy), id))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenConvolutionBackwardWeightsImmediate(
    h: D,
    dyd: D,
    dy: P,
    xd: D,
    x: P,
    c: D,
    dwd: D,
    dw: D,
    ws: D,
    wss: usize,
    id: u64,
) -> i32 {
    call(|| {
        immediate(
            h,
            problem(Dir::BwdWeights, xd, dwd, c, dyd),
            [x as usize, dw as usize, dy as usize],
            ws as usize,
            wss,
            id,
        )
    })
}

// Find and run with an algorithm.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenFindConvolutionForwardAlgorithm(
    h: D,
    xd: D,
    x: P,
    wd: D,
    w: P,
    c: D,
    yd: D,
    y: D,
    req: i32,
    ret: *mut i32,
    perf: *mut c_void,
    ws: D,
    wss: usize,
    _exhaustive: bool,
) -> i32 {
    call(|| {
        find(
            h,
            problem(Dir::Fwd, xd, wd, c, yd),
            [x as usize, w as usize, y as usize],
            req,
            ret,
            perf.cast(),
            ws as usize,
            wss,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenConvolutionForward(
    h: D,
    alpha: *const f32,
    xd: D,
    x: P,
    wd: D,
    w: P,
    c: D,
    algo: i32,
    beta: *const f32,
    yd: D,
    y: D,
    ws: D,
    wss: usize,
) -> i32 {
    call(|| {
        run(
            h,
            problem(Dir::Fwd, xd, wd, c, yd),
            algo,
            [x as usize, w as usize, y as usize],
            alpha,
            beta,
            ws as usize,
            wss,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenFindConvolutionBackwardDataAlgorithm(
    h: D,
    dyd: D,
    dy: P,
    wd: D,
    w: P,
    c: D,
    dxd: D,
    dx: D,
    req: i32,
    ret: *mut i32,
    perf: *mut c_void,
    ws: D,
    wss: usize,
    _exhaustive: bool,
) -> i32 {
    call(|| {
        find(
            h,
            problem(Dir::BwdData, dxd, wd, c, dyd),
            [dx as usize, w as usize, dy as usize],
            req,
            ret,
            perf.cast(),
            ws as usize,
            wss,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenConvolutionBackwardData(
    h: D,
    alpha: *const f32,
    dyd: D,
    dy: P,
    wd: D,
    w: P,
    c: D,
    algo: i32,
    beta: *const f32,
    dxd: D,
    dx: D,
    ws: D,
    wss: usize,
) -> i32 {
    call(|| {
        run(
            h,
            problem(Dir::BwdData, dxd, wd, c, dyd),
            algo,
            [dx as usize, w as usize, dy as usize],
            alpha,
            beta,
            ws as usize,
            wss,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenFindConvolutionBackwardWeightsAlgorithm(
    h: D,
    dyd: D,
    dy: P,
    xd: D,
    x: P,
    c: D,
    dwd: D,
    dw: D,
    req: i32,
    ret: *mut i32,
    perf: *mut c_void,
    ws: D,
    wss: usize,
    _exhaustive: bool,
) -> i32 {
    call(|| {
        find(
            h,
            problem(Dir::BwdWeights, xd, dwd, c, dyd),
            [x as usize, dw as usize, dy as usize],
            req,
            ret,
            perf.cast(),
            ws as usize,
            wss,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenConvolutionBackwardWeights(
    h: D,
    alpha: *const f32,
    dyd: D,
    dy: P,
    xd: D,
    x: P,
    c: D,
    algo: i32,
    beta: *const f32,
    dwd: D,
    dw: D,
    ws: D,
    wss: usize,
) -> i32 {
    call(|| {
        run(
            h,
            problem(Dir::BwdWeights, xd, dwd, c, dyd),
            algo,
            [x as usize, dw as usize, dy as usize],
            alpha,
            beta,
            ws as usize,
            wss,
        )
    })
}

//! The C exports of MIOpen's convolution API: argument orders exactly as the headers have them
//! (the weight descriptor comes before the input descriptor in the forward solution queries;
//! backward data takes (dy, w, conv, dx), backward weights (dy, x, conv, dw)), mapped onto the
//! forward roles x, w, y that miopen_conv.rs works in.

use crate::conv;
use crate::miopen::{BAD_PARM, CONVS, SUCCESS, call};
use crate::miopen_conv::{
    Dir, compile, find, immediate, problem, run, solution_count, solution_list, solution_workspace,
    tensor,
};
use std::ffi::c_void;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn miopenGetConvolutionForwardOutputDim(
    cd: *mut c_void,
    x: *mut c_void,
    w: *mut c_void,
    n: *mut i32,
    c: *mut i32,
    h: *mut i32,
    wd: *mut i32,
) -> i32 {
    call(|| {
        let (Ok((_, xt)), Ok((_, wt)), Some(cv)) = (tensor(x), tensor(w), CONVS.get(cd as usize))
        else {
            return BAD_PARM;
        };
        if xt.dims[1] != wt.dims[1] * cv.groups {
            return BAD_PARM;
        }
        let oh = conv::out_dim(xt.dims[2], wt.dims[2], cv.pad[0], cv.stride[0], cv.dil[0]);
        let ow = conv::out_dim(xt.dims[3], wt.dims[3], cv.pad[1], cv.stride[1], cv.dil[1]);
        let (Some(oh), Some(ow)) = (oh, ow) else {
            return BAD_PARM;
        };
        // SAFETY: nulls are checked by put.
        let ok = unsafe {
            crate::put(n, xt.dims[0] as i32)
                && crate::put(c, wt.dims[0] as i32)
                && crate::put(h, oh as i32)
                && crate::put(wd, ow as i32)
        };
        if ok { SUCCESS } else { BAD_PARM }
    })
}

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

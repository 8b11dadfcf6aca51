//! Convolutions through cuDNN's legacy API with an explicit algorithm per unit: `solver = "all"`
//! becomes one unit per algorithm of the direction (and, from conv_engine.rs, one per engine
//! configuration of cuDNN's backend API), and an algorithm cuDNN refuses for the problem is
//! `unsupported` with cuDNN's status name.

use super::buffers::{Gpu, Workspace, ws_ptr};
use crate::backend::engine::run::{self, TRANSFORM_ERROR_FACTOR};
use crate::backend::engine::runtime::Ptr;
use crate::backend::{PhaseSink, Prepared, UnitError};
use crate::dtype::DType;
use crate::op::conv2d::{Conv2d, ConvInputs, Direction, Layout};
use cudarc::cudnn::{result as r, sys as s};
use cudarc::driver::sys as dsys;
use std::ffi::c_void;

const FWD: &[&str] = &[
    "implicit_gemm",
    "implicit_precomp_gemm",
    "gemm",
    "direct",
    "fft",
    "fft_tiling",
    "winograd",
    "winograd_nonfused",
];
const BWD_DATA: &[&str] = &[
    "algo_0",
    "algo_1",
    "fft",
    "fft_tiling",
    "winograd",
    "winograd_nonfused",
];
const BWD_FILTER: &[&str] = &[
    "algo_0",
    "algo_1",
    "fft",
    "algo_3",
    "winograd",
    "winograd_nonfused",
    "fft_tiling",
];

/// Every name any direction uses (for sweep validation).
pub const ALL_NAMES: &[&str] = &[
    "implicit_gemm",
    "implicit_precomp_gemm",
    "gemm",
    "direct",
    "fft",
    "fft_tiling",
    "winograd",
    "winograd_nonfused",
    "algo_0",
    "algo_1",
    "algo_3",
    super::conv_engine::HEURISTIC,
];

pub fn solver_names(d: Direction) -> &'static [&'static str] {
    match d {
        Direction::Fwd => FWD,
        Direction::BwdData => BWD_DATA,
        Direction::BwdWeights => BWD_FILTER,
    }
}

fn status_err(what: &str, e: r::CudnnError) -> UnitError {
    let code = format!("{:?}", e.0);
    if code == "CUDNN_STATUS_NOT_SUPPORTED" {
        UnitError::Unsupported(format!("{code} ({what})"))
    } else {
        UnitError::library("cudnn", code, what)
    }
}

fn data_type(d: DType) -> s::cudnnDataType_t {
    match d {
        DType::F16 => s::cudnnDataType_t::CUDNN_DATA_HALF,
        DType::Bf16 => s::cudnnDataType_t::CUDNN_DATA_BFLOAT16,
        _ => s::cudnnDataType_t::CUDNN_DATA_FLOAT,
    }
}

/// cuDNN handle and the descriptors of one problem, destroyed together.
struct Descs {
    handle: s::cudnnHandle_t,
    x: s::cudnnTensorDescriptor_t,
    y: s::cudnnTensorDescriptor_t,
    w: s::cudnnFilterDescriptor_t,
    conv: s::cudnnConvolutionDescriptor_t,
}

impl Drop for Descs {
    fn drop(&mut self) {
        // SAFETY: each was created by this struct and is destroyed exactly once.
        unsafe {
            let _ = r::destroy_tensor_descriptor(self.x);
            let _ = r::destroy_tensor_descriptor(self.y);
            let _ = r::destroy_filter_descriptor(self.w);
            let _ = r::destroy_convolution_descriptor(self.conv);
            let _ = r::destroy_handle(self.handle);
        }
    }
}

fn i(v: usize) -> i32 {
    v as i32
}

impl Descs {
    fn new(gpu: &Gpu, p: &Conv2d) -> Result<Descs, UnitError> {
        let g = &p.geom;
        let handle = r::create_handle().map_err(|e| status_err("cudnnCreate", e))?;
        let mut d = Descs {
            handle,
            x: std::ptr::null_mut(),
            y: std::ptr::null_mut(),
            w: std::ptr::null_mut(),
            conv: std::ptr::null_mut(),
        };
        let fmt = match p.layout {
            Layout::Nchw => s::cudnnTensorFormat_t::CUDNN_TENSOR_NCHW,
            Layout::Nhwc => s::cudnnTensorFormat_t::CUDNN_TENSOR_NHWC,
        };
        let dt = data_type(p.dtype);
        let e = |what: &'static str| move |err| status_err(what, err);
        // SAFETY: descriptors are created here and only used with this handle.
        unsafe {
            r::set_stream(d.handle, gpu.stream.cu_stream() as _).map_err(e("cudnnSetStream"))?;
            d.x = r::create_tensor_descriptor().map_err(e("cudnnCreateTensorDescriptor"))?;
            r::set_tensor4d_descriptor(d.x, fmt, dt, [i(g.n), i(g.c_in), i(g.h), i(g.w)])
                .map_err(e("cudnnSetTensor4dDescriptor (x)"))?;
            d.y = r::create_tensor_descriptor().map_err(e("cudnnCreateTensorDescriptor"))?;
            r::set_tensor4d_descriptor(
                d.y,
                fmt,
                dt,
                [i(g.n), i(g.c_out), i(g.out_h()), i(g.out_w())],
            )
            .map_err(e("cudnnSetTensor4dDescriptor (y)"))?;
            d.w = r::create_filter_descriptor().map_err(e("cudnnCreateFilterDescriptor"))?;
            r::set_filter4d_descriptor(
                d.w,
                dt,
                fmt,
                [i(g.c_out), i(g.c_in / g.groups), i(g.kh), i(g.kw)],
            )
            .map_err(e("cudnnSetFilter4dDescriptor"))?;
            d.conv = r::create_convolution_descriptor()
                .map_err(e("cudnnCreateConvolutionDescriptor"))?;
            r::set_convolution2d_descriptor(
                d.conv,
                i(g.pad_h),
                i(g.pad_w),
                i(g.stride_h),
                i(g.stride_w),
                i(g.dil_h),
                i(g.dil_w),
                s::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION,
                s::cudnnDataType_t::CUDNN_DATA_FLOAT,
            )
            .map_err(e("cudnnSetConvolution2dDescriptor"))?;
            r::set_convolution_group_count(d.conv, i(g.groups))
                .map_err(e("cudnnSetConvolutionGroupCount"))?;
            // f32 stays f32 (no TF32 tensor cores), so an f32 case is checked at f32 tolerance;
            // f16/bf16 may use tensor cores, as frameworks let them.
            let math = if p.dtype == DType::F32 {
                s::cudnnMathType_t::CUDNN_FMA_MATH
            } else {
                s::cudnnMathType_t::CUDNN_TENSOR_OP_MATH
            };
            r::set_convolution_math_type(d.conv, math).map_err(e("cudnnSetConvolutionMathType"))?;
        }
        Ok(d)
    }
}

#[derive(Clone, Copy)]
enum Algo {
    Fwd(s::cudnnConvolutionFwdAlgo_t),
    BwdData(s::cudnnConvolutionBwdDataAlgo_t),
    BwdFilter(s::cudnnConvolutionBwdFilterAlgo_t),
}

fn algo(p: &Conv2d, solver: &str) -> Result<Algo, UnitError> {
    use s::cudnnConvolutionBwdDataAlgo_t as D;
    use s::cudnnConvolutionBwdFilterAlgo_t as F;
    use s::cudnnConvolutionFwdAlgo_t as W;
    let name = if solver == "default" {
        solver_names(p.direction)[1.min(solver_names(p.direction).len() - 1)]
    } else {
        solver
    };
    let unknown = || {
        UnitError::Unsupported(format!(
            "cuDNN has no {:?} algorithm `{name}` (it has: {})",
            p.direction,
            solver_names(p.direction).join(", ")
        ))
    };
    Ok(match p.direction {
        Direction::Fwd => Algo::Fwd(match name {
            "implicit_gemm" => W::CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
            "implicit_precomp_gemm" => W::CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
            "gemm" => W::CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
            "direct" => W::CUDNN_CONVOLUTION_FWD_ALGO_DIRECT,
            "fft" => W::CUDNN_CONVOLUTION_FWD_ALGO_FFT,
            "fft_tiling" => W::CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING,
            "winograd" => W::CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD,
            "winograd_nonfused" => W::CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED,
            _ => return Err(unknown()),
        }),
        Direction::BwdData => Algo::BwdData(match name {
            "algo_0" => D::CUDNN_CONVOLUTION_BWD_DATA_ALGO_0,
            "algo_1" => D::CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
            "fft" => D::CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT,
            "fft_tiling" => D::CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING,
            "winograd" => D::CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD,
            "winograd_nonfused" => D::CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED,
            _ => return Err(unknown()),
        }),
        Direction::BwdWeights => Algo::BwdFilter(match name {
            "algo_0" => F::CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0,
            "algo_1" => F::CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
            "fft" => F::CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT,
            "algo_3" => F::CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3,
            "winograd" => F::CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD,
            "winograd_nonfused" => F::CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED,
            "fft_tiling" => F::CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING,
            _ => return Err(unknown()),
        }),
    })
}

fn transform_factor(a: Algo) -> f64 {
    use s::cudnnConvolutionBwdDataAlgo_t as D;
    use s::cudnnConvolutionBwdFilterAlgo_t as F;
    use s::cudnnConvolutionFwdAlgo_t as W;
    let transform = match a {
        Algo::Fwd(x) => matches!(
            x,
            W::CUDNN_CONVOLUTION_FWD_ALGO_FFT
                | W::CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING
                | W::CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD
                | W::CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED
        ),
        Algo::BwdData(x) => matches!(
            x,
            D::CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT
                | D::CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING
                | D::CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD
                | D::CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED
        ),
        Algo::BwdFilter(x) => matches!(
            x,
            F::CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT
                | F::CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING
                | F::CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED
        ),
    };
    if transform {
        TRANSFORM_ERROR_FACTOR
    } else {
        1.0
    }
}

/// One configured convolution (descriptors, algorithm, workspace), launchable on any operands.
pub struct ConvCall {
    d: Descs,
    algo: Algo,
    ws: Workspace,
    ws_bytes: usize,
}

impl ConvCall {
    /// Builds descriptors and asks cuDNN for the algorithm's workspace (refusal = unsupported).
    pub fn new(gpu: &Gpu, p: &Conv2d, solver: &str) -> Result<ConvCall, UnitError> {
        let algo = algo(p, solver)?;
        let d = Descs::new(gpu, p)?;
        let mut ws_bytes = 0usize;
        // SAFETY: the descriptors are live; ws_bytes is a valid out-pointer.
        unsafe {
            match algo {
                Algo::Fwd(a) => s::cudnnGetConvolutionForwardWorkspaceSize(
                    d.handle,
                    d.x,
                    d.w,
                    d.conv,
                    d.y,
                    a,
                    &mut ws_bytes,
                ),
                Algo::BwdData(a) => s::cudnnGetConvolutionBackwardDataWorkspaceSize(
                    d.handle,
                    d.w,
                    d.y,
                    d.conv,
                    d.x,
                    a,
                    &mut ws_bytes,
                ),
                Algo::BwdFilter(a) => s::cudnnGetConvolutionBackwardFilterWorkspaceSize(
                    d.handle,
                    d.x,
                    d.y,
                    d.conv,
                    d.w,
                    a,
                    &mut ws_bytes,
                ),
            }
            .result()
            .map_err(|e| status_err("workspace size query for this algorithm", e))?;
        }
        let ws = gpu.workspace(ws_bytes)?;
        Ok(ConvCall {
            d,
            algo,
            ws,
            ws_bytes,
        })
    }

    /// `a`/`b` are (x, w) fwd, (dy, w) bwd-data, (x, dy) bwd-weights; `out` is the result.
    pub fn launch(
        &mut self,
        pa: dsys::CUdeviceptr,
        pb: dsys::CUdeviceptr,
        po: dsys::CUdeviceptr,
    ) -> Result<(), UnitError> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        let al = &alpha as *const f32 as *const c_void;
        let be = &beta as *const f32 as *const c_void;
        let (pa, pb, po) = (pa as *const c_void, pb as *const c_void, po as *mut c_void);
        let ws = ws_ptr(&self.ws);
        let d = &self.d;
        // SAFETY: pointers are live device allocations sized for the descriptors.
        unsafe {
            match self.algo {
                Algo::Fwd(a) => r::convolution_forward(
                    d.handle,
                    al,
                    d.x,
                    pa,
                    d.w,
                    pb,
                    d.conv,
                    a,
                    ws,
                    self.ws_bytes,
                    be,
                    d.y,
                    po,
                ),
                Algo::BwdData(a) => r::convolution_backward_data(
                    d.handle,
                    al,
                    d.w,
                    pb,
                    d.y,
                    pa,
                    d.conv,
                    a,
                    ws,
                    self.ws_bytes,
                    be,
                    d.x,
                    po,
                ),
                Algo::BwdFilter(a) => r::convolution_backward_filter(
                    d.handle,
                    al,
                    d.x,
                    pa,
                    d.y,
                    pb,
                    d.conv,
                    a,
                    ws,
                    self.ws_bytes,
                    be,
                    d.w,
                    po,
                ),
            }
        }
        .map_err(|e| status_err("running the convolution", e))
    }
}

pub fn prepare(
    gpu: &Gpu,
    p: &Conv2d,
    solver: &str,
    i: &ConvInputs,
    phases: &mut dyn PhaseSink,
) -> Result<Box<dyn Prepared>, UnitError> {
    if super::conv_engine::is_engine_solver(solver) {
        return super::conv_engine::prepare(gpu, p, solver, i, phases);
    }
    let call = ConvCall::new(gpu, p, solver)?;
    phases.phase("alloc");
    let ops = run::conv_operands(gpu, p, i)?;
    Ok(run::prepare(gpu, call, ops))
}

impl run::Call for ConvCall {
    fn launch(&mut self, a: Ptr, b: Ptr, out: Ptr) -> Result<(), UnitError> {
        ConvCall::launch(self, a as _, b as _, out as _)
    }

    fn chosen(&self) -> String {
        String::new()
    }

    fn workspace_bytes(&self) -> u64 {
        self.ws_bytes as u64
    }

    fn tolerance_factor(&self) -> f64 {
        transform_factor(self.algo)
    }
}

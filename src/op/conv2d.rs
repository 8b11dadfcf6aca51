//! 2-D convolution (cross-correlation, as cuDNN, MIOpen and PyTorch define it) in three directions.

use super::param::{Default as D, ParamDef, ParamKind as K, ParamSlice};
use crate::cpu::conv::{self as cc, ConvGeom};
use crate::dtype::DType;
use crate::op::inputs;
use crate::tensor::HostData;
use crate::verify::{Check, Tolerance};
use serde::{Deserialize, Serialize};

pub const DIRECTIONS: &[&str] = &["fwd", "bwd_data", "bwd_weights"];
pub const LAYOUTS: &[&str] = &["nchw", "nhwc"];
const DTYPES: &[DType] = &[DType::F32, DType::F16, DType::Bf16];

pub const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "direction",
        kind: K::Choice(DIRECTIONS),
        default: D::Str("fwd"),
        doc: "fwd, bwd_data or bwd_weights",
    },
    ParamDef {
        name: "n",
        kind: K::Int { min: 1 },
        default: D::Int(1),
        doc: "batch size",
    },
    ParamDef {
        name: "c_in",
        kind: K::Int { min: 1 },
        default: D::Int(16),
        doc: "input channels",
    },
    ParamDef {
        name: "c_out",
        kind: K::Int { min: 1 },
        default: D::Int(16),
        doc: "output channels",
    },
    ParamDef {
        name: "h",
        kind: K::Int { min: 1 },
        default: D::Int(32),
        doc: "input height",
    },
    ParamDef {
        name: "w",
        kind: K::Int { min: 1 },
        default: D::SameAs("h"),
        doc: "input width (default: h)",
    },
    ParamDef {
        name: "kernel",
        kind: K::Int { min: 1 },
        default: D::Int(3),
        doc: "square filter size",
    },
    ParamDef {
        name: "pad",
        kind: K::Int { min: 0 },
        default: D::Int(1),
        doc: "zero padding on each side",
    },
    ParamDef {
        name: "stride",
        kind: K::Int { min: 1 },
        default: D::Int(1),
        doc: "stride",
    },
    ParamDef {
        name: "dilation",
        kind: K::Int { min: 1 },
        default: D::Int(1),
        doc: "filter dilation",
    },
    ParamDef {
        name: "groups",
        kind: K::Int { min: 1 },
        default: D::Int(1),
        doc: "channel groups (c_in and c_out divisible by it)",
    },
    ParamDef {
        name: "layout",
        kind: K::Choice(LAYOUTS),
        default: D::Str("nchw"),
        doc: "tensor layout: nchw or nhwc",
    },
    ParamDef {
        name: "dtype",
        kind: K::DType(DTYPES),
        default: D::Str("f32"),
        doc: "f32, f16 or bf16 (accumulation in f32)",
    },
];

/// Names of the CPU backend's convolution solvers (GPU backends add their own).
pub const CPU_SOLVERS: &[&str] = &["im2col"];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Fwd,
    BwdData,
    BwdWeights,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    Nchw,
    Nhwc,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Conv2d {
    pub direction: Direction,
    pub geom: ConvGeom,
    pub layout: Layout,
    pub dtype: DType,
}

/// The two operands and the result of one direction, as tensors in the case's layout.
#[derive(Clone, Debug)]
pub struct ConvInputs {
    /// fwd: x, bwd_data: dy, bwd_weights: x
    pub a: HostData,
    /// fwd: w, bwd_data: w, bwd_weights: dy
    pub b: HostData,
}

impl Conv2d {
    pub fn from_params(p: &ParamSlice) -> Result<Conv2d, String> {
        let direction = match p.str("direction")? {
            "fwd" => Direction::Fwd,
            "bwd_data" => Direction::BwdData,
            _ => Direction::BwdWeights,
        };
        let layout = if p.str("layout")? == "nhwc" {
            Layout::Nhwc
        } else {
            Layout::Nchw
        };
        let (k, pad, stride, dil) = (
            p.usize("kernel")?,
            p.usize("pad")?,
            p.usize("stride")?,
            p.usize("dilation")?,
        );
        let geom = ConvGeom {
            n: p.usize("n")?,
            c_in: p.usize("c_in")?,
            c_out: p.usize("c_out")?,
            h: p.usize("h")?,
            w: p.usize("w")?,
            kh: k,
            kw: k,
            pad_h: pad,
            pad_w: pad,
            stride_h: stride,
            stride_w: stride,
            dil_h: dil,
            dil_w: dil,
            groups: p.usize("groups")?,
        };
        if !geom.c_in.is_multiple_of(geom.groups) || !geom.c_out.is_multiple_of(geom.groups) {
            return Err(format!(
                "groups={} must divide c_in={} and c_out={}",
                geom.groups, geom.c_in, geom.c_out
            ));
        }
        let span = dil * (k - 1) + 1;
        if geom.h + 2 * pad < span || geom.w + 2 * pad < span {
            return Err(format!(
                "a {k}x{k} filter with dilation {dil} spans {span} pixels, more than the padded {}x{} input",
                geom.h + 2 * pad,
                geom.w + 2 * pad
            ));
        }
        Ok(Conv2d {
            direction,
            geom,
            layout,
            dtype: p.dtype("dtype")?,
        })
    }

    pub fn flops(&self) -> f64 {
        let g = &self.geom;
        2.0 * (g.n * g.c_out * g.out_h() * g.out_w()) as f64
            * ((g.c_in / g.groups) * g.kh * g.kw) as f64
    }

    pub fn bytes(&self) -> f64 {
        let g = &self.geom;
        ((g.x_len() + g.w_len() + g.y_len()) * self.dtype.size()) as f64
    }

    /// Length of the dot products behind each output element.
    pub fn reduction_len(&self) -> usize {
        let g = &self.geom;
        match self.direction {
            Direction::Fwd => (g.c_in / g.groups) * g.kh * g.kw,
            // Each input pixel gathers from at most ceil(k/stride)^2 output pixels per channel.
            Direction::BwdData => {
                (g.c_out / g.groups) * g.kh.div_ceil(g.stride_h) * g.kw.div_ceil(g.stride_w)
            }
            Direction::BwdWeights => g.n * g.out_h() * g.out_w(),
        }
    }

    pub fn check(&self, tolerance_scale: f64) -> Check {
        Check::Close(
            Tolerance::for_reduction(self.reduction_len(), self.dtype, DType::F32, self.dtype)
                .scaled(tolerance_scale),
        )
    }

    fn operand_lens(&self) -> (usize, usize, usize) {
        let g = &self.geom;
        match self.direction {
            Direction::Fwd => (g.x_len(), g.w_len(), g.y_len()),
            Direction::BwdData => (g.y_len(), g.w_len(), g.x_len()),
            Direction::BwdWeights => (g.x_len(), g.y_len(), g.w_len()),
        }
    }

    pub fn output_len(&self) -> usize {
        self.operand_lens().2
    }

    pub fn make_inputs(&self, seed: u64) -> ConvInputs {
        let (a, b, _) = self.operand_lens();
        ConvInputs {
            a: inputs::uniform(self.dtype, a, seed),
            b: inputs::uniform(self.dtype, b, seed ^ 0x9e37_79b9_7f4a_7c15),
        }
    }

    /// Runs the convolution on the CPU in `T`, taking and returning tensors in the case's layout.
    pub fn compute<T: crate::cpu::Real>(&self, a: &[T], b: &[T]) -> Vec<T> {
        let g = &self.geom;
        let (oh, ow) = (g.out_h(), g.out_w());
        let (a, b) = match self.layout {
            Layout::Nchw => (a.to_vec(), b.to_vec()),
            Layout::Nhwc => match self.direction {
                Direction::Fwd => (to_nchw(a, g.n, g.c_in, g.h, g.w), filter_to_kcrs(self, b)),
                Direction::BwdData => (to_nchw(a, g.n, g.c_out, oh, ow), filter_to_kcrs(self, b)),
                Direction::BwdWeights => (
                    to_nchw(a, g.n, g.c_in, g.h, g.w),
                    to_nchw(b, g.n, g.c_out, oh, ow),
                ),
            },
        };
        let mut out = vec![T::ZERO; self.output_len()];
        match self.direction {
            Direction::Fwd => cc::conv2d_fwd(g, &a, &b, &mut out),
            Direction::BwdData => cc::conv2d_bwd_data(g, &a, &b, &mut out),
            Direction::BwdWeights => cc::conv2d_bwd_weights(g, &a, &b, &mut out),
        }
        match (self.layout, self.direction) {
            (Layout::Nchw, _) => out,
            (Layout::Nhwc, Direction::Fwd) => to_nhwc(&out, g.n, g.c_out, oh, ow),
            (Layout::Nhwc, Direction::BwdData) => to_nhwc(&out, g.n, g.c_in, g.h, g.w),
            // Filters in NHWC problems are stored KRSC: [c_out, kh, kw, c_in/groups].
            (Layout::Nhwc, Direction::BwdWeights) => {
                to_nhwc(&out, g.c_out, g.c_in / g.groups, g.kh, g.kw)
            }
        }
    }

    /// The f64 reference for verification.
    pub fn reference(&self, inputs: &ConvInputs) -> Vec<f64> {
        self.compute::<f64>(&inputs.a.to_f64_vec(), &inputs.b.to_f64_vec())
    }
}

fn filter_to_kcrs<T: Copy + std::default::Default>(c: &Conv2d, w: &[T]) -> Vec<T> {
    let g = &c.geom;
    to_nchw(w, g.c_out, g.c_in / g.groups, g.kh, g.kw)
}

fn to_nchw<T: Copy + std::default::Default>(
    src: &[T],
    n: usize,
    c: usize,
    h: usize,
    w: usize,
) -> Vec<T> {
    let mut dst = vec![T::default(); src.len()];
    cc::nhwc_to_nchw(src, n, c, h, w, &mut dst);
    dst
}

fn to_nhwc<T: Copy + std::default::Default>(
    src: &[T],
    n: usize,
    c: usize,
    h: usize,
    w: usize,
) -> Vec<T> {
    let mut dst = vec![T::default(); src.len()];
    cc::nchw_to_nhwc(src, n, c, h, w, &mut dst);
    dst
}

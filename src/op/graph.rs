//! A captured sequence replayed with new inputs (seed 003: HIP graph replays that crash, hang or
//! overwrite earlier outputs). The sequence is fixed: a GEMM mixes channels (a 1x1 convolution
//! written as a matrix product), a 3x3 convolution follows, then a ReLU.

use super::param::{Default as D, ParamDef, ParamKind as K, ParamSlice};
use crate::cpu::conv::ConvGeom;
use crate::dtype::DType;
use crate::op::conv2d::{Conv2d, Direction, Layout};
use crate::op::gemm::Gemm;
use crate::op::inputs;
use crate::tensor::HostData;
use crate::verify::{Check, Tolerance};
use serde::{Deserialize, Serialize};

const DTYPES: &[DType] = &[DType::F32, DType::F16, DType::Bf16];

pub const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "channels",
        kind: K::Int { min: 1 },
        default: D::Int(16),
        doc: "channels of the activation",
    },
    ParamDef {
        name: "size",
        kind: K::Int { min: 3 },
        default: D::Int(32),
        doc: "height and width of the activation",
    },
    ParamDef {
        name: "replays",
        kind: K::Int { min: 1 },
        default: D::Int(4),
        doc: "replays, each with new inputs",
    },
    ParamDef {
        name: "keep_outputs",
        kind: K::Bool,
        default: D::Bool(false),
        doc: "each replay writes its own output buffer, all checked at the end",
    },
    ParamDef {
        name: "dtype",
        kind: K::DType(DTYPES),
        default: D::Str("f32"),
        doc: "f32, f16 or bf16",
    },
];

pub const CPU_SOLVERS: &[&str] = &["closure-list"];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Graph {
    pub channels: usize,
    pub size: usize,
    pub replays: usize,
    pub keep_outputs: bool,
    pub dtype: DType,
}

/// Fixed weights plus one activation per replay.
#[derive(Clone, Debug)]
pub struct GraphInputs {
    pub mix: HostData,
    pub filter: HostData,
    pub activations: Vec<HostData>,
}

impl Graph {
    pub fn from_params(p: &ParamSlice) -> Result<Graph, String> {
        Ok(Graph {
            channels: p.usize("channels")?,
            size: p.usize("size")?,
            replays: p.usize("replays")?,
            keep_outputs: p.bool("keep_outputs")?,
            dtype: p.dtype("dtype")?,
        })
    }

    /// The GEMM step: [c x c] x [c x size^2].
    pub fn gemm(&self) -> Gemm {
        Gemm {
            m: self.channels,
            n: self.size * self.size,
            k: self.channels,
            trans_a: false,
            trans_b: false,
            batch: 1,
            dtype: self.dtype,
            out_dtype: self.dtype,
            compute: DType::F32,
        }
    }

    /// The convolution step: 3x3, pad 1, channels -> channels.
    pub fn conv(&self) -> Conv2d {
        let c = self.channels;
        Conv2d {
            direction: Direction::Fwd,
            geom: ConvGeom {
                n: 1,
                c_in: c,
                c_out: c,
                h: self.size,
                w: self.size,
                kh: 3,
                kw: 3,
                pad_h: 1,
                pad_w: 1,
                stride_h: 1,
                stride_w: 1,
                dil_h: 1,
                dil_w: 1,
                groups: 1,
            },
            layout: Layout::Nchw,
            dtype: self.dtype,
        }
    }

    pub fn activation_len(&self) -> usize {
        self.channels * self.size * self.size
    }

    /// The op's output: every replay's output, in replay order, in the case's dtype (what the
    /// reference holds). Backends hand the replays over as they read them back.
    pub fn join_replays(&self, replays: impl IntoIterator<Item = HostData>) -> HostData {
        let all: Vec<f32> = replays.into_iter().flat_map(|h| h.to_f32_vec()).collect();
        HostData::from_f32(self.dtype, &all)
    }

    /// One replay's FLOPs.
    pub fn flops(&self) -> f64 {
        self.gemm().flops() + self.conv().flops() + self.activation_len() as f64
    }

    pub fn bytes(&self) -> f64 {
        self.gemm().bytes()
            + self.conv().bytes()
            + 2.0 * (self.activation_len() * self.dtype.size()) as f64
    }

    pub fn check(&self, tolerance_scale: f64) -> Check {
        // Two chained reductions: the GEMM's error is carried through the convolution.
        let k = self.channels + 9 * self.channels;
        Check::Close(
            Tolerance::for_reduction(k, self.dtype, DType::F32, self.dtype)
                .scaled(2.0 * tolerance_scale),
        )
    }

    pub fn make_inputs(&self, seed: u64) -> GraphInputs {
        let c = self.channels;
        GraphInputs {
            mix: inputs::uniform(self.dtype, c * c, seed),
            filter: inputs::uniform(self.dtype, c * c * 9, seed ^ 1),
            activations: (0..self.replays)
                .map(|r| {
                    inputs::uniform(self.dtype, self.activation_len(), seed ^ (0x100 + r as u64))
                })
                .collect(),
        }
    }

    /// The eager sequence in `T` for one activation.
    pub fn eager<T: crate::cpu::Real + PartialOrd>(
        &self,
        mix: &[T],
        filter: &[T],
        x: &[T],
    ) -> Vec<T> {
        let mixed = self.gemm().compute(mix, x, 1);
        let mut y = self.conv().compute(&mixed, filter);
        y.iter_mut().for_each(|v| {
            if *v < T::ZERO {
                *v = T::ZERO
            }
        });
        y
    }

    /// f64 references for every replay, in order.
    pub fn reference(&self, inputs: &GraphInputs) -> Vec<f64> {
        let (mix, filter) = (inputs.mix.to_f64_vec(), inputs.filter.to_f64_vec());
        inputs
            .activations
            .iter()
            .flat_map(|x| self.eager(&mix, &filter, &x.to_f64_vec()))
            .collect()
    }
}

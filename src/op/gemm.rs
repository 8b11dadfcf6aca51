//! Matrix multiply C = op(A) x op(B), optionally batched, with separate input, output and compute types.

use super::param::{Default as D, ParamDef, ParamKind as K, ParamSlice};
use crate::dtype::DType;
use crate::op::inputs;
use crate::tensor::HostData;
use crate::verify::{Check, Tolerance};
use serde::{Deserialize, Serialize};

const IO_TYPES: &[DType] = &[DType::F32, DType::F16, DType::Bf16];
const COMPUTE_TYPES: &[DType] = &[DType::F32, DType::Tf32, DType::F16];

pub const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "m",
        kind: K::Int { min: 1 },
        default: D::Int(256),
        doc: "rows of C",
    },
    ParamDef {
        name: "n",
        kind: K::Int { min: 1 },
        default: D::SameAs("m"),
        doc: "columns of C (default: m)",
    },
    ParamDef {
        name: "k",
        kind: K::Int { min: 1 },
        default: D::SameAs("m"),
        doc: "reduction length (default: m)",
    },
    ParamDef {
        name: "trans_a",
        kind: K::Bool,
        default: D::Bool(false),
        doc: "A stored k x m and transposed",
    },
    ParamDef {
        name: "trans_b",
        kind: K::Bool,
        default: D::Bool(false),
        doc: "B stored n x k and transposed",
    },
    ParamDef {
        name: "batch",
        kind: K::Int { min: 1 },
        default: D::Int(1),
        doc: "independent products (strided batch)",
    },
    ParamDef {
        name: "dtype",
        kind: K::DType(IO_TYPES),
        default: D::Str("f32"),
        doc: "type of A and B",
    },
    ParamDef {
        name: "out_dtype",
        kind: K::DType(IO_TYPES),
        default: D::SameAs("dtype"),
        doc: "type of C (default: dtype)",
    },
    ParamDef {
        name: "compute",
        kind: K::DType(COMPUTE_TYPES),
        default: D::Str("f32"),
        doc: "f32, tf32 or f16",
    },
];

pub const CPU_SOLVERS: &[&str] = &["gemm-crate"];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gemm {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub trans_a: bool,
    pub trans_b: bool,
    pub batch: usize,
    pub dtype: DType,
    pub out_dtype: DType,
    pub compute: DType,
}

#[derive(Clone, Debug)]
pub struct GemmInputs {
    pub a: HostData,
    pub b: HostData,
}

impl Gemm {
    pub fn from_params(p: &ParamSlice) -> Result<Gemm, String> {
        Ok(Gemm {
            m: p.usize("m")?,
            n: p.usize("n")?,
            k: p.usize("k")?,
            trans_a: p.bool("trans_a")?,
            trans_b: p.bool("trans_b")?,
            batch: p.usize("batch")?,
            dtype: p.dtype("dtype")?,
            out_dtype: p.dtype("out_dtype")?,
            compute: p.dtype("compute")?,
        })
    }

    pub fn flops(&self) -> f64 {
        2.0 * self.batch as f64 * self.m as f64 * self.n as f64 * self.k as f64
    }

    pub fn bytes(&self) -> f64 {
        let b = self.batch as f64;
        b * ((self.m * self.k + self.k * self.n) * self.dtype.size()
            + self.m * self.n * self.out_dtype.size()) as f64
    }

    pub fn check(&self, tolerance_scale: f64) -> Check {
        Check::Close(
            Tolerance::for_reduction(self.k, self.compute, self.compute, self.out_dtype)
                .scaled(tolerance_scale),
        )
    }

    pub fn output_len(&self) -> usize {
        self.batch * self.m * self.n
    }

    pub fn make_inputs(&self, seed: u64) -> GemmInputs {
        let per = self.batch;
        GemmInputs {
            a: inputs::uniform(self.dtype, per * self.m * self.k, seed),
            b: inputs::uniform(
                self.dtype,
                per * self.k * self.n,
                seed ^ 0x9e37_79b9_7f4a_7c15,
            ),
        }
    }

    /// C in `T` from operands already widened to `T`.
    pub fn compute<T: crate::cpu::Real>(&self, a: &[T], b: &[T], threads: usize) -> Vec<T> {
        let mut c = vec![T::ZERO; self.output_len()];
        crate::cpu::gemm::matmul_batched(
            self.batch,
            self.m,
            self.n,
            self.k,
            self.trans_a,
            self.trans_b,
            a,
            b,
            &mut c,
            threads,
        );
        c
    }

    /// The f64 reference from the exact operands: TF32 or f16 rounding inside the device is error
    /// that the tolerance allows for, not something the reference imitates.
    pub fn reference(&self, inputs: &GemmInputs) -> Vec<f64> {
        self.compute(
            &inputs.a.to_f64_vec(),
            &inputs.b.to_f64_vec(),
            rayon::current_num_threads(),
        )
    }
}

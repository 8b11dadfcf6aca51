//! Problem kinds. Each op file declares its parameters (names, types, defaults), builds a typed
//! problem from a parameter slice, and knows its FLOP and byte counts, tolerance and CPU reference.

pub mod cast;
pub mod conv2d;
pub mod copy;
pub mod gemm;
pub mod graph;
pub mod inputs;
pub mod param;
pub mod rng;
pub mod value;

use crate::op::value::Value;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

pub use param::{Default, ParamDef, ParamKind, ParamSlice};

/// The axis every op has: which algorithm runs the case. Not part of the case id.
pub const SOLVER: &str = "solver";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    Conv2d,
    Gemm,
    Rng,
    Copy,
    Cast,
    Graph,
}

impl OpKind {
    pub const ALL: [OpKind; 6] = [
        OpKind::Conv2d,
        OpKind::Gemm,
        OpKind::Rng,
        OpKind::Copy,
        OpKind::Cast,
        OpKind::Graph,
    ];

    pub fn name(self) -> &'static str {
        match self {
            OpKind::Conv2d => "conv2d",
            OpKind::Gemm => "gemm",
            OpKind::Rng => "rng",
            OpKind::Copy => "copy",
            OpKind::Cast => "cast",
            OpKind::Graph => "graph",
        }
    }

    pub fn parse(s: &str) -> Option<OpKind> {
        OpKind::ALL.into_iter().find(|o| o.name() == s)
    }

    /// The parameters that are the problem's size, in order of preference: the first that a
    /// sweep varies is the heatmap's x axis, a throughput line's, a boundary table's and the
    /// boundary search's default `--along`.
    pub fn size_params(self) -> &'static [&'static str] {
        match self {
            OpKind::Conv2d => &["h", "w"],
            OpKind::Gemm => &["m", "n", "k"],
            OpKind::Graph => &["size"],
            OpKind::Copy => &["bytes"],
            OpKind::Rng | OpKind::Cast => &["count"],
        }
    }

    pub fn summary(self) -> &'static str {
        match self {
            OpKind::Conv2d => "2-D convolution: forward, backward-data, backward-weights",
            OpKind::Gemm => "matrix multiply, optionally batched and transposed",
            OpKind::Rng => "normal random numbers",
            OpKind::Copy => "memory copies host-to-device, device-to-host, device-to-device",
            OpKind::Cast => "element type conversion",
            OpKind::Graph => {
                "a captured sequence (GEMM, conv, elementwise) replayed with new inputs"
            }
        }
    }

    /// The op's parameters in canonical order (the order of CSV columns and case-id text).
    pub fn params(self) -> &'static [ParamDef] {
        match self {
            OpKind::Conv2d => conv2d::PARAMS,
            OpKind::Gemm => gemm::PARAMS,
            OpKind::Rng => rng::PARAMS,
            OpKind::Copy => copy::PARAMS,
            OpKind::Cast => cast::PARAMS,
            OpKind::Graph => graph::PARAMS,
        }
    }

    pub fn param(self, name: &str) -> Option<&'static ParamDef> {
        self.params().iter().find(|p| p.name == name)
    }

    /// Builds the typed problem from values in `params()` order (defaults already filled in).
    /// An error names the combination that cannot form a valid problem (e.g. groups not dividing c_in).
    pub fn build(self, values: &[Value]) -> Result<Problem, String> {
        let p = ParamSlice {
            defs: self.params(),
            values,
        };
        Ok(match self {
            OpKind::Conv2d => Problem::Conv2d(conv2d::Conv2d::from_params(&p)?),
            OpKind::Gemm => Problem::Gemm(gemm::Gemm::from_params(&p)?),
            OpKind::Rng => Problem::Rng(rng::Rng::from_params(&p)?),
            OpKind::Copy => Problem::Copy(copy::Copy::from_params(&p)?),
            OpKind::Cast => Problem::Cast(cast::Cast::from_params(&p)?),
            OpKind::Graph => Problem::Graph(graph::Graph::from_params(&p)?),
        })
    }
}

/// A typed problem: plain data, so it can cross a process boundary as JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Problem {
    Conv2d(conv2d::Conv2d),
    Gemm(gemm::Gemm),
    Rng(rng::Rng),
    Copy(copy::Copy),
    Cast(cast::Cast),
    Graph(graph::Graph),
}

impl Problem {
    /// Why no backend runs this problem, where its combination of parameters has no meaning
    /// (checked by the worker before any backend prepares it); None for every other problem.
    pub fn unsupported(&self) -> Option<String> {
        match self {
            Problem::Copy(p) => p.unsupported(),
            _ => None,
        }
    }

    /// The element type of the op's output.
    pub fn output_dtype(&self) -> crate::dtype::DType {
        match self {
            Problem::Conv2d(p) => p.dtype,
            Problem::Gemm(p) => p.out_dtype,
            Problem::Rng(p) => p.dtype,
            Problem::Copy(_) => crate::dtype::DType::F32,
            Problem::Cast(p) => p.to,
            Problem::Graph(p) => p.dtype,
        }
    }

    pub fn kind(&self) -> OpKind {
        match self {
            Problem::Conv2d(_) => OpKind::Conv2d,
            Problem::Gemm(_) => OpKind::Gemm,
            Problem::Rng(_) => OpKind::Rng,
            Problem::Copy(_) => OpKind::Copy,
            Problem::Cast(_) => OpKind::Cast,
            Problem::Graph(_) => OpKind::Graph,
        }
    }

    /// Floating-point operations of one execution (0 where the op moves data only).
    pub fn flops(&self) -> f64 {
        match self {
            Problem::Conv2d(p) => p.flops(),
            Problem::Gemm(p) => p.flops(),
            Problem::Rng(p) => p.flops(),
            Problem::Copy(_) => 0.0,
            Problem::Cast(_) => 0.0,
            Problem::Graph(p) => p.flops(),
        }
    }

    /// Bytes read plus bytes written by one execution, counting each tensor once.
    pub fn bytes(&self) -> f64 {
        match self {
            Problem::Conv2d(p) => p.bytes(),
            Problem::Gemm(p) => p.bytes(),
            Problem::Rng(p) => p.bytes(),
            Problem::Copy(p) => p.bytes(),
            Problem::Cast(p) => p.bytes(),
            Problem::Graph(p) => p.bytes(),
        }
    }
}

/// One expanded case: the op's parameter values in canonical order, the solver, and the typed problem.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Case {
    pub id: String,
    pub values: Vec<Value>,
    pub solver: String,
    pub problem: Problem,
}

impl Case {
    pub fn new(op: OpKind, values: Vec<Value>, solver: String) -> Result<Case, String> {
        let problem = op.build(&values)?;
        Ok(Case {
            id: case_id(op, &values),
            values,
            solver,
            problem,
        })
    }
}

/// Parameters added after runs were recorded: left out of a case's text (and id) at their
/// default, so that the cases of earlier runs keep their ids (`compare`, `--resume`).
fn late_param_at_default(op: OpKind, name: &str, v: &Value) -> bool {
    match (op, name, v) {
        (OpKind::Copy, "pin_memory", Value::Bool(b)) => !b,
        (OpKind::Copy, "sharing_strategy", Value::Str(s)) => s == "default",
        _ => false,
    }
}

/// Canonical text of a case: `op;name=value;...` in `params()` order. Hashing this text gives the
/// case id, so the id is the same on every machine and in every run.
pub fn canonical_text(op: OpKind, values: &[Value]) -> String {
    // Built with pushes rather than `format!`: expansion makes one of these per case.
    let mut s = String::with_capacity(160);
    s.push_str(op.name());
    let mut ints = itoa::Buffer::new();
    for (def, v) in op.params().iter().zip(values) {
        if late_param_at_default(op, def.name, v) {
            continue;
        }
        s.push(';');
        s.push_str(def.name);
        s.push('=');
        match v {
            Value::Int(i) => s.push_str(ints.format(*i)),
            Value::Str(t) => s.push_str(t),
            Value::Bool(b) => s.push_str(if *b { "true" } else { "false" }),
            Value::Float(_) => {
                let _ = write!(s, "{v}");
            }
        }
    }
    s
}

pub fn case_id(op: OpKind, values: &[Value]) -> String {
    short_hash(canonical_text(op, values).as_bytes())
}

/// A unit is a case run by one solver under one env combination.
pub fn unit_id(case_id: &str, solver: &str, env_key: &str) -> String {
    short_hash(format!("{case_id}|{solver}|{env_key}").as_bytes())
}

/// First 8 bytes of SHA-256 in hex: short enough to read, long enough not to collide in a sweep.
pub fn short_hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest[..8]
        .iter()
        .fold(String::with_capacity(16), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// Inputs of one case, generated deterministically from its seed.
#[derive(Clone, Debug)]
pub enum Inputs {
    Conv2d(conv2d::ConvInputs),
    Gemm(gemm::GemmInputs),
    /// Generators take a seed, not a tensor.
    Rng {
        seed: u64,
    },
    Copy(crate::tensor::HostData),
    Cast(crate::tensor::HostData),
    Graph(graph::GraphInputs),
}

impl Problem {
    pub fn make_inputs(&self, seed: u64) -> Inputs {
        match self {
            Problem::Conv2d(p) => Inputs::Conv2d(p.make_inputs(seed)),
            Problem::Gemm(p) => Inputs::Gemm(p.make_inputs(seed)),
            Problem::Rng(_) => Inputs::Rng { seed },
            Problem::Copy(p) => Inputs::Copy(p.make_input(seed)),
            Problem::Cast(p) => Inputs::Cast(p.make_input(seed)),
            Problem::Graph(p) => Inputs::Graph(p.make_inputs(seed)),
        }
    }

    /// How the output is judged, with the sweep's tolerance scale applied.
    pub fn check(&self, tolerance_scale: f64) -> crate::verify::Check {
        match self {
            Problem::Conv2d(p) => p.check(tolerance_scale),
            Problem::Gemm(p) => p.check(tolerance_scale),
            Problem::Rng(p) => p.check(),
            Problem::Copy(p) => p.check(),
            Problem::Cast(p) => p.check(),
            Problem::Graph(p) => p.check(tolerance_scale),
        }
    }

    /// FLOPs the CPU reference spends (0 for ops checked without one).
    pub fn reference_flops(&self) -> f64 {
        match self {
            Problem::Rng(_) | Problem::Copy(_) | Problem::Cast(_) => 0.0,
            Problem::Graph(p) => p.flops() * p.replays as f64,
            other => other.flops(),
        }
    }

    /// The reference output on the CPU: f64 values, or the exact typed tensor for bit checks.
    /// `None` for ops judged statistically (rng) or when the inputs do not belong to this problem.
    pub fn reference(&self, inputs: &Inputs) -> Option<crate::verify::Reference> {
        use crate::verify::Reference;
        Some(match (self, inputs) {
            (Problem::Conv2d(p), Inputs::Conv2d(i)) => Reference::Values(p.reference(i)),
            (Problem::Gemm(p), Inputs::Gemm(i)) => Reference::Values(p.reference(i)),
            (Problem::Copy(_), Inputs::Copy(src)) => Reference::Data(src.clone()),
            (Problem::Cast(p), Inputs::Cast(src)) => Reference::Data(p.reference(src)),
            (Problem::Graph(p), Inputs::Graph(i)) => Reference::Values(p.reference(i)),
            _ => return None,
        })
    }
}

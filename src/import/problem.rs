//! What a log line or trace event yields: a problem rocsweep can run (with the calls and time
//! the source saw), a problem it cannot run yet (counted by reason), or a line of a known format
//! that is malformed (reported by file and line).

use crate::dtype::DType;
use crate::op::OpKind;
use crate::op::value::Value;

/// One problem as an op and its parameters (every parameter named, in the op's order).
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub op: OpKind,
    pub params: Vec<(&'static str, Value)>,
    /// Calls this sighting stands for (a log line: 1; a YAML line: its call_count).
    pub calls: f64,
    /// Device time the source traced for those calls, where it has times.
    pub traced_ms: Option<f64>,
    /// False for a sighting that prepares calls rather than making one (MIOpen's Find): it
    /// counts as one call only when nothing else saw the problem run.
    pub executes: bool,
}

impl Problem {
    /// The op's canonical text of the parameters: equal problems have equal keys.
    pub fn key(&self) -> String {
        let values: Vec<Value> = self.params.iter().map(|(_, v)| v.clone()).collect();
        crate::op::canonical_text(self.op, &values)
    }
}

/// What one line (or event) of a recognised format yields.
#[derive(Clone, Debug, PartialEq)]
pub enum Parsed {
    Problem(Problem),
    /// A call rocsweep has no op for yet (3-D convolution, batch norm, int8 ...): counted by
    /// this reason.
    Unsupported(String),
    /// A line of the format that cannot be read (truncated, a flag without its value ...).
    Malformed(String),
}

/// A recognised line: which format said so, and what it yields.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    pub format: &'static str,
    pub parsed: Parsed,
}

impl Found {
    pub fn new(format: &'static str, parsed: Parsed) -> Found {
        Found { format, parsed }
    }
}

/// A conv2d problem in rocsweep's parameters (square kernel, padding, stride and dilation).
#[derive(Clone, Debug, PartialEq)]
pub struct Conv {
    pub direction: &'static str,
    pub n: i64,
    pub c_in: i64,
    pub c_out: i64,
    pub h: i64,
    pub w: i64,
    pub kernel: i64,
    pub pad: i64,
    pub stride: i64,
    pub dilation: i64,
    pub groups: i64,
    pub nhwc: bool,
    pub dtype: DType,
}

impl Conv {
    pub fn problem(&self, calls: f64, traced_ms: Option<f64>, executes: bool) -> Problem {
        let i = Value::Int;
        let s = |t: &str| Value::Str(t.to_string());
        Problem {
            op: OpKind::Conv2d,
            params: vec![
                ("direction", s(self.direction)),
                ("n", i(self.n)),
                ("c_in", i(self.c_in)),
                ("c_out", i(self.c_out)),
                ("h", i(self.h)),
                ("w", i(self.w)),
                ("kernel", i(self.kernel)),
                ("pad", i(self.pad)),
                ("stride", i(self.stride)),
                ("dilation", i(self.dilation)),
                ("groups", i(self.groups)),
                ("layout", s(if self.nhwc { "nhwc" } else { "nchw" })),
                ("dtype", s(self.dtype.name())),
            ],
            calls,
            traced_ms,
            executes,
        }
    }
}

/// One value per spatial dimension, as sources give them (height, width): rocsweep's conv2d
/// takes one kernel size, padding, stride and dilation for both.
pub fn square(what: &str, hw: (i64, i64)) -> Result<i64, String> {
    if hw.0 == hw.1 {
        Ok(hw.0)
    } else {
        Err(format!(
            "non-square {what} {}x{} (rocsweep's conv2d takes one value for both)",
            hw.0, hw.1
        ))
    }
}

/// A GEMM as a column-major BLAS call makes it (rocBLAS, hipBLASLt, cuBLAS(Lt), TunableOp):
/// D (m x n) = op(A) op(B), op = transpose where `trans_*`.
#[derive(Clone, Debug, PartialEq)]
pub struct BlasGemm {
    pub m: i64,
    pub n: i64,
    pub k: i64,
    pub trans_a: bool,
    pub trans_b: bool,
    pub batch: i64,
    pub a: DType,
    pub b: DType,
    pub d: DType,
    pub compute: DType,
}

impl BlasGemm {
    /// rocsweep's gemm is row-major, run as the column-major C^T = op(B)^T op(A)^T: the logged
    /// call (m, n, k, transA, transB) is rocsweep's (m = n, n = m, trans_a = transB, trans_b =
    /// transA), so the backend makes exactly the logged call.
    pub fn problem(&self, calls: f64, traced_ms: Option<f64>) -> Result<Problem, String> {
        if self.a != self.b {
            return Err(format!(
                "mixed input types {} and {} (rocsweep's gemm takes one input type)",
                self.a.name(),
                self.b.name()
            ));
        }
        Ok(RowGemm {
            m: self.n,
            n: self.m,
            k: self.k,
            trans_a: self.trans_b,
            trans_b: self.trans_a,
            batch: self.batch,
            dtype: self.a,
            out: self.d,
            compute: self.compute,
        }
        .problem(calls, traced_ms))
    }
}

/// A GEMM in rocsweep's row-major terms (PyTorch's shapes).
#[derive(Clone, Debug, PartialEq)]
pub struct RowGemm {
    pub m: i64,
    pub n: i64,
    pub k: i64,
    pub trans_a: bool,
    pub trans_b: bool,
    pub batch: i64,
    pub dtype: DType,
    pub out: DType,
    pub compute: DType,
}

impl RowGemm {
    pub fn problem(&self, calls: f64, traced_ms: Option<f64>) -> Problem {
        let i = Value::Int;
        let s = |t: DType| Value::Str(t.name().to_string());
        Problem {
            op: OpKind::Gemm,
            params: vec![
                ("m", i(self.m)),
                ("n", i(self.n)),
                ("k", i(self.k)),
                ("trans_a", Value::Bool(self.trans_a)),
                ("trans_b", Value::Bool(self.trans_b)),
                ("batch", i(self.batch)),
                ("dtype", s(self.dtype)),
                ("out_dtype", s(self.out)),
                ("compute", s(self.compute)),
            ],
            calls,
            traced_ms,
            executes: true,
        }
    }
}

/// BLAS type names (`f16_r`, `R_16F`, `Half` ...) to rocsweep's types; others are unsupported.
pub fn blas_type(name: &str) -> Result<DType, String> {
    let t = name.trim().trim_matches('"');
    Ok(match t.to_ascii_lowercase().as_str() {
        "f32_r" | "s" | "r_32f" | "float" | "c_f32_r" | "compute_32f" | "f32" => DType::F32,
        "f16_r" | "h" | "r_16f" | "half" | "c_f16_r" | "compute_16f" | "f16" => DType::F16,
        "bf16_r" | "r_16bf" | "bfloat16" | "bf16" => DType::Bf16,
        "xf32_r" | "c_xf32_r" | "compute_32f_fast_tf32" | "tf32" => DType::Tf32,
        _ => return Err(format!("type {t}")),
    })
}

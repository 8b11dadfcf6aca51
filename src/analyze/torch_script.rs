//! A short stand-alone Python script that makes one case's call through PyTorch, with nothing
//! but torch imported: what the which-layer table (analyze/layers.rs) hands a reporter so that
//! PyTorch's maintainers can run the torch side without rocsweep. It runs on the GPU when torch
//! has one (ROCm or CUDA build), else on its CPU device, checks the output for zeros and NaN,
//! and exits 1 when it finds either.
//!
//! gemm is written out in full (torch.matmul, or F.linear for a `linear` solver); other ops get
//! a generic script that sets up the device and names the case, for the torch backend's author
//! to extend op by op.

use std::fmt::Write as _;

/// The script for one case (`op`, its parameters as the CSV writes them, the torch solver), or
/// None when `op` is empty.
pub fn torch_script(op: &str, params: &[(String, String)], solver: &str) -> Option<String> {
    if op.is_empty() {
        return None;
    }
    let mut s = header(op, params, solver);
    let body = match op {
        "gemm" => gemm(&Params(params), solver),
        _ => None,
    };
    s.push_str(&body.unwrap_or_else(|| generic(op, params)));
    Some(s)
}

/// A case's parameters, looked up by name.
struct Params<'a>(&'a [(String, String)]);

impl Params<'_> {
    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The lines every script starts with: what it reproduces, the import and the device.
fn header(op: &str, params: &[(String, String)], solver: &str) -> String {
    let text: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# rocsweep case through PyTorch: {op} {} (solver {solver})",
        one_line(&text.join(" "))
    );
    s.push_str("import sys\nimport torch\n\n");
    s.push_str("dev = torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")\n");
    s.push_str("print(\"torch\", torch.__version__, \"on\", dev)\n");
    s
}

/// A comment line cannot hold a line break.
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// torch's name for one of rocsweep's dtypes (`tf32` is f32 with TF32 allowed).
fn torch_dtype(d: &str) -> Option<&'static str> {
    Some(match d {
        "f32" | "tf32" => "torch.float32",
        "f16" => "torch.float16",
        "bf16" => "torch.bfloat16",
        "f64" => "torch.float64",
        _ => return None,
    })
}

fn int(v: Option<&str>, default: u64) -> Option<u64> {
    match v {
        None => Some(default),
        Some(t) => t.parse().ok(),
    }
}

/// C = A x B with A (m x k) and B (k x n), each transposed in memory when the case says so, in
/// `batch` batches; `F.linear` (B given as n x k) for a solver whose name says `linear`.
fn gemm(p: &Params, solver: &str) -> Option<String> {
    let get = |name: &str| p.get(name);
    let (m, n, k) = (int(get("m"), 1)?, int(get("n"), 1)?, int(get("k"), 1)?);
    let batch = int(get("batch"), 1)?;
    let dtype = get("dtype").unwrap_or("f32");
    let dt = torch_dtype(dtype)?;
    let compute = get("compute").unwrap_or(dtype);
    let (ta, tb) = (
        get("trans_a") == Some("true"),
        get("trans_b") == Some("true"),
    );
    let lead = if batch > 1 {
        format!("{batch}, ")
    } else {
        String::new()
    };
    let mut s = String::new();
    let tf32 = if compute == "tf32" { "True" } else { "False" };
    let _ = writeln!(s, "torch.backends.cuda.matmul.allow_tf32 = {tf32}");
    let _ = writeln!(s, "torch.manual_seed(0)");
    let make = |rows: u64, cols: u64, trans: bool| {
        if trans {
            format!("torch.randn({lead}{cols}, {rows}, dtype={dt}, device=dev).transpose(-1, -2)")
        } else {
            format!("torch.randn({lead}{rows}, {cols}, dtype={dt}, device=dev)")
        }
    };
    let _ = writeln!(s, "a = {}", make(m, k, ta));
    if solver.contains("linear") {
        // F.linear takes the weight as (n, k), contiguous: the `nt` layout of PyTorch's Linear.
        let _ = writeln!(s, "w = {}", make(n, k, false));
        s.push_str("c = torch.nn.functional.linear(a, w)\n");
        s.push_str("ref = torch.matmul(a.cpu().double(), w.cpu().double().transpose(-1, -2))\n");
    } else {
        let _ = writeln!(s, "b = {}", make(k, n, tb));
        s.push_str("c = torch.matmul(a, b)\n");
        s.push_str("ref = torch.matmul(a.cpu().double(), b.cpu().double())\n");
    }
    s.push_str(CHECK);
    Some(s)
}

/// The output checks every written-out op ends with: `c` against `ref`.
const CHECK: &str = r#"if dev.type == "cuda":
    torch.cuda.synchronize()
out = c.cpu().double()
bad = []
if out.numel() > 0 and bool((out == 0).all()) and bool((ref != 0).any()):
    bad.append("every element is zero")
if not bool(torch.isfinite(out).all()):
    bad.append("%d elements are NaN or Inf" % int((~torch.isfinite(out)).sum()))
err = float((out - ref).abs().max()) if out.numel() > 0 else 0.0
print("max abs error against float64 on the CPU:", err)
if bad:
    print("FAIL:", "; ".join(bad))
    sys.exit(1)
print("no zeros or NaN in the output")
"#;

/// Ops not written out yet: the case's parameters as a dict and where the call goes.
fn generic(op: &str, params: &[(String, String)]) -> String {
    let mut s = String::new();
    s.push_str("params = {\n");
    for (k, v) in params {
        let _ = writeln!(s, "    {}: {},", py_str(k), py_str(v));
    }
    s.push_str("}\n");
    let _ = writeln!(
        s,
        "# This rocsweep version does not write out the torch call for `{}`: the torch backend\n\
         # runs it with these parameters (rocsweep repro RUN_DIR UNIT_ID runs it again).",
        one_line(op)
    );
    let _ = writeln!(s, "print({}, params)", py_str(op));
    s
}

/// A Python string literal.
fn py_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn gemm_makes_inputs_of_the_cases_shape_and_dtype_and_checks_zeros_and_nan() {
        let params = p(&[
            ("m", "64"),
            ("n", "32"),
            ("k", "16"),
            ("trans_a", "false"),
            ("trans_b", "true"),
            ("batch", "1"),
            ("dtype", "bf16"),
            ("compute", "f32"),
        ]);
        let s = torch_script("gemm", &params, "torch-matmul").unwrap_or_default();
        assert!(s.contains("torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")"));
        assert!(s.contains("a = torch.randn(64, 16, dtype=torch.bfloat16, device=dev)"));
        // B is k x n, stored transposed: made n x k and transposed back.
        assert!(s.contains(
            "b = torch.randn(32, 16, dtype=torch.bfloat16, device=dev).transpose(-1, -2)"
        ));
        assert!(s.contains("c = torch.matmul(a, b)"));
        assert!(s.contains("every element is zero") && s.contains("NaN or Inf"));
        assert!(s.contains("sys.exit(1)"));
        assert!(s.contains("allow_tf32 = False"));
    }

    #[test]
    fn batched_tf32_and_linear_gemms_say_so() {
        let params = p(&[
            ("m", "8"),
            ("n", "4"),
            ("k", "2"),
            ("batch", "3"),
            ("dtype", "f32"),
            ("compute", "tf32"),
        ]);
        let s = torch_script("gemm", &params, "torch-linear").unwrap_or_default();
        assert!(s.contains("allow_tf32 = True"));
        assert!(s.contains("a = torch.randn(3, 8, 2, dtype=torch.float32, device=dev)"));
        assert!(s.contains("w = torch.randn(3, 4, 2, dtype=torch.float32, device=dev)"));
        assert!(s.contains("torch.nn.functional.linear(a, w)"));
    }

    #[test]
    fn other_ops_get_the_generic_script_and_an_empty_op_none() {
        let s = torch_script("rng", &p(&[("dist", "nor\"mal")]), "default").unwrap_or_default();
        assert!(s.starts_with("# rocsweep case through PyTorch: rng"));
        assert!(s.contains("\"dist\": \"nor\\\"mal\","));
        assert!(s.contains("import torch"));
        // A gemm with a dtype torch has no name for falls back too.
        let odd = torch_script("gemm", &p(&[("dtype", "i8")]), "x").unwrap_or_default();
        assert!(odd.contains("params = {"));
        assert_eq!(torch_script("", &[], "x"), None);
    }
}

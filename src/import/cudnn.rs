//! cuDNN's API log (cuDNN 9: `CUDNN_LOGLEVEL_DBG=3`, `CUDNN_LOGDEST_DBG=FILE`): each operation
//! graph is printed as one JSON line when it is finalised,
//! `i!     apiLog: type=json; val={"cudnnVersion":...,"operationGraph":{"tensors":[...],"nodes":[...]}};`.
//! Its convolution nodes become problems. A graph is printed when it is built, and frameworks
//! build one per shape and reuse it, so a count here is graphs built, not calls. The lines that
//! repeat the graph with an engine (`"engine":{...}`) are the engine configurations tried and
//! are skipped; the legacy API's multi-line call blocks are counted as not supported.

use super::problem::{Conv, Found, Parsed, square};
use crate::dtype::DType;
use serde_json::Value as J;

pub const FORMAT: &str = "cuDNN API log";

pub fn line(text: &str) -> Option<Found> {
    if text.contains("function cudnnConvolution") && text.contains("() called") {
        return Some(Found::new(
            FORMAT,
            Parsed::Unsupported("cuDNN legacy API call (the backend API's graphs are read)".into()),
        ));
    }
    let at = text.find("apiLog: type=json; val=")?;
    let json = text[at + "apiLog: type=json; val=".len()..]
        .trim_end()
        .trim_end_matches(';');
    if !json.contains("\"operationGraph\"") {
        return None;
    }
    let v: J = match serde_json::from_str(json) {
        Ok(v) => v,
        Err(e) => {
            return Some(Found::new(
                FORMAT,
                Parsed::Malformed(format!("the graph's JSON: {e} (truncated line?)")),
            ));
        }
    };
    if v.get("engine").is_some() {
        return None; // an engine configuration of a graph already read
    }
    Some(Found::new(FORMAT, graph(&v)))
}

/// The graph's first convolution node (a fused graph's other nodes are its epilogue).
fn graph(v: &J) -> Parsed {
    let g = &v["operationGraph"];
    let empty = Vec::new();
    let nodes = g["nodes"].as_array().unwrap_or(&empty);
    let Some(node) = nodes.iter().find(|n| {
        n["operation"]
            .as_str()
            .is_some_and(|o| o.contains("OPERATION_CONVOLUTION"))
    }) else {
        let op = nodes
            .first()
            .and_then(|n| n["operation"].as_str())
            .unwrap_or("an empty graph");
        let op = op
            .trim_start_matches("CUDNN_BACKEND_OPERATION_")
            .trim_end_matches("_DESCRIPTOR");
        return Parsed::Unsupported(format!("cuDNN {op} graph"));
    };
    match conv(g, node) {
        Ok(Ok(c)) => Parsed::Problem(c.problem(1.0, None, true)),
        Ok(Err(why)) => Parsed::Unsupported(why),
        Err(why) => Parsed::Malformed(why),
    }
}

/// A convolution node as a problem: `Ok(Err(why))` where rocsweep cannot run it, `Err(why)`
/// where the node cannot be read.
fn conv(g: &J, node: &J) -> Result<Result<Conv, String>, String> {
    let (direction, x, w, y) = roles(node["operation"].as_str().unwrap_or(""));
    let (xt, wt, _) = (
        tensor(g, node, x)?,
        tensor(g, node, w)?,
        tensor(g, node, y)?,
    );
    let (xd, wd, xs) = (ints(xt, "dim")?, ints(wt, "dim")?, ints(xt, "stride")?);
    if xd.len() != 4 || wd.len() != 4 || xs.len() != 4 {
        return Ok(Err(format!(
            "cuDNN {}-D convolution",
            xd.len().saturating_sub(2)
        )));
    }
    if node["mode"].as_str() == Some("CUDNN_CONVOLUTION") {
        return Ok(Err(
            "cuDNN convolution mode CUDNN_CONVOLUTION (flipped filter)".into(),
        ));
    }
    let dtype = match data_type(xt) {
        Ok(d) => d,
        Err(why) => return Ok(Err(why)),
    };
    let groups = node["groupCount"]
        .as_i64()
        .unwrap_or(if wd[1] > 0 { xd[1] / wd[1] } else { 1 });
    let c = Conv {
        direction,
        n: xd[0],
        c_in: xd[1],
        c_out: wd[0],
        h: xd[2],
        w: xd[3],
        kernel: 0,
        pad: 0,
        stride: 0,
        dilation: 0,
        groups,
        nhwc: xs[1] == 1 && xd[1] > 1,
        dtype,
    };
    let (kernel, pad, stride, dilation) = (
        (wd[2], wd[3]),
        pair(node, "pad")?,
        pair(node, "stride")?,
        pair(node, "dilation")?,
    );
    Ok((|| {
        Ok(Conv {
            kernel: square("kernel", kernel)?,
            pad: square("padding", pad)?,
            stride: square("stride", stride)?,
            dilation: square("dilation", dilation)?,
            ..c
        })
    })())
}

/// A convolution operation's direction and the node's keys of its (x, w, y) tensors.
fn roles(op: &str) -> (&'static str, &'static str, &'static str, &'static str) {
    if op.contains("FORWARD") {
        ("fwd", "X", "W", "Y")
    } else if op.contains("BACKWARD_DATA") {
        ("bwd_data", "dX", "W", "dY")
    } else {
        ("bwd_weights", "X", "dW", "dY")
    }
}

/// The graph's tensor that the node names under `key`.
fn tensor<'g>(g: &'g J, node: &J, key: &str) -> Result<&'g J, String> {
    let name = node[key]
        .as_str()
        .ok_or_else(|| format!("the node has no {key}"))?;
    g["tensors"]
        .as_array()
        .and_then(|ts| ts.iter().find(|t| t["name"].as_str() == Some(name)))
        .ok_or_else(|| format!("tensor {name} ({key}) is not in the graph"))
}

/// A list of integers under `key` (a tensor's `dim`, a node's `pad`).
fn ints(t: &J, key: &str) -> Result<Vec<i64>, String> {
    t[key]
        .as_array()
        .and_then(|a| a.iter().map(J::as_i64).collect::<Option<Vec<_>>>())
        .ok_or_else(|| format!("no integer list `{key}`"))
}

/// A node's two spatial values under `key` (height, width).
fn pair(node: &J, key: &str) -> Result<(i64, i64), String> {
    match ints(node, key)?.as_slice() {
        [a, b] => Ok((*a, *b)),
        other => Err(format!("`{key}` has {} values, not 2", other.len())),
    }
}

/// A tensor's element type; `Err` names a type rocsweep does not run.
fn data_type(t: &J) -> Result<DType, String> {
    match t["dataType"].as_str().unwrap_or("") {
        "CUDNN_DATA_FLOAT" => Ok(DType::F32),
        "CUDNN_DATA_HALF" => Ok(DType::F16),
        "CUDNN_DATA_BFLOAT16" => Ok(DType::Bf16),
        other => Err(format!("cuDNN convolution on {other}")),
    }
}

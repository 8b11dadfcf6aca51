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

fn conv(g: &J, node: &J) -> Result<Result<Conv, String>, String> {
    let op = node["operation"].as_str().unwrap_or("");
    let (direction, x, w, y) = if op.contains("FORWARD") {
        ("fwd", "X", "W", "Y")
    } else if op.contains("BACKWARD_DATA") {
        ("bwd_data", "dX", "W", "dY")
    } else {
        ("bwd_weights", "X", "dW", "dY")
    };
    let tensor = |key: &str| -> Result<&J, String> {
        let name = node[key]
            .as_str()
            .ok_or_else(|| format!("the node has no {key}"))?;
        g["tensors"]
            .as_array()
            .and_then(|ts| ts.iter().find(|t| t["name"].as_str() == Some(name)))
            .ok_or_else(|| format!("tensor {name} ({key}) is not in the graph"))
    };
    let ints = |t: &J, key: &str| -> Result<Vec<i64>, String> {
        t[key]
            .as_array()
            .and_then(|a| a.iter().map(J::as_i64).collect::<Option<Vec<_>>>())
            .ok_or_else(|| format!("no integer list `{key}`"))
    };
    let (xt, wt, _) = (tensor(x)?, tensor(w)?, tensor(y)?);
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
    let dtype = match xt["dataType"].as_str().unwrap_or("") {
        "CUDNN_DATA_FLOAT" => DType::F32,
        "CUDNN_DATA_HALF" => DType::F16,
        "CUDNN_DATA_BFLOAT16" => DType::Bf16,
        other => return Ok(Err(format!("cuDNN convolution on {other}"))),
    };
    let pair = |key: &str| -> Result<(i64, i64), String> {
        match ints(node, key)?.as_slice() {
            [a, b] => Ok((*a, *b)),
            other => Err(format!("`{key}` has {} values, not 2", other.len())),
        }
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
        pair("pad")?,
        pair("stride")?,
        pair("dilation")?,
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

//! PyTorch profiler traces (Chrome trace JSON from `export_chrome_trace`, recorded with
//! `record_shapes=True`): `aten::convolution`, `aten::convolution_backward`, `aten::mm`,
//! `aten::addmm`, `aten::bmm`, `aten::baddbmm` and `aten::linear` events with their "Input Dims",
//! "Input Strides", "Input type" and "Concrete Inputs". Where these ops nest (autocast's second
//! dispatch, linear calling addmm), the innermost is the call. Its traced time is the device time
//! of the kernels its launches started (linked by `correlation`).

use super::problem::{Conv, Found, Parsed, Problem, RowGemm, square};
use crate::dtype::DType;
use serde_json::Value as J;
use std::collections::HashMap;

pub const FORMAT: &str = "PyTorch profiler trace";

const OPS: &[&str] = &[
    "aten::convolution",
    "aten::convolution_backward",
    "aten::mm",
    "aten::addmm",
    "aten::bmm",
    "aten::baddbmm",
    "aten::linear",
];

/// One recognised event: its index in traceEvents, a one-line description, what it yields.
pub struct Event {
    pub index: usize,
    /// When the op started (µs): the trace's threads write their events apart (a backward
    /// pass runs on autograd's thread), so call order is start order, not file order.
    pub ts: f64,
    pub text: String,
    pub found: Found,
}

/// Launches per thread (pid, tid): (start time, correlation id), by start time.
type Launches = HashMap<(String, String), Vec<(f64, i64)>>;

/// Whether a file's text is a Chrome trace (a JSON object with `traceEvents`).
pub fn is_trace(text: &str) -> bool {
    text.trim_start().starts_with('{') && text.contains("\"traceEvents\"")
}

/// The recognised op events of a trace, in the order they started (the calls' order), each
/// with the device time of the kernels its launches started.
pub fn events(text: &str) -> Result<Vec<Event>, String> {
    let v: J = serde_json::from_str(text).map_err(|e| format!("not valid trace JSON: {e}"))?;
    let all = v["traceEvents"]
        .as_array()
        .ok_or("`traceEvents` is not an array")?;
    let kernel_us = kernel_times(all);
    let launches = launches_by_thread(all);
    let ops = op_events(all);
    let mut out = Vec::new();
    for (i, (index, e)) in ops.iter().enumerate() {
        let (ts, dur) = (
            e["ts"].as_f64().unwrap_or(0.0),
            e["dur"].as_f64().unwrap_or(0.0),
        );
        let encloses_next = ops.get(i + 1).is_some_and(|(_, n)| {
            thread(n) == thread(e) && n["ts"].as_f64().unwrap_or(0.0) < ts + dur
        });
        if encloses_next {
            continue;
        }
        let kernels = kernels_within(&launches, &kernel_us, e, ts, dur);
        let name = e["name"].as_str().unwrap_or("");
        let args = &e["args"];
        let text = format!(
            "{name} Input Dims {} Concrete Inputs {}",
            args["Input Dims"], args["Concrete Inputs"]
        );
        for parsed in read(name, args, &kernels) {
            out.push(Event {
                index: *index,
                ts,
                text: text.clone(),
                found: Found::new(FORMAT, parsed),
            });
        }
    }
    out.sort_by(|a, b| a.ts.total_cmp(&b.ts).then(a.index.cmp(&b.index)));
    Ok(out)
}

/// Device activity (kernels, memcpys, memsets) by correlation id: its duration in µs and name.
fn kernel_times(all: &[J]) -> HashMap<i64, (f64, String)> {
    all.iter()
        .filter(|e| {
            e["cat"]
                .as_str()
                .is_some_and(|c| c == "kernel" || c == "gpu_memcpy" || c == "gpu_memset")
        })
        .filter_map(|e| {
            Some((
                e["args"]["correlation"].as_i64()?,
                (
                    e["dur"].as_f64()?,
                    e["name"].as_str().unwrap_or("").to_string(),
                ),
            ))
        })
        .collect()
}

/// Launches per thread, by start time: the runtime's and driver's calls as (start, correlation).
fn launches_by_thread(all: &[J]) -> Launches {
    let mut launches: Launches = HashMap::new();
    for e in all.iter().filter(|e| {
        e["cat"]
            .as_str()
            .is_some_and(|c| c == "cuda_runtime" || c == "cuda_driver")
    }) {
        if let (Some(ts), Some(c)) = (e["ts"].as_f64(), e["args"]["correlation"].as_i64()) {
            launches.entry(thread(e)).or_default().push((ts, c));
        }
    }
    for l in launches.values_mut() {
        l.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    launches
}

/// The complete events of the ops read (with their index in traceEvents), by thread and start
/// time, an enclosing op before the ops it encloses (longer first where they start together).
fn op_events(all: &[J]) -> Vec<(usize, &J)> {
    let mut ops: Vec<(usize, &J)> = all
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            e["ph"].as_str() == Some("X") && e["name"].as_str().is_some_and(|n| OPS.contains(&n))
        })
        .collect();
    ops.sort_by(|a, b| {
        let key = |e: &J| {
            (
                thread(e),
                e["ts"].as_f64().unwrap_or(0.0),
                -e["dur"].as_f64().unwrap_or(0.0),
            )
        };
        let (ka, kb) = (key(a.1), key(b.1));
        ka.0.cmp(&kb.0)
            .then(ka.1.total_cmp(&kb.1))
            .then(ka.2.total_cmp(&kb.2))
    });
    ops
}

/// The device activity of the launches that the op event `e` (from `ts`, lasting `dur`) made
/// on its own thread.
fn kernels_within<'a>(
    launches: &Launches,
    kernel_us: &'a HashMap<i64, (f64, String)>,
    e: &J,
    ts: f64,
    dur: f64,
) -> Vec<&'a (f64, String)> {
    launches
        .get(&thread(e))
        .map(|l| {
            let from = l.partition_point(|(t, _)| *t < ts);
            l[from..]
                .iter()
                .take_while(|(t, _)| *t <= ts + dur)
                .filter_map(|(_, c)| kernel_us.get(c))
                .collect()
        })
        .unwrap_or_default()
}

fn thread(e: &J) -> (String, String) {
    (e["pid"].to_string(), e["tid"].to_string())
}

/// The problems of one op event (a convolution's backward is up to two: data and weights).
fn read(name: &str, args: &J, kernels: &[&(f64, String)]) -> Vec<Parsed> {
    let all = Some(kernels.iter().map(|(d, _)| d).sum::<f64>() / 1000.0);
    let result = match name {
        "aten::convolution" => conv(args, "fwd", 0, 1, 3, all).map(|p| vec![p]),
        "aten::convolution_backward" => backward(args, kernels),
        _ => gemm(name, args, all).map(|p| vec![p]),
    };
    match result {
        Ok(v) => v,
        Err(Err(why)) => vec![Parsed::Malformed(why)],
        Err(Ok(why)) => vec![Parsed::Unsupported(why)],
    }
}

/// An error: `Ok(reason)` rocsweep cannot run it, `Err(reason)` the event cannot be read.
type Why = Result<String, String>;

fn dims(args: &J, i: usize) -> Result<Vec<i64>, Why> {
    args["Input Dims"][i]
        .as_array()
        .and_then(|a| a.iter().map(J::as_i64).collect())
        .ok_or_else(|| Err(format!("no Input Dims[{i}]")))
}

fn strides(args: &J, i: usize) -> Option<Vec<i64>> {
    args["Input Strides"][i]
        .as_array()
        .and_then(|a| a.iter().map(J::as_i64).collect())
}

fn dtype(args: &J, i: usize) -> Result<DType, Why> {
    match args["Input type"][i].as_str().unwrap_or("") {
        "float" => Ok(DType::F32),
        "c10::Half" => Ok(DType::F16),
        "c10::BFloat16" => Ok(DType::Bf16),
        other => Err(Ok(format!("PyTorch op on {other}"))),
    }
}

/// A Concrete Inputs entry: `"[2, 2]"`, `"1"`, `"False"`.
fn concrete(args: &J, i: usize) -> Result<Vec<i64>, Why> {
    let s = args["Concrete Inputs"][i]
        .as_str()
        .ok_or_else(|| Err(format!("no Concrete Inputs[{i}]")))?;
    s.trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .map(|x| match x.trim() {
            "True" => Ok(1),
            "False" => Ok(0),
            n => n
                .parse()
                .map_err(|_| Err(format!("Concrete Inputs[{i}] `{s}` is not integers"))),
        })
        .collect()
}

/// One value for both spatial dimensions (`[1, 1]`, or `[1]` broadcast).
fn spatial(args: &J, i: usize, what: &str) -> Result<i64, Why> {
    match concrete(args, i)?.as_slice() {
        [a] => Ok(*a),
        [a, b] => square(what, (*a, *b)).map_err(Ok),
        other => Err(Ok(format!("{}-D convolution", other.len()))),
    }
}

/// A convolution from the inputs at `x` (activation) and `w` (weight), stride etc. from `at`.
fn conv(
    args: &J,
    direction: &'static str,
    x: usize,
    w: usize,
    at: usize,
    ms: Option<f64>,
) -> Result<Parsed, Why> {
    let (xd, wd) = (dims(args, x)?, dims(args, w)?);
    if xd.len() != 4 || wd.len() != 4 {
        return Err(Ok(format!(
            "PyTorch {}-D convolution",
            xd.len().saturating_sub(2)
        )));
    }
    if concrete(args, at + 3)?.first() == Some(&1) {
        return Err(Ok("PyTorch transposed convolution".into()));
    }
    let nhwc = strides(args, x).is_some_and(|s| s.len() == 4 && s[1] == 1 && xd[1] > 1);
    let c = Conv {
        direction,
        n: xd[0],
        c_in: xd[1],
        c_out: wd[0],
        h: xd[2],
        w: xd[3],
        kernel: square("kernel", (wd[2], wd[3])).map_err(Ok)?,
        pad: spatial(args, at + 1, "padding")?,
        stride: spatial(args, at, "stride")?,
        dilation: spatial(args, at + 2, "dilation")?,
        groups: *concrete(args, at + 5)?.first().unwrap_or(&1),
        nhwc,
        dtype: dtype(args, x)?,
    };
    Ok(Parsed::Problem(c.problem(1.0, ms, true)))
}

/// `convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
/// transposed, output_padding, groups, output_mask)`: bwd_data when the mask asks for the
/// input's gradient, bwd_weights for the weight's. The kernels' time goes by their names
/// (`dgrad`, `wgrad`) where they say, the rest split evenly.
fn backward(args: &J, kernels: &[&(f64, String)]) -> Result<Vec<Parsed>, Why> {
    let mask = concrete(args, 10)?;
    let wanted: Vec<&'static str> = [(0, "bwd_data"), (1, "bwd_weights")]
        .iter()
        .filter(|(i, _)| mask.get(*i) == Some(&1))
        .map(|(_, d)| *d)
        .collect();
    let us = |f: &dyn Fn(&str) -> bool| {
        kernels
            .iter()
            .filter(|(_, n)| f(n))
            .map(|(d, _)| d)
            .sum::<f64>()
    };
    let (dgrad, wgrad) = (us(&|n| n.contains("dgrad")), us(&|n| n.contains("wgrad")));
    let rest = us(&|n| !n.contains("dgrad") && !n.contains("wgrad")) / wanted.len().max(1) as f64;
    wanted
        .iter()
        .map(|d| {
            let own = if *d == "bwd_data" { dgrad } else { wgrad };
            conv(args, d, 1, 2, 4, Some((own + rest) / 1000.0))
        })
        .collect()
}

/// Whether a row-major operand with these dims and strides is stored transposed (`None`: it is
/// neither dense nor a transposed view).
fn transposed(d: &[i64], s: Option<Vec<i64>>) -> Option<bool> {
    let Some(s) = s else { return Some(false) };
    let (r, c) = (d.len().checked_sub(2)?, d.len() - 1);
    if s.get(c) == Some(&1) || d[c] == 1 {
        Some(false)
    } else if s.get(r) == Some(&1) || d[r] == 1 {
        Some(true)
    } else {
        None
    }
}

fn gemm(name: &str, args: &J, ms: Option<f64>) -> Result<Parsed, Why> {
    // (A, B) inputs; linear's weight is (n, k), stored as B transposed.
    let (a, b) = match name {
        "aten::mm" | "aten::bmm" | "aten::linear" => (0, 1),
        _ => (1, 2),
    };
    let (ad, bd) = (dims(args, a)?, dims(args, b)?);
    let lead = |d: &[i64], keep: usize| d[..d.len().saturating_sub(keep)].iter().product::<i64>();
    let (m, k, batch, n, trans_b) = if name == "aten::linear" {
        let n = *bd
            .first()
            .ok_or_else(|| Err("linear without a weight".to_string()))?;
        let k = *ad
            .last()
            .ok_or_else(|| Err("linear without an input".to_string()))?;
        (
            lead(&ad, 1),
            k,
            1,
            n,
            !transposed(&bd, strides(args, b)).unwrap_or(false),
        )
    } else {
        if ad.len() < 2 || bd.len() != ad.len() {
            return Err(Err(format!("{name} with dims {ad:?} and {bd:?}")));
        }
        let r = ad.len() - 2;
        let tb = transposed(&bd, strides(args, b))
            .ok_or_else(|| Ok(format!("{name} on a strided view")))?;
        (ad[r], ad[r + 1], lead(&ad, 2), bd[r + 1], tb)
    };
    let trans_a =
        transposed(&ad, strides(args, a)).ok_or_else(|| Ok(format!("{name} on a strided view")))?;
    let dt = dtype(args, a)?;
    let p: Problem = RowGemm {
        m,
        n,
        k,
        trans_a,
        trans_b,
        batch,
        dtype: dt,
        out: dt,
        compute: DType::F32,
    }
    .problem(1.0, ms);
    Ok(Parsed::Problem(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `aten::mm` of (m x 8) by (8 x 4) on a thread, started at `ts`.
    fn mm(m: i64, tid: u32, ts: f64) -> String {
        format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": {tid}, "ts": {ts}, "dur": 5,
               "args": {{"Input Dims": [[{m}, 8], [8, 4]], "Input type": ["float", "float"]}}}}"#
        )
    }

    #[test]
    fn calls_come_in_the_order_they_started_not_the_order_of_the_file() {
        // Autograd's thread (tid 2) is written first, but its call started last.
        let text = format!(
            r#"{{"traceEvents": [{}, {}, {}]}}"#,
            mm(30, 2, 300.0),
            mm(10, 1, 100.0),
            mm(20, 1, 200.0)
        );
        let ms: Vec<String> = events(&text)
            .unwrap()
            .iter()
            .map(|e| match &e.found.parsed {
                Parsed::Problem(p) => p.params[0].1.to_string(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(ms, ["10", "20", "30"]);
    }
}

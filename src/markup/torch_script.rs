//! A short stand-alone Python script that reproduces one case's torch call with nothing but
//! torch: what a maintainer asks for ("does it reproduce without rocsweep?"). It makes inputs of
//! the case's shapes and types, makes the call the torch backend makes for the solver, and
//! compares the result with the same computation on the CPU in float64 (or checks the draw's
//! moments), printing what it found. The inputs are torch's own random numbers, not rocsweep's:
//! a failure that depends on the exact values may need `rocsweep repro` instead.

use crate::results::rundata::Params;

/// The script for a torch unit: its op, its parameters (name, value) and its solver. None for an
/// op this generator does not know, or when a value is not a plain number or word: values come
/// from a run directory and are pasted into Python source, so nothing else may reach it (a
/// results.csv changed by hand must not run code, issue 40 S2).
pub fn torch_script(op: &str, params: &Params, solver: &str) -> Option<String> {
    Some(format!("{PRELUDE}{}", body(op, params, solver)?))
}

/// A sequence's calls in one script (issue 43: `minimal.py` beside `minimal.toml`): each step's
/// call in order in one Python process, only the last one judged (the steps before it run and
/// are not checked, as in the sequence). Steps are (op, parameters, solver, label). None when a
/// step's op or values do not make a script (as for `torch_script`).
pub fn torch_sequence_script(steps: &[(String, Params, String, String)]) -> Option<String> {
    let (last, before) = steps.split_last()?;
    let mut s = format!(
        "{PRELUDE}_check = check


def check(got, want, exact=False, tol=None):
             pass  # the steps before the failing one run, unjudged


"
    );
    for (op, params, solver, label) in before {
        s.push_str(&format!(
            "# {}
{}
",
            comment(label),
            body(op, params, solver)?
        ));
    }
    let (op, params, solver, label) = last;
    s.push_str(&format!(
        "check = _check
# {} (the failing step)
{}",
        comment(label),
        body(op, params, solver)?
    ));
    Some(s)
}

/// A label as one comment line's text (no line breaks reach the script).
fn comment(label: &str) -> String {
    label
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The script's body after the prelude for one call.
fn body(op: &str, params: &Params, solver: &str) -> Option<String> {
    if !params.iter().all(|(k, v)| plain(k) && plain(v)) || !plain(solver) {
        return None;
    }
    let get = |k: &str| -> String { params.get(k).unwrap_or_default().to_string() };
    let py_bool = |k: &str| if get(k) == "true" { "True" } else { "False" };
    let dt = |k: &str| format!("torch.{}", torch_dtype(&get(k)));
    let body = match op {
        "gemm" => {
            let (base, blas) = solver.split_once('+').unwrap_or((solver, ""));
            format!(
                "m, n, k, batch = {m}, {n}, {k}, {batch}\ntrans_a, trans_b = {ta}, {tb}\n\
                 torch.backends.cuda.matmul.allow_tf32 = {tf32}\n{blas}\
                 a = torch.rand(batch, *((k, m) if trans_a else (m, k)), device=dev).mul(2).sub(1).to({dtype})\n\
                 b = torch.rand(batch, *((n, k) if trans_b else (k, n)), device=dev).mul(2).sub(1).to({dtype})\n\
                 A = a.transpose(1, 2) if trans_a else a\nB = b.transpose(1, 2) if trans_b else b\n\
                 if batch == 1:\n    A, B = A[0], B[0]\n{call}\
                 want = A.double().cpu() @ B.double().cpu()\ncheck(got, want)\n",
                m = get("m"),
                n = get("n"),
                k = get("k"),
                batch = get("batch"),
                ta = py_bool("trans_a"),
                tb = py_bool("trans_b"),
                tf32 = if get("compute") == "tf32" {
                    "True"
                } else {
                    "False"
                },
                blas = if blas.is_empty() {
                    String::new()
                } else {
                    format!("torch.backends.cuda.preferred_blas_library(\"{blas}\")\n")
                },
                dtype = dt("dtype"),
                call = if base == "torch-linear" {
                    "got = torch.nn.functional.linear(A, B.t())  # F.linear: x @ W^T, W stored [n, k]\n"
                } else {
                    "got = torch.matmul(A, B)\n"
                },
            )
        }
        "conv2d" => conv(&get, solver),
        "rng" => rng(&get, solver),
        "copy" => copy(&get, solver),
        "cast" => format!(
            "x = (torch.rand({count}) * 200 - 100).to({from_})\n{call}\
             want = x.to({to})  # the CPU's own conversion\ncheck(got, want, exact=True)\n",
            count = get("count"),
            from_ = dt("from"),
            to = dt("to"),
            call = match solver {
                "torch-method" => format!(
                    "got = x.to(dev).{}()\n",
                    match get("to").as_str() {
                        "f16" => "half",
                        "bf16" => "bfloat16",
                        _ => "float",
                    }
                ),
                "torch-cpu" => format!("got = x.to({})\n", dt("to")),
                _ => format!("got = x.to(dev).to({})\n", dt("to")),
            },
        ),
        "graph" => graph(&get, solver),
        _ => return None,
    };
    Some(body)
}

/// A number or a word that Python reads as a literal or a name, never as a call or a statement:
/// ASCII letters, digits and `_ . + -` (a solver such as `torch-mm+cublaslt`), nothing else.
fn plain(v: &str) -> bool {
    !v.is_empty()
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.+-".contains(&b))
}

fn torch_dtype(s: &str) -> &'static str {
    match s {
        "f16" => "float16",
        "bf16" => "bfloat16",
        _ => "float32",
    }
}

const PRELUDE: &str = "\
import sys
import torch

dev = torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")
print(\"torch\", torch.__version__, \"on\", torch.cuda.get_device_name() if dev.type == \"cuda\" else \"cpu\")


def check(got, want, exact=False, tol=None):
    got = got.detach().double().cpu().reshape(-1)
    want = want.detach().double().cpu().reshape(-1)
    bad = []
    if got.numel() and bool((got == 0).all()) and not bool((want == 0).all()):
        bad.append(\"all zeros\")
    if not bool(torch.isfinite(got).all()) and bool(torch.isfinite(want).all()):
        bad.append(\"NaN or Inf\")
    if exact:
        same = (got == want) | (torch.isnan(got) & torch.isnan(want))
        if not bool(same.all()):
            bad.append(\"%d of %d elements differ\" % (int((~same).sum()), got.numel()))
    else:
        err = (got - want).abs().max().item() if got.numel() else 0.0
        scale = want.abs().max().item() or 1.0
        if err > (tol or 2e-2) * scale:
            bad.append(\"max |error| %.3g (scale %.3g)\" % (err, scale))
    print(\"FAIL: \" + \"; \".join(bad) if bad else \"ok\")
    sys.exit(1 if bad else 0)


";

fn conv(get: &dyn Fn(&str) -> String, solver: &str) -> String {
    let nhwc = get("layout") == "nhwc";
    let call = match get("direction").as_str() {
        "bwd_data" => {
            "dy = torch.rand(n, c_out, oh, ow, device=dev).mul(2).sub(1).to(dt)\n\
             if channels_last:\n    dy = dy.to(memory_format=torch.channels_last)\n\
             got = torch.nn.grad.conv2d_input((n, c_in, h, w), wt, dy, **kw)\n\
             want = torch.nn.grad.conv2d_input((n, c_in, h, w), wt.double().cpu(), dy.double().cpu(), **kw)\n"
        }
        "bwd_weights" => {
            "dy = torch.rand(n, c_out, oh, ow, device=dev).mul(2).sub(1).to(dt)\n\
             if channels_last:\n    dy = dy.to(memory_format=torch.channels_last)\n\
             got = torch.nn.grad.conv2d_weight(x, wt.shape, dy, **kw)\n\
             want = torch.nn.grad.conv2d_weight(x.double().cpu(), wt.shape, dy.double().cpu(), **kw)\n"
        }
        _ => {
            "got = torch.nn.functional.conv2d(x, wt, **kw)\n\
             want = torch.nn.functional.conv2d(x.double().cpu(), wt.double().cpu(), **kw)\n"
        }
    };
    format!(
        "torch.backends.cudnn.benchmark = {bench}\ntorch.backends.cudnn.allow_tf32 = False\n\
         n, c_in, c_out, h, w, r, groups = {n}, {c_in}, {c_out}, {h}, {w}, {k}, {groups}\n\
         kw = dict(stride={stride}, padding={pad}, dilation={dil}, groups=groups)\n\
         oh = (h + 2 * {pad} - {dil} * (r - 1) - 1) // {stride} + 1\n\
         ow = (w + 2 * {pad} - {dil} * (r - 1) - 1) // {stride} + 1\n\
         dt, channels_last = torch.{dtype}, {cl}\n\
         x = torch.rand(n, c_in, h, w, device=dev).mul(2).sub(1).to(dt)\n\
         wt = torch.rand(c_out, c_in // groups, r, r, device=dev).mul(2).sub(1).to(dt)\n\
         if channels_last:\n    x = x.to(memory_format=torch.channels_last)\n    \
         wt = wt.to(memory_format=torch.channels_last)\n{call}check(got, want)\n",
        bench = if solver == "torch-benchmark" {
            "True"
        } else {
            "False"
        },
        n = get("n"),
        c_in = get("c_in"),
        c_out = get("c_out"),
        h = get("h"),
        w = get("w"),
        k = get("kernel"),
        groups = get("groups"),
        stride = get("stride"),
        pad = get("pad"),
        dil = get("dilation"),
        dtype = torch_dtype(&get("dtype")),
        cl = if nhwc { "True" } else { "False" },
    )
}

fn rng(get: &dyn Fn(&str) -> String, solver: &str) -> String {
    let draw = match solver {
        "torch-randn_like" => {
            "z = torch.randn_like(torch.empty(count, dtype=dt, device=dev)) * std + mean"
        }
        "torch-normal_" => "z = torch.empty(count, dtype=dt, device=dev).normal_(mean, std)",
        "torch-rand" => {
            "u1 = 1 - torch.rand((count + 1) // 2, dtype=dt, device=dev)\n\
             u2 = torch.rand((count + 1) // 2, dtype=dt, device=dev)\n\
             r = torch.sqrt(-2 * torch.log(u1))\n\
             z = (torch.cat([r * torch.cos(6.283185307179586 * u2), r * torch.sin(6.283185307179586 * u2)])[:count]) * std + mean"
        }
        _ => "z = torch.randn(count, dtype=dt, device=dev) * std + mean",
    };
    format!(
        "count, mean, std, dt = {count}, {mean}, {std}, torch.{dtype}\n{draw}\n\
         v = z.double().cpu()\n\
         zeros, nonfinite = int((v == 0).sum()), int((~torch.isfinite(v)).sum())\n\
         m, s = v.mean().item(), v.std().item()\n\
         print(\"zeros %d, NaN/Inf %d, mean %.5g (want %g), std %.5g (want %g)\" % (zeros, nonfinite, m, mean, s, std))\n\
         se = 5 * std / count ** 0.5\n\
         bad = nonfinite > 0 or zeros > count // 1000 + 1 or abs(m - mean) > se + 1e-3 * abs(mean) or abs(s - std) > 5 * std * (2 / count) ** 0.5 + 1e-2 * std\n\
         print(\"FAIL\" if bad else \"ok\")\nsys.exit(1 if bad else 0)\n",
        count = get("count"),
        mean = get("mean"),
        std = get("std"),
        dtype = torch_dtype(&get("dtype")),
    )
}

fn copy(get: &dyn Fn(&str) -> String, solver: &str) -> String {
    let nb = if solver == "torch-to-nonblocking" {
        "True"
    } else {
        "False"
    };
    let memory = get("memory");
    if matches!(memory.as_str(), "dataloader" | "accelerate") {
        return batch_copy(get, &memory, nb);
    }
    let host = match memory.as_str() {
        "pinned" => "host = torch.empty(words).pin_memory()".to_string(),
        "shared" => "host = torch.empty(words).share_memory_()".to_string(),
        "mmap" => "import mmap, tempfile\nf = tempfile.TemporaryFile()\nf.truncate(words * 4)\n\
                   buf = mmap.mmap(f.fileno(), words * 4)\nhost = torch.frombuffer(buf, dtype=torch.float32)"
            .to_string(),
        _ => "host = torch.empty(words)".to_string(),
    };
    let call = match get("direction").as_str() {
        "d2h" => format!(
            "src = torch.rand(words, device=dev)\ngot = host.copy_(src, non_blocking={nb})\n\
             torch.cuda.synchronize() if dev.type == \"cuda\" else None\nwant = src.cpu()\n"
        ),
        "d2d" => "src = torch.rand(words, device=dev)\ngot = src.clone()\nwant = src\n".to_string(),
        _ => format!(
            "host.copy_(torch.rand(words))\ngot = host.to(dev, non_blocking={nb})\n\
             torch.cuda.synchronize() if dev.type == \"cuda\" else None\nwant = host\n"
        ),
    };
    format!(
        "words = {bytes} // 4\n{host}\n{call}check(got, want, exact=True)\n",
        bytes = get("bytes"),
    )
}

/// Seed 001's batch path: the first batch of a DataLoader with 2 worker processes (pin_memory as
/// the case says) moved by `.to()` or by accelerate's send_to_device.
fn batch_copy(get: &dyn Fn(&str) -> String, memory: &str, nb: &str) -> String {
    let pin = if get("pin_memory") == "true" {
        "True"
    } else {
        "False"
    };
    let mv = if memory == "accelerate" {
        format!(
            "from accelerate.utils import send_to_device
got = send_to_device(batch, dev, non_blocking={nb})[\"input\"]"
        )
    } else {
        format!("got = batch[\"input\"].to(dev, non_blocking={nb})")
    };
    // Only a strategy the sweep language knows reaches the script (data is never code).
    let sharing = match get("sharing_strategy").as_str() {
        s if s != "default" && crate::op::copy::SHARING.contains(&s) => {
            format!("torch.multiprocessing.set_sharing_strategy(\"{s}\")\n")
        }
        _ => String::new(),
    };
    format!(
        "words = {bytes} // 4\ndata = torch.rand(words)\n{sharing}\n\n\
         class Batches(torch.utils.data.Dataset):\n    def __len__(self):\n        return 2\n\n\
         \x20   def __getitem__(self, i):\n        return {{\"input\": data.clone(), \"label\": torch.tensor(i)}}\n\n\n\
         loader = torch.utils.data.DataLoader(Batches(), batch_size=1, num_workers=2, pin_memory={pin}, multiprocessing_context=\"fork\")\n\
         batch = next(iter(loader))\n{mv}\n\
         torch.cuda.synchronize() if dev.type == \"cuda\" else None\n\
         check(got, data.reshape(1, -1), exact=True)\n",
        bytes = get("bytes"),
    )
}

fn graph(get: &dyn Fn(&str) -> String, solver: &str) -> String {
    let step = match solver {
        "torch-cudagraph" => {
            "static_x = acts[0].clone()\nside = torch.cuda.Stream()\nside.wait_stream(torch.cuda.current_stream())\n\
             with torch.cuda.stream(side):\n    for _ in range(2):\n        seq(static_x)\n\
             torch.cuda.current_stream().wait_stream(side)\ng = torch.cuda.CUDAGraph()\n\
             with torch.cuda.graph(g):\n    static_y = seq(static_x)\n\n\n\
             def step(x):\n    static_x.copy_(x)\n    g.replay()\n    return static_y.clone() if keep else static_y\n\n\n"
        }
        "torch-compile" => {
            "step = torch.compile(seq, mode=\"reduce-overhead\")\nfor _ in range(3):\n    step(acts[0])\n"
        }
        _ => "step = seq\n",
    };
    format!(
        "import torch.nn.functional as F\n\
         c, s, replays, keep, dt = {c}, {size}, {replays}, {keep}, torch.{dtype}\n\
         torch.backends.cudnn.allow_tf32 = False\ntorch.backends.cuda.matmul.allow_tf32 = False\n\
         mix = torch.rand(c, c, device=dev).mul(2).sub(1).to(dt)\n\
         filt = torch.rand(c, c, 3, 3, device=dev).mul(2).sub(1).to(dt)\n\
         acts = [torch.rand(c, s * s, device=dev).mul(2).sub(1).to(dt) for _ in range(replays)]\n\n\n\
         def seq(x):\n    return torch.relu(F.conv2d((mix @ x).view(1, c, s, s), filt, padding=1))\n\n\n\
         {step}\
         outs = []\nfor x in acts:\n    y = step(x)\n    outs.append(y if keep else y.double().cpu())\n\
         got = torch.cat([o.double().cpu().reshape(-1) for o in outs])\n\
         want = torch.cat([torch.relu(F.conv2d((mix.double().cpu() @ x.double().cpu()).view(1, c, s, s), filt.double().cpu(), padding=1)).reshape(-1) for x in acts])\n\
         check(got, want)\n",
        c = get("channels"),
        size = get("size"),
        replays = get("replays"),
        keep = if get("keep_outputs") == "true" {
            "True"
        } else {
            "False"
        },
        dtype = torch_dtype(&get("dtype")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(kv: &[(&str, &str)]) -> Params {
        Params::from_pairs(kv.iter().copied())
    }

    #[test]
    fn each_op_gets_a_script_that_makes_the_backends_call() {
        let g = torch_script(
            "gemm",
            &p(&[
                ("m", "1"),
                ("n", "4096"),
                ("k", "4096"),
                ("batch", "1"),
                ("trans_a", "false"),
                ("trans_b", "true"),
                ("dtype", "bf16"),
                ("compute", "tf32"),
            ]),
            "torch-linear+cublaslt",
        )
        .unwrap();
        assert!(g.contains("preferred_blas_library(\"cublaslt\")"), "{g}");
        assert!(g.contains("functional.linear(A, B.t())"), "{g}");
        assert!(
            g.contains("allow_tf32 = True") && g.contains("torch.bfloat16"),
            "{g}"
        );
        let c = torch_script(
            "conv2d",
            &p(&[
                ("direction", "bwd_data"),
                ("layout", "nhwc"),
                ("dtype", "f16"),
                ("n", "1"),
                ("c_in", "16"),
                ("c_out", "32"),
                ("h", "8"),
                ("w", "8"),
                ("kernel", "3"),
                ("groups", "1"),
                ("stride", "1"),
                ("pad", "1"),
                ("dilation", "1"),
            ]),
            "torch-benchmark",
        )
        .unwrap();
        assert!(
            c.contains("cudnn.benchmark = True") && c.contains("conv2d_input"),
            "{c}"
        );
        assert!(
            c.contains("channels_last = torch.float16, True") || c.contains("torch.float16, True"),
            "{c}"
        );
        let r = torch_script(
            "rng",
            &p(&[
                ("count", "1000"),
                ("mean", "0"),
                ("std", "1"),
                ("dtype", "bf16"),
            ]),
            "torch-randn_like",
        )
        .unwrap();
        assert!(
            r.contains("torch.randn_like(") && r.contains("zeros"),
            "{r}"
        );
        let cp = torch_script(
            "copy",
            &p(&[("direction", "h2d"), ("memory", "mmap"), ("bytes", "4096")]),
            "torch-to-nonblocking",
        )
        .unwrap();
        assert!(
            cp.contains("mmap.mmap(") && cp.contains("non_blocking=True"),
            "{cp}"
        );
        let ca = torch_script(
            "cast",
            &p(&[("from", "bf16"), ("to", "f32"), ("count", "10")]),
            "torch-method",
        )
        .unwrap();
        assert!(ca.contains(".float()") && ca.contains("exact=True"), "{ca}");
        let gr = torch_script(
            "graph",
            &p(&[
                ("channels", "4"),
                ("size", "5"),
                ("replays", "3"),
                ("keep_outputs", "true"),
                ("dtype", "f32"),
            ]),
            "torch-compile",
        )
        .unwrap();
        assert!(
            gr.contains("mode=\"reduce-overhead\"") && gr.contains("keep, dt = 4, 5, 3, True"),
            "{gr}"
        );
        // The CUDA graph's side stream must not rebind `s`, the image size `seq` reads.
        let cg = torch_script(
            "graph",
            &p(&[
                ("channels", "4"),
                ("size", "5"),
                ("replays", "3"),
                ("keep_outputs", "true"),
                ("dtype", "f32"),
            ]),
            "torch-cudagraph",
        )
        .unwrap();
        assert!(cg.contains("side = torch.cuda.Stream()"), "{cg}");
        assert!(!cg.contains("\ns = "), "{cg}");
        assert!(torch_script("nosuch", &Params::default(), "x").is_none());
    }
}

#[cfg(test)]
mod sharing_tests {
    use super::*;

    fn batch(sharing: &str) -> String {
        let p = Params::from_pairs([
            ("direction", "h2d"),
            ("memory", "dataloader"),
            ("bytes", "4096"),
            ("pin_memory", "false"),
            ("sharing_strategy", sharing),
        ]);
        torch_script("copy", &p, "torch-to").unwrap_or_default()
    }

    #[test]
    fn a_dataloader_script_sets_the_cases_sharing_strategy_and_only_a_known_one() {
        let s = batch("file_system");
        assert!(
            s.contains("torch.multiprocessing.set_sharing_strategy(\"file_system\")\n"),
            "{s}"
        );
        assert!(!batch("default").contains("set_sharing_strategy"));
        // A value that is not a strategy (a tampered run directory) never reaches the script.
        let planted = batch("x\")\nimport os; os.system(\"id");
        assert!(!planted.contains("set_sharing_strategy"), "{planted}");
        assert!(!planted.contains("os.system"), "{planted}");
    }
}

#!/usr/bin/env python3
"""PyTorch's times for every distinct shape of a rocsweep run, measured the way rocsweep measures:
launch-free (a CUDA graph of K calls replayed, time / K, the quantity of rocsweep's median_ms)
and per call (one call between two events, launch included, as rocsweep's call_median_ms).

usage: peer_times.py RUN_DIR OUT.csv

conv2d rows (forward, NCHW) use cuDNN in benchmark mode with TF32 off (PyTorch's pick: it times
up to torch.backends.cudnn.benchmark_limit engine configurations); gemm rows use torch.matmul
(cuBLASLt / cuBLAS as PyTorch chooses) into one preallocated output, TF32 only where the case's
compute is tf32. A convolution returns a new tensor per call (PyTorch has no out= for it), so in
a graph of K calls its outputs are K buffers where rocsweep writes one: a slightly colder cache.
"""
import csv
import statistics
import sys

import torch

DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
TARGET_MS = 0.2  # a graph replay lasts at least this long, as rocsweep's launch-free samples


def per_call_ms(fn, reps=30):
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def graph_ms(fn, calls, reps=20):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / calls)
    return statistics.median(times)


def both(fn):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    call = per_call_ms(fn)
    calls = max(1, min(64, int(TARGET_MS / call + 0.999)))
    return graph_ms(fn, calls), call, calls


def conv_fn(r):
    dt = DT[r["dtype"]]
    n, ci, co = int(r["n"]), int(r["c_in"]), int(r["c_out"])
    h, w, k = int(r["h"]), int(r["w"]), int(r["kernel"])
    x = torch.rand(n, ci, h, w, device="cuda", dtype=dt) - 0.5
    conv = torch.nn.Conv2d(ci, co, k, stride=int(r["stride"]), padding=int(r["pad"]),
                           dilation=int(r["dilation"]), groups=int(r["groups"]), bias=False).to("cuda", dt)
    return lambda: conv(x)


def gemm_fn(r):
    dt = DT[r["dtype"]]
    m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
    torch.backends.cuda.matmul.allow_tf32 = r["compute"] == "tf32"
    a = torch.rand(m, k, device="cuda", dtype=dt) - 0.5
    b = torch.rand(k, n, device="cuda", dtype=dt) - 0.5
    # One output buffer for every call, as rocsweep's units have (a new tensor per call would
    # spread the graph's writes over K buffers and measure a colder cache).
    c = torch.empty(m, n, device="cuda", dtype=dt)
    return lambda: torch.matmul(a, b, out=c)


KEYS = {
    "conv2d": ["direction", "n", "c_in", "c_out", "h", "w", "kernel", "pad", "stride", "dilation",
               "groups", "layout", "dtype"],
    "gemm": ["m", "n", "k", "trans_a", "trans_b", "batch", "dtype", "out_dtype", "compute"],
}


def main():
    run_dir, out = sys.argv[1], sys.argv[2]
    rows = list(csv.DictReader(open(f"{run_dir}/results.csv")))
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    seen, result = set(), []
    for r in rows:
        op = r["op"]
        key = tuple(r[c] for c in KEYS[op])
        if key in seen:
            continue
        seen.add(key)
        if op == "conv2d" and (r["direction"] != "fwd" or r["layout"] != "nchw"):
            continue
        if op == "gemm" and (r["trans_a"] != "false" or r["trans_b"] != "false" or r["batch"] != "1"):
            continue
        fn = conv_fn(r) if op == "conv2d" else gemm_fn(r)
        with torch.no_grad():
            dev, call, calls = both(fn)
        result.append({"op": op, "key": ";".join(f"{c}={v}" for c, v in zip(KEYS[op], key)),
                       "torch_ms": f"{dev:.6f}", "torch_call_ms": f"{call:.6f}", "graph_calls": calls})
        print(op, result[-1]["key"], result[-1]["torch_ms"], result[-1]["torch_call_ms"], flush=True)
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["op", "key", "torch_ms", "torch_call_ms", "graph_calls"])
        w.writeheader()
        w.writerows(result)
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"benchmark_limit {getattr(torch.backends.cudnn, 'benchmark_limit', '?')}, "
          f"{torch.cuda.get_device_name()}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Is the torch layer's time PyTorch's time? Compares every ok torch row of a rocsweep run with
PyTorch itself, timed in a clean process per torch solver on the same GPU, in the same device
command (issue 42's benchmark; not a timed test).

usage: torch_layer_fidelity.py RUN_DIR OUT_DIR
       torch_layer_fidelity.py --clean SOLVER RUN_DIR OUT.json   (one solver's clean process)

RUN_DIR: a run of `--backend torch` with `[timing] cache = "warm"` (`--set timing.cache=warm`):
the launch-free figure compared is a warm one on both sides. Per torch solver in the run, a
fresh Python (this script with --clean) sets what the torch layer sets for that solver
(cudnn.benchmark = True for torch-benchmark, False for torch-default; TF32 off unless the case's
compute is tf32; the BLAS preference of `torch-matmul+BLAS`), makes each shape's inputs (uniform
in [-1, 1), drawn in f32 and rounded to the dtype, as rocsweep's), and measures PyTorch's own:
- graph20 (the issue's reference): 20 calls captured in a CUDA graph (after one call outside it:
  cuDNN benchmarks there), a warm replay, then a replay between two events queued behind it:
  time / 20, median of 20 replays;
- graphk (the same duty cycle as the layer's samples): a graph of as many calls as rocsweep's
  rule gives the layer (ceil(0.2 ms / its median), 1 to 64), its replay queued behind a spin
  kernel (torch.cuda._sleep) that outlasts the launch, as the layer and rocsweep's library
  backends hold theirs: time / calls, median of 20. One long call after a light spin runs at a
  higher clock than 20 back to back (a large bf16 GEMM: 15% on an H200), which graph20 holds;
- per call: one call between two events, median of 30 made back to back.
Then, shape by shape: torch layer `median_ms` / graphk and / graph20 (target within 2%) and
`call_median_ms` / per call (target within 3%); lowest, highest, geometric mean and how many
fall outside, per op and solver.
Writes OUT_DIR/fidelity.csv and OUT_DIR/fidelity.md.
"""
import csv
import json
import math
import os
import statistics
import subprocess
import sys

GRAPH_CALLS = 20
GRAPH_REPS = 20
CALL_REPS = 30
# rocsweep's sample size rule (src/timing.rs: TARGET_SAMPLE_S, MAX_CALLS_PER_SAMPLE).
TARGET_SAMPLE_MS = 0.2
MAX_CALLS = 64
TARGET_GRAPH = 0.02
TARGET_CALL = 0.03


def rows(run_dir):
    with open(os.path.join(run_dir, "results.csv"), newline="") as f:
        for r in csv.DictReader(f):
            if r["backend"] == "torch" and r["status"] == "ok" and r["median_ms"]:
                yield r


def key(r):
    return r["case_id"] + "|" + r["solver"]


# --- the clean process ------------------------------------------------------------------------

def clean(solver, run_dir, out):
    import torch
    from peer_times import per_call_ms  # one call between events, the median of reps

    dt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    dev = torch.device("cuda")

    def uniform(shape, dtype):
        return (torch.rand(*shape, device=dev, dtype=torch.float32) * 2 - 1).to(dt[dtype])

    def conv(r):
        torch.backends.cudnn.benchmark = solver == "torch-benchmark"
        torch.backends.cudnn.allow_tf32 = False
        n, ci, co = int(r["n"]), int(r["c_in"]), int(r["c_out"])
        h, w, k, g = int(r["h"]), int(r["w"]), int(r["kernel"]), int(r["groups"])
        x = uniform((n, ci, h, w), r["dtype"])
        wt = uniform((co, ci // g, k, k), r["dtype"])
        if r["layout"] == "nhwc":
            x = x.to(memory_format=torch.channels_last)
            wt = wt.to(memory_format=torch.channels_last)
        kw = dict(stride=int(r["stride"]), padding=int(r["pad"]), dilation=int(r["dilation"]), groups=g)
        if r["direction"] != "fwd":
            return None
        return lambda: torch.nn.functional.conv2d(x, wt, **kw)

    def gemm(r):
        base, _, blas = solver.partition("+")
        if blas:
            torch.backends.cuda.preferred_blas_library(blas)
        torch.backends.cuda.matmul.allow_tf32 = r["compute"] == "tf32"
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = r["compute"] == "f16"
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
        m, n, k, batch = int(r["m"]), int(r["n"]), int(r["k"]), int(r["batch"])
        ta, tb = r["trans_a"] == "true", r["trans_b"] == "true"
        a = uniform((batch, k, m) if ta else (batch, m, k), r["dtype"])
        b = uniform((batch, n, k) if tb else (batch, k, n), r["dtype"])
        if ta:
            a = a.transpose(1, 2)
        if batch == 1:
            a = a[0]
        if base == "torch-linear":
            wt = b[0] if tb else b[0].t()
            return lambda: torch.nn.functional.linear(a, wt)
        bb = b.transpose(1, 2) if tb else b
        if batch == 1:
            bb = bb[0]
        return lambda: torch.matmul(a, bb)

    def ev():
        return torch.cuda.Event(enable_timing=True)

    def graph_ms(fn):
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(GRAPH_CALLS):
                fn()
        times = []
        for _ in range(GRAPH_REPS):
            a, b = ev(), ev()
            g.replay()
            a.record()
            g.replay()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) / GRAPH_CALLS)
        del g
        return statistics.median(times)

    cycles = []

    def cycles_per_ms():
        if not cycles:
            a, b = ev(), ev()
            torch.cuda._sleep(1000)
            a.record()
            torch.cuda._sleep(2_000_000)
            b.record()
            b.synchronize()
            cycles.append(2_000_000 / a.elapsed_time(b))
        return cycles[0]

    def graphk_ms(fn, calls):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(calls):
                fn()
        g.replay()
        torch.cuda.synchronize()
        times = []
        for _ in range(GRAPH_REPS):
            a, b = ev(), ev()
            torch.cuda._sleep(int(0.2 * cycles_per_ms()))
            a.record()
            g.replay()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) / calls)
        del g
        return statistics.median(times)

    result = {}
    for r in rows(run_dir):
        if r["solver"] != solver:
            continue
        make = conv if r["op"] == "conv2d" else gemm if r["op"] == "gemm" else None
        fn = make(r) if make else None
        if fn is None:
            continue
        fn()
        torch.cuda.synchronize()
        calls = max(1, min(MAX_CALLS, math.ceil(TARGET_SAMPLE_MS / float(r["median_ms"]))))
        result[key(r)] = {"graph_ms": graph_ms(fn), "graphk_ms": graphk_ms(fn, calls),
                          "calls": calls, "call_ms": per_call_ms(fn, CALL_REPS)}
        torch.cuda.empty_cache()
    result["_versions"] = {"torch": torch.__version__, "cudnn": str(torch.backends.cudnn.version()),
                           "device": torch.cuda.get_device_name(0)}
    with open(out, "w") as f:
        json.dump(result, f)


# --- the comparison ---------------------------------------------------------------------------

def summary(ratios, target):
    if not ratios:
        return "none", "", "", "", ""
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    outside = sum(1 for x in ratios if abs(x - 1) > target)
    return len(ratios), "%.3f" % min(ratios), "%.3f" % max(ratios), "%.3f" % geo, outside


def compare(run_dir, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    mine = list(rows(run_dir))
    measured, versions = {}, {}
    for solver in sorted({r["solver"] for r in mine}):
        out = os.path.join(out_dir, "clean-%s.json" % solver)
        subprocess.run([sys.executable, os.path.abspath(__file__), "--clean", solver, run_dir, out], check=True)
        with open(out) as f:
            got = json.load(f)
        versions = got.pop("_versions", versions)
        measured.update(got)
    table = []
    for r in mine:
        m = measured.get(key(r))
        if not m:
            continue
        table.append({
            "op": r["op"], "solver": r["solver"], "case_id": r["case_id"],
            "dtype": r["dtype"], "timing_method": r.get("timing_method", ""), "cache": r.get("cache", ""),
            "layer_ms": float(r["median_ms"]), "calls": m["calls"],
            "pytorch_graphk_ms": m["graphk_ms"], "graphk_ratio": float(r["median_ms"]) / m["graphk_ms"],
            "pytorch_graph20_ms": m["graph_ms"], "graph20_ratio": float(r["median_ms"]) / m["graph_ms"],
            "layer_call_ms": float(r["call_median_ms"]), "pytorch_call_ms": m["call_ms"],
            "call_ratio": float(r["call_median_ms"]) / m["call_ms"],
            "shape": ";".join("%s=%s" % (k, r[k]) for k in
                              (("n", "c_in", "c_out", "h", "kernel", "stride") if r["op"] == "conv2d"
                               else ("m", "n", "k", "compute")) if k in r),
        })
    with open(os.path.join(out_dir, "fidelity.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(table[0].keys()) if table else ["op"])
        w.writeheader()
        w.writerows(table)
    lines = ["# The torch layer against PyTorch in a clean process", "",
             "Run: `%s`; PyTorch %s, cuDNN %s, on %s. Launch-free: the torch layer's `median_ms` "
             "(warm, its `timing_method`) / PyTorch's CUDA graph of the same number of calls held "
             "behind a spin (graphk), and / PyTorch's graph of %d calls queued behind a warm replay "
             "(graph20); per call: `call_median_ms` / one call between events in PyTorch, made "
             "back to back." % (
                 run_dir, versions.get("torch"), versions.get("cudnn"), versions.get("device"), GRAPH_CALLS), "",
             "| op | solver | figure | shapes | lowest | highest | geometric mean | outside target |",
             "|---|---|---|---|---|---|---|---|"]
    groups = sorted({(t["op"], t["solver"]) for t in table})
    for op, solver in groups:
        mine_ = [t for t in table if (t["op"], t["solver"]) == (op, solver)]
        for fig, col, target in (("launch-free / graphk", "graphk_ratio", TARGET_GRAPH),
                                 ("launch-free / graph20", "graph20_ratio", TARGET_GRAPH),
                                 ("per call", "call_ratio", TARGET_CALL)):
            n, lo, hi, geo, out = summary([t[col] for t in mine_], target)
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s (beyond %d%%) |" % (
                op, solver, fig, n, lo, hi, geo, out, round(target * 100)))
    lines += ["", "Shape by shape: `fidelity.csv`. Worst launch-free ratios:", "",
              "| op | solver | shape | dtype | torch layer ms | calls | PyTorch graphk ms | ratio | PyTorch graph20 ms | ratio | method |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for t in sorted(table, key=lambda t: -abs(math.log(t["graphk_ratio"])))[:12]:
        lines.append("| %s | %s | %s | %s | %.4f | %d | %.4f | %.3f | %.4f | %.3f | %s |" % (
            t["op"], t["solver"], t["shape"], t["dtype"], t["layer_ms"], t["calls"], t["pytorch_graphk_ms"],
            t["graphk_ratio"], t["pytorch_graph20_ms"], t["graph20_ratio"], t["timing_method"]))
    lines += ["", "Worst per-call ratios:", "",
              "| op | solver | shape | dtype | torch layer call ms | PyTorch call ms | ratio |",
              "|---|---|---|---|---|---|---|"]
    for t in sorted(table, key=lambda t: -abs(math.log(t["call_ratio"])))[:8]:
        lines.append("| %s | %s | %s | %s | %.4f | %.4f | %.3f |" % (
            t["op"], t["solver"], t["shape"], t["dtype"], t["layer_call_ms"], t["pytorch_call_ms"],
            t["call_ratio"]))
    with open(os.path.join(out_dir, "fidelity.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv):
    if len(argv) == 5 and argv[1] == "--clean":
        clean(argv[2], argv[3], argv[4])
        return 0
    if len(argv) == 3:
        compare(argv[1], argv[2])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

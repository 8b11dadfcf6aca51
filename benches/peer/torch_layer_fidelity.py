#!/usr/bin/env python3
"""Is the torch layer's time PyTorch's time? Compares every ok torch row of a rocsweep run with
PyTorch itself, timed in clean processes on the same GPU, in the same device command (issue 42's
benchmark; not a timed test).

usage: torch_layer_fidelity.py [--per-shape | --burst-only] RUN_DIR OUT_DIR
       torch_layer_fidelity.py --placements OUT.md TABLE_DIR TABLE_DIR...
       torch_layer_fidelity.py --duty RUN_DIR OUT_DIR      (the long calls with rests; below)
       torch_layer_fidelity.py --clean SOLVER RUN_DIR OUT.json   (one solver's clean process)

RUN_DIR: a run of `--backend torch` with `[timing] cache = "warm"` (`--set timing.cache=warm`):
the launch-free figure compared is a warm one on both sides. Per torch solver in the run, two
fresh Pythons, one after the other (this script with --clean; the second gives PyTorch's own
process-to-process spread), set what the torch layer sets for that solver (cudnn.benchmark =
True for torch-benchmark, False for torch-default; TF32 off unless the case's compute is tf32;
the BLAS preference of `torch-matmul+BLAS`), make each shape's inputs (uniform in [-1, 1), drawn
in f32 on the host, rounded to the dtype and copied to the device, as rocsweep's), and measure PyTorch's own, per shape:
- same regime (the target's reference): a short burst as a rocsweep unit is: the first call
  alone behind a spin, a rest of 0.5 s (the layer's device rests 0.1-1 s there while the first
  output is checked: `--duty`), then `warmup` + `samples` samples (the row's counts) back to
  back; each sample is three calls between events made back to back (the per-call figure: the
  third's), then a CUDA graph of K calls (K = ceil(0.2 ms / the last sample's time per call);
  one call is queued uncaptured) replayed behind a spin kernel (torch.cuda._sleep): time / K;
  medians of the samples. Written here from the sampling rule (src/timing.rs, docs/backends.md), not
  imported from the worker. Every shape's burst comes first (as the layer's units follow one
  another), the figures below in a second pass;
- sustained (the issue's graph20): 20 calls captured in a CUDA graph, a warm replay, then a
  replay between two events queued behind it: time / 20, median of 20 replays, or of as many
  as last two seconds, at least 3 (seconds of back to back work for a large GEMM: the card
  reaches its power limit and lowers its clock);
- per call, 30 back to back: one call between two events, the median of 30.
Each figure carries the SM clock (NVML) read after it, as rocsweep's rows carry `clock_mhz`.
Then, shape by shape: torch layer `median_ms` / same regime (target within 2%),
`call_median_ms` / same regime's per call (target within 3%), the two clean processes against
each other (PyTorch's own spread), and the layer / sustained with both clocks; lowest, highest,
geometric mean and how many fall outside, per op and solver.
Writes OUT_DIR/fidelity.csv and OUT_DIR/fidelity.md.

FIDELITY_OUTPUT=kept: the reference keeps each call's output until the next call's replaces it,
as `y = f(x)` in a loop does and as the torch layer does (its op holds its result); `dropped`
(default): each output is freed as the call returns.

--placements OUT.md TABLE_DIR...: the layer against PyTorch over the tables of several references
made with different FIDELITY_PAD_* (the first with none): PyTorch's lowest and highest figure per
row and the layer over the nearest one.

--per-shape: the reference's clean process is one per solver and shape (forked from this process,
which imported torch and never touched CUDA), two per shape, bursts only: PyTorch with nothing
before the shape in its process. --burst-only: the clean process per solver, bursts only (no
sustained pass). The layer's Python per solver runs every unit of its worker in turn.

--duty: for a run made with ROCSWEEP_TORCH_TRACE=1 (the worker logs each sample's start and end),
the gaps between the layer's samples, and torch-matmul's calls of 0.1 ms or more timed again in a
clean process as bursts with the host idle 0, 1, 3, 10 and 30 ms before each sample: which rest
gives the layer's time (a card below its power limit keeps its clock). Writes OUT_DIR/duty.md.
"""
import csv
import json
import math
import os
import statistics
import subprocess
import sys
import time

GRAPH_CALLS = 20
GRAPH_REPS = 20
CALL_REPS = 30
# rocsweep's sampling rule (src/timing.rs: TARGET_SAMPLE_S, MAX_CALLS_PER_SAMPLE; the torch
# worker's CALLS_IN_A_ROW).
TARGET_SAMPLE_MS = 0.2
MAX_CALLS = 64
CALLS_IN_A_ROW = 3
# How long the card rests between a shape's first call and its samples (the layer's device rests
# 0.1 to 1 s there while the supervisor checks the first output).
REST_S = 0.5
TARGET_GRAPH = 0.02
TARGET_CALL = 0.03
# The sweeps' `warmup` (sweeps/h200-*.toml): samples before the counted ones.
WARMUP = 2
# What the reference does with a call's output: `dropped` (each call's output freed on return;
# the caching allocator hands the next call the same block) or `kept` (held until the next call's
# replaces it). Set by FIDELITY_OUTPUT; the children inherit it.
OUTPUT = os.environ.get("FIDELITY_OUTPUT", "dropped")
# Diagnostics (the children inherit them): FIDELITY_PAD_MIB=N holds N MiB of device memory,
# allocated and zeroed before each shape's inputs (where the caching allocator places them: in
# segments of their own after it); with FIDELITY_PAD_KIND=freed the N MiB are freed again before
# the inputs, the allocator keeps the segment, and the inputs and outputs are carved from it one
# after the other (as in a process whose earlier work left its segments cached);
# FIDELITY_MAX_MS=X times only the rows whose layer time is under X ms.
PAD_MIB = int(os.environ.get("FIDELITY_PAD_MIB", "0"))
PAD_KIND = os.environ.get("FIDELITY_PAD_KIND", "held")
MAX_MS = float(os.environ.get("FIDELITY_MAX_MS", "inf"))
# --duty: the host's idle time between samples tried (ms), on calls at least this long (ms).
DUTY_GAPS_MS = (0, 1, 3, 10, 30)
DUTY_MIN_MS = 0.1


def rows(run_dir):
    with open(os.path.join(run_dir, "results.csv"), newline="") as f:
        for r in csv.DictReader(f):
            if r["backend"] == "torch" and r["status"] == "ok" and r["median_ms"] \
                    and float(r["median_ms"]) < MAX_MS:
                yield r


def key(r):
    return r["case_id"] + "|" + r["solver"]


# --- the clean process ------------------------------------------------------------------------

def clean(solver, run_dir, out, gaps=None, only=None, burst_only=False):
    """One clean process's figures for `solver` (see the docstring); only: the keys of the shapes
    to time (all when None); burst_only: the same-regime burst alone, no sustained pass."""
    import torch
    from lt_ctypes import sm_clock_mhz  # NVML's SM clock, None where it cannot be read
    from peer_times import per_call_ms  # one call between events, the median of reps

    dt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    dev = torch.device("cuda")

    def uniform(shape, dtype):
        # Drawn on the host and copied in, as the layer's inputs arrive (the device's memory
        # written by copies, not by kernels; see reports/h200/timing/process-state/).
        return (torch.rand(*shape, dtype=torch.float32) * 2 - 1).to(dt[dtype]).to(dev)

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

    cycles = []

    def spin_ms(ms):
        """A spin kernel of about `ms` on the current stream (torch.cuda._sleep counts cycles)."""
        if not cycles:
            a, b = ev(), ev()
            torch.cuda._sleep(1000)
            a.record()
            torch.cuda._sleep(2_000_000)
            b.record()
            b.synchronize()
            cycles.append(2_000_000 / a.elapsed_time(b))
        torch.cuda._sleep(int(ms * cycles[0]))

    def capture(fn, calls):
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(calls):
                fn()
        g.replay()
        torch.cuda.synchronize()
        return g

    def held_ms(enqueue):
        """Device ms of what enqueue() queues, queued behind a 0.2 ms spin."""
        a, b = ev(), ev()
        spin_ms(0.2)
        a.record()
        enqueue()
        b.record()
        b.synchronize()
        return a.elapsed_time(b)

    def burst(fn, warmup, samples, gap_s=0.0):
        """(launch-free ms, per-call ms, SM clock): rocsweep's regime, see the docstring; gap_s:
        the host idles that long before each sample (--duty)."""
        graphs, dev, call = {}, [], []
        # The layer's first sample is the first call alone (its `first_call_ms`), which sets K;
        # then its device rests while the call's output is checked (0.1 to 1 s on the H200's
        # GEMM sweep, ROCSWEEP_TORCH_TRACE), and the samples follow back to back.
        last = held_ms(fn)
        time.sleep(REST_S)
        for i in range(warmup + samples):
            if gap_s:
                time.sleep(gap_s)
            k = max(1, min(MAX_CALLS, math.ceil(TARGET_SAMPLE_MS / last)))
            for _ in range(CALLS_IN_A_ROW):
                a, b = ev(), ev()
                a.record()
                fn()
                b.record()
                b.synchronize()
            one = a.elapsed_time(b)
            if k > 1:
                if k not in graphs:
                    graphs[k] = capture(fn, k)
                last = held_ms(graphs[k].replay) / k
            else:
                last = held_ms(fn)
            if i >= warmup:
                dev.append(last)
                call.append(one)
        graphs.clear()
        return statistics.median(dev), statistics.median(call), sm_clock_mhz()

    def sustained(fn, per_call):
        """(ms, SM clock): the issue's graph20, see the docstring; per_call: about its ms per call."""
        g = capture(fn, GRAPH_CALLS)
        times = []
        # At least two seconds of back to back replays where 20 replays take less; three where
        # one call is long (a 21 ms f32 GEMM: 2.5 s).
        reps = max(3, min(GRAPH_REPS, math.ceil(2000 / (2 * GRAPH_CALLS * max(per_call, 1e-3)))))
        for _ in range(reps):
            a, b = ev(), ev()
            g.replay()
            a.record()
            g.replay()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) / GRAPH_CALLS)
        del g
        return statistics.median(times), sm_clock_mhz()

    def holding(fn):
        """fn, its output kept until the next call's replaces it, as `y = f(x)` in a loop keeps
        it (OUTPUT=kept; the caching allocator then alternates two output blocks)."""
        out = [None]

        def call():
            out[0] = fn()
        return call

    def shapes():
        for r in rows(run_dir):
            make = conv if r["op"] == "conv2d" else gemm if r["op"] == "gemm" else None
            wanted = r["solver"] == solver and (only is None or key(r) in only)
            pad = torch.zeros(PAD_MIB << 20, dtype=torch.uint8, device=dev) if PAD_MIB and wanted else None
            if PAD_KIND == "freed":
                pad = None
            fn = make(r) if make and wanted else None
            if fn is not None:
                yield r, holding(fn) if OUTPUT == "kept" else fn
            del pad

    if gaps is not None:
        # --duty: the long calls' bursts again with the host idle between samples.
        result = {}
        for r, fn in shapes():
            if float(r["median_ms"]) < DUTY_MIN_MS:
                continue
            samples = max(1, int(r.get("samples") or 5))
            for gap in gaps:
                torch.cuda.synchronize()
                time.sleep(REST_S)
                fn()
                torch.cuda.synchronize()
                result.setdefault(key(r), {})["%g" % gap] = burst(fn, WARMUP, samples, gap / 1e3)[0]
            del fn
            torch.cuda.empty_cache()
        with open(out, "w") as f:
            json.dump(result, f)
        return

    # Two passes, as the layer's units follow one another: first every shape's burst, then
    # the sustained and back-to-back figures (seconds of work at the power limit, which would
    # leave the next shape's burst on a capped clock).
    result = {}
    for r, fn in shapes():
        fn()
        torch.cuda.synchronize()
        samples = max(1, int(r.get("samples") or 5))
        burst_ms, burst_call_ms, burst_clock = burst(fn, WARMUP, samples)
        result[key(r)] = {"burst_ms": burst_ms, "burst_call_ms": burst_call_ms, "burst_clock": burst_clock}
        del fn
        torch.cuda.empty_cache()
    for r, fn in ([] if burst_only else shapes()):
        fn()
        torch.cuda.synchronize()
        m = result[key(r)]
        m["graph_ms"], m["graph_clock"] = sustained(fn, m["burst_ms"])
        m["call30_ms"] = per_call_ms(fn, CALL_REPS)
        del fn
        torch.cuda.empty_cache()
    result["_versions"] = {"torch": torch.__version__, "cudnn": str(torch.backends.cudnn.version()),
                           "device": torch.cuda.get_device_name(0)}
    with open(out, "w") as f:
        json.dump(result, f)


# --- the comparison ---------------------------------------------------------------------------

def summary(ratios, target, spreads=None):
    """(shapes, lowest, highest, geometric mean, outside the target, outside both the target and
    PyTorch's own process-to-process spread of that shape)."""
    if not ratios:
        return "none", "", "", "", "", ""
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    outside = sum(1 for x in ratios if abs(x - 1) > target)
    beyond = "-"
    if spreads is not None:
        beyond = sum(1 for x, s in zip(ratios, spreads)
                     if abs(math.log(x)) > max(math.log1p(target), abs(math.log(s))))
    return len(ratios), "%.3f" % min(ratios), "%.3f" % max(ratios), "%.3f" % geo, outside, beyond


def forked(solver, run_dir, out, k):
    """Shape `k` alone in a clean process: a fork of this one, which imported torch and never
    touched CUDA (a child may initialise CUDA only then), timing the burst and nothing else."""
    import torch  # noqa: F401  (imported once here, not in every child)
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            clean(solver, run_dir, out, only={k}, burst_only=True)
        except BaseException:
            import traceback
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("the clean process for %s (%s) failed: status %d" % (k, solver, status))
    with open(out) as f:
        return json.load(f)


def clean_shapes(run_dir, out_dir, solvers):
    """Per solver and shape, two clean processes of their own, one after the other, as a unit
    that runs alone: ({key: first}, {key: second}, versions); burst figures only."""
    first, second, versions = {}, {}, {}
    mine = list(rows(run_dir))
    for solver in solvers:
        for r in mine:
            if r["solver"] != solver:
                continue
            for n, into in ((1, first), (2, second)):
                out = os.path.join(out_dir, "shape-%s-%d.json" % (solver, n))
                got = forked(solver, run_dir, out, key(r))
                os.remove(out)
                versions = got.pop("_versions", versions)
                into.update(got)
    return first, second, versions


def clean_runs(run_dir, out_dir, solvers, burst_only=False):
    """Per solver, two clean processes one after the other: ({key: first}, {key: second}, versions)."""
    first, second, versions = {}, {}, {}
    for solver in solvers:
        for n, into in ((1, first), (2, second)):
            out = os.path.join(out_dir, "clean-%s-%d.json" % (solver, n))
            args = ["--clean-burst" if burst_only else "--clean", solver, run_dir, out]
            subprocess.run([sys.executable, os.path.abspath(__file__)] + args, check=True)
            with open(out) as f:
                got = json.load(f)
            versions = got.pop("_versions", versions)
            into.update(got)
    return first, second, versions


def shape_of(r):
    keys = ("n", "c_in", "c_out", "h", "kernel", "stride") if r["op"] == "conv2d" else ("m", "n", "k", "compute")
    return ";".join("%s=%s" % (k, r[k]) for k in keys if k in r)


def table_rows(mine, first, second):
    table = []
    for r in mine:
        m, m2 = first.get(key(r)), second.get(key(r))
        if not m or not m2:
            continue
        layer, call = float(r["median_ms"]), float(r["call_median_ms"])
        table.append({
            "op": r["op"], "solver": r["solver"], "case_id": r["case_id"], "shape": shape_of(r),
            "dtype": r["dtype"], "timing_method": r.get("timing_method", ""), "cache": r.get("cache", ""),
            "samples": r.get("samples", ""), "layer_ms": layer, "layer_clock": r.get("clock_mhz", ""),
            "pytorch_ms": m["burst_ms"], "pytorch_clock": m["burst_clock"], "ratio": layer / m["burst_ms"],
            "pytorch_again_ms": m2["burst_ms"], "pytorch_spread": m["burst_ms"] / m2["burst_ms"],
            "layer_call_ms": call, "pytorch_call_ms": m["burst_call_ms"], "call_ratio": call / m["burst_call_ms"],
            "pytorch_call_spread": m["burst_call_ms"] / m2["burst_call_ms"],
            # Absent where the reference timed bursts only (--per-shape, --burst-only).
            "pytorch_sustained_ms": m.get("graph_ms"), "sustained_clock": m.get("graph_clock"),
            "sustained_ratio": layer / m["graph_ms"] if "graph_ms" in m else None,
            "pytorch_call30_ms": m.get("call30_ms"),
            "call30_ratio": call / m["call30_ms"] if "call30_ms" in m else None,
        })
    return table


# (figure, ratio column, target, the column of PyTorch's own spread it is judged against)
FIGURES = (
    ("launch-free / same regime", "ratio", TARGET_GRAPH, "pytorch_spread"),
    ("PyTorch / PyTorch again (launch-free)", "pytorch_spread", TARGET_GRAPH, None),
    ("per call / same regime", "call_ratio", TARGET_CALL, "pytorch_call_spread"),
    ("PyTorch / PyTorch again (per call)", "pytorch_call_spread", TARGET_CALL, None),
    ("launch-free / sustained (graph20)", "sustained_ratio", TARGET_GRAPH, None),
    ("per call / 30 back to back", "call30_ratio", TARGET_CALL, None),
)


def worst(table, col, n):
    return sorted(table, key=lambda t: -abs(math.log(t[col])))[:n]


def ms(v):
    return "" if v is None else "%.4f" % v


def clock(v):
    return "" if v in (None, "") else str(v)


REFERENCES = {
    "solver": "a clean process per solver, every shape in turn (as the layer's Python per solver)",
    "solver-burst": "a clean process per solver, every shape in turn, bursts only",
    "shape": "a clean process per solver and shape (a fork of a parent that imported torch and "
             "never touched CUDA), bursts only",
}


OUTPUTS = {
    "dropped": "dropped on return (the next call gets the same block)",
    "kept": "kept until the next call's replaces it (`y = f(x)` in a loop)",
}


def report(run_dir, table, versions, reference):
    lines = ["# The torch layer against PyTorch in clean processes", "",
             "Run: `%s`; PyTorch %s, cuDNN %s, on %s. The torch layer's `median_ms` (warm, its "
             "`timing_method`) and `call_median_ms` against PyTorch in %s, "
             "timed in the same regime (a rested card, the row's samples: "
             "`benches/peer/torch_layer_fidelity.py`; each call's output %s), a second clean process for "
             "PyTorch's own spread, and (per solver) PyTorch's sustained graph of %d calls, with the SM "
             "clock of each side." % (
                 run_dir, versions.get("torch"), versions.get("cudnn"), versions.get("device"),
                 REFERENCES[reference], OUTPUTS[OUTPUT], GRAPH_CALLS), "",
             ("Diagnostics: %d MiB %s before each shape's inputs; rows under %s ms only." % (PAD_MIB, PAD_KIND, MAX_MS)
              if PAD_MIB or MAX_MS != float("inf") else ""), "",
             "| op | solver | figure | shapes | lowest | highest | geometric mean | outside target "
             "| outside target and PyTorch's own spread |",
             "|---|---|---|---|---|---|---|---|---|"]
    for op, solver in sorted({(t["op"], t["solver"]) for t in table}):
        mine = [t for t in table if (t["op"], t["solver"]) == (op, solver)]
        for fig, col, target, spread in FIGURES:
            if any(t[col] is None for t in mine):
                continue
            n, lo, hi, geo, out, beyond = summary(
                [t[col] for t in mine], target, [t[spread] for t in mine] if spread else None)
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s (beyond %d%%) | %s |" % (
                op, solver, fig, n, lo, hi, geo, out, round(target * 100), beyond))
    lines += ["", "Shape by shape: `fidelity.csv`. Worst launch-free ratios (same regime):", "",
              "| op | solver | shape | dtype | layer ms | MHz | PyTorch ms | MHz | ratio | PyTorch again | "
              "sustained ms | MHz | method |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for t in worst(table, "ratio", 12):
        lines.append("| %s | %s | %s | %s | %.4f | %s | %.4f | %s | %.3f | %.3f | %s | %s | %s |" % (
            t["op"], t["solver"], t["shape"], t["dtype"], t["layer_ms"], clock(t["layer_clock"]),
            t["pytorch_ms"], clock(t["pytorch_clock"]), t["ratio"], t["pytorch_spread"],
            ms(t["pytorch_sustained_ms"]), clock(t["sustained_clock"]), t["timing_method"]))
    lines += ["", "Worst per-call ratios (same regime):", "",
              "| op | solver | shape | dtype | layer call ms | PyTorch call ms | ratio | PyTorch again |",
              "|---|---|---|---|---|---|---|---|"]
    for t in worst(table, "call_ratio", 8):
        lines.append("| %s | %s | %s | %s | %.4f | %.4f | %.3f | %.3f |" % (
            t["op"], t["solver"], t["shape"], t["dtype"], t["layer_call_ms"], t["pytorch_call_ms"],
            t["call_ratio"], t["pytorch_call_spread"]))
    return lines


def compare(run_dir, out_dir, reference="solver"):
    os.makedirs(out_dir, exist_ok=True)
    mine = list(rows(run_dir))
    solvers = sorted({r["solver"] for r in mine})
    if reference == "shape":
        first, second, versions = clean_shapes(run_dir, out_dir, solvers)
    else:
        first, second, versions = clean_runs(run_dir, out_dir, solvers, reference == "solver-burst")
    table = table_rows(mine, first, second)
    with open(os.path.join(out_dir, "fidelity.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(table[0].keys()) if table else ["op"])
        w.writeheader()
        w.writerows(table)
    lines = report(run_dir, table, versions, reference)
    with open(os.path.join(out_dir, "fidelity.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def layer_gaps(run_dir):
    """(ms the torch layer's device rested between two samples of a unit, ms a sample took), from
    the worker logs of a run made with ROCSWEEP_TORCH_TRACE=1."""
    gaps, busy = [], []
    for root, _, files in os.walk(os.path.join(run_dir, "workers")):
        for name in sorted(files):
            last_end = None
            with open(os.path.join(root, name), errors="replace") as f:
                for line in f:
                    if " prepares " in line:
                        last_end = None
                    if "rocsweep torch worker: run k=" not in line:
                        continue
                    fields = dict(x.split("=", 1) for x in line.split() if "=" in x)
                    start, end = float(fields["start"]), float(fields["end"])
                    busy.append((end - start) * 1e3)
                    if last_end is not None:
                        gaps.append((start - last_end) * 1e3)
                    last_end = end
    return gaps, busy


def duty(run_dir, out_dir):
    """The long calls of torch-matmul: the layer's time against PyTorch's burst with the host idle
    0 to 30 ms between samples, beside the gaps the layer's own trace shows."""
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, "duty-torch-matmul.json")
    subprocess.run([sys.executable, os.path.abspath(__file__), "--duty-clean", "torch-matmul", run_dir, out],
                   check=True)
    with open(out) as f:
        got = json.load(f)
    gaps, busy = layer_gaps(run_dir)
    q = lambda v, p: sorted(v)[int(p * (len(v) - 1))] if v else float("nan")  # noqa: E731
    lines = ["# The torch layer's rests between samples, and PyTorch's long calls with rests", "",
             "Layer trace (`ROCSWEEP_TORCH_TRACE`): %d gaps between samples of a unit: median %.3f ms, "
             "p10 %.3f, p90 %.3f; a sample took median %.3f ms." % (
                 len(gaps), q(gaps, .5), q(gaps, .1), q(gaps, .9), q(busy, .5)), "",
             "| shape | dtype | layer ms | " + " | ".join("PyTorch, %g ms rests" % g for g in DUTY_GAPS_MS) + " |",
             "|---|---|---|" + "---|" * len(DUTY_GAPS_MS)]
    for r in rows(run_dir):
        m = got.get(key(r))
        if not m:
            continue
        layer = float(r["median_ms"])
        lines.append("| %s | %s | %.4f | %s |" % (shape_of(r), r["dtype"], layer, " | ".join(
            "%.4f (%.3f)" % (m["%g" % g], layer / m["%g" % g]) for g in DUTY_GAPS_MS)))
    with open(os.path.join(out_dir, "duty.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def placements(out_md, table_dirs):
    """The layer against PyTorch over several placements: per row, PyTorch's lowest and highest
    figure over the tables (each a reference run with its own FIDELITY_PAD_*, two clean
    processes each) and the layer over the nearest of them. Writes out_md."""
    tables = []
    for d in table_dirs:
        with open(os.path.join(d, "fidelity.csv"), newline="") as f:
            tables.append({(r["solver"], r["shape"], r["dtype"]): r for r in csv.DictReader(f)})
    first = tables[0]
    lines = ["# The torch layer against PyTorch over %d placements of its operands" % len(tables), "",
             "Tables: %s (the first with no pad); each gives two clean processes." % ", ".join(
                 "`%s`" % os.path.basename(os.path.normpath(d)) for d in table_dirs), "",
             "| solver | shape | dtype | layer us | PyTorch us, lowest-highest | PyTorch's spread "
             "| layer / first table | layer / nearest PyTorch figure |",
             "|---|---|---|---|---|---|---|---|"]
    beyond_first = beyond_nearest = 0
    for k in sorted(first, key=lambda k: float(first[k]["layer_ms"])):
        if not all(k in t for t in tables):
            continue
        layer = float(first[k]["layer_ms"])
        vals = [float(t[k][c]) for t in tables for c in ("pytorch_ms", "pytorch_again_ms")]
        near = min(vals, key=lambda v: abs(math.log(layer / v)))
        ratio_first = layer / float(first[k]["pytorch_ms"])
        beyond_first += abs(ratio_first - 1) > TARGET_GRAPH
        beyond_nearest += abs(layer / near - 1) > TARGET_GRAPH
        lines.append("| %s | %s | %s | %.2f | %.2f-%.2f | %.3f | %.3f | %.3f |" % (
            k[0], k[1], k[2], layer * 1e3, min(vals) * 1e3, max(vals) * 1e3, max(vals) / min(vals),
            ratio_first, layer / near))
    lines += ["", "Rows: %d; the layer beyond %d%% of the first table's PyTorch: %d; beyond %d%% of "
              "the nearest PyTorch figure over all placements: %d." % (
                  len(first), round(TARGET_GRAPH * 100), beyond_first, round(TARGET_GRAPH * 100), beyond_nearest)]
    with open(out_md, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv):
    if len(argv) == 5 and argv[1] == "--clean":
        clean(argv[2], argv[3], argv[4])
        return 0
    if len(argv) == 5 and argv[1] == "--clean-burst":
        clean(argv[2], argv[3], argv[4], burst_only=True)
        return 0
    if len(argv) == 5 and argv[1] == "--duty-clean":
        clean(argv[2], argv[3], argv[4], DUTY_GAPS_MS)
        return 0
    if len(argv) == 4 and argv[1] == "--duty":
        duty(argv[2], argv[3])
        return 0
    if len(argv) == 3:
        compare(argv[1], argv[2])
        return 0
    if len(argv) >= 5 and argv[1] == "--placements":
        placements(argv[2], argv[3:])
        return 0
    if len(argv) == 4 and argv[1] in ("--per-shape", "--burst-only"):
        compare(argv[2], argv[3], "shape" if argv[1] == "--per-shape" else "solver-burst")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

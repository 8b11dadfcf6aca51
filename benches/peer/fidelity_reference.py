#!/usr/bin/env python3
"""PyTorch itself in a clean process, timed the way a rocsweep unit runs: the reference of
torch_layer_fidelity.py (issue 42's benchmark; not a timed test).

usage: fidelity_reference.py --clean SOLVER RUN_DIR OUT.json        (one solver's clean process)
       fidelity_reference.py --clean-burst SOLVER RUN_DIR OUT.json  (the same, bursts only)
       fidelity_reference.py --duty-clean SOLVER RUN_DIR OUT.json   (bursts with rests: --duty)

For each ok torch row of RUN_DIR whose solver is SOLVER, the process sets what the torch layer
sets for that solver (cudnn.benchmark = True for torch-benchmark, False for torch-default; TF32
off unless the case's compute is tf32; the BLAS preference of `torch-matmul+BLAS`), makes the
shape's inputs (uniform in [-1, 1), drawn in f32 on the host, rounded to the dtype and copied to
the device, as rocsweep's), and measures PyTorch's own, per shape:
- same regime (the target's reference): a short burst as a rocsweep unit is: the first call
  alone behind a spin, a rest of 0.5 s (the layer's device rests 0.1-1 s there while the first
  output is checked: `--duty`), then `warmup` + `samples` samples (the row's counts) back to
  back; each sample is three calls between events made back to back (the per-call figure: the
  third's), then a CUDA graph of K calls (K = ceil(0.2 ms / the last sample's time per call);
  one call is queued uncaptured; the graph is kept while K stays within a factor of two of the
  calls it holds, one graph alive at a time, FIDELITY_GRAPHS) replayed behind a spin kernel
  (torch.cuda._sleep): time / the calls it holds;
  medians of the samples. Written here from the sampling rule (src/timing.rs, docs/backends.md),
  not imported from the worker. Every shape's burst comes first (as the layer's units follow one
  another), the figures below in a second pass;
- sustained (the issue's graph20): 20 calls captured in a CUDA graph, a warm replay, then a
  replay between two events queued behind it: time / 20, median of 20 replays, or of as many
  as last two seconds, at least 3 (seconds of back to back work for a large GEMM: the card
  reaches its power limit and lowers its clock);
- per call, 30 back to back: one call between two events, the median of 30.
Each figure carries the SM clock (NVML) read after it, as rocsweep's rows carry `clock_mhz`.
`forked` runs one shape alone in a process of its own (torch_layer_fidelity.py --per-shape).

FIDELITY_NVML=off: no SM clock is read (NVML never opened in the process; the clock columns
empty).

FIDELITY_WARMUP=side: the call before each capture runs on a side stream (PyTorch's capture
recipe; this script's way before 2026-11-30) instead of the current stream (default, as the
torch worker).

FIDELITY_OUTPUT=kept: each call's output is kept until the next call's replaces it, as
`y = f(x)` in a loop does and as the torch layer does (its op holds its result); `dropped`
(default): each output is freed as the call returns. FIDELITY_PAD_MIB, FIDELITY_PAD_KIND,
FIDELITY_MAX_MS and FIDELITY_CASES: diagnostics, below.
"""
import csv
import gc
import json
import math
import os
import statistics
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
# FIDELITY_CASES=ID,ID...: only the rows of those case ids (a few shapes looked at again).
CASES = {c for c in os.environ.get("FIDELITY_CASES", "").split(",") if c}
# FIDELITY_KERNELS=PATH: each burst sample's device kernels (torch.profiler) appended to PATH as
# one JSON line, as the torch worker's ROCSWEEP_TORCH_KERNELS writes the layer's
# (benches/peer/kernel_table.py holds the two side by side).
KERNELS = os.environ.get("FIDELITY_KERNELS")
# How many graphs a burst keeps alive: `one` (default), as the torch worker: the graph of K calls
# is kept while the K asked for stays within a factor of two of the calls it holds, else freed
# and captured anew; `every`: a graph per K asked for, all kept until the burst ends (what this
# script did before 2026-11-30: replays of a second or third graph alive in the process ran
# 0.2-0.3 us slower per kernel boundary, reports/h200/torch-layer/kernels/).
GRAPHS = os.environ.get("FIDELITY_GRAPHS", "one")
# Where the call before each capture runs: `current` (default), the current stream, as the torch
# worker does; `side`, a side stream of its own, as PyTorch's capture recipe does (and as this
# script did before 2026-11-30: every graph after a process's first then replays 0.2-0.3 us
# slower per kernel boundary, reports/h200/torch-layer/recapture/).
WARMUP_ON = os.environ.get("FIDELITY_WARMUP", "current")
# FIDELITY_NVML=off: the SM clock is not read (see clean()).
NVML = os.environ.get("FIDELITY_NVML", "on")
# --duty: the host's idle time between samples tried (ms), on calls at least this long (ms).
DUTY_GAPS_MS = (0, 1, 3, 10, 30)
DUTY_MIN_MS = 0.1


def rows(run_dir):
    with open(os.path.join(run_dir, "results.csv"), newline="") as f:
        for r in csv.DictReader(f):
            if r["backend"] == "torch" and r["status"] == "ok" and r["median_ms"] \
                    and float(r["median_ms"]) < MAX_MS and (not CASES or r["case_id"] in CASES):
                yield r


def key(r):
    return r["case_id"] + "|" + r["solver"]


def make_call(torch, solver, r):
    """The row's call as the torch layer makes it for `solver` (its flags set), on fresh inputs;
    None for what the reference does not time (a conv other than forward)."""
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

    if r["op"] == "conv2d":
        return conv(r)
    if r["op"] == "gemm":
        return gemm(r)
    return None


def holding(fn):
    """fn, its output kept until the next call's replaces it, as `y = f(x)` in a loop keeps
    it (OUTPUT=kept; the caching allocator then alternates two output blocks)."""
    out = [None]

    def call():
        out[0] = fn()
    return call


def shapes(torch, solver, run_dir, only):
    """(row, call) for each row of `solver` in the run (of `only`'s keys where given), with
    FIDELITY_PAD_*'s pad held (or freed) while its inputs are made."""
    for r in rows(run_dir):
        if r["solver"] != solver or (only is not None and key(r) not in only):
            continue
        # The last shape's call, its output and its graphs freed, and their memory handed back,
        # before this shape's inputs are made, as the torch worker does between units
        # (gc.collect, empty_cache). On the H200 this alone did not narrow the 0.3-0.4 us gaps
        # between kernels of PyTorch's later graphs in a process (reports/h200/torch-layer/
        # kernels/4-full-burst/); it keeps the two sides' processes alike.
        gc.collect()
        torch.cuda.empty_cache()
        pad = torch.zeros(PAD_MIB << 20, dtype=torch.uint8, device="cuda") if PAD_MIB else None
        if PAD_KIND == "freed":
            pad = None
        fn = make_call(torch, solver, r)
        if fn is not None:
            yield r, holding(fn) if OUTPUT == "kept" else fn
        del pad
        fn = None


def recorded(torch, work, label):
    """(launch-free ms, per-call ms) of work(), which also returns the calls it ran; with
    FIDELITY_KERNELS set, the device kernels it ran (name, start and duration in us, in order)
    appended to that file as one JSON line with `label` and those calls (the profiler slows the
    host; the kernels' own durations are the device's)."""
    if not KERNELS:
        return work()[:2]
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        result = work()
        torch.cuda.synchronize()
    kernels = [[e.name, e.time_range.start, e.time_range.elapsed_us()]
               for e in prof.events() if e.device_type.name != "CPU"]
    kernels.sort(key=lambda e: e[1])
    line = dict(label, calls=result[2], method="graph" if label["k"] > 1 else "held",
                device_s=result[0] / 1e3, kernels=kernels)
    with open(KERNELS, "a") as f:
        f.write(json.dumps(line) + "\n")
    return result[:2]


class Timer:
    """The reference's timing on the current stream: a spin kernel, graphs, bursts."""

    def __init__(self, torch, sm_clock_mhz):
        self.torch = torch
        self.sm_clock_mhz = sm_clock_mhz  # NVML's SM clock, None where it cannot be read
        self.cycles = []

    def ev(self):
        return self.torch.cuda.Event(enable_timing=True)

    def spin_ms(self, ms):
        """A spin kernel of about `ms` on the current stream (torch.cuda._sleep counts cycles)."""
        if not self.cycles:
            a, b = self.ev(), self.ev()
            self.torch.cuda._sleep(1000)
            a.record()
            self.torch.cuda._sleep(2_000_000)
            b.record()
            b.synchronize()
            self.cycles.append(2_000_000 / a.elapsed_time(b))
        self.torch.cuda._sleep(int(ms * self.cycles[0]))

    def capture(self, fn, calls):
        """fn's calls captured in a graph, after one call outside it on the current stream (a
        call on a side stream, PyTorch's capture recipe, leaves the process's later graphs
        replaying slower: reports/h200/torch-layer/recapture/; FIDELITY_WARMUP=side does it)."""
        if WARMUP_ON == "side":
            side = self.torch.cuda.Stream()
            side.wait_stream(self.torch.cuda.current_stream())
            with self.torch.cuda.stream(side):
                fn()
            self.torch.cuda.current_stream().wait_stream(side)
        else:
            fn()
        self.torch.cuda.synchronize()
        g = self.torch.cuda.CUDAGraph()
        with self.torch.cuda.graph(g):
            for _ in range(calls):
                fn()
        g.replay()
        self.torch.cuda.synchronize()
        return g

    def held_ms(self, enqueue):
        """Device ms of what enqueue() queues, queued behind a spin that outlasted the queueing:
        0.2 ms, four times longer while it ended first (as the torch worker's `held`: a figure
        taken after the spin ran out would hold the host's launch time; an uncaptured call just
        after its first, cuDNN's plan set up, can take longer than 0.2 ms to queue)."""
        ms = 0.2
        for _ in range(6):
            held, a, b = self.ev(), self.ev(), self.ev()
            self.spin_ms(ms)
            held.record()
            a.record()
            enqueue()
            b.record()
            released_late = not held.query()
            b.synchronize()
            if released_late:
                return a.elapsed_time(b)
            ms *= 4
        raise RuntimeError("the spin kernel ended before the calls were queued (6 tries)")

    def burst(self, fn, warmup, samples, gap_s=0.0, label=None):
        """(launch-free ms, per-call ms, SM clock): rocsweep's regime, see the docstring; gap_s:
        the host idles that long before each sample (--duty); label: the row's, for
        FIDELITY_KERNELS."""
        graphs, times, call = {}, [], []

        def graph_for(k):
            """(graph, calls it holds) for a sample of k calls, by GRAPHS' rule."""
            if GRAPHS == "every":
                if k not in graphs:
                    graphs[k] = self.capture(fn, k)
                return graphs[k], k
            held = next(iter(graphs), None)
            if held is not None and held // 2 <= k <= held * 2:
                return graphs[held], held
            graphs.clear()  # the old graph freed before the new one is captured
            graphs[k] = self.capture(fn, k)
            return graphs[k], k

        def sample(k):
            for _ in range(CALLS_IN_A_ROW):
                a, b = self.ev(), self.ev()
                a.record()
                fn()
                b.record()
                b.synchronize()
            if k > 1:
                g, calls = graph_for(k)
                return self.held_ms(g.replay) / calls, a.elapsed_time(b), calls
            return self.held_ms(fn), a.elapsed_time(b), 1

        # The layer's first sample is the first call alone (its `first_call_ms`: a sample of one
        # call, the three between events first), which sets K; then its device rests while the
        # call's output is checked (0.1 to 1 s on the H200's GEMM sweep, ROCSWEEP_TORCH_TRACE),
        # and the samples follow back to back.
        last = sample(1)[0]
        time.sleep(REST_S)
        for i in range(warmup + samples):
            if gap_s:
                time.sleep(gap_s)
            k = max(1, min(MAX_CALLS, math.ceil(TARGET_SAMPLE_MS / last)))
            if k > 1:
                graph_for(k)  # captured outside the profiler, as the torch worker does
            last, one = recorded(self.torch, lambda: sample(k), dict(label or {}, k=k))
            if i >= warmup:
                times.append(last)
                call.append(one)
        graphs.clear()
        return statistics.median(times), statistics.median(call), self.sm_clock_mhz()

    def sustained(self, fn, per_call):
        """(ms, SM clock): the issue's graph20, see the docstring; per_call: about its ms per call."""
        g = self.capture(fn, GRAPH_CALLS)
        times = []
        # At least two seconds of back to back replays where 20 replays take less; three where
        # one call is long (a 21 ms f32 GEMM: 2.5 s).
        reps = max(3, min(GRAPH_REPS, math.ceil(2000 / (2 * GRAPH_CALLS * max(per_call, 1e-3)))))
        for _ in range(reps):
            a, b = self.ev(), self.ev()
            g.replay()
            a.record()
            g.replay()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) / GRAPH_CALLS)
        del g
        return statistics.median(times), self.sm_clock_mhz()


def duty_pass(torch, timer, calls, gaps):
    """--duty: the long calls' bursts again with the host idle between samples."""
    result = {}
    for r, fn in calls:
        if float(r["median_ms"]) < DUTY_MIN_MS:
            continue
        samples = max(1, int(r.get("samples") or 5))
        for gap in gaps:
            torch.cuda.synchronize()
            time.sleep(REST_S)
            fn()
            torch.cuda.synchronize()
            result.setdefault(key(r), {})["%g" % gap] = timer.burst(fn, WARMUP, samples, gap / 1e3)[0]
        del fn
        torch.cuda.empty_cache()
    return result


def clean(solver, run_dir, out, gaps=None, only=None, burst_only=False):
    """One clean process's figures for `solver` (see the docstring), written to `out`; gaps: the
    --duty pass instead; only: the keys of the shapes to time (all when None); burst_only: the
    same-regime burst alone, no sustained pass."""
    import torch
    from lt_ctypes import sm_clock_mhz  # NVML's SM clock, None where it cannot be read
    from peer_times import per_call_ms  # one call between events, the median of reps

    # FIDELITY_NVML=off: no SM clock read (NVML is never opened in this process), to see whether
    # reading it after each burst changes the next shape's figures (the torch worker's Python
    # never opens NVML).
    timer = Timer(torch, (lambda: None) if NVML == "off" else sm_clock_mhz)
    if gaps is not None:
        with open(out, "w") as f:
            json.dump(duty_pass(torch, timer, shapes(torch, solver, run_dir, only), gaps), f)
        return

    # Two passes, as the layer's units follow one another: first every shape's burst, then
    # the sustained and back-to-back figures (seconds of work at the power limit, which would
    # leave the next shape's burst on a capped clock).
    result = {}
    for r, fn in shapes(torch, solver, run_dir, only):
        fn()
        torch.cuda.synchronize()
        samples = max(1, int(r.get("samples") or 5))
        burst_ms, burst_call_ms, burst_clock = timer.burst(fn, WARMUP, samples,
                                                           label={"case": key(r), "solver": solver})
        result[key(r)] = {"burst_ms": burst_ms, "burst_call_ms": burst_call_ms, "burst_clock": burst_clock}
        del fn
        torch.cuda.empty_cache()
    for r, fn in ([] if burst_only else shapes(torch, solver, run_dir, only)):
        fn()
        torch.cuda.synchronize()
        m = result[key(r)]
        m["graph_ms"], m["graph_clock"] = timer.sustained(fn, m["burst_ms"])
        m["call30_ms"] = per_call_ms(fn, CALL_REPS)
        del fn
        torch.cuda.empty_cache()
    result["_versions"] = {"torch": torch.__version__, "cudnn": str(torch.backends.cudnn.version()),
                           "device": torch.cuda.get_device_name(0)}
    with open(out, "w") as f:
        json.dump(result, f)


def in_fork(work):
    """work() in a clean process: a fork of this one, which imported torch and never touched
    CUDA (a child may initialise CUDA only then); its exit status (0: work returned; its
    traceback on stderr where it raised)."""
    import torch  # noqa: F401  (imported once here, not in every child)
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            work()
        except BaseException:
            import traceback
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def forked(solver, run_dir, out, k):
    """Shape `k` alone in a clean process (in_fork), timing the burst and nothing else."""
    status = in_fork(lambda: clean(solver, run_dir, out, only={k}, burst_only=True))
    if status != 0:
        raise RuntimeError("the clean process for %s (%s) failed: status %d" % (k, solver, status))
    with open(out) as f:
        return json.load(f)


def main(argv):
    modes = {"--clean": {}, "--clean-burst": {"burst_only": True}, "--duty-clean": {"gaps": DUTY_GAPS_MS}}
    if len(argv) == 5 and argv[1] in modes:
        clean(argv[2], argv[3], argv[4], **modes[argv[1]])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

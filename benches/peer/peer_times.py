#!/usr/bin/env python3
"""PyTorch's times for every distinct shape of a rocsweep run, measured the way rocsweep measures,
in the same device command.

usage: peer_times.py [--rotating-mib N] [--graph-protocol held|upload|warm] RUN_DIR OUT.csv
       peer_times.py --cublaslt RUN_DIR OUT.csv   (the second GEMM pass, started by the first)
       peer_times.py --pristine RUN_DIR OUT.csv   (the pristine pass: adds its columns to OUT.csv)
       peer_times.py --pristine-one RUN_DIR KEY  (one shape of it, started by --pristine)

Launch-free time (torch_ms, torch_lt_ms): rocsweep's protocol repeated sample for sample
(`mirror`), so that both sides have the same K and the same duty cycle:
- K (calls per CUDA graph) by rocsweep's rule, ceil(TARGET_MS / t) clamped to [1, MAX_K]
  (TARGET_SAMPLE_S and MAX_CALLS_PER_SAMPLE in src/timing.rs), with t PyTorch's launch-free
  device time per call (a graph of 2 calls, the timed replay queued behind a warm one, median of
  3), not its per-call time: on PyTorch's cuBLASLt path one call between two events holds a
  heuristic query on the host (0.13-0.18 ms), which gave K = 2 for small shapes.
- per unit, as rocsweep's unit (src/exec/worker/unit.rs, src/timing.rs `measure`,
  src/backend/engine/timer.rs `timed`): an idle of IDLE_S (rocsweep's unit setup: inputs made
  on the CPU, upload, verification, 0.03 to 1.4 s in the committed runs), a first call (two calls,
  as rocsweep's Batch::Single), the SM clock (NVML), `warmup` samples, then samples until
  min_samples are in and either their measured time reaches max_time or their relative stdev is
  at most target_noise (max_samples at most): the [timing] of the run's manifest.json. One
  sample: one call between two events (the per-call figure), K calls captured into a new graph
  and instantiated, then as --graph-protocol says (PEER_GRAPH_PROTOCOL; lt_ctypes.GRAPH_PROTOCOLS):
  - held (the default, rocsweep's `graphed` since a4330ed): the graph uploaded on the timing
    stream (cuGraphUpload on CUDAGraph.raw_cuda_graph_exec(), through ctypes), the stream held by
    a spin kernel (torch.cuda._sleep, HELD_US), then the one timed replay queued behind it:
    launch-free, and no warm replay (rocsweep holds the stream with its blocking kernel);
  - upload (rocsweep's at 41f8d8c only): uploaded, then replayed once between two events, no warm
    replay. The start event fires on an idle stream, so the interval holds the replay's launch
    from Python: 7 to 15 us per graph on the H200 (reports/h200/timing/gemm-fidelity-5);
  - warm (rocsweep's before 41f8d8c, as gemm-fidelity-4 and earlier reports were measured): one
    warm replay, the timed replay queued behind it;
  time / K. Where upload cannot be done (no raw_cuda_graph_exec, or cuGraphUpload fails) the
  sample falls back to warm and the protocol column says so. The SM clock
  again after the samples; the unit's clock is the lower of the two, as rocsweep's clock_mhz.
- trials: the whole list of shapes is measured `trials` times (rocsweep's default 3, each a pass
  over its plan), and a shape's figure is its median trial's median, as rocsweep's row.
The earlier protocol (K from the per-call time, 5 warm-up calls, 30 per-call samples, a graph
timed 20 times back to back) is still measured after the trials, as torch_old_ms (queued) and
torch_idle_ms (from an idle stream), for comparison with the earlier tables.

conv2d rows (forward, NCHW) use cuDNN in benchmark mode with TF32 off (PyTorch's pick: it times
up to torch.backends.cudnn.benchmark_limit engine configurations), on operands drawn as rocsweep's
(`conv_fn`; PEER_CONV_OPERANDS=torch for PyTorch's own). A convolution returns a new
tensor per call (PyTorch has no out= for it), but each is dropped at once, so the capture's
private pool hands every call the same block: the graph writes one output buffer, as rocsweep's
does (conv_kernels.py prints the addresses; one address on the H200,
reports/h200/timing/side-by-side/cmd4).

gemm rows use torch.matmul into one preallocated output, TF32 only where the case's compute is
tf32, operands uniform in [-1, 1) as rocsweep's (src/op/inputs.rs), and are timed twice:
- torch_*: PyTorch's pick, i.e. its defaults as installed (the preferred BLAS library it ships
  with, cuBLAS's workspace as PyTorch sizes it). "rocsweep's best against PyTorch" is measured
  against this.
- torch_lt_*: the same algorithm as rocsweep's `lt#0`, for the fidelity check. A child process
  (this script with --cublaslt) sets torch.backends.cuda.preferred_blas_library("cublaslt"), so
  torch.matmul calls cublasLtMatmul with the first algorithm of cublasLtMatmulAlgoGetHeuristic,
  and offers the heuristic the workspace that rocsweep offers it (64 MiB, WORKSPACE in
  src/backend/cuda/gemm.rs): CUBLASLT_WORKSPACE_SIZE in KiB, and CUBLAS_WORKSPACE_CONFIG as
  large, since PyTorch caps its cuBLASLt workspace at the cuBLAS one. That pass also times, on the
  same operands and in the same way:
  - torch_lt_kr_ms: PyTorch on cuBLASLt with rocsweep's own K for its lt#0 unit (rocsweep's rule
    applied to that unit's call_median_ms), where it differs from PyTorch's K;
  - rep_*: rocsweep's call made from Python (ctypes on the cuBLASLt library PyTorch loaded):
    the descriptors, 64 MiB heuristic workspace and first heuristic algorithm of
    src/backend/cuda/gemm.rs, one cublasLtMatmul per call with no per-call host work, timed
    with PyTorch's K (so that it and PyTorch differ only in the call).
    rep_chosen names that algorithm as rocsweep's `chosen` column does (id, tile, stages,
    split-K), rep_config its whole configuration (split-K, reduction scheme, swizzle, custom
    option, cluster shape) and workspace; rep_kernels are the kernels it ran (torch.profiler),
    *_launches their grids and blocks, to set beside PyTorch's kernels and rocsweep's `chosen`;
    rep_err is its largest difference from torch.matmul;
  - the placement and timing-loop variants (VARIANTS; PEER_VARIANTS=0 leaves them out): PyTorch's
    matmul and the replica on operands from the driver's default memory pool (cuMemAllocAsync,
    in a rocsweep unit's order, as cudarc allocates them; *_pool) instead of PyTorch's caching
    allocator, and each timed in rocsweep's own loop through the driver API (lt_ctypes.DriverUnit,
    rocsweep's K; *_drv) instead of Mirror. torch_addrs and pool_addrs give the operands' places.
--pristine (run after the two passes, from a parent that never initialises CUDA): each GEMM shape
in a fresh process whose first device memory is the shape's workspace and operands, placed as a
rocsweep unit places them (`pristine_one`); PyTorch's matmul and rocsweep's call on them, in both
loops, and rocsweep's call with B moved to 6 other places (pristine_spread_ms).
rocsweep's call and loop need no PyTorch: they live in lt_ctypes.py (lt_bare.py runs them in
processes without it).
--rotating-mib N (GEMM only; both passes; no placement variants, no pristine pass): rotating operands
as rocsweep's `[timing] rotating_mib` (src/backend/cuda/gemm.rs `rotate_inputs`, src/timing.rs
`rotating_sets`): the operands and copies of A and B, ceil(N MiB / (A + B bytes)) sets in all
(1 to 256), and consecutive calls use them in turn, the turn carried across samples and units of
one shape (rocsweep's `next`): each call of a captured graph of K calls holds the next set, the
per-call sample takes one, and the timed replay of a sample runs those K sets (with --graph-protocol
warm, the warm replay runs the same K sets first: a set fits in L2 where K sets do). All
calls write the one output C, as rocsweep's. PyTorch's matmul and the replica use the same sets
(each its own turn); rot_sets records the count. It reaches the --cublaslt child through
PEER_ROTATING_MIB.
Both passes (and the conv pass) record the kernels one call ran and the device timeline of one
graph replay of K calls (torch.profiler, after all timing: device-busy time per call, device activities per call,
mean gap between consecutive activities), and the workspace PyTorch allocated for a first small
matmul.
"""
import csv
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time

import torch

from lt_ctypes import (GRAPH_PROTOCOLS, HELD_US, IDLE_S, KEYS, LT_WORKSPACE_KIB, MAX_K, TARGET_MS, DriverUnit, _lt,
                       _matmul_fn, _plan, device_activities, key_of, driver, graph_protocol, k_rule, median_trial, policy_of, sm_clock_mhz)

DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
LT_ENV = {"CUBLASLT_WORKSPACE_SIZE": str(LT_WORKSPACE_KIB),
          "CUBLAS_WORKSPACE_CONFIG": f":4096:{LT_WORKSPACE_KIB // 4096}"}
PASS_FIELDS = ["ms", "trial_ms", "k", "probe_ms", "samples", "clock_mhz", "call_ms", "old_ms",
               "idle_ms", "old_k", "old_clock_mhz", "blas", "kernels", "busy_us", "acts_per_call",
               "gap_us", "protocol"]
# The placement and timer variants of the cuBLASLt pass (see the module docs): the call (PyTorch's
# matmul or rocsweep's replica), where its operands live (PyTorch's caching allocator or the
# driver's default memory pool, as rocsweep's), and whose timing loop (peer_times' Mirror or
# rocsweep's own through the driver API, `DriverUnit`).
VARIANTS = ["torch_lt_pool", "rep_pool", "rep_drv", "rep_drv_pool", "torch_lt_drv", "torch_lt_drv_pool"]
LT_ONLY = (["torch_lt_kr", "torch_lt_kr_ms", "torch_lt_kr_trial_ms", "rep_ms", "rep_trial_ms",
            "rep_k", "rep_clock_mhz", "rep_chosen", "rep_kernels", "rep_err", "rep_lib"]
           + [f"{v}_{f}" for v in VARIANTS for f in ("ms", "trial_ms", "clock_mhz")]
           + ["drv_k", "rep_config", "rep_pool_err", "torch_lt_pool_err", "rep_pool_kernels",
              "torch_lt_launches", "rep_launches", "rep_pool_launches", "torch_addrs", "pool_addrs"])
# The pristine pass (`pristine_one`): one fresh process per GEMM shape whose first device memory is
# the shape's workspace and operands, from the driver's default pool in a rocsweep unit's order.
PRISTINE = ["rep_pristine", "torch_lt_pristine", "torch_lt_pristine_drv", "rep_pristine_mirror"]
PRISTINE_ONLY = ([f"{v}_{f}" for v in PRISTINE for f in ("ms", "trial_ms", "clock_mhz")]
                 + ["pristine_k", "pristine_drv_k", "pristine_addrs", "pristine_same_output",
                    "pristine_spread_ms", "pristine_spread_addrs"])
FIELDS = (["op", "key", "rot_mib", "rot_sets"] + [f"torch_{f}" for f in PASS_FIELDS] + [f"torch_lt_{f}" for f in PASS_FIELDS]
          + LT_ONLY + PRISTINE_ONLY)


def is_lt0(solver):
    """cuBLASLt's first heuristic algorithm in a rocsweep run: `lt#0-algo<id>` where the sweep asks
    for every algorithm (`solver = "all"`), `lt#0` where it names that one alone."""
    return solver == "lt#0" or solver.startswith("lt#0-")


def rocsweep_lt0_k(run_dir):
    """rocsweep's K for its lt#0 unit per GEMM key: its rule applied to the unit's call_median_ms
    (each of its samples takes K from that sample's own call; the median call gives the usual K)."""
    out = {}
    for r in csv.DictReader(open(f"{run_dir}/results.csv")):
        if r["op"] == "gemm" and is_lt0(r["solver"]) and r.get("call_median_ms"):
            out[key_of(r, "gemm")] = k_rule(float(r["call_median_ms"]))
    return out


# rocsweep's [timing] rotating_mib for GEMM (--rotating-mib N, or PEER_ROTATING_MIB in the child).
ROTATING_MIB = int(os.environ.get("PEER_ROTATING_MIB", "0") or 0)


def run_rotating_mib(run_dir):
    """The rocsweep run's [timing] rotating_mib (0 where its manifest has none)."""
    try:
        return int(json.load(open(f"{run_dir}/manifest.json"))["policies"]["timing"].get("rotating_mib", 0))
    except (OSError, KeyError, ValueError, TypeError):
        return 0


def rotating_sets(nbytes, set_bytes):
    """rocsweep's rotating_sets (src/timing.rs): how many input sets (the original and its copies)
    make up `nbytes` of rotating inputs of `set_bytes` each, at least 1 and at most 256."""
    if nbytes == 0 or set_bytes == 0:
        return 1
    return max(1, min(256, -(-nbytes // set_bytes)))


def rotation(ops):
    """[(a, b), ...]: the operands and ROTATING_MIB's copies of A and B (rocsweep's rotate_inputs:
    copies holding the same bits, made once per unit), the original first."""
    a, b = ops[0], ops[1]
    n = rotating_sets(ROTATING_MIB << 20, a.numel() * a.element_size() + b.numel() * b.element_size())
    sets = [(a, b)] + [(a.clone(), b.clone()) for _ in range(n - 1)]
    torch.cuda.synchronize()
    return sets


def in_turn(fns):
    """One callable that runs fns[0], fns[1], ... in turn, the turn kept between calls (rocsweep's
    GemmRun::run: `sets[next % sets.len()]`, next += 1 per call); a single fn stays itself."""
    if len(fns) == 1:
        return fns[0]
    turn = [0]

    def f(*args):
        i = turn[0]
        turn[0] = i + 1
        return fns[i % len(fns)](*args)
    f.sets = len(fns)
    f.fns = fns
    return f


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


def capture(fn, calls):
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
    return g


def graph_ms(fn, calls, reps=20):
    """(queued, idle): a replay of a graph of `calls` calls, time / calls, median of `reps`.
    queued is rocsweep's protocol before 41f8d8c (src/backend/engine/timer.rs, graphed): the timed
    replay is queued behind a warm one, so the start event fires when the device reaches it and the
    interval holds no launch. idle times a replay from an idle stream, so the interval also holds
    the graph's launch latency, spread over its calls."""
    g = capture(fn, calls)
    queued, idle = [], []
    for _ in range(reps):
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
        g.replay()
        ev[0].record()
        g.replay()
        ev[1].record()
        ev[1].synchronize()
        ev[2].record()
        g.replay()
        ev[3].record()
        ev[3].synchronize()
        queued.append(ev[0].elapsed_time(ev[1]) / calls)
        idle.append(ev[2].elapsed_time(ev[3]) / calls)
    return statistics.median(queued), statistics.median(idle)


def probe_k(fn):
    """(device ms per call, K): a graph of 2 calls, the timed replay queued behind a warm one,
    median of 3; K by rocsweep's rule from that launch-free time."""
    t, _ = graph_ms(fn, 2, reps=3)
    return t, k_rule(t)


def old_protocol(fn):
    """The earlier protocol: K from the per-call time, 20 timed replays back to back."""
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    call = per_call_ms(fn)
    calls = k_rule(call)
    queued, idle = graph_ms(fn, calls)
    return queued, idle, call, calls, sm_clock_mhz()


_UPLOAD = []


def graph_upload(g, stream):
    """cuGraphUpload of a PyTorch CUDAGraph's executable graph on `stream` (a torch stream); raises
    where PyTorch does not expose the executable graph or the driver refuses."""
    if not _UPLOAD:
        f = ctypes.CDLL("libcuda.so.1").cuGraphUpload
        f.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        f.restype = ctypes.c_int
        _UPLOAD.append(f)
    rc = _UPLOAD[0](ctypes.c_void_p(int(g.raw_cuda_graph_exec())), ctypes.c_void_p(stream.cuda_stream))
    if rc != 0:
        raise RuntimeError(f"cuGraphUpload: CUresult {rc}")


class Mirror:
    """rocsweep's unit protocol (see the module docs) on a callable."""

    def __init__(self, policy, protocol=None):
        self.p = policy
        self.side = torch.cuda.Stream()
        self.protocol = protocol or graph_protocol()
        self.used = self.protocol  # what the samples did ("warm (fallback: ...)" where upload failed)

    def prime(self, fn):
        """Eager calls on the capture stream, so that nothing PyTorch makes per stream (BLAS
        workspaces) is first made inside a capture."""
        self.side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.side):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(self.side)
        torch.cuda.synchronize()

    def sample(self, fn, k):
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
        ev[0].record()
        fn()
        ev[1].record()
        ev[1].synchronize()
        call = ev[0].elapsed_time(ev[1])
        # Captured on the side stream (the current one is idle: its last event was waited for),
        # instantiated by capture_end, replayed on the current stream.
        g = torch.cuda.CUDAGraph()
        with torch.cuda.stream(self.side):
            g.capture_begin()
            for _ in range(k):
                fn()
            g.capture_end()
        stream = torch.cuda.current_stream()
        warm = self.protocol == "warm"
        if not warm:
            try:
                graph_upload(g, stream)
            except Exception as e:  # PyTorch without raw_cuda_graph_exec, or a driver refusal
                if not self.used.startswith("warm"):
                    print(f"WARNING: graph upload unavailable ({type(e).__name__}: {e}); warm replay instead",
                          flush=True)
                self.used = f"warm (fallback: {self.protocol} failed: {type(e).__name__})"
                warm = True
        if warm:
            g.replay()
        elif self.protocol == "held":
            torch.cuda._sleep(int(HELD_US * 2000))  # cycles at about 2 GHz
        ev[2].record()
        g.replay()
        ev[3].record()
        ev[3].synchronize()
        dev = ev[2].elapsed_time(ev[3]) / k
        del g
        return dev, call

    def unit(self, fn, k):
        """(median device ms, median per-call ms, samples, SM clock: the lower of before and
        after the samples)."""
        p = self.p
        torch.cuda.synchronize()
        time.sleep(IDLE_S)
        fn()
        fn()
        torch.cuda.synchronize()
        before = sm_clock_mhz()
        for _ in range(int(p["warmup"])):
            self.sample(fn, k)
        dev, calls, total = [], [], 0.0
        while True:
            d, c = self.sample(fn, k)
            dev.append(d)
            calls.append(c)
            total += max(d, c) / 1e3
            n = len(dev)
            if n >= int(p["max_samples"]):
                break
            if n >= int(p["min_samples"]):
                if total >= float(p["max_time"]):
                    break
                if float(p["target_noise"]) > 0 and n > 1:
                    mean = statistics.mean(dev)
                    if mean > 0 and statistics.stdev(dev) / mean <= float(p["target_noise"]):
                        break
        after = sm_clock_mhz()
        clocks = [x for x in (before, after) if x is not None]
        return statistics.median(dev), statistics.median(calls), len(dev), (min(clocks) if clocks else None)


def timeline(fn, calls):
    """The device activities (kernels, memsets, copies) of one replay of a graph of `calls`
    calls, from torch.profiler's trace: (busy us per call, activities per call, mean gap in us
    between consecutive activities)."""
    try:
        g = capture(fn, calls)
        g.replay()
        torch.cuda.synchronize()
        acts = device_activities(g.replay, ("kernel", "gpu_memset", "gpu_memcpy"))
        if not acts:
            return "", "", ""
        gaps = [b[0] - (a[0] + a[1]) for a, b in zip(acts, acts[1:])]
        return (f"{sum(d for _, d, _ in acts) / calls:.3f}", f"{len(acts) / calls:g}",
                f"{statistics.mean(gaps):.3f}" if gaps else "")
    except Exception as e:  # the table does without the timeline, never without times
        print("timeline failed:", type(e).__name__, e, flush=True)
        return "", "", ""


def conv_fn(r):
    """nn.Conv2d on x. Input and weights uniform in [-1, 1), drawn in f32 and rounded to the dtype,
    as rocsweep's (src/op/inputs.rs); PEER_CONV_OPERANDS=torch keeps PyTorch's own (x uniform in
    [-0.5, 0.5) drawn in the dtype, Kaiming-uniform weights), as the runs before 2026-11-24 05:40
    UTC were measured."""
    dt = DT[r["dtype"]]
    n, ci, co = int(r["n"]), int(r["c_in"]), int(r["c_out"])
    h, w, k = int(r["h"]), int(r["w"]), int(r["kernel"])
    conv = torch.nn.Conv2d(ci, co, k, stride=int(r["stride"]), padding=int(r["pad"]),
                           dilation=int(r["dilation"]), groups=int(r["groups"]), bias=False).to("cuda", dt)
    if os.environ.get("PEER_CONV_OPERANDS", "rocsweep") == "torch":
        x = torch.rand(n, ci, h, w, device="cuda", dtype=dt) - 0.5
    else:
        x = (torch.rand(n, ci, h, w, device="cuda", dtype=torch.float32) * 2 - 1).to(dt)
        with torch.no_grad():
            conv.weight.copy_((torch.rand_like(conv.weight, dtype=torch.float32) * 2 - 1).to(dt))
    return lambda: conv(x)


def gemm_operands(r):
    dt = DT[r["dtype"]]
    m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
    # Uniform in [-1, 1) drawn in f32 and rounded to the dtype, as rocsweep's operands
    # (src/op/inputs.rs): the data's bits change a large GEMM's power draw and so its clock.
    # (torch.rand in bf16 then * 2 - 1 in bf16, as reports/h200/timing/gemm-fidelity was run,
    # leaves the positive half with trailing zero mantissa bits.)
    a = (torch.rand(m, k, device="cuda", dtype=torch.float32) * 2 - 1).to(dt)
    b = (torch.rand(k, n, device="cuda", dtype=torch.float32) * 2 - 1).to(dt)
    # One output buffer for every call, as rocsweep's units have (a new tensor per call would
    # spread the graph's writes over K buffers and measure a colder cache).
    c = torch.empty(m, n, device="cuda", dtype=DT[r["out_dtype"]])
    return a, b, c


def gemm_fn(r, ops=None, sets=None):
    """torch.matmul into one output; with `sets` (rotation), consecutive calls take the sets in turn."""
    torch.backends.cuda.matmul.allow_tf32 = r["compute"] == "tf32"
    a, b, c = ops or gemm_operands(r)
    if sets:
        return in_turn([lambda a=a, b=b: torch.matmul(a, b, out=c) for a, b in sets])
    return lambda: torch.matmul(a, b, out=c)


# --- rocsweep's cuBLASLt call from Python (src/backend/cuda/gemm.rs), for the fidelity pass ---

def replica(r, ops, lib_path=None, sets=None):
    """(fn, chosen, keep): one cublasLtMatmul as rocsweep's GemmCall makes it (row-major C = A B
    as the column-major C^T = B^T A^T, no transposes, first heuristic algorithm with a 64 MiB
    workspace preference, workspace of the algorithm's size, beta = 0, D = C), on `ops` (tensors
    of PyTorch's caching allocator); the workspace from PyTorch's allocator too. With `sets`
    (rotation), consecutive calls take the sets of A and B in turn."""
    lib, handle, plan = _plan(r, lib_path)
    a, b, c = ops
    size = plan["size"]
    wbuf = torch.empty(max(size, 1), device="cuda", dtype=torch.uint8)
    wptr = wbuf.data_ptr() if size else None
    fn = in_turn([_matmul_fn(lib, handle, plan, sa.data_ptr(), sb.data_ptr(), c.data_ptr(), wptr)
                  for sa, sb in (sets or [(a, b)])])
    fn.plan = plan
    # `fn` holds raw addresses only: `keep` holds the operands too (torch.cuda.graph empties the
    # allocator's cache, so freed operands would be unmapped: an illegal address).
    keep = (plan, wbuf, ops, sets)
    return fn, plan["chosen"], keep


class _CAI:
    """A raw device allocation shown to torch.as_tensor (no copy, no ownership)."""

    def __init__(self, ptr, nbytes):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False),
                                         "strides": None, "version": 3}


def pool_operands(r, src, plan_size):
    """(workspace address or None, (a, b, c) as torch views) of memory from the driver's default pool,
    allocated in the order a rocsweep unit allocates (src/backend/cuda/gemm.rs `prepare`: the
    algorithm's workspace, zeroed, in GemmCall::new; then A and B uploaded; then C zeroed), holding
    the bits of `src` (the operands PyTorch's allocator holds), so that both sides compute on the
    same values."""
    d = driver()
    ws = d.alloc(plan_size, zero=True) if plan_size else None
    views = []
    for t, zero in ((src[0], False), (src[1], False), (src[2], True)):
        nbytes = t.numel() * t.element_size()
        p = d.alloc(nbytes, zero=zero)
        v = torch.as_tensor(_CAI(p, nbytes), device="cuda").view(t.dtype).view(t.shape)
        views.append(v)
    d.sync()
    views[0].copy_(src[0])
    views[1].copy_(src[1])
    torch.cuda.synchronize()
    return ws, tuple(views)


def pool_replica(r, src, lib_path=None):
    """(fn, chosen, keep, views): rocsweep's call (as `replica`) on operands and workspace from the
    driver's default memory pool (`pool_operands`); `views` are the same operands as tensors, for
    PyTorch's matmul on them."""
    lib, handle, plan = _plan(r, lib_path)
    ws, views = pool_operands(r, src, plan["size"])
    a, b, c = views
    fn = _matmul_fn(lib, handle, plan, a.data_ptr(), b.data_ptr(), c.data_ptr(), ws)
    return fn, plan["chosen"], (plan, views, ws), views


def on_stream(fn):
    """fn() made callable on a raw stream: f(stream) runs it with that stream as PyTorch's current."""
    cache = {}

    def f(stream):
        if stream not in cache:
            cache[stream] = torch.cuda.ExternalStream(stream)
        with torch.cuda.stream(cache[stream]):
            fn()
    return f


def blas_name():
    b = torch.backends.cuda.preferred_blas_library()
    return getattr(b, "name", str(b))


def workspace_probe():
    """Bytes PyTorch's caching allocator holds at the peak of, and after, the process's first
    matmul (a 256x256 bf16 one, whose operands were allocated before): cuBLAS's workspace and,
    on the cuBLASLt path, cuBLASLt's."""
    a = torch.rand(256, 256, device="cuda", dtype=torch.bfloat16)
    b = torch.rand(256, 256, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(256, 256, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base, torch.cuda.memory_allocated() - base


def blas_libraries():
    """The cuBLAS libraries this process loaded, with cuBLASLt's version."""
    paths = set()
    try:
        for line in open("/proc/self/maps"):
            p = line.split()[-1]
            if "libcublas" in p and ".so" in p:
                paths.add(p)
    except OSError:
        return "?"
    out = []
    for p in sorted(paths):
        v = ""
        if "libcublasLt" in p:
            try:
                f = ctypes.CDLL(p).cublasLtGetVersion
                f.restype = ctypes.c_size_t
                n = f()
                v = f" ({n // 10000}.{n // 100 % 100}.{n % 100})"
            except (OSError, AttributeError):
                v = " (version ?)"
        out.append(p + v)
    return "; ".join(out) or "none loaded"


def kernels(fn):
    """The GPU kernels one call runs, in order (torch.profiler)."""
    try:
        torch.cuda.synchronize()
        from torch.autograd import DeviceType
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        names = [e.name for e in prof.events() if getattr(e, "device_type", None) == DeviceType.CUDA]
        return " + ".join(names) or "none seen"
    except Exception as e:  # the table does without kernel names, never without times
        return f"? ({type(e).__name__})"


def launches(fn):
    """The kernels one call runs with their launch configuration, from torch.profiler's trace:
    `name<<<grid, block>>>` (names cut at their template arguments), joined by ' + '."""
    import tempfile
    try:
        from torch.profiler import ProfilerActivity, profile
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            prof.export_chrome_trace(f.name)
            trace = json.load(open(f.name))
        out = []
        for e in sorted((e for e in trace.get("traceEvents", []) if e.get("ph") == "X" and
                         e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")), key=lambda e: float(e["ts"])):
            a = e.get("args", {})
            name = e["name"].split("<")[0].split("(")[0].removeprefix("void ")
            dims = lambda v: "x".join(str(x) for x in v) if isinstance(v, list) else str(v)
            out.append(f"{name}<<<{dims(a.get('grid', '?'))},{dims(a.get('block', '?'))}>>>"
                       f"(smem={a.get('shared memory', '?')},regs={a.get('registers per thread', '?')})")
        return " + ".join(out) or "none seen"
    except Exception as e:  # the table does without launch configurations, never without times
        return f"? ({type(e).__name__})"


def addrs(names, ptrs):
    """Addresses as text, with each one's offset in its 2 MiB page."""
    return " ".join(f"{n}={p:#x}(+{p % (2 << 20):#x})" for n, p in zip(names, ptrs) if p)


def write(out, result):
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        w.writerows(result)


def cublaslt_pass(run_dir, out, result):
    """Runs this script with --cublaslt in a child process (environment variables the workspace
    sizes are read from must be set before PyTorch first reads them) and adds its columns."""
    tmp = out + ".cublaslt.csv"
    env = dict(os.environ, **LT_ENV)
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    sys.stdout.flush()
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--cublaslt", run_dir, tmp],
                           env=env, timeout=300)
        print(f"cuBLASLt pass exited {p.returncode}", flush=True)
    except subprocess.TimeoutExpired:
        print("cuBLASLt pass timed out (300 s); no torch_lt_* columns", flush=True)
        return
    if not os.path.exists(tmp):
        return
    lt = {r["key"]: r for r in csv.DictReader(open(tmp))}
    for r in result:
        x = lt.get(r["key"])
        if x:
            r.update({f"torch_lt_{f}": x[f"torch_{f}"] for f in PASS_FIELDS})
            r.update({f: x[f] for f in LT_ONLY})
    os.remove(tmp)


def pristine_operands(r):
    """(lib, handle, plan, workspace address, (a, b, c)): a rocsweep unit's allocations for `r`, to be
    made before any other device memory of the process: cuBLASLt's handle and heuristic
    (GemmCall::new), the workspace (zeroed), A and B (uploaded from the host, drawn as
    gemm_operands draws them) and C (zeroed), from the driver's default pool."""
    d = driver()
    lib, handle, plan = _plan(r)
    dt, odt = DT[r["dtype"]], DT[r["out_dtype"]]
    m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
    ha = (torch.rand(m, k, dtype=torch.float32) * 2 - 1).to(dt)
    hb = (torch.rand(k, n, dtype=torch.float32) * 2 - 1).to(dt)
    ws = d.alloc(plan["size"], zero=True) if plan["size"] else None
    views = []
    for shape, dtype, host in (((m, k), dt, ha), ((k, n), dt, hb), ((m, n), odt, None)):
        nbytes = shape[0] * shape[1] * torch.empty(0, dtype=dtype).element_size()
        p = d.alloc(nbytes, zero=host is None)
        views.append(torch.as_tensor(_CAI(p, nbytes), device="cuda").view(dtype).view(shape))
    d.sync()
    views[0].copy_(ha)
    views[1].copy_(hb)
    torch.cuda.synchronize()
    return lib, handle, plan, ws, tuple(views)


def pristine_one(run_dir, key):
    """One GEMM shape in a process of its own, its operands placed as a rocsweep unit places them:
    cuBLASLt's handle and heuristic first (GemmCall::new), then the workspace (zeroed), A and B
    (uploaded from the host) and C (zeroed) from the driver's default memory pool, before any other
    device memory of the process (PyTorch's BLAS workspaces come after, at its first matmul). Times,
    in 3 trials: rocsweep's call in rocsweep's loop (`rep_pristine`, K = rocsweep's K for its unit),
    PyTorch's matmul on cuBLASLt on the same operands in peer_times' loop (`torch_lt_pristine`,
    PyTorch's K) and in rocsweep's loop (`torch_lt_pristine_drv`), rocsweep's call in peer_times'
    loop (`rep_pristine_mirror`); then rocsweep's call with B copied to 6 other places (alternately
    PyTorch's caching allocator and the pool), one unit each in rocsweep's loop
    (`pristine_spread_ms`): how far the placement of B alone moves the time. Prints one line,
    `PRISTINE <json>`."""
    torch.backends.cuda.preferred_blas_library("cublaslt")
    r = next(r for r in csv.DictReader(open(f"{run_dir}/results.csv"))
             if r["op"] == "gemm" and is_lt0(r["solver"]) and
             key_of(r, "gemm") == key)
    policy = policy_of(run_dir)
    kr = rocsweep_lt0_k(run_dir).get(key)
    d = driver()
    lib, handle, plan, ws, (a, b, c) = pristine_operands(r)
    dt = DT[r["dtype"]]
    k, n = int(r["k"]), int(r["n"])
    rep = _matmul_fn(lib, handle, plan, a.data_ptr(), b.data_ptr(), c.data_ptr(), ws)
    addrs_text = addrs(("a", "b", "c", "ws"), [a.data_ptr(), b.data_ptr(), c.data_ptr(), ws or 0])
    mirror, dunit = Mirror(policy), DriverUnit(policy)
    torch.backends.cuda.matmul.allow_tf32 = r["compute"] == "tf32"
    tfn = lambda: torch.matmul(a, b, out=c)  # noqa: E731
    with torch.no_grad():
        mirror.prime(tfn)  # PyTorch's BLAS workspaces: allocated now, after the operands
        mirror.prime(rep)
        _, kt = probe_k(tfn)
        dk = kr or kt
        t = {v: [] for v in PRISTINE}
        for _ in range(int(policy["trials"])):
            t["rep_pristine"].append(dunit.unit(rep, dk))
            t["torch_lt_pristine"].append(mirror.unit(tfn, kt))
            t["torch_lt_pristine_drv"].append(dunit.unit(on_stream(tfn), dk))
            t["rep_pristine_mirror"].append(mirror.unit(rep, kt))
        rep()
        torch.cuda.synchronize()
        out_rep = c.clone()
        tfn()
        torch.cuda.synchronize()
        same = bool(torch.equal(out_rep, c))
        spread, spread_at, kept = [], [], []
        for i in range(6):
            if i % 2 == 0:
                bb = torch.empty(k, n, device="cuda", dtype=dt)
            else:
                nbytes = k * n * bb.element_size()
                bb = torch.as_tensor(_CAI(d.alloc(nbytes), nbytes), device="cuda").view(dt).view(k, n)
                d.sync()
            bb.copy_(b)
            torch.cuda.synchronize()
            kept.append(bb)
            f = _matmul_fn(lib, handle, plan, a.data_ptr(), bb.data_ptr(), c.data_ptr(), ws)
            f()
            spread.append(dunit.unit(f, dk)[0])
            spread_at.append(f"{'torch' if i % 2 == 0 else 'pool'}:{bb.data_ptr():#x}")
    x = {"key": key, "pristine_k": kt, "pristine_drv_k": dk, "pristine_addrs": addrs_text,
         "pristine_same_output": "yes" if same else "no",
         "pristine_spread_ms": ";".join(f"{v:.6f}" for v in spread), "pristine_spread_addrs": " ".join(spread_at)}
    for v, ts in t.items():
        mt = median_trial(ts)
        x.update({f"{v}_ms": f"{mt[0]:.6f}", f"{v}_trial_ms": ";".join(f"{q[0]:.6f}" for q in ts),
                  f"{v}_clock_mhz": mt[3] or ""})
    print("PRISTINE", json.dumps(x), flush=True)


def pristine_pass(run_dir, result):
    """Runs `pristine_one` for every GEMM shape of `result` (TORCH.csv's rows) in a child process of
    its own (with rocsweep's cuBLASLt workspace settings, LT_ENV) and adds its columns."""
    keys = [r["key"] for r in result if r.get("op") == "gemm"]
    env = dict(os.environ, **LT_ENV)
    for key in keys:
        sys.stdout.flush()
        try:
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--pristine-one", run_dir, key],
                               env=env, timeout=120, capture_output=True, text=True)
        except subprocess.TimeoutExpired:
            print("pristine pass timed out", key, flush=True)
            continue
        line = next((x for x in p.stdout.splitlines() if x.startswith("PRISTINE ")), None)
        print(f"pristine pass {key}: exit {p.returncode}", (line or p.stderr[-2000:]), flush=True)
        if line:
            x = json.loads(line[len("PRISTINE "):])
            for row in result:
                if row.get("key") == key:
                    row.update({f: x[f] for f in PRISTINE_ONLY if f in x})


def main():
    global ROTATING_MIB
    args = sys.argv[1:]
    if "--rotating-mib" in args:
        i = args.index("--rotating-mib")
        ROTATING_MIB = int(args[i + 1])
        del args[i:i + 2]
        os.environ["PEER_ROTATING_MIB"] = str(ROTATING_MIB)  # the --cublaslt child rotates too
    if "--graph-protocol" in args:
        i = args.index("--graph-protocol")
        if args[i + 1] not in GRAPH_PROTOCOLS:
            sys.exit(f"--graph-protocol: one of {', '.join(GRAPH_PROTOCOLS)}")
        os.environ["PEER_GRAPH_PROTOCOL"] = args[i + 1]  # the children sample the same way
        del args[i:i + 2]
    if ROTATING_MIB and args[:1] in (["--pristine-one"], ["--pristine"]):
        sys.exit("--rotating-mib: the pristine pass does not rotate")
    if args[:1] == ["--pristine-one"]:
        pristine_one(args[1], args[2])
        return
    if args[:1] == ["--pristine"]:
        # a pass of its own, after the others, from a parent that holds no device memory (it never
        # initialises CUDA): adds the pristine columns to TORCH.csv
        result = list(csv.DictReader(open(args[2])))
        pristine_pass(args[1], result)
        write(args[2], result)
        return
    lt = args[:1] == ["--cublaslt"]
    if lt:
        args = args[1:]
        torch.backends.cuda.preferred_blas_library("cublaslt")
    run_dir, out = args
    policy = policy_of(run_dir)
    rows = list(csv.DictReader(open(f"{run_dir}/results.csv")))
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    seen, todo = set(), []
    for r in rows:
        op = r["op"]
        key = tuple(r[c] for c in KEYS[op])
        if key in seen:
            continue
        seen.add(key)
        if op == "conv2d" and (lt or r["direction"] != "fwd" or r["layout"] != "nchw"):
            continue
        if op == "gemm" and (r["trans_a"] != "false" or r["trans_b"] != "false" or r["batch"] != "1"):
            continue
        todo.append((r, ";".join(f"{c}={v}" for c, v in zip(KEYS[op], key))))
    gemm = [(r, k) for r, k in todo if r["op"] == "gemm"]
    pass_name = "cuBLASLt pass" if lt else "default pass"
    ws = ", ".join(f"{v}={os.environ.get(v, 'unset')}" for v in LT_ENV)
    blas = f"{blas_name()}; {ws}"
    print(f"{pass_name}: preferred BLAS library {blas}; rocsweep's [timing] {policy}; K rule "
          f"ceil({TARGET_MS} ms / launch-free ms per call) in [1, {MAX_K}]; idle {IDLE_S} s per unit; "
          f"rotating {ROTATING_MIB} MiB (the run's rotating_mib: {run_rotating_mib(run_dir)}); "
          f"graph protocol {graph_protocol()}", flush=True)
    if ROTATING_MIB != run_rotating_mib(run_dir):
        print(f"{pass_name}: WARNING --rotating-mib {ROTATING_MIB} differs from the run's rotating_mib", flush=True)
    if gemm:
        peak, kept = workspace_probe()
        print(f"{pass_name}: first matmul allocated {peak / 2**20:.1f} MiB at its peak, "
              f"{kept / 2**20:.1f} MiB kept (PyTorch's BLAS workspaces)", flush=True)
    kr = rocsweep_lt0_k(run_dir) if lt else {}
    mirror = Mirror(policy)
    # the placement variants place one set of operands: none with rotation
    variants = lt and os.environ.get("PEER_VARIANTS", "1") != "0" and not ROTATING_MIB
    dunit = DriverUnit(policy) if variants else None
    # Every shape's callables, each primed and its K probed, before any timing.
    shapes = []
    for r, key in todo:
        if r["op"] == "conv2d":
            ops, fn = None, conv_fn(r)
        else:
            ops = gemm_operands(r)
            sets = rotation(ops) if ROTATING_MIB else None
            fn = gemm_fn(r, ops, sets)
        with torch.no_grad():
            mirror.prime(fn)
            probe, k = probe_k(fn)
        s = {"r": r, "key": key, "fn": fn, "k": k, "probe": probe, "ops": ops, "x": {}}
        s["x"].update({"op": r["op"], "key": key, "torch_k": k, "torch_probe_ms": f"{probe:.6f}",
                       "rot_mib": ROTATING_MIB if ops else "", "rot_sets": getattr(fn, "sets", 1) if ops else "",
                       "torch_blas": blas if r["op"] == "gemm" else ""})
        if lt and r["op"] == "gemm":
            s["kr"] = kr.get(key)
            try:
                rep, chosen, keep = replica(r, ops, sets=sets)
                mirror.prime(rep)
                rk = k  # PyTorch's K: the replica and PyTorch then differ only in the call
                ref = torch.empty_like(ops[2])
                torch.matmul(ops[0], ops[1], out=ref)
                rep()
                torch.cuda.synchronize()
                err = ((ops[2].float() - ref.float()).abs().max() / ref.float().abs().max().clamp_min(1e-30)).item()
                s.update(rep=rep, rep_keep=keep, rep_k=rk)
                s["x"].update(rep_chosen=chosen, rep_k=rk, rep_err=f"{err:.3e}", rep_lib=_lt()[2],
                              torch_lt_kr=s["kr"] or "", rep_config=rep.plan["config"],
                              torch_addrs=addrs(("a", "b", "c", "ws"), [t.data_ptr() for t in ops]
                                                + [keep[1].data_ptr() if rep.plan["size"] else 0]))
                if variants:
                    prep, _, pkeep, views = pool_replica(r, ops)
                    tpool = gemm_fn(r, views)
                    mirror.prime(prep)
                    mirror.prime(tpool)
                    errs = []
                    for f in (prep, tpool):
                        views[2].zero_()
                        torch.cuda.synchronize()
                        f()
                        torch.cuda.synchronize()
                        errs.append(((views[2].float() - ref.float()).abs().max()
                                     / ref.float().abs().max().clamp_min(1e-30)).item())
                    s.update(rep_pool=prep, pool_keep=pkeep, torch_lt_pool=tpool, drv_k=s["kr"] or rk)
                    s["x"].update(rep_pool_err=f"{errs[0]:.3e}", torch_lt_pool_err=f"{errs[1]:.3e}",
                                  drv_k=s["drv_k"],
                                  pool_addrs=addrs(("a", "b", "c", "ws"), [t.data_ptr() for t in views]
                                                   + [pkeep[2] or 0]))
            except Exception as e:  # the table does without the replica, never without PyTorch
                print(pass_name, "replica failed", key, type(e).__name__, e, flush=True)
        print(pass_name, "probe", key, f"device {probe:.6f} ms/call, K {k}",
              f"(rocsweep lt#0 K {s.get('kr')}, {s['x'].get('rep_chosen')}, "
              f"rel err {s['x'].get('rep_err')})" if lt else "", flush=True)
        shapes.append(s)
    # The trials: passes over every shape, each unit as rocsweep's.
    trials = int(policy["trials"])
    for t in range(trials):
        for s in shapes:
            with torch.no_grad():
                s.setdefault("t", []).append(mirror.unit(s["fn"], s["k"]))
                if s.get("kr") and s["kr"] != s["k"]:
                    s.setdefault("t_kr", []).append(mirror.unit(s["fn"], s["kr"]))
                if s.get("rep"):
                    s.setdefault("t_rep", []).append(mirror.unit(s["rep"], s["rep_k"]))
                if s.get("rep_pool"):
                    # PyTorch's K in Mirror (as rep), rocsweep's K in rocsweep's loop (DriverUnit)
                    dk = s["drv_k"]
                    runs = {"torch_lt_pool": lambda: mirror.unit(s["torch_lt_pool"], s["k"]),
                            "rep_pool": lambda: mirror.unit(s["rep_pool"], s["rep_k"]),
                            "rep_drv": lambda: dunit.unit(s["rep"], dk),
                            "rep_drv_pool": lambda: dunit.unit(s["rep_pool"], dk),
                            "torch_lt_drv": lambda: dunit.unit(on_stream(s["fn"]), dk),
                            "torch_lt_drv_pool": lambda: dunit.unit(on_stream(s["torch_lt_pool"]), dk)}
                    for v in VARIANTS:
                        try:
                            s.setdefault(f"t_{v}", []).append(runs[v]())
                        except Exception as e:  # one variant lost, never the pass
                            print(pass_name, v, "failed", s["key"], type(e).__name__, e, flush=True)
            print(pass_name, f"trial {t + 1}/{trials}", s["key"], "ms", f"{s['t'][-1][0]:.6f}",
                  "kr_ms", f"{s['t_kr'][-1][0]:.6f}" if s.get("t_kr") else "-",
                  "rep_ms", f"{s['t_rep'][-1][0]:.6f}" if s.get("t_rep") else "-",
                  " ".join(f"{v} {s[f't_{v}'][-1][0]:.6f}" for v in VARIANTS if s.get(f"t_{v}")),
                  "clock", s["t"][-1][3], flush=True)
    result = []
    for s in shapes:
        x = s["x"]
        dev, call, n, clock = median_trial(s["t"])
        x.update(torch_protocol=mirror.used)
        x.update(torch_ms=f"{dev:.6f}", torch_trial_ms=";".join(f"{t[0]:.6f}" for t in s["t"]),
                 torch_call_ms=f"{call:.6f}", torch_samples=n, torch_clock_mhz=clock or "")
        if s.get("t_kr"):
            x.update(torch_lt_kr_ms=f"{median_trial(s['t_kr'])[0]:.6f}",
                     torch_lt_kr_trial_ms=";".join(f"{t[0]:.6f}" for t in s["t_kr"]))
        if s.get("t_rep"):
            m = median_trial(s["t_rep"])
            x.update(rep_ms=f"{m[0]:.6f}", rep_trial_ms=";".join(f"{t[0]:.6f}" for t in s["t_rep"]),
                     rep_clock_mhz=m[3] or "")
        for v in VARIANTS:
            if s.get(f"t_{v}"):
                m = median_trial(s[f"t_{v}"])
                x.update({f"{v}_ms": f"{m[0]:.6f}", f"{v}_trial_ms": ";".join(f"{t[0]:.6f}" for t in s[f"t_{v}"]),
                          f"{v}_clock_mhz": m[3] or ""})
        result.append(x)
    write(out, result)
    # The earlier protocol, for comparison with earlier tables.
    for s in shapes:
        with torch.no_grad():
            q, idle, call, k, clock = old_protocol(s["fn"])
        s["x"].update(torch_old_ms=f"{q:.6f}", torch_idle_ms=f"{idle:.6f}", torch_old_k=k,
                      torch_old_clock_mhz=clock or "")
        print(pass_name, "earlier protocol", s["key"], f"{q:.6f} {idle:.6f} per call {call:.6f} K {k} clock {clock}",
              flush=True)
    write(out, result)
    # Kernel names and the graph's timeline after every timing: the profiler stays out of the
    # timed calls.
    for s in shapes:
        x = s["x"]
        with torch.no_grad():
            x["torch_kernels"] = kernels(s["fn"])
            x["torch_busy_us"], x["torch_acts_per_call"], x["torch_gap_us"] = timeline(s["fn"], s["k"])
            if s.get("rep"):
                x["rep_kernels"] = kernels(s["rep"])
                x["torch_lt_launches"] = launches(s["fn"])
                x["rep_launches"] = launches(s["rep"])
            if s.get("rep_pool"):
                x["rep_pool_kernels"] = kernels(s["rep_pool"])
                x["rep_pool_launches"] = launches(s["rep_pool"])
        print(pass_name, "kernels", s["key"], x["torch_kernels"], flush=True)
        if s.get("rep"):
            print(pass_name, "replica kernels", s["key"], x["rep_kernels"], "same" if
                  x["rep_kernels"] == x["torch_kernels"] else "DIFFERENT", flush=True)
        print(pass_name, "timeline", s["key"], "busy us/call", x["torch_busy_us"], "activities/call",
              x["torch_acts_per_call"], "gap us", x["torch_gap_us"], flush=True)
    write(out, result)
    if gemm:
        print(f"{pass_name}: BLAS libraries loaded: {blas_libraries()}", flush=True)
    if gemm and not lt:
        cublaslt_pass(run_dir, out, result)
        write(out, result)
    if not lt:
        print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
              f"benchmark_limit {getattr(torch.backends.cudnn, 'benchmark_limit', '?')}, "
              f"{torch.cuda.get_device_name()}")


if __name__ == "__main__":
    main()

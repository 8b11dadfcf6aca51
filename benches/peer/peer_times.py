#!/usr/bin/env python3
"""PyTorch's times for every distinct shape of a rocsweep run, measured the way rocsweep measures,
in the same device command.

usage: peer_times.py RUN_DIR OUT.csv
       peer_times.py --cublaslt RUN_DIR OUT.csv   (the second GEMM pass, started by the first)

Launch-free time (torch_ms, torch_lt_ms): rocsweep's protocol repeated sample for sample
(`mirror`), so that both sides have the same K and the same duty cycle:
- K (calls per CUDA graph) by rocsweep's rule, ceil(TARGET_MS / t) clamped to [1, MAX_K]
  (TARGET_SAMPLE_S and MAX_CALLS_PER_SAMPLE in src/timing.rs), with t PyTorch's launch-free
  device time per call (a graph of 2 calls, the timed replay queued behind a warm one, median of
  3), not its per-call time: on PyTorch's cuBLASLt path one call between two events holds a
  heuristic query on the host (0.13-0.18 ms), which gave K = 2 for small shapes.
- per unit, as rocsweep's unit (src/exec/unit.rs, src/timing.rs `measure`,
  src/backend/cuda/blocker.rs `timed`): an idle of IDLE_S (rocsweep's unit setup: inputs made
  on the CPU, upload, verification, 0.03 to 1.4 s in the committed runs), a first call (two calls,
  as rocsweep's Batch::Single), the SM clock (NVML), `warmup` samples, then samples until
  min_samples are in and either their measured time reaches max_time or their relative stdev is
  at most target_noise (max_samples at most): the [timing] of the run's manifest.json. One
  sample: one call between two events (the per-call figure), K calls captured into a new graph
  and instantiated, one warm replay, the timed replay queued behind it; time / K. The SM clock
  again after the samples; the unit's clock is the lower of the two, as rocsweep's clock_mhz.
- trials: the whole list of shapes is measured `trials` times (rocsweep's default 3, each a pass
  over its plan), and a shape's figure is its median trial's median, as rocsweep's row.
The earlier protocol (K from the per-call time, 5 warm-up calls, 30 per-call samples, a graph
timed 20 times back to back) is still measured after the trials, as torch_old_ms (queued) and
torch_idle_ms (from an idle stream), for comparison with the earlier tables.

conv2d rows (forward, NCHW) use cuDNN in benchmark mode with TF32 off (PyTorch's pick: it times
up to torch.backends.cudnn.benchmark_limit engine configurations). A convolution returns a new
tensor per call (PyTorch has no out= for it), so in a graph of K calls its outputs are K buffers
where rocsweep writes one: a slightly colder cache.

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
    split-K); rep_kernels are the kernels it ran (torch.profiler), to set beside PyTorch's
    kernels and rocsweep's `chosen`; rep_err is its largest difference from torch.matmul.
Both passes record the kernels one call ran and the device timeline of one graph replay of K
calls (torch.profiler, after all timing: device-busy time per call, device activities per call,
mean gap between consecutive activities), and the workspace PyTorch allocated for a first small
matmul.
"""
import csv
import ctypes
import json
import math
import os
import statistics
import subprocess
import sys
import time

import torch

DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
TARGET_MS = 0.2  # TARGET_SAMPLE_S in src/timing.rs: a launch-free sample lasts at least this long
MAX_K = 64  # MAX_CALLS_PER_SAMPLE in src/timing.rs
IDLE_S = 0.1  # idle before each unit, as rocsweep's unit setup leaves the device idle
LT_WORKSPACE_KIB = 64 * 1024  # rocsweep's cuBLASLt workspace (src/backend/cuda/gemm.rs)
LT_ENV = {"CUBLASLT_WORKSPACE_SIZE": str(LT_WORKSPACE_KIB),
          "CUBLAS_WORKSPACE_CONFIG": f":4096:{LT_WORKSPACE_KIB // 4096}"}
# rocsweep's [timing] defaults for the sweeps these scripts run, where a manifest has none.
POLICY = {"warmup": 2, "min_samples": 5, "max_samples": 30, "target_noise": 0.05, "max_time": 0.1,
          "trials": 3}
PASS_FIELDS = ["ms", "trial_ms", "k", "probe_ms", "samples", "clock_mhz", "call_ms", "old_ms",
               "idle_ms", "old_k", "old_clock_mhz", "blas", "kernels", "busy_us", "acts_per_call",
               "gap_us"]
LT_ONLY = ["torch_lt_kr", "torch_lt_kr_ms", "torch_lt_kr_trial_ms", "rep_ms", "rep_trial_ms",
           "rep_k", "rep_clock_mhz", "rep_chosen", "rep_kernels", "rep_err", "rep_lib"]
FIELDS = (["op", "key"] + [f"torch_{f}" for f in PASS_FIELDS] + [f"torch_lt_{f}" for f in PASS_FIELDS]
          + LT_ONLY)


def k_rule(t_ms):
    """rocsweep's calls_per_sample (src/timing.rs) for a time per call in ms."""
    if not (t_ms > 0 and math.isfinite(t_ms)):
        return MAX_K
    return max(1, min(MAX_K, math.ceil(TARGET_MS / t_ms)))


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
    queued is rocsweep's protocol (src/backend/cuda/blocker.rs, graphed): the timed replay is
    queued behind a warm one, so the start event fires when the device reaches it and the
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


_NVML = []


def sm_clock_mhz():
    """The SM clock now (NVML), or None where NVML cannot be read."""
    try:
        import pynvml
        if not _NVML:
            pynvml.nvmlInit()
            _NVML.append(pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device()))
        return pynvml.nvmlDeviceGetClockInfo(_NVML[0], pynvml.NVML_CLOCK_SM)
    except Exception:
        return None


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


class Mirror:
    """rocsweep's unit protocol (see the module docs) on a callable."""

    def __init__(self, policy):
        self.p = policy
        self.side = torch.cuda.Stream()

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
        g.replay()
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


def median_trial(trials):
    """The median trial (the lower one of an even count) by its median time, as rocsweep's row."""
    order = sorted(trials, key=lambda t: t[0])
    return order[(len(order) - 1) // 2]


def timeline(fn, calls):
    """The device activities (kernels, memsets, copies) of one replay of a graph of `calls`
    calls, from torch.profiler's trace: (busy us per call, activities per call, mean gap in us
    between consecutive activities)."""
    import tempfile
    try:
        from torch.profiler import ProfilerActivity, profile
        g = capture(fn, calls)
        g.replay()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            g.replay()
            torch.cuda.synchronize()
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            prof.export_chrome_trace(f.name)
            trace = json.load(open(f.name))
        acts = sorted((float(e["ts"]), float(e["dur"])) for e in trace.get("traceEvents", [])
                      if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy"))
        if not acts:
            return "", "", ""
        gaps = [b[0] - (a[0] + a[1]) for a, b in zip(acts, acts[1:])]
        return (f"{sum(d for _, d in acts) / calls:.3f}", f"{len(acts) / calls:g}",
                f"{statistics.mean(gaps):.3f}" if gaps else "")
    except Exception as e:  # the table does without the timeline, never without times
        print("timeline failed:", type(e).__name__, e, flush=True)
        return "", "", ""


def conv_fn(r):
    dt = DT[r["dtype"]]
    n, ci, co = int(r["n"]), int(r["c_in"]), int(r["c_out"])
    h, w, k = int(r["h"]), int(r["w"]), int(r["kernel"])
    x = torch.rand(n, ci, h, w, device="cuda", dtype=dt) - 0.5
    conv = torch.nn.Conv2d(ci, co, k, stride=int(r["stride"]), padding=int(r["pad"]),
                           dilation=int(r["dilation"]), groups=int(r["groups"]), bias=False).to("cuda", dt)
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


def gemm_fn(r, ops=None):
    torch.backends.cuda.matmul.allow_tf32 = r["compute"] == "tf32"
    a, b, c = ops or gemm_operands(r)
    return lambda: torch.matmul(a, b, out=c)


# --- rocsweep's cuBLASLt call from Python (src/backend/cuda/gemm.rs), for the fidelity pass ---

class _Heur(ctypes.Structure):
    _fields_ = [("algo", ctypes.c_uint64 * 8), ("workspaceSize", ctypes.c_size_t),
                ("state", ctypes.c_int), ("wavesCount", ctypes.c_float), ("reserved", ctypes.c_int * 4)]


_LT = {}
_CUDA_DT = {"f32": 0, "f16": 2, "bf16": 14}
_VP = ctypes.c_void_p


def _lt(path=None):
    """(library, handle, path and version): the cuBLASLt PyTorch loaded (or the one at `path`,
    a second copy in the process where it is another file), and a handle of our own."""
    if path not in _LT:
        paths = [path] if path else sorted({line.split()[-1] for line in open("/proc/self/maps")
                                            if "libcublasLt" in line and ".so" in line})
        if not paths:
            raise RuntimeError("no libcublasLt loaded")
        lib = ctypes.CDLL(paths[0])
        sigs = {
            "cublasLtCreate": [ctypes.POINTER(_VP)],
            "cublasLtMatmulDescCreate": [ctypes.POINTER(_VP), ctypes.c_int, ctypes.c_int],
            "cublasLtMatmulDescSetAttribute": [_VP, ctypes.c_int, _VP, ctypes.c_size_t],
            "cublasLtMatrixLayoutCreate": [ctypes.POINTER(_VP), ctypes.c_int, ctypes.c_uint64,
                                           ctypes.c_uint64, ctypes.c_int64],
            "cublasLtMatmulPreferenceCreate": [ctypes.POINTER(_VP)],
            "cublasLtMatmulPreferenceSetAttribute": [_VP, ctypes.c_int, _VP, ctypes.c_size_t],
            "cublasLtMatmulAlgoGetHeuristic": [_VP, _VP, _VP, _VP, _VP, _VP, _VP, ctypes.c_int,
                                               ctypes.POINTER(_Heur), ctypes.POINTER(ctypes.c_int)],
            "cublasLtMatmulAlgoConfigGetAttribute": [_VP, ctypes.c_int, _VP, ctypes.c_size_t,
                                                     ctypes.POINTER(ctypes.c_size_t)],
            "cublasLtMatmul": [_VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP, _VP,
                               ctypes.c_size_t, _VP],
        }
        for name, args in sigs.items():
            f = getattr(lib, name)
            f.argtypes = args
            f.restype = ctypes.c_int
        h = _VP()
        _check(lib.cublasLtCreate(ctypes.byref(h)), "cublasLtCreate")
        v = lib.cublasLtGetVersion
        v.restype = ctypes.c_size_t
        n = v()
        _LT[path] = (lib, h, f"{os.path.realpath(paths[0])} ({n // 10000}.{n // 100 % 100}.{n % 100})")
    return _LT[path]


def _check(rc, what):
    if rc != 0:
        raise RuntimeError(f"{what}: cublasStatus {rc}")


def _algo_attr(lib, h, attr):
    v, w = ctypes.c_int32(-1), ctypes.c_size_t(0)
    lib.cublasLtMatmulAlgoConfigGetAttribute(ctypes.addressof(h.algo), attr, ctypes.addressof(v), 4,
                                             ctypes.byref(w))
    return v.value


def replica(r, ops, lib_path=None):
    """(fn, chosen, keep): one cublasLtMatmul as rocsweep's GemmCall makes it (row-major C = A B
    as the column-major C^T = B^T A^T, no transposes, first heuristic algorithm with a 64 MiB
    workspace preference, workspace of the algorithm's size, beta = 0, D = C), on `ops`."""
    lib, handle, _ = _lt(lib_path)
    a, b, c = ops
    m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
    if r["compute"] == "tf32":
        compute, scale = 77, 0
    elif r["compute"] == "f16":
        compute, scale = 64, 2
    else:
        compute, scale = 68, 0
    desc = _VP()
    _check(lib.cublasLtMatmulDescCreate(ctypes.byref(desc), compute, scale), "MatmulDescCreate")
    op_n = ctypes.c_int32(0)
    for attr in (3, 4):  # TRANSA, TRANSB
        _check(lib.cublasLtMatmulDescSetAttribute(desc, attr, ctypes.addressof(op_n), 4), "TRANS")

    def layout(dt, rows, cols):
        lay = _VP()
        _check(lib.cublasLtMatrixLayoutCreate(ctypes.byref(lay), _CUDA_DT[dt], rows, cols, rows),
               "MatrixLayoutCreate")
        return lay
    la, lb, lc = layout(r["dtype"], n, k), layout(r["dtype"], k, m), layout(r["out_dtype"], n, m)
    pref = _VP()
    _check(lib.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)), "PreferenceCreate")
    ws = ctypes.c_uint64(LT_WORKSPACE_KIB * 1024)
    _check(lib.cublasLtMatmulPreferenceSetAttribute(pref, 1, ctypes.addressof(ws), 8), "MAX_WORKSPACE_BYTES")
    res, got = (_Heur * 32)(), ctypes.c_int(0)
    _check(lib.cublasLtMatmulAlgoGetHeuristic(handle, desc, la, lb, lc, lc, pref, 32, res, ctypes.byref(got)),
           "AlgoGetHeuristic")
    ok = [res[i] for i in range(min(got.value, 32)) if res[i].state == 0]
    if not ok:
        raise RuntimeError("the heuristic returned no algorithm")
    h = _Heur()
    ctypes.pointer(h)[0] = ok[0]
    chosen = (f"cublasLt algo={_algo_attr(lib, h, 0)} tile={_algo_attr(lib, h, 1)} "
              f"stages={_algo_attr(lib, h, 6)} splitk={_algo_attr(lib, h, 2)}")
    size = int(h.workspaceSize)
    wbuf = torch.empty(max(size, 1), device="cuda", dtype=torch.uint8)
    wptr = wbuf.data_ptr() if size else None
    if compute == 64:
        alpha, beta = ctypes.c_uint16(0x3C00), ctypes.c_uint16(0)
    else:
        alpha, beta = ctypes.c_float(1.0), ctypes.c_float(0.0)
    pa, pb, pc = a.data_ptr(), b.data_ptr(), c.data_ptr()
    al, be, algo = ctypes.addressof(alpha), ctypes.addressof(beta), ctypes.addressof(h.algo)
    mm = lib.cublasLtMatmul

    def fn():
        rc = mm(handle, desc, al, pb, la, pa, lb, be, pc, lc, pc, lc, algo, wptr, size,
                torch.cuda.current_stream().cuda_stream)
        if rc != 0:
            raise RuntimeError(f"cublasLtMatmul: cublasStatus {rc}")
    # `fn` holds raw addresses only: `keep` holds the operands too (torch.cuda.graph empties the
    # allocator's cache, so freed operands would be unmapped: an illegal address).
    keep = (desc, la, lb, lc, pref, res, h, wbuf, alpha, beta, ops)
    return fn, chosen, keep


KEYS = {
    "conv2d": ["direction", "n", "c_in", "c_out", "h", "w", "kernel", "pad", "stride", "dilation",
               "groups", "layout", "dtype"],
    "gemm": ["m", "n", "k", "trans_a", "trans_b", "batch", "dtype", "out_dtype", "compute"],
}


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


def policy_of(run_dir):
    try:
        t = json.load(open(f"{run_dir}/manifest.json"))["policies"]["timing"]
    except (OSError, KeyError, ValueError):
        t = {}
    return {k: t.get(k, v) for k, v in POLICY.items()}


def rocsweep_lt0_k(run_dir):
    """rocsweep's K for its lt#0 unit per GEMM key: its rule applied to the unit's call_median_ms
    (each of its samples takes K from that sample's own call; the median call gives the usual K)."""
    out = {}
    for r in csv.DictReader(open(f"{run_dir}/results.csv")):
        if r["op"] == "gemm" and r["solver"].startswith("lt#0-") and r.get("call_median_ms"):
            out[";".join(f"{c}={r[c]}" for c in KEYS["gemm"])] = k_rule(float(r["call_median_ms"]))
    return out


def main():
    args = sys.argv[1:]
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
          f"ceil({TARGET_MS} ms / launch-free ms per call) in [1, {MAX_K}]; idle {IDLE_S} s per unit",
          flush=True)
    if gemm:
        peak, kept = workspace_probe()
        print(f"{pass_name}: first matmul allocated {peak / 2**20:.1f} MiB at its peak, "
              f"{kept / 2**20:.1f} MiB kept (PyTorch's BLAS workspaces)", flush=True)
    kr = rocsweep_lt0_k(run_dir) if lt else {}
    mirror = Mirror(policy)
    # Every shape's callables, each primed and its K probed, before any timing.
    shapes = []
    for r, key in todo:
        if r["op"] == "conv2d":
            ops, fn = None, conv_fn(r)
        else:
            ops = gemm_operands(r)
            fn = gemm_fn(r, ops)
        with torch.no_grad():
            mirror.prime(fn)
            probe, k = probe_k(fn)
        s = {"r": r, "key": key, "fn": fn, "k": k, "probe": probe, "ops": ops, "x": {}}
        s["x"].update({"op": r["op"], "key": key, "torch_k": k, "torch_probe_ms": f"{probe:.6f}",
                       "torch_blas": blas if r["op"] == "gemm" else ""})
        if lt and r["op"] == "gemm":
            s["kr"] = kr.get(key)
            try:
                rep, chosen, keep = replica(r, ops)
                mirror.prime(rep)
                rk = k  # PyTorch's K: the replica and PyTorch then differ only in the call
                ref = torch.empty_like(ops[2])
                torch.matmul(ops[0], ops[1], out=ref)
                rep()
                torch.cuda.synchronize()
                err = ((ops[2].float() - ref.float()).abs().max() / ref.float().abs().max().clamp_min(1e-30)).item()
                s.update(rep=rep, rep_keep=keep, rep_k=rk)
                s["x"].update(rep_chosen=chosen, rep_k=rk, rep_err=f"{err:.3e}", rep_lib=_lt()[2],
                              torch_lt_kr=s["kr"] or "")
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
            print(pass_name, f"trial {t + 1}/{trials}", s["key"], "ms", f"{s['t'][-1][0]:.6f}",
                  "kr_ms", f"{s['t_kr'][-1][0]:.6f}" if s.get("t_kr") else "-",
                  "rep_ms", f"{s['t_rep'][-1][0]:.6f}" if s.get("t_rep") else "-",
                  "clock", s["t"][-1][3], flush=True)
    result = []
    for s in shapes:
        x = s["x"]
        dev, call, n, clock = median_trial(s["t"])
        x.update(torch_ms=f"{dev:.6f}", torch_trial_ms=";".join(f"{t[0]:.6f}" for t in s["t"]),
                 torch_call_ms=f"{call:.6f}", torch_samples=n, torch_clock_mhz=clock or "")
        if s.get("t_kr"):
            x.update(torch_lt_kr_ms=f"{median_trial(s['t_kr'])[0]:.6f}",
                     torch_lt_kr_trial_ms=";".join(f"{t[0]:.6f}" for t in s["t_kr"]))
        if s.get("t_rep"):
            m = median_trial(s["t_rep"])
            x.update(rep_ms=f"{m[0]:.6f}", rep_trial_ms=";".join(f"{t[0]:.6f}" for t in s["t_rep"]),
                     rep_clock_mhz=m[3] or "")
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
        if s["r"]["op"] != "gemm":
            continue
        x = s["x"]
        with torch.no_grad():
            x["torch_kernels"] = kernels(s["fn"])
            x["torch_busy_us"], x["torch_acts_per_call"], x["torch_gap_us"] = timeline(s["fn"], s["k"])
            if s.get("rep"):
                x["rep_kernels"] = kernels(s["rep"])
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

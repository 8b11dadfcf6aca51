#!/usr/bin/env python3
"""PyTorch's times for every distinct shape of a rocsweep run, measured the way rocsweep measures:
launch-free (a CUDA graph of K calls, one replay timed while queued behind a warm replay, time /
K: the quantity of rocsweep's median_ms) and per call (one call between two events, launch
included, as rocsweep's call_median_ms). torch_idle_ms keeps the earlier protocol (the timed
replay starts on an idle stream, so the graph's launch latency is in the interval, spread over
its K calls), measured in the same loop.

usage: peer_times.py RUN_DIR OUT.csv
       peer_times.py --cublaslt RUN_DIR OUT.csv   (the second GEMM pass, started by the first)

conv2d rows (forward, NCHW) use cuDNN in benchmark mode with TF32 off (PyTorch's pick: it times
up to torch.backends.cudnn.benchmark_limit engine configurations). A convolution returns a new
tensor per call (PyTorch has no out= for it), so in a graph of K calls its outputs are K buffers
where rocsweep writes one: a slightly colder cache.

gemm rows use torch.matmul into one preallocated output, TF32 only where the case's compute is
tf32, operands uniform in [-1, 1) as rocsweep's (src/op/inputs.rs), and are timed twice:
- torch_ms, torch_call_ms: PyTorch's pick, i.e. its defaults as installed (the preferred BLAS
  library it ships with, cuBLAS's workspace as PyTorch sizes it). "rocsweep's best against
  PyTorch" is measured against this.
- torch_lt_ms, torch_lt_call_ms: the same algorithm as rocsweep's `lt#0`, for the fidelity check.
  A child process (this script with --cublaslt) sets
  torch.backends.cuda.preferred_blas_library("cublaslt"), so torch.matmul calls cublasLtMatmul
  with the first algorithm of cublasLtMatmulAlgoGetHeuristic (PyTorch asks it for one), and
  offers the heuristic the workspace that rocsweep offers it (64 MiB, WORKSPACE in
  src/backend/cuda/gemm.rs): CUBLASLT_WORKSPACE_SIZE in KiB, and CUBLAS_WORKSPACE_CONFIG as large,
  since PyTorch caps its cuBLASLt workspace at the cuBLAS one (32 MiB on Hopper by default).
Both passes record the SM clock after the timed replays (NVML), the kernels one call ran and
the device timeline of one graph replay (torch.profiler, after all timing: device-busy time per
call, device activities per call, mean gap between consecutive activities), and the workspace
PyTorch allocated for a first small matmul (memory_allocated around it).
"""
import csv
import os
import statistics
import subprocess
import sys

import torch

DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
TARGET_MS = 0.2  # a graph replay lasts at least this long, as rocsweep's launch-free samples
LT_WORKSPACE_KIB = 64 * 1024  # rocsweep's cuBLASLt workspace (src/backend/cuda/gemm.rs)
LT_ENV = {"CUBLASLT_WORKSPACE_SIZE": str(LT_WORKSPACE_KIB),
          "CUBLAS_WORKSPACE_CONFIG": f":4096:{LT_WORKSPACE_KIB // 4096}"}
PASS_FIELDS = ["ms", "idle_ms", "call_ms", "graph_calls", "clock_mhz", "blas", "kernels", "busy_us",
               "acts_per_call", "gap_us"]
FIELDS = (["op", "key"] + [f"torch_{f}" if f != "graph_calls" else f for f in PASS_FIELDS]
          + [f"torch_lt_{f}" for f in PASS_FIELDS])


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
    interval holds no launch. idle (this script's earlier protocol) times a replay from an idle
    stream, so the interval also holds the graph's launch latency, spread over its calls."""
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


def sm_clock_mhz():
    """The SM clock now (NVML), or '' where NVML cannot be read."""
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        return str(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM))
    except Exception:
        return ""


def both(fn):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    call = per_call_ms(fn)
    calls = max(1, min(64, int(TARGET_MS / call + 0.999)))
    queued, idle = graph_ms(fn, calls)
    return queued, idle, call, calls, sm_clock_mhz()


def timeline(fn, calls):
    """The device activities (kernels, memsets, copies) of one replay of a graph of `calls`
    calls, from torch.profiler's trace: (busy us per call, activities per call, mean gap in us
    between consecutive activities)."""
    import json
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


def gemm_fn(r):
    dt = DT[r["dtype"]]
    m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
    torch.backends.cuda.matmul.allow_tf32 = r["compute"] == "tf32"
    # Uniform in [-1, 1), as rocsweep's operands: the data's bits change a large GEMM's power
    # draw and so its clock.
    a = torch.rand(m, k, device="cuda", dtype=dt) * 2 - 1
    b = torch.rand(k, n, device="cuda", dtype=dt) * 2 - 1
    # One output buffer for every call, as rocsweep's units have (a new tensor per call would
    # spread the graph's writes over K buffers and measure a colder cache).
    c = torch.empty(m, n, device="cuda", dtype=dt)
    return lambda: torch.matmul(a, b, out=c)


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
    import ctypes
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


def col(f):
    """The CSV column of one pass's field (graph_calls keeps its first name)."""
    return f if f == "graph_calls" else f"torch_{f}"


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
                           env=env, timeout=100)
        print(f"cuBLASLt pass exited {p.returncode}", flush=True)
    except subprocess.TimeoutExpired:
        print("cuBLASLt pass timed out (100 s); no torch_lt_* columns", flush=True)
        return
    if not os.path.exists(tmp):
        return
    lt = {r["key"]: r for r in csv.DictReader(open(tmp))}
    for r in result:
        x = lt.get(r["key"])
        if x:
            r.update({f"torch_lt_{f}": x[col(f)] for f in PASS_FIELDS})
    os.remove(tmp)


def main():
    args = sys.argv[1:]
    lt = args[:1] == ["--cublaslt"]
    if lt:
        args = args[1:]
        torch.backends.cuda.preferred_blas_library("cublaslt")
    run_dir, out = args
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
    print(f"{pass_name}: preferred BLAS library {blas}", flush=True)
    if gemm:
        peak, kept = workspace_probe()
        print(f"{pass_name}: first matmul allocated {peak / 2**20:.1f} MiB at its peak, "
              f"{kept / 2**20:.1f} MiB kept (PyTorch's BLAS workspaces)", flush=True)
    result = []
    for r, key in todo:
        fn = conv_fn(r) if r["op"] == "conv2d" else gemm_fn(r)
        with torch.no_grad():
            queued, idle, call, calls, clock = both(fn)
        result.append({"op": r["op"], "key": key, "torch_ms": f"{queued:.6f}", "torch_idle_ms": f"{idle:.6f}",
                       "torch_call_ms": f"{call:.6f}", "graph_calls": calls, "torch_clock_mhz": clock,
                       "torch_blas": blas if r["op"] == "gemm" else ""})
        x = result[-1]
        print(pass_name, r["op"], key, x["torch_ms"], x["torch_idle_ms"], x["torch_call_ms"], clock, flush=True)
    write(out, result)
    # Kernel names and the graph's timeline after every timing: the profiler stays out of the
    # timed calls.
    for (r, key), x in zip(todo, result):
        if r["op"] != "gemm":
            continue
        x["torch_kernels"] = kernels(gemm_fn(r))
        x["torch_busy_us"], x["torch_acts_per_call"], x["torch_gap_us"] = timeline(gemm_fn(r), x["graph_calls"])
        print(pass_name, "kernels", key, x["torch_kernels"], flush=True)
        print(pass_name, "timeline", key, "busy us/call", x["torch_busy_us"], "activities/call",
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

#!/usr/bin/env python3
"""rocsweep's cuBLASLt call and timing loop through ctypes, with no PyTorch needed: the pieces of
peer_times.py that make rocsweep's own cublasLtMatmul call (src/backend/cuda/gemm.rs: descriptors,
heuristic, algorithm configuration, workspace) and rocsweep's unit and sample protocol through the
CUDA driver API (src/exec/worker/unit.rs, src/timing.rs, src/backend/engine/timer.rs), with device memory
from the driver's default memory pool as cudarc gives it. peer_times.py imports everything here;
lt_bare.py uses it in processes that never import PyTorch. Where PyTorch is loaded, its current
stream is the default for a call and its CUDA initialisation makes the context current.
"""
import csv
import ctypes
import json
import math
import os
import statistics
import sys
import time


def _torch():
    """PyTorch if this process has imported it, else None (this module never imports it)."""
    return sys.modules.get("torch")


TARGET_MS = 0.2  # TARGET_SAMPLE_S in src/timing.rs: a launch-free sample lasts at least this long
MAX_K = 64  # MAX_CALLS_PER_SAMPLE in src/timing.rs
IDLE_S = 0.1  # idle before each unit, as rocsweep's unit setup leaves the device idle
LT_WORKSPACE_KIB = 64 * 1024  # rocsweep's cuBLASLt workspace (src/backend/cuda/gemm.rs)
# How a launch-free sample replays its CUDA graph (PEER_GRAPH_PROTOCOL, or peer_times'
# --graph-protocol):
# - "upload": rocsweep's `graphed` since 41f8d8c (src/backend/engine/timer.rs): the instantiated graph
#   is uploaded (cuGraphUpload on the timing stream), then replayed once between two events; no warm
#   replay. The interval starts on an idle stream, so it may hold the replay's launch latency.
# - "warm": rocsweep's `graphed` before 41f8d8c: a warm replay, then the timed replay queued behind it
#   (the timed replay reads what the warm one just read: rotating operands were warm where K sets fit
#   in L2, reports/h200/timing/gemm-fidelity-4).
# - "held" (diagnostic, PyTorch's loop only): uploaded, then the stream held by a spin kernel
#   (torch.cuda._sleep, HELD_US) before the start event, so the timed replay is queued (launch-free)
#   and there is no warm replay.
GRAPH_PROTOCOLS = ("upload", "warm", "held")
HELD_US = 100  # the spin before a held replay: far longer than the host takes to launch the graph
# rocsweep's [timing] defaults for the sweeps these scripts run, where a manifest has none.
POLICY = {"warmup": 2, "min_samples": 5, "max_samples": 30, "target_noise": 0.05, "max_time": 0.1,
          "trials": 3}


def k_rule(t_ms):
    """rocsweep's calls_per_sample (src/timing.rs) for a time per call in ms."""
    if not (t_ms > 0 and math.isfinite(t_ms)):
        return MAX_K
    return max(1, min(MAX_K, math.ceil(TARGET_MS / t_ms)))


_NVML = []


def _nvml_handle(pynvml):
    """NVML's handle for the device this process computes on. NVML's indices ignore
    CUDA_VISIBLE_DEVICES, so the device is found by its UUID where PyTorch gives one (as rocsweep
    finds it by PCI bus id), else by index."""
    t = _torch()
    if t and t.cuda.is_initialized():
        index = t.cuda.current_device()
        uuid = getattr(t.cuda.get_device_properties(index), "uuid", None)
        if uuid is not None:
            return pynvml.nvmlDeviceGetHandleByUUID(f"GPU-{uuid}")
        return pynvml.nvmlDeviceGetHandleByIndex(index)
    return pynvml.nvmlDeviceGetHandleByIndex(0)


def sm_clock_mhz():
    """The SM clock now (NVML), or None where NVML cannot be read."""
    try:
        import pynvml
        if not _NVML:
            pynvml.nvmlInit()
            _NVML.append(_nvml_handle(pynvml))
        return pynvml.nvmlDeviceGetClockInfo(_NVML[0], pynvml.NVML_CLOCK_SM)
    except Exception:
        return None


def median_trial(trials):
    """The median trial (the lower one of an even count) by its median time, as rocsweep's row."""
    order = sorted(trials, key=lambda t: t[0])
    return order[(len(order) - 1) // 2]


KEYS = {
    "conv2d": ["direction", "n", "c_in", "c_out", "h", "w", "kernel", "pad", "stride", "dilation",
               "groups", "layout", "dtype"],
    "gemm": ["m", "n", "k", "trans_a", "trans_b", "batch", "dtype", "out_dtype", "compute"],
}


def device_activities(run, cats=("kernel",)):
    """Runs `run()` under torch.profiler (CUDA activities; CUPTI sees driver-API work too) in a
    process that has imported PyTorch: [(start us, duration us, name)] of the activities whose
    trace category is in `cats`, in start order."""
    import tempfile
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run()
        _torch().cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        trace = json.load(open(f.name))
    return sorted((float(e["ts"]), float(e["dur"]), e.get("name", "")) for e in trace.get("traceEvents", [])
                  if e.get("ph") == "X" and e.get("cat") in cats)


def key_of(r, op=None):
    """A shape's key, as peer_times.py's CSV holds it: `c=v` for each of KEYS[op] (the row's op by
    default), joined by `;`."""
    return ";".join(f"{c}={r[c]}" for c in KEYS[op or r["op"]])


def policy_of(run_dir):
    try:
        t = json.load(open(f"{run_dir}/manifest.json"))["policies"]["timing"]
    except (OSError, KeyError, ValueError):
        t = {}
    return {k: t.get(k, v) for k, v in POLICY.items()}


def graph_protocol():
    """The graph protocol of this process (PEER_GRAPH_PROTOCOL, default "held", rocsweep's since
    a4330ed)."""
    p = os.environ.get("PEER_GRAPH_PROTOCOL", "held") or "held"
    if p not in GRAPH_PROTOCOLS:
        raise SystemExit(f"PEER_GRAPH_PROTOCOL={p}: one of {', '.join(GRAPH_PROTOCOLS)}")
    return p


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
        if not paths and _torch():  # not loaded yet: the copy PyTorch's wheel ships, which PyTorch loads too
            import glob
            paths = sorted(glob.glob(os.path.join(os.path.dirname(_torch().__file__), "..", "nvidia", "*", "lib",
                                                  "libcublasLt.so*")))
        if not paths:  # no PyTorch: the system copy, as rocsweep loads it (by its soname)
            paths = ["libcublasLt.so.13"]
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


def _plan(r, lib_path=None):
    """rocsweep's descriptors for `r` (src/backend/cuda/gemm.rs Plan::new: row-major C = A B as the
    column-major C^T = B^T A^T, no transposes, 64 MiB workspace preference) and the heuristic's
    first algorithm: (lib, handle, plan dict with the algorithm, its workspace size and config)."""
    lib, handle, _ = _lt(lib_path)
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
    # The whole configuration (cublasLtMatmulAlgoConfigAttributes_t: 0 ID, 1 TILE_ID, 2 SPLITK_NUM,
    # 3 REDUCTION_SCHEME, 4 CTA_SWIZZLING, 5 CUSTOM_OPTION, 6 STAGES_ID, 7 INNER_SHAPE_ID,
    # 8 CLUSTER_SHAPE_ID) and the workspace the heuristic says the algorithm needs.
    names = ["id", "tile", "splitk", "reduction", "swizzle", "custom", "stages", "inner", "cluster"]
    config = " ".join(f"{nm}={_algo_attr(lib, h, i)}" for i, nm in enumerate(names)) + f" ws={int(h.workspaceSize)}"
    if compute == 64:
        alpha, beta = ctypes.c_uint16(0x3C00), ctypes.c_uint16(0)
    else:
        alpha, beta = ctypes.c_float(1.0), ctypes.c_float(0.0)
    plan = {"desc": desc, "la": la, "lb": lb, "lc": lc, "pref": pref, "res": res, "h": h, "alpha": alpha,
            "beta": beta, "size": int(h.workspaceSize), "chosen": chosen, "config": config}
    return lib, handle, plan


def _matmul_fn(lib, handle, plan, pa, pb, pc, wptr):
    """fn(stream=None): one cublasLtMatmul of `plan` on raw addresses, on `stream` (a raw CUstream
    as an int) or on PyTorch's current stream."""
    desc, la, lb, lc, size = plan["desc"], plan["la"], plan["lb"], plan["lc"], plan["size"]
    al, be, algo = ctypes.addressof(plan["alpha"]), ctypes.addressof(plan["beta"]), ctypes.addressof(plan["h"].algo)
    mm = lib.cublasLtMatmul

    def fn(stream=None):
        s = (_torch().cuda.current_stream().cuda_stream if _torch() else 0) if stream is None else stream
        rc = mm(handle, desc, al, pb, la, pa, lb, be, pc, lc, pc, lc, algo, wptr, size, s)
        if rc != 0:
            raise RuntimeError(f"cublasLtMatmul: cublasStatus {rc}")
    fn.plan = plan  # the descriptors, algorithm and scalars live as long as the call
    return fn


# --- device memory and timing through the CUDA driver API, as rocsweep's worker has them -------

class Driver:
    """The few libcuda calls rocsweep's CUDA backend makes through cudarc (0.19.10): memory from the
    device's default memory pool (cuMemAllocAsync on a stream, zeroed with cuMemsetD8Async, as
    CudaStream::alloc / alloc_zeros do where the device supports memory pools), a non-blocking stream
    of its own (CudaContext::new_stream), events with default flags, and stream capture into a graph
    (thread-local mode) instantiated with flags 0 and launched (src/backend/engine/timer.rs)."""

    def __init__(self, torch_init=True):
        cu = ctypes.CDLL("libcuda.so.1")
        P, U, S, I = ctypes.POINTER, ctypes.c_uint, ctypes.c_size_t, ctypes.c_int
        u64 = ctypes.c_uint64
        sigs = {
            "cuMemAllocAsync": [P(u64), S, _VP],
            "cuMemFreeAsync": [u64, _VP],
            "cuMemsetD8Async": [u64, ctypes.c_ubyte, S, _VP],
            "cuStreamCreate": [P(_VP), U],
            "cuStreamSynchronize": [_VP],
            "cuEventCreate": [P(_VP), U],
            "cuEventRecord": [_VP, _VP],
            "cuEventSynchronize": [_VP],
            "cuEventDestroy_v2": [_VP],
            "cuStreamBeginCapture_v2": [_VP, I],
            "cuStreamEndCapture": [_VP, P(_VP)],
            "cuGraphInstantiateWithFlags": [P(_VP), _VP, ctypes.c_ulonglong],
            "cuGraphLaunch": [_VP, _VP],
            "cuGraphUpload": [_VP, _VP],
            "cuGraphExecDestroy": [_VP],
            "cuGraphDestroy": [_VP],
            "cuMemcpyHtoD_v2": [u64, _VP, S],
        }
        self.f = {}
        for name, args in sigs.items():
            fn = getattr(cu, name)
            fn.argtypes = args
            fn.restype = I
            self.f[name] = fn
        # cuEventElapsedTime became cuEventElapsedTime_v2 in CUDA 12.8's headers; either does here.
        el = getattr(cu, "cuEventElapsedTime_v2", None) or cu.cuEventElapsedTime
        el.argtypes = [P(ctypes.c_float), _VP, _VP]
        el.restype = I
        self.f["elapsed"] = el
        self.f["cuCtxSynchronize"] = cu.cuCtxSynchronize
        if torch_init and _torch():
            _torch().cuda.synchronize()  # PyTorch made the primary context current on this thread
        else:  # as cudarc's CudaContext::new: the primary context, retained and made current
            for name, args in (("cuInit", [U]), ("cuDeviceGet", [P(I), I]),
                               ("cuDevicePrimaryCtxRetain", [P(_VP), I]), ("cuCtxSetCurrent", [_VP])):
                getattr(cu, name).argtypes = args
                getattr(cu, name).restype = I
            dev, ctx = I(0), _VP()
            self.ok(cu.cuInit(0), "cuInit")
            self.ok(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
            self.ok(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev.value), "cuDevicePrimaryCtxRetain")
            self.ok(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        s = _VP()
        self.ok(self.f["cuStreamCreate"](ctypes.byref(s), 1), "cuStreamCreate")  # CU_STREAM_NON_BLOCKING
        self.stream = s.value
        self.held = []

    @staticmethod
    def ok(rc, what):
        if rc != 0:
            raise RuntimeError(f"{what}: CUresult {rc}")

    def alloc(self, nbytes, zero=False):
        """A device address of `nbytes` from the default memory pool, on this stream, kept for the
        process (as a rocsweep unit keeps its buffers for its whole life)."""
        p = ctypes.c_uint64(0)
        self.ok(self.f["cuMemAllocAsync"](ctypes.byref(p), nbytes, self.stream), "cuMemAllocAsync")
        if zero:
            self.ok(self.f["cuMemsetD8Async"](p.value, 0, nbytes, self.stream), "cuMemsetD8Async")
        self.held.append(p.value)
        return p.value

    def upload(self, dst, host, nbytes):
        """Host bytes (any ctypes-addressable buffer's address) to device memory, synchronously."""
        self.ok(self.f["cuMemcpyHtoD_v2"](dst, host, nbytes), "cuMemcpyHtoD")

    def device_sync(self):
        self.ok(self.f["cuCtxSynchronize"](), "cuCtxSynchronize")

    def sync(self):
        self.ok(self.f["cuStreamSynchronize"](self.stream), "cuStreamSynchronize")

    def events(self, f):
        """ms between two events around f() on this stream (rocsweep's `events`)."""
        a, b = _VP(), _VP()
        self.ok(self.f["cuEventCreate"](ctypes.byref(a), 0), "cuEventCreate")
        self.ok(self.f["cuEventCreate"](ctypes.byref(b), 0), "cuEventCreate")
        self.ok(self.f["cuEventRecord"](a, self.stream), "cuEventRecord")
        f()
        self.ok(self.f["cuEventRecord"](b, self.stream), "cuEventRecord")
        self.ok(self.f["cuEventSynchronize"](b), "cuEventSynchronize")
        ms = ctypes.c_float(0)
        self.ok(self.f["elapsed"](ctypes.byref(ms), a, b), "cuEventElapsedTime")
        self.f["cuEventDestroy_v2"](a)
        self.f["cuEventDestroy_v2"](b)
        return ms.value

    def graphed(self, f, k, protocol=None):
        """ms per call of k calls of f captured into a graph and launched between two events
        (rocsweep's `graphed`): "upload" (rocsweep's since 41f8d8c) uploads the graph and launches it
        once; "warm" (before) launches it once warm, then the timed launch. No "held" here."""
        protocol = protocol or graph_protocol()
        if protocol not in ("upload", "warm"):
            raise RuntimeError(f"graph protocol {protocol}: the driver loop has upload and warm only")
        self.sync()
        self.ok(self.f["cuStreamBeginCapture_v2"](self.stream, 1), "cuStreamBeginCapture")  # THREAD_LOCAL
        try:
            for _ in range(k):
                f()
        finally:
            g = _VP()
            rc = self.f["cuStreamEndCapture"](self.stream, ctypes.byref(g))
        self.ok(rc, "cuStreamEndCapture")
        ex = _VP()
        self.ok(self.f["cuGraphInstantiateWithFlags"](ctypes.byref(ex), g, 0), "cuGraphInstantiateWithFlags")
        if protocol == "upload":
            self.ok(self.f["cuGraphUpload"](ex, self.stream), "cuGraphUpload")
        else:
            self.ok(self.f["cuGraphLaunch"](ex, self.stream), "cuGraphLaunch")
        ms = self.events(lambda: self.ok(self.f["cuGraphLaunch"](ex, self.stream), "cuGraphLaunch"))
        self.f["cuGraphExecDestroy"](ex)
        self.f["cuGraphDestroy"](g)
        return ms / k


_DRIVER = []


def driver(torch_init=True):
    """The process's Driver, made on first use (`torch_init`: let PyTorch initialise CUDA, where
    it is loaded; else the driver API does, as cudarc)."""
    if not _DRIVER:
        _DRIVER.append(Driver(torch_init))
    return _DRIVER[0]


class DriverUnit:
    """rocsweep's unit (src/exec/worker/unit.rs, src/timing.rs `measure`, src/backend/engine/timer.rs
    `timed`) through the driver API on a non-blocking stream of its own: idle, a first call, the
    SM clock, warm-up samples, samples until the policy stops; one sample is one call between two
    events, then K calls captured (thread-local) into a new graph, instantiated, uploaded and
    launched once between two events (PEER_GRAPH_PROTOCOL=warm: launched warm, then again between
    two events, as rocsweep before 41f8d8c), time / K. `f(stream)` makes one call on the raw stream.
    K: rocsweep's rule on the sample's own call time, or `k` where given (rocsweep's K for its unit,
    since a call made from Python costs more host time than rocsweep's)."""

    def __init__(self, policy):
        self.p = policy
        self.d = driver()

    def sample(self, f, k=None):
        s = self.d.stream
        call = self.d.events(lambda: f(s))
        kk = k or k_rule(call)
        return self.d.graphed(lambda: f(s), kk), call

    def unit(self, f, k=None):
        p, d = self.p, self.d
        d.device_sync()
        time.sleep(IDLE_S)
        d.events(lambda: f(d.stream))
        f(d.stream)
        d.sync()
        before = sm_clock_mhz()
        for _ in range(int(p["warmup"])):
            self.sample(f, k)
        dev, calls, total = [], [], 0.0
        while True:
            x, c = self.sample(f, k)
            dev.append(x)
            calls.append(c)
            total += max(x, c) / 1e3
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

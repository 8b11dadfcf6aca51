"""rocsweep's torch worker: runs and times one case at a time through PyTorch.

The rocsweep worker process (`rocsweep worker --backend torch`, Rust) starts this file with the
user's Python and drives it over stdin/stdout. It never judges a result: rocsweep makes the inputs,
sends them here, reads the output back and checks it against its own CPU reference. This file
imports nothing but torch and the standard library, so it runs in any environment that has torch.

Framing, both ways: one JSON object per line; a request whose object has "blobs": [n1, n2, ...]
is followed by that many raw byte strings of those lengths (little-endian tensors); an answer
with "blob": n is followed by n raw bytes. A "prepare" with "same_inputs": true sends no blobs:
it uses those of the previous "prepare" (the same case, another solver). Answers:
{"phase": name} while working (compile, alloc), then {"ok": true, ...} or
{"ok": false, "kind": "unsupported" | "error", "message": ...}.
The first line this process writes is the hello: what torch and its device are.

A request may carry "fault" (rocsweep's TEST-ONLY fault switch, ROCSWEEP_TEST_FAULT): the action
is carried out here, before the request's work, so a hang or crash happens inside Python as a
real one in torch would.
"""

import ctypes
import gc
import json
import math
import mmap
import os
import signal
import sys
import tempfile
import time

PROTOCOL = 1
_OUT = None
_torch = None
DT = {}


def send(obj, blob=None):
    if blob is not None:
        obj["blob"] = len(blob)
    _OUT.write((json.dumps(obj) + "\n").encode())
    if blob:
        _OUT.write(blob)
    _OUT.flush()


class Unsupported(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Device and timing


# Calls made back to back for one per-call figure (the last one's); see Device.run.
CALLS_IN_A_ROW = 3
# Set (to anything): each request's start and end on the host's monotonic clock go to the
# worker's log, so a device command can see how long the device rests between samples.
TRACE_VAR = "ROCSWEEP_TORCH_TRACE"
# Set to a file's path: each sample's work is recorded by torch.profiler and appended to that file
# as one JSON line: the prepared solver and problem, the sample's k (the calls asked for), calls
# (the calls it ran: a kept graph holds within a factor of two of k), method and figure, and every
# device kernel it ran (name, start and duration in us, in order; on the CPU, the top-level aten
# calls). A diagnostic, to hold the layer's kernels against PyTorch's own
# (benches/peer/kernel_table.py): the profiler's work slows the host, so a profiled run's rows
# are not the layer's figures.
KERNELS_VAR = "ROCSWEEP_TORCH_KERNELS"


class Device:
    """The device torch runs on (its GPU when it has one, else the CPU) and how to time on it."""

    def __init__(self):
        torch = _torch
        self.gpu = torch.cuda.is_available()
        self.dev = torch.device("cuda" if self.gpu else "cpu")
        self.hip = getattr(torch.version, "hip", None)
        self.cycles_per_s = None
        # How many times longer than its estimate the spin had to be for this op's last sample:
        # kept across samples (a spin that falls short once, from a slower clock than the one
        # calibrated, would fall short every sample), reset when an op is prepared.
        self.spin_scale = 1.0

    def sync(self):
        if self.gpu:
            _torch.cuda.synchronize()

    def calibrate(self):
        """Cycles per second of torch.cuda._sleep, measured once (it spins for clock cycles)."""
        torch = _torch
        if self.cycles_per_s is None:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(1000)
            a.record()
            torch.cuda._sleep(2_000_000)
            b.record()
            b.synchronize()
            self.cycles_per_s = 2_000_000 / max(a.elapsed_time(b) / 1e3, 1e-9)
        return self.cycles_per_s

    def run(self, op, k):
        """One sample: (launch-free device seconds per call, one call with its launch in seconds,
        how the first figure was taken). On the GPU, k > 1 calls are captured in a CUDA/HIP
        graph whose one replay is queued behind a spin kernel (torch.cuda._sleep) long enough to
        cover launching it, as rocsweep's library backends time a graph behind their blocking
        kernel (`graph`); a call that cannot be captured is queued k times behind the spin instead
        (`held`, with the stream's gaps between kernels), and a call that waits for the host is
        timed between events unheld (`events`). On the CPU: the host's clock (`wall`)."""
        torch = _torch
        fn = op.call
        if not self.gpu:
            t0 = time.perf_counter()
            fn()
            call = time.perf_counter() - t0
            if k <= 1:
                return call, call, "wall"
            t0 = time.perf_counter()
            for _ in range(k):
                fn()
            return (time.perf_counter() - t0) / k, call, "wall"
        ev = lambda: torch.cuda.Event(enable_timing=True)  # noqa: E731
        torch.cuda.synchronize()
        # The per-call figure: one call between two events, the last of CALLS_IN_A_ROW made
        # back to back as a framework's loop makes them. The first after the request's read
        # (the thread asleep in read(2)) pays the host's wake-up inside its launch, which
        # PyTorch's own loop of calls does not.
        for _ in range(CALLS_IN_A_ROW):
            a, b = ev(), ev()
            t0 = time.perf_counter()
            a.record()
            fn()
            b.record()
            launch = time.perf_counter() - t0
            b.synchronize()
        call = a.elapsed_time(b) / 1e3
        if op.host_sync:
            a.record()
            for _ in range(k):
                fn()
            b.record()
            b.synchronize()
            return a.elapsed_time(b) / 1e3 / k, call, "events"
        if k > 1:
            g = self.graph_of(op, k)
            if g is not None:
                graph, calls, replay_s = g
                return self.held(graph.replay, replay_s) / calls, call, "graph"
        # The spin covers queueing the k calls on the host (twice the host time one call just
        # took to queue, k times over), not their device time: a longer spin would rest the card
        # before every sample, which rocsweep's own timer does not (its kernel is released as
        # soon as the calls are queued), and a card at its power limit runs faster after a rest.
        def queued():
            for _ in range(k):
                fn()
        return self.held(queued, k * max(launch, 5e-6)) / k, call, "held"

    def held(self, enqueue, host_s):
        """Device seconds of what enqueue() queues, queued behind a spin that outlasts the host's
        enqueuing (twice host_s, longer when it fell short)."""
        torch = _torch
        ev = lambda: torch.cuda.Event(enable_timing=True)  # noqa: E731
        hold_s = (100e-6 + 2.0 * host_s) * self.spin_scale
        for _ in range(6):
            held, a, b = ev(), ev(), ev()
            torch.cuda._sleep(int(hold_s * self.calibrate()))
            held.record()
            a.record()
            enqueue()
            b.record()
            released_late = not held.query()
            b.synchronize()
            if released_late:
                return a.elapsed_time(b) / 1e3
            hold_s *= 4
            self.spin_scale = min(self.spin_scale * 4, 4.0**5)
        raise RuntimeError("the spin kernel ended before the calls were queued (6 tries)")

    def graph_of(self, op, k):
        """(graph, calls, host seconds to launch a replay): the op's k calls captured once, and
        kept while the sample size asked for stays within a factor of two of what it holds (the
        device time per call is the replay's over the calls it holds). None where the call cannot
        be captured (the op then samples by queueing, and says so)."""
        torch = _torch
        if op.graph is not None:
            graph, calls, _ = op.graph
            if calls // 2 <= k <= calls * 2:
                return op.graph
            op.graph = None
            del graph
        if op.uncapturable:
            return None
        try:
            # One call first, outside the capture (lazy set-up, cuDNN's benchmark), on the
            # current stream: not on a side stream, as PyTorch's capture recipe warms up. On an
            # H200 (PyTorch 2.11), once a process had captured a second or third graph prepared
            # on a side stream, every replay in it (the first graph's too) ran 0.2-0.3 us slower
            # per kernel boundary (up to 3 % of a 20-30 us call); warmed up on the current
            # stream, each graph replays as a process's first does
            # (reports/h200/torch-layer/recapture/).
            op.call()
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for _ in range(k):
                    op.call()
            graph.replay()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            graph.replay()
            replay_s = time.perf_counter() - t0
            torch.cuda.synchronize()
        except Exception as e:  # not capturable: a host sync, an unsupported call
            print("rocsweep torch worker: the call cannot be captured in a graph (%s: %s); "
                  "its samples are queued calls" % (type(e).__name__, e), file=sys.stderr)
            op.uncapturable = True
            torch.cuda.synchronize()
            return None
        op.graph = (graph, k, max(replay_s, 5e-6))
        return op.graph

    def flush(self, nbytes):
        """Writes nbytes of device memory (0: twice the L2) past the caches; whether it did."""
        torch = _torch
        if not self.gpu:
            return False
        if nbytes <= 0:
            l2 = getattr(torch.cuda.get_device_properties(self.dev), "L2_cache_size", 0) or (64 << 20)
            nbytes = 2 * l2
        buf = torch.empty(nbytes // 4, dtype=torch.float32, device=self.dev)
        buf.zero_()
        del buf
        torch.cuda.synchronize()
        return True


def profiled(d, op, k, path, label):
    """d.run(op, k), its kernels appended to `path` as one JSON line (KERNELS_VAR) with the calls
    the sample ran (a kept graph may hold other than k)."""
    from torch.profiler import ProfilerActivity, profile

    if d.gpu and k > 1 and not op.host_sync:
        d.graph_of(op, k)  # captured before the profiler starts, as d.run would
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if d.gpu else [])
    with profile(activities=acts) as prof:
        result = d.run(op, k)
        d.sync()
    if d.gpu:
        events = [e for e in prof.events() if e.device_type.name != "CPU"]
    else:
        events = [e for e in prof.events() if e.cpu_parent is None and e.name.startswith("aten::")]
    kernels = [[e.name, e.time_range.start, e.time_range.elapsed_us()] for e in events]
    kernels.sort(key=lambda e: e[1])
    dev_s, _, method = result
    calls = op.graph[1] if method == "graph" else k
    line = json.dumps(dict(label, k=k, calls=calls, method=method, device_s=dev_s, kernels=kernels))
    # Appended, never through a link planted at the path.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "a") as f:
        f.write(line + "\n")
    return result


def info(d):
    torch = _torch
    versions = {"torch": torch.__version__}
    if d.hip:
        versions["hip"] = str(d.hip)
    elif torch.version.cuda:
        versions["cuda"] = str(torch.version.cuda)
    try:
        if torch.backends.cudnn.is_available():
            versions["miopen" if d.hip else "cudnn"] = str(torch.backends.cudnn.version())
    except Exception:  # a build without cuDNN/MIOpen bindings
        pass
    try:  # read from its metadata: importing accelerate takes a second
        import importlib.metadata
        versions["accelerate"] = importlib.metadata.version("accelerate")
    except Exception:
        versions["accelerate"] = "not installed"
    pci = None
    if d.gpu:
        p = torch.cuda.get_device_properties(d.dev)
        # gcnArchName is the gfx target on ROCm builds (CUDA builds fill it with the name).
        arch = getattr(p, "gcnArchName", "") if d.hip else "sm_%d%d" % (p.major, p.minor)
        devices = ["%s (%s, torch %s)" % (p.name, arch, "ROCm" if d.hip else "CUDA")]
        count = torch.cuda.device_count()
        # Where the device sits, so that the Rust side can read its clock and temperature
        # (NVML, ROCm SMI) as the other GPU backends do; older torch has no PCI fields.
        if hasattr(p, "pci_bus_id"):
            pci = "%04x:%02x:%02x.0" % (getattr(p, "pci_domain_id", 0), p.pci_bus_id, p.pci_device_id)
    else:
        devices = ["cpu (torch %s, %d threads)" % (torch.__version__, torch.get_num_threads())]
        count = 1
    return {
        "pci_bus_id": pci,
        "versions": versions,
        "devices": devices,
        "device_count": count,
        "gpu": d.gpu,
        "runtime": "hip" if d.hip else ("cuda" if d.gpu else "cpu"),
        "libraries": mapped_libraries(),
        "python": sys.executable,
    }


def mapped_libraries():
    """The shared libraries of torch and the GPU stack this process has mapped."""
    keep = ("torch", "c10", "amdhip", "hsa-runtime", "miopen", "rocblas", "hipblas", "rocrand",
            "hiprand", "cudnn", "cublas", "cudart", "curand", "nvrtc", "cuda", "rocm", "nccl", "rccl")
    seen = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) < 6:
                    continue
                path = parts[5].strip()
                name = os.path.basename(path).lower()
                if ".so" in name and any(k in name for k in keep) and path not in seen:
                    seen.append(path)
    except OSError:
        pass
    return seen


# ---------------------------------------------------------------------------------------------
# Tensors in and out


def tensor(blob, dtype, shape=None):
    t = _torch.frombuffer(bytearray(blob), dtype=DT[dtype]) if blob else _torch.empty(0, dtype=DT[dtype])
    return t.view(*shape) if shape is not None else t


def to_bytes(t):
    t = t.detach().to("cpu").contiguous()
    return ctypes.string_at(t.data_ptr(), t.numel() * t.element_size())


def dtype_name(t):
    return {v: k for k, v in DT.items()}[t.dtype]


def nchw(blob, dtype, dims, layout, dev):
    """A tensor of logical shape (N, C, H, W) stored as the case's layout says: channels_last
    strides for nhwc (a [k, r, s, c] filter is the same)."""
    n, c, h, w = dims
    if layout == "nhwc":
        return tensor(blob, dtype, (n, h, w, c)).to(dev).permute(0, 3, 1, 2)
    return tensor(blob, dtype, (n, c, h, w)).to(dev)


def from_nchw(t, layout):
    return t.permute(0, 2, 3, 1).contiguous() if layout == "nhwc" else t.contiguous()


# ---------------------------------------------------------------------------------------------
# Ops: each prepare returns an Op whose call() is one timed call and output() its result.


class Op:
    host_sync = False
    chosen = ""

    def __init__(self, call, output):
        self.call = call
        self._output = output
        self.result = None
        # The graph of the op's calls that launch-free samples replay (Device.graph_of), and
        # whether capturing failed once.
        self.graph = None
        self.uncapturable = False

    def output(self):
        return self._output(self)


def solver_flags(solver):
    """`torch-matmul+cublaslt` -> ("torch-matmul", "cublaslt")."""
    base, _, blas = solver.partition("+")
    return base, blas


def conv2d(p, solver, blobs, d):
    torch = _torch
    F = torch.nn.functional
    g = p["geom"]
    if solver not in ("torch-default", "torch-benchmark"):
        raise Unsupported("torch has no conv2d solver `%s`" % solver)
    torch.backends.cudnn.benchmark = solver == "torch-benchmark"
    torch.backends.cudnn.allow_tf32 = False
    lay, dt = p["layout"], p["dtype"]
    oh = (g["h"] + 2 * g["pad_h"] - g["dil_h"] * (g["kh"] - 1) - 1) // g["stride_h"] + 1
    ow = (g["w"] + 2 * g["pad_w"] - g["dil_w"] * (g["kw"] - 1) - 1) // g["stride_w"] + 1
    x_dims = (g["n"], g["c_in"], g["h"], g["w"])
    w_dims = (g["c_out"], g["c_in"] // g["groups"], g["kh"], g["kw"])
    y_dims = (g["n"], g["c_out"], oh, ow)
    kw = dict(stride=(g["stride_h"], g["stride_w"]), padding=(g["pad_h"], g["pad_w"]),
              dilation=(g["dil_h"], g["dil_w"]), groups=g["groups"])
    a_blob, b_blob = blobs
    direction = p["direction"]
    if direction == "fwd":
        x, w = nchw(a_blob, dt, x_dims, lay, d.dev), nchw(b_blob, dt, w_dims, lay, d.dev)
        fn = lambda: F.conv2d(x, w, **kw)  # noqa: E731
    elif direction == "bwd_data":
        dy, w = nchw(a_blob, dt, y_dims, lay, d.dev), nchw(b_blob, dt, w_dims, lay, d.dev)
        fn = lambda: torch.nn.grad.conv2d_input(x_dims, w, dy, **kw)  # noqa: E731
    else:
        x, dy = nchw(a_blob, dt, x_dims, lay, d.dev), nchw(b_blob, dt, y_dims, lay, d.dev)
        fn = lambda: torch.nn.grad.conv2d_weight(x, w_dims, dy, **kw)  # noqa: E731

    def call():
        op.result = fn()

    op = Op(call, lambda o: from_nchw(o.result, lay))
    op.chosen = "cudnn.benchmark=%s" % torch.backends.cudnn.benchmark
    return op


BLAS = ("cublas", "cublaslt", "hipblaslt", "ck")


def gemm(p, solver, blobs, d):
    torch = _torch
    base, blas = solver_flags(solver)
    if base not in ("torch-matmul", "torch-linear"):
        raise Unsupported("torch has no gemm solver `%s`" % solver)
    if p["out_dtype"] != p["dtype"]:
        raise Unsupported("torch.matmul writes its inputs' dtype; out_dtype %s differs from dtype %s"
                          % (p["out_dtype"], p["dtype"]))
    if p["compute"] == "f16" and p["dtype"] != "f16":
        raise Unsupported("compute f16 needs f16 operands in torch")
    if blas:
        if blas not in BLAS:
            raise Unsupported("unknown BLAS preference `%s` (expected one of %s)" % (blas, ", ".join(BLAS)))
        if not d.gpu:
            raise Unsupported("the BLAS preference applies to GPU matmul; torch has no GPU here")
        torch.backends.cuda.preferred_blas_library(blas)
    torch.backends.cuda.matmul.allow_tf32 = p["compute"] == "tf32"
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = p["compute"] == "f16"
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    m, n, k, batch, dt = p["m"], p["n"], p["k"], p["batch"], p["dtype"]
    a_blob, b_blob = blobs
    a_shape = (batch, k, m) if p["trans_a"] else (batch, m, k)
    b_shape = (batch, n, k) if p["trans_b"] else (batch, k, n)
    a = tensor(a_blob, dt, a_shape).to(d.dev)
    b = tensor(b_blob, dt, b_shape).to(d.dev)
    if p["trans_a"]:
        a = a.transpose(1, 2)
    if batch == 1:
        a = a[0]
    if base == "torch-linear":
        if batch != 1:
            raise Unsupported("F.linear shares one weight across the batch; this case has %d B matrices" % batch)
        # F.linear(x, W) is x @ W^T with W stored [n, k]: the `nt` layout.
        wt = b[0] if p["trans_b"] else b[0].t()
        fn = lambda: torch.nn.functional.linear(a, wt)  # noqa: E731
    else:
        bb = b.transpose(1, 2) if p["trans_b"] else b
        if batch == 1:
            bb = bb[0]
        fn = lambda: torch.matmul(a, bb)  # noqa: E731

    def call():
        op.result = fn()

    op = Op(call, lambda o: o.result.contiguous())
    if d.gpu:
        op.chosen = "preferred_blas_library=%s" % str(torch.backends.cuda.preferred_blas_library()).split(".")[-1]
    return op


def rng(p, solver, blobs, d, seed):
    torch = _torch
    count, mean, std, dt = p["count"], p["mean"], p["std"], DT[p["dtype"]]
    dev = d.dev
    template = torch.empty(count, dtype=dt, device=dev)
    if solver == "torch-randn":
        fn = lambda: torch.randn(count, dtype=dt, device=dev) * std + mean  # noqa: E731
    elif solver == "torch-randn_like":
        fn = lambda: torch.randn_like(template) * std + mean  # noqa: E731
    elif solver == "torch-normal_":
        fn = lambda: template.normal_(mean, std)  # noqa: E731
    elif solver == "torch-rand":
        if p["dtype"] != "f32":
            raise Unsupported("torch-rand turns two uniform draws into normals (Box-Muller); in %s "
                              "the uniform draw is too coarse for the moment checks" % p["dtype"])

        def fn():
            half = (count + 1) // 2
            u1 = 1.0 - torch.rand(half, dtype=dt, device=dev)  # (0, 1]: log stays finite
            u2 = torch.rand(half, dtype=dt, device=dev)
            r = torch.sqrt(-2.0 * torch.log(u1))
            z = torch.cat([r * torch.cos(2 * math.pi * u2), r * torch.sin(2 * math.pi * u2)])[:count]
            return z * std + mean
    else:
        raise Unsupported("torch has no rng solver `%s`" % solver)
    torch.manual_seed(seed & 0x7FFF_FFFF_FFFF_FFFF)

    def call():
        op.result = fn()

    op = Op(call, lambda o: o.result)
    return op


class HostBuffer:
    """Host memory of the kind a copy case names: pageable, pinned, shared or a memory-mapped
    file."""

    def __init__(self, kind, nbytes, d):
        torch = _torch
        self.map = None
        self.file = None
        if kind == "pinned":
            if not d.gpu:
                raise Unsupported("pinned host memory needs a GPU; torch has none here")
            self.t = torch.empty(nbytes // 4, dtype=torch.float32).pin_memory()
        elif kind == "shared":
            # Shared memory, as a DataLoader worker's tensor reaches the main process
            # (torch.multiprocessing's sharing strategy decides how).
            self.t = torch.empty(nbytes // 4, dtype=torch.float32).share_memory_()
        elif kind == "mmap":
            self.file = tempfile.TemporaryFile()
            self.file.truncate(max(nbytes, 1))
            self.map = mmap.mmap(self.file.fileno(), max(nbytes, 1))
            self.t = torch.frombuffer(self.map, dtype=torch.float32, count=nbytes // 4)
        else:
            self.t = torch.empty(nbytes // 4, dtype=torch.float32)


BATCH_KINDS = ("dataloader", "accelerate")


class CaseBatches:
    """A map-style dataset whose items are the case's bytes as a training batch has them: a dict
    of the input tensor and a second tensor. Read in a DataLoader's worker process, where the
    test fault of a DataLoader case is carried out (the process a worker's own fault hits)."""

    def __init__(self, blob, fault_action=None):
        self.blob = bytes(blob)
        self.fault_action = fault_action

    def __len__(self):
        return 2

    def __getitem__(self, i):
        if self.fault_action:
            fault(self.fault_action)
        x = _torch.frombuffer(bytearray(self.blob), dtype=_torch.float32)
        return {"input": x, "label": _torch.tensor(i)}


def first_batch(p, blob, d, fault_action):
    """The first batch of a real DataLoader (2 worker processes, forked, batch size 1, the
    case's pin_memory) over CaseBatches; its workers (and pin-memory thread) are shut down
    before it is returned, so that none outlives the unit."""
    torch = _torch
    if p.get("pin_memory") and not d.gpu:
        raise Unsupported("pin_memory pins for a GPU; torch has none here")
    mp = torch.multiprocessing
    strategy = p.get("sharing_strategy") or "default"
    before = mp.get_sharing_strategy()
    if strategy != "default":
        offered = sorted(mp.get_all_sharing_strategies())
        if strategy not in offered:
            raise Unsupported("this platform does not offer sharing strategy %s; "
                              "torch.multiprocessing offers %s"
                              % (strategy, ", ".join(offered)))
        mp.set_sharing_strategy(strategy)
    send({"phase": "run"})
    try:
        loader = torch.utils.data.DataLoader(
            CaseBatches(blob, fault_action), batch_size=1, num_workers=2,
            pin_memory=bool(p.get("pin_memory")), multiprocessing_context="fork")
        it = iter(loader)
        try:
            batch = next(it)
        finally:
            shutdown = getattr(it, "_shutdown_workers", None)
            if shutdown:
                shutdown()
            del it, loader
    finally:
        # The strategy is the process's: the next unit starts from the platform's own.
        mp.set_sharing_strategy(before)
    return batch, mp.get_sharing_strategy() if strategy == "default" else strategy


def move_batch(p, solver, blobs, d, fault_action):
    """memory = dataloader | accelerate: the first batch moved to the device by `.to()` or by
    accelerate's send_to_device, as seed 001's training loop moved it."""
    nb = solver == "torch-to-nonblocking"
    kind = p["memory"]
    if kind == "accelerate":
        try:
            from accelerate.utils import send_to_device
        except Exception as e:
            raise Unsupported("accelerate is not installed in %s (%s: %s)"
                              % (sys.executable, type(e).__name__, e))
    batch, sharing = first_batch(p, blobs[0], d, fault_action)
    x = batch["input"]
    if kind == "accelerate":
        fn = lambda: send_to_device(batch, d.dev, non_blocking=nb)["input"]  # noqa: E731
    else:
        fn = lambda: x.to(d.dev, non_blocking=nb) if d.gpu else x.clone()  # noqa: E731

    def call():
        op.result = fn()

    op = Op(call, lambda o: o.result.reshape(-1))
    op.host_sync = d.gpu and not (nb and x.is_pinned())
    op.chosen = "first batch, pin_memory=%s, sharing %s%s" % (
        bool(p.get("pin_memory")), sharing,
        ", send_to_device" if kind == "accelerate" else "")
    op.hold = batch
    return op


def copy(p, solver, blobs, d, fault_action=None):
    if solver not in ("torch-to", "torch-to-nonblocking"):
        raise Unsupported("torch has no copy solver `%s`" % solver)
    nb = solver == "torch-to-nonblocking"
    kind = p.get("memory") or ("pinned" if p.get("pinned") else "pageable")
    if kind in BATCH_KINDS:
        return move_batch(p, solver, blobs, d, fault_action)
    src = tensor(blobs[0], "f32")
    direction = p["direction"]
    if direction == "d2d":
        s = src.to(d.dev)
        fn = lambda: s.clone()  # noqa: E731
        host_sync = False
    elif direction == "h2d":
        host = HostBuffer(kind, src.numel() * 4, d)
        host.t.copy_(src)
        fn = lambda: host.t.to(d.dev, non_blocking=nb) if d.gpu else host.t.clone()  # noqa: E731
        host_sync = not (nb and kind == "pinned")
    else:
        s = src.to(d.dev)
        if kind == "pageable":
            fn = lambda: s.to("cpu", non_blocking=nb) if d.gpu else s.clone()  # noqa: E731
        else:
            host = HostBuffer(kind, src.numel() * 4, d)
            fn = lambda: host.t.copy_(s, non_blocking=nb)  # noqa: E731
        host_sync = not (nb and kind == "pinned")

    def call():
        op.result = fn()

    op = Op(call, lambda o: o.result)
    op.host_sync = host_sync and d.gpu
    return op


def cast(p, solver, blobs, d):
    src_host = tensor(blobs[0], p["from"])
    to = DT[p["to"]]
    method = {"f32": "float", "f16": "half", "bf16": "bfloat16"}[p["to"]]
    if solver == "torch-to":
        x = src_host.to(d.dev)
        fn = lambda: x.to(to)  # noqa: E731
    elif solver == "torch-method":
        x = src_host.to(d.dev)
        fn = lambda: getattr(x, method)()  # noqa: E731
    elif solver == "torch-cpu":
        x = src_host
        fn = lambda: x.to(to)  # noqa: E731
    else:
        raise Unsupported("torch has no cast solver `%s`" % solver)

    def call():
        op.result = fn()

    op = Op(call, lambda o: o.result)
    op.chosen = {"torch-to": ".to(%s)" % p["to"], "torch-method": ".%s()" % method,
                 "torch-cpu": ".to(%s) on the CPU" % p["to"]}[solver]
    return op


def graph(p, solver, blobs, d):
    """The captured sequence of rocsweep's graph op: a channel-mixing GEMM, a 3x3 convolution
    (pad 1), a ReLU, replayed with a new activation each time."""
    torch = _torch
    F = torch.nn.functional
    # One replay per activation blob (the problem's `replays`).
    c, s, keep, dt = p["channels"], p["size"], p["keep_outputs"], p["dtype"]
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    mix = tensor(blobs[0], dt, (c, c)).to(d.dev)
    filt = tensor(blobs[1], dt, (c, c, 3, 3)).to(d.dev)
    acts = [tensor(b, dt, (c, s * s)).to(d.dev) for b in blobs[2:]]

    def seq(x):
        return torch.relu(F.conv2d((mix @ x).view(1, c, s, s), filt, padding=1))

    if solver == "torch-eager":
        step = seq
    elif solver == "torch-cudagraph":
        if not d.gpu:
            raise Unsupported("torch.cuda.CUDAGraph needs a GPU; torch has none here")
        static_x = acts[0].clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                seq(static_x)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            static_y = seq(static_x)

        def step(x):
            static_x.copy_(x)
            g.replay()
            return static_y.clone() if keep else static_y
    elif solver == "torch-compile":
        send({"phase": "compile"})
        compiled = torch.compile(seq, mode="reduce-overhead")
        for _ in range(3):  # reduce-overhead records its graph on the third call
            compiled(acts[0])
        d.sync()
        step = compiled
    else:
        raise Unsupported("torch has no graph solver `%s`" % solver)

    def call():
        outs = []
        for x in acts:
            y = step(x)
            # Each replay's output is read after that replay, or (keep_outputs) all at the end,
            # after later replays ran: the "overwritten by a subsequent run" class.
            outs.append(y if keep else to_bytes(y))
        op.result = [to_bytes(y) for y in outs] if keep else outs

    op = Op(call, lambda o: b"".join(o.result))
    op.host_sync = True
    op.raw_output = True
    # A captured graph reads and writes the addresses it was captured with: every tensor it
    # touches must live as long as it does. `step` keeps static_x and static_y, but not mix and
    # filt (only `seq` refers to them), and freed they would be handed to the next allocation,
    # e.g. keep_outputs' clones, which the next replay would then read as weights.
    op.hold = (mix, filt, acts, step, seq)
    return op


OPS = {"conv2d": conv2d, "gemm": gemm, "copy": copy, "cast": cast, "graph": graph}


# ---------------------------------------------------------------------------------------------
# Faults (TEST-ONLY) and the request loop


def fault(action):
    if action in ("hang", "gpuhang"):
        while True:
            pass
    if action == "segv":
        signal.signal(signal.SIGSEGV, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGSEGV)
    if action == "abort":
        os.abort()
    if action == "exit":
        os._exit(17)


def read_request(inp):
    line = inp.readline()
    if not line:
        return None, []
    req = json.loads(line)
    blobs = []
    for n in req.get("blobs", []):
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            r = inp.readinto(view[got:])
            if not r:
                return None, []
            got += r
        blobs.append(buf)
    return req, blobs


def serve(d, inp):
    op, p, solver = None, {}, ""
    # The inputs of the last prepare: a unit of the same case (another solver) says
    # "same_inputs" instead of sending them again.
    last_inputs = []
    while True:
        req, blobs = read_request(inp)
        if req is None or req.get("cmd") == "shutdown":
            return 0
        if req.get("cmd") == "prepare":
            if req.get("same_inputs"):
                blobs = last_inputs
            else:
                last_inputs = blobs
        cmd = req.get("cmd")
        # A DataLoader case's fault is carried out in its DataLoader's worker process.
        batch_fault = None
        if cmd == "prepare" and req.get("problem", {}).get("memory") in BATCH_KINDS:
            batch_fault, req["fault"] = req.get("fault"), None
        if req.get("fault"):
            fault(req["fault"])
        try:
            if cmd == "prepare":
                op = None
                # The last op's objects are freed now, cycles among them too (an Op and its
                # call closure refer to each other): a DataLoader forks its workers from this
                # process, and a forked worker that collects a CUDA tensor left for the garbage
                # collector calls CUDA and aborts ("CUDA error: initialization error"; its
                # DataLoader says the worker "exited unexpectedly"; seen on an H200).
                gc.collect()
                if d.gpu:
                    # The last op's memory (its graph's pool among it) back to the device: each
                    # solver has a process of its own, and their caching allocators share the GPU.
                    _torch.cuda.empty_cache()
                d.spin_scale = 1.0
                print("rocsweep torch worker: process %d prepares %s" % (os.getpid(), req["solver"]),
                      file=sys.stderr)
                p, solver = req["problem"], req["solver"]
                kind = p["op"]
                if kind == "rng":
                    op = rng(p, req["solver"], blobs, d, req.get("seed", 0))
                elif kind == "copy":
                    op = copy(p, req["solver"], blobs, d, batch_fault)
                elif kind in OPS:
                    op = OPS[kind](p, req["solver"], blobs, d)
                else:
                    raise Unsupported("torch has no op `%s`" % kind)
                send({"ok": True, "chosen": op.chosen})
            elif cmd == "run":
                t0 = time.perf_counter()
                k = max(1, int(req.get("k", 1)))
                kernels_path = os.environ.get(KERNELS_VAR)
                if kernels_path:
                    label = {"solver": solver, "problem": p}
                    dev_s, call_s, method = profiled(d, op, k, kernels_path, label)
                else:
                    dev_s, call_s, method = d.run(op, k)
                if os.environ.get(TRACE_VAR):
                    print("rocsweep torch worker: run k=%s start=%.6f end=%.6f" % (
                        req.get("k"), t0, time.perf_counter()), file=sys.stderr)
                send({"ok": True, "device": dev_s, "call": call_s, "method": method})
            elif cmd == "output":
                d.sync()
                if getattr(op, "raw_output", False):
                    send({"ok": True, "raw": True}, op.output())
                else:
                    t = op.output()
                    send({"ok": True, "dtype": dtype_name(t)}, to_bytes(t))
            elif cmd == "flush":
                flushed = d.flush(int(req.get("bytes", 0)))
                send({"ok": True, "flushed": flushed})
            else:
                send({"ok": False, "kind": "error", "message": "unknown request `%s`" % cmd})
        except Unsupported as e:
            send({"ok": False, "kind": "unsupported", "message": str(e)})
        except Exception as e:  # torch's own error: an `error` row with its message
            send({"ok": False, "kind": "error", "code": type(e).__name__, "message": str(e)})


def main():
    global _OUT, _torch, DT
    # The protocol leaves on a private copy of stdout; fd 1 becomes stderr (rocsweep's worker log),
    # so a library printing to stdout cannot corrupt it.
    _OUT = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    inp = sys.stdin.buffer
    # torch warns on import when numpy is missing; it needs none here, and the warning would
    # stand in every crash row's worker-log tail.
    import warnings
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    try:
        import torch
    except Exception as e:
        send({"ok": False, "protocol": PROTOCOL,
              "message": "%s cannot import torch: %s" % (sys.executable, e)})
        return 1
    _torch = torch
    DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    d = Device()
    send({"ok": True, "protocol": PROTOCOL, "info": info(d)})
    return serve(d, inp)


if __name__ == "__main__":
    sys.exit(main())

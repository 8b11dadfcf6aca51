#!/usr/bin/env python3
"""Does a CUDA graph captured second in a PyTorch process replay slower than the first? (issue 42;
a probe of PyTorch alone, not a timed test.)

usage: graph_recapture.py OUT_DIR [REPS]

reports/h200/torch-layer/kernels/ found, in PyTorch's clean processes (one per shape), the same
call's graph replaying with 0.1 us between kernels where it was the process's first graph and
0.35-0.42 us where a graph of K = 2 calls had been captured (and freed) before it. Each scenario
below runs in a fresh process (a fork of this one, which imported torch and never touched CUDA),
REPS times (default 2), once unprofiled (the figure) and once with torch.profiler around each
measured replay (the gaps); op A is the call under test, op B another call:
- once: A's graph of K calls captured and measured: the process's first graph;
- small-first: A's graph of 2 calls captured, measured, freed; then A's graph of K (what the
  reference did where its first sample gave K = 2);
- twice: A's graph of K captured, measured, freed (gc); then A's graph of K again;
- twice-emptied: the same with torch.cuda.empty_cache() between;
- twice-kept: A's graph of K captured twice, both alive, the second measured;
- other-first: B's graph of K captured, measured, freed; then A's graph (the torch layer's order:
  one graph per unit, a unit's shape after another's);
- fresh-inputs: A's graph, then A built again on new inputs (new tensors, as the next unit of the
  same shape would be) and captured anew.
A measurement: the graph's replay queued behind a spin kernel (torch.cuda._sleep) that outlasts
its launch, between two events (fidelity_reference.Timer.held_ms; the committed results were
taken by this script's own copy of it, whose first spin lasted 0.3 ms rather than 0.2); the
median of 9 replays over the calls it holds (us per call).
Profiled: the median gap between one kernel's end and the next's start inside one such replay.
Each graph is captured as the torch worker captured it until 2026-11-30 (one call on a side
stream of its own first, PyTorch's capture recipe; the output kept as `y = f(x)` keeps it).

RECAPTURE_SET=pin (unprofiled, on PIN_OPS): what turns the slower replays on, and off:
- five: five graphs of A, one after another, each freed before the next;
- idle: the second graph after two seconds idle (the first freed, memory emptied);
- layer-like: B's graph, its output copied to the host, everything freed, 0.3 s, then A built
  anew and captured (two units of the torch worker in one Python);
- one-side-stream: three graphs whose warm-up calls all run on one side stream;
- no-side-stream: three graphs whose warm-up calls run on the current stream;
- shared-pool: the second graph in the first one's memory pool;
- sleep-kernels: no library: three graphs of 40 spin kernels (torch.cuda._sleep, 5000 cycles);
- cupy-kernels: the same spins captured by cupy's stream capture (no PyTorch graph, no warm-up).
Writes OUT_DIR/recapture.jsonl or pin.jsonl (a line per measured graph) and recapture.md or
pin.md (per op and scenario: each measured graph's us per call and gap, the medians over REPS).
Results: reports/h200/torch-layer/recapture/.
"""
import gc
import json
import os
import statistics
import sys

from fidelity_reference import Timer, in_fork

REPLAYS = 9
# cupy's spin: the first hold, ms (4x longer while the replay was not queued before it ended).
SPIN_MS = 0.3
SCENARIOS = ("once", "small-first", "twice", "twice-emptied", "twice-kept", "other-first", "fresh-inputs")
# RECAPTURE_SET=pin: what turns the slower replays on and off (see pinned()), on the ops of PIN_OPS.
PIN = ("five", "idle", "layer-like", "one-side-stream", "no-side-stream", "shared-pool", "sleep-kernels", "cupy-kernels")
PIN_OPS = ("conv 256->256 3x3 at 14x14 f16", "gemm 1000x1001x999 bf16")
# name: (kind, geometry, dtype, K: calls per graph as rocsweep's sampling rule gives for it)
OPS = {
    "conv 512->2048 1x1 at 7x7 f16": ("conv", (32, 512, 2048, 7, 1, 0), "f16", 9),
    "conv 256->256 3x3 at 14x14 f16": ("conv", (32, 256, 256, 14, 3, 1), "f16", 7),
    "conv 1024->256 1x1 at 14x14 f16": ("conv", (32, 1024, 256, 14, 1, 0), "f16", 8),
    "gemm 1000x1001x999 bf16": ("gemm", (1000, 1001, 999), "bf16", 10),
}
OTHER = {"conv": "gemm 1000x1001x999 bf16", "gemm": "conv 1024->256 1x1 at 14x14 f16"}


def make(torch, name):
    """A's call on fresh inputs (uniform in [-1, 1)), its output kept until the next replaces it."""
    kind, geom, dtype, _ = OPS[name]
    dt = {"f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False

    def uniform(*shape):
        return (torch.rand(*shape) * 2 - 1).to(dt).cuda()

    if kind == "conv":
        n, ci, co, hw, k, pad = geom
        x, w = uniform(n, ci, hw, hw), uniform(co, ci, k, k)
        fn = lambda: torch.nn.functional.conv2d(x, w, padding=pad)  # noqa: E731
    else:
        m, n, k = geom
        a, b = uniform(m, k), uniform(k, n)
        fn = lambda: torch.matmul(a, b)  # noqa: E731
    out = [None]

    def call():
        out[0] = fn()
    call()
    torch.cuda.synchronize()
    return call


def capture(torch, call, k, side=None, warm_on_side=True, pool=None):
    """The torch worker's capture before 2026-11-30: a call on a side stream (a new one unless
    `side` is given; on the current stream, as the worker now does, when warm_on_side is False),
    then k calls captured (in `pool` where given: another graph's memory pool)."""
    if warm_on_side:
        side = side or torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            call()
        torch.cuda.current_stream().wait_stream(side)
    else:
        call()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, pool=pool):
        for _ in range(k):
            call()
    g.replay()
    torch.cuda.synchronize()
    return g


class Meter:
    def __init__(self, torch, profiled):
        self.torch, self.profiled = torch, profiled
        self.timer = Timer(torch, lambda: None)  # the reference's spin and held replay

    def held(self, g):
        """us of one replay queued behind a spin that outlasted its launch."""
        return self.timer.held_ms(g.replay) * 1e3

    def measure(self, g, k):
        """(us per call, median gap us or None)."""
        us = statistics.median(self.held(g) for _ in range(REPLAYS)) / k
        if not self.profiled:
            return us, None
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            self.held(g)
            self.torch.cuda.synchronize()
        ks = sorted(([e.name, e.time_range.start, e.time_range.elapsed_us()] for e in prof.events()
                     if e.device_type.name != "CPU"), key=lambda e: e[1])
        spins = [i for i, e in enumerate(ks) if "spin_kernel" in e[0]]
        body = ks[spins[-1] + 1:] if spins else ks
        gaps = [b[1] - (a[1] + a[2]) for a, b in zip(body, body[1:])]
        return us, statistics.median(gaps) if gaps else None


def scenario(torch, name, op, profiled):
    """[(step, k, us per call, gap)] of the graphs the scenario measures."""
    m = Meter(torch, profiled)
    k = OPS[op][3]
    a = make(torch, op)
    got = []

    def measured(step, g, calls):
        got.append((step, calls) + m.measure(g, calls))
    measured.raw = lambda step, calls, us: got.append((step, calls, us, None))

    if name == "once":
        measured("A", capture(torch, a, k), k)
    elif name == "small-first":
        g = capture(torch, a, 2)
        measured("A k=2", g, 2)
        del g
        measured("A", capture(torch, a, k), k)
    elif name in ("twice", "twice-emptied"):
        g = capture(torch, a, k)
        measured("A first", g, k)
        del g
        gc.collect()
        if name == "twice-emptied":
            torch.cuda.empty_cache()
        measured("A second", capture(torch, a, k), k)
    elif name == "twice-kept":
        g1 = capture(torch, a, k)
        measured("A first", g1, k)
        g2 = capture(torch, a, k)
        measured("A second", g2, k)
        measured("A first again", g1, k)
    elif name == "other-first":
        other = OTHER[OPS[op][0]]
        b = make(torch, other)
        g = capture(torch, b, OPS[other][3])
        measured("B", g, OPS[other][3])
        del g, b
        gc.collect()
        torch.cuda.empty_cache()
        measured("A", capture(torch, a, k), k)
    elif name == "fresh-inputs":
        g = capture(torch, a, k)
        measured("A first", g, k)
        del g, a
        gc.collect()
        torch.cuda.empty_cache()
        a2 = make(torch, op)
        measured("A anew", capture(torch, a2, k), k)
    else:
        pinned(torch, name, op, a, k, measured)
    return got


def pinned(torch, name, op, a, k, measured):
    """The PIN scenarios: what turns the slower replays on, and what turns them off."""
    import time
    if name == "five":  # five graphs of A one after another, each freed before the next
        for i in range(5):
            g = capture(torch, a, k)
            measured("A #%d" % (i + 1), g, k)
            del g
            gc.collect()
    elif name == "idle":  # two seconds idle (graph freed, memory emptied) before the second
        g = capture(torch, a, k)
        measured("A first", g, k)
        del g
        gc.collect()
        torch.cuda.empty_cache()
        time.sleep(2)
        measured("A second", capture(torch, a, k), k)
    elif name == "one-side-stream":  # every warm-up call on one side stream
        side = torch.cuda.Stream()
        for i in range(3):
            g = capture(torch, a, k, side=side)
            measured("A #%d" % (i + 1), g, k)
            del g
    elif name == "no-side-stream":  # warm-up calls on the current stream
        for i in range(3):
            g = capture(torch, a, k, warm_on_side=False)
            measured("A #%d" % (i + 1), g, k)
            del g
    elif name == "shared-pool":  # the second graph in the first's memory pool
        g1 = capture(torch, a, k)
        measured("A first", g1, k)
        measured("A second", capture(torch, a, k, pool=g1.pool()), k)
    elif name == "layer-like":  # B's unit, then A's, as the torch worker runs two units
        other = OTHER[OPS[op][0]]
        b = make(torch, other)
        g = capture(torch, b, OPS[other][3])
        measured("B", g, OPS[other][3])
        torch.cuda.synchronize()
        torch.empty(1, device="cuda").cpu()  # a copy to the host, as the worker's `output`
        del g, b
        gc.collect()
        torch.cuda.empty_cache()
        time.sleep(0.3)
        a2 = make(torch, op)
        measured("A", capture(torch, a2, k), k)
    elif name == "sleep-kernels":  # no library: graphs of 40 spin kernels (5000 cycles) each
        def spins():
            torch.cuda._sleep(5000)
        for i in range(3):
            g = capture(torch, spins, 40)
            measured("40 spins #%d" % (i + 1), g, 40)
            del g
    elif name == "cupy-kernels":  # no PyTorch graph: cupy's stream capture of the same spins
        cupy_spins(measured)


def cupy_spins(measured):
    """Three graphs of 40 spin kernels captured with cupy (the CUDA runtime's stream capture,
    no PyTorch in the graph), each timed as measure() does."""
    import cupy as cp
    import numpy as np
    spin = cp.RawKernel(r'''extern "C" __global__ void spin(long long n) {
        long long t = clock64(); while (clock64() - t < n) {} }''', "spin")
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        spin((1,), (1,), (np.int64(1000),))
    s.synchronize()

    class G:
        def __init__(self):
            s.begin_capture()
            for _ in range(40):
                spin((1,), (1,), (np.int64(5000),), stream=s)
            self.g = s.end_capture()
            self.g.upload(s)
            self.g.launch(s)
            s.synchronize()

        def held(self):
            ms = SPIN_MS
            for _ in range(6):
                held, a, b = cp.cuda.Event(), cp.cuda.Event(), cp.cuda.Event()
                spin((1,), (1,), (np.int64(int(ms * 1.98e6)),), stream=s)
                held.record(s)
                a.record(s)
                self.g.launch(s)
                b.record(s)
                late = not held.done
                b.synchronize()
                if late:
                    return cp.cuda.get_elapsed_time(a, b) * 1e3
                ms *= 4
            raise RuntimeError("the spin ended before the replay was queued (6 tries)")

    for i in range(3):
        g = G()
        us = statistics.median(g.held() for _ in range(REPLAYS)) / 40
        measured.raw("cupy 40 spins #%d" % (i + 1), 40, us)
        del g


def forked(name, op, profiled, path):
    """The scenario in a clean process (fidelity_reference.in_fork), its lines appended to path."""
    def work():
        import torch as t
        rows = scenario(t, name, op, profiled)
        with open(path, "a") as f:
            for step, k, us, gap in rows:
                f.write(json.dumps(dict(scenario=name, op=op, profiled=profiled, step=step, k=k,
                                        us_per_call=us, gap_us=gap, torch=t.__version__,
                                        cudnn=t.backends.cudnn.version(),
                                        device=t.cuda.get_device_name(0))) + "\n")
    status = in_fork(work)
    if status != 0:
        print("graph_recapture: %s / %s failed (status %d)" % (op, name, status), file=sys.stderr)


def table(path, scenarios):
    rows = [json.loads(line) for line in open(path)]
    out = ["| op | scenario | graph | k | us per call (unprofiled, each rep) | median | gap us (profiled, each rep) |",
           "|---|---|---|---:|---|---:|---|"]
    for op in OPS:
        for name in scenarios:
            steps = []
            for r in rows:
                if r["op"] == op and r["scenario"] == name and r["step"] not in steps:
                    steps.append(r["step"])
            for step in steps:
                sel = [r for r in rows if r["op"] == op and r["scenario"] == name and r["step"] == step]
                us = [r["us_per_call"] for r in sel if not r["profiled"]]
                gaps = [r["gap_us"] for r in sel if r["profiled"] and r["gap_us"] is not None]
                out.append("| %s | %s | %s | %d | %s | %s | %s |" % (
                    op, name, step, sel[0]["k"], ", ".join("%.2f" % u for u in us),
                    "%.2f" % statistics.median(us) if us else "-", ", ".join("%.2f" % g for g in gaps)))
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = argv[1]
    reps = int(argv[2]) if len(argv) == 3 else 2
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "pin.jsonl" if os.environ.get("RECAPTURE_SET") == "pin" else "recapture.jsonl")
    open(path, "w").close()
    pin = os.environ.get("RECAPTURE_SET") == "pin"
    for rep in range(reps):
        for op in (PIN_OPS if pin else OPS):
            for name in (PIN if pin else SCENARIOS):
                if pin and name in ("sleep-kernels", "cupy-kernels") and op != PIN_OPS[0]:
                    continue  # no op of its own: once
                for profiled in ((False,) if pin else (False, True)):
                    forked(name, op, profiled, path)
    md = table(path, PIN if pin else SCENARIOS)
    name = "pin" if pin else "recapture"
    with open(os.path.join(out_dir, name + ".md"), "w") as f:
        f.write(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

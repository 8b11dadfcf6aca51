#!/usr/bin/env python3
"""Is it Python, or PyTorch in the process, that makes rocsweep's own cuBLASLt call slower when it
is timed from Python? rocsweep's call, allocations and timing loop (lt_ctypes.py) in a Python
process that never imports PyTorch, then with PyTorch imported, then with PyTorch initialising
CUDA, each against rocsweep's lt#0 of the same run.

usage: lt_bare.py RUN_DIR [--import-torch | --torch-cuda [--after ACTION,...] [--timeline]] [--shapes MxNxK:DTYPE,...]
           Per lt#0 GEMM shape of RUN_DIR (no transposes, batch 1), one after the other in this
           process, each as a rocsweep unit: cuBLASLt's handle and heuristic (LT_BARE_LIB, a path:
           the system library rocsweep loads, also where PyTorch loaded its copy), the
           workspace (zeroed), A and B (host bits uploaded), C (zeroed) from the driver's default
           pool; then 3 trials of rocsweep's loop (lt_ctypes.DriverUnit) with rocsweep's K for its
           lt#0 unit and with K = 64; then the unit's memory is freed, as a unit's is. Modes:
           (none) PyTorch never imported, the driver API initialises CUDA as cudarc does;
           (CUBLAS_WORKSPACE_CONFIG set: the mode is labelled +lt-env, for peer_times' LT_ENV);
           --import-torch: `import torch` first, PyTorch never touches CUDA; --torch-cuda: PyTorch
           initialises CUDA first (torch.cuda.init); --after: then PyTorch does these actions
           (ACTIONS: one kind of GPU work each, to find which one slows rocsweep's call in a
           process where PyTorch has worked), labelled torch-cuda+ACTION. --shapes: only those shapes (e.g.
           8x4096x4096:bf16). --timeline: then one more trial with rocsweep's K under torch.profiler
           (CUPTI sees the driver-API graphs too): each kernel's median duration and the median gap
           between consecutive kernels inside a replay, printed as `TIMELINE <json>`, to tell
           longer kernels from longer gaps between two kinds of process. The graph protocol is lt_ctypes' (PEER_GRAPH_PROTOCOL: upload,
           rocsweep's since 41f8d8c, by default; warm, rocsweep's before). LT_BARE_LABEL, where
           set, is added to the mode's label (e.g. the library copy). Prints `BARE <json>` per shape.
       lt_bare.py --table RUN_DIR LOG...
           The logs' BARE lines against RUN_DIR's lt#0, as Markdown.
"""
import json
import os
import sys


def _matmul(torch, lt):
    if lt:
        torch.backends.cuda.preferred_blas_library("cublaslt")
    a = torch.rand(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.rand(8, 4096, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        torch.matmul(b, a)
        torch.matmul(a, a)
    torch.cuda.synchronize()
    if lt:
        torch.backends.cuda.preferred_blas_library("cublas")


def _graph(torch):
    x = torch.zeros(1024, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        x.add_(1)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(8):
            x.add_(1)
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()


def _stream(torch):
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.ones(1 << 20, device="cuda").sum()
    torch.cuda.synchronize()


def _sleep(torch):
    torch.cuda._sleep(1_000_000)
    torch.cuda.synchronize()


def _alloc(torch, size=8 << 30, fill=True, release=False):
    x = torch.empty(size, dtype=torch.uint8, device="cuda")
    if fill:
        x.fill_(1)
    torch.cuda.synchronize()
    del x  # the caching allocator keeps the memory reserved
    if release:
        torch.cuda.empty_cache()  # unless it is given back


# PyTorch's kinds of GPU work in peer_times.py's process, one per action (--after).
ACTIONS = {
    "matmul": lambda torch: _matmul(torch, False),
    "matmul-lt": lambda torch: _matmul(torch, True),
    "graph": _graph,
    "stream": _stream,
    "sleep": _sleep,
    "alloc": _alloc,
    # the same, told apart: no fill, 1 GiB, 64 MiB, and given back (empty_cache)
    "alloc-nofill": lambda torch: _alloc(torch, fill=False),
    "alloc-1g": lambda torch: _alloc(torch, size=1 << 30),
    "alloc-64m": lambda torch: _alloc(torch, size=64 << 20),
    "alloc-released": lambda torch: _alloc(torch, release=True),
}


def timeline(run):
    """Runs `run()` under torch.profiler: {kernel name: (median us, count)} and the median gap in
    us between consecutive kernels less than 5 us apart (inside one graph replay)."""
    import statistics

    import lt_ctypes as lc
    acts = lc.device_activities(run)
    by = {}
    for _, d, name in acts:
        by.setdefault(name[:60], []).append(d)
    gaps = [g for g in (b[0] - (a[0] + a[1]) for a, b in zip(acts, acts[1:])) if g < 5.0]
    return ({n: (round(statistics.median(v), 3), len(v)) for n, v in by.items()},
            round(statistics.median(gaps), 3) if gaps else None)


def table(run_dir, logs):
    import csv
    import statistics
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import lt_ctypes as lc
    roc = {}
    for r in csv.DictReader(open(f"{run_dir}/results.csv")):
        if r["op"] == "gemm" and lc.is_lt0(r["solver"]) and r["median_ms"]:
            roc[lc.key_of(r, "gemm")] = float(r["median_ms"])
    rows = {}
    modes = []
    for p in logs:
        for line in open(p):
            if line.startswith("BARE "):
                x = json.loads(line[5:])
                if x["mode"] not in modes:
                    modes.append(x["mode"])
                rows.setdefault(x["key"], {})[x["mode"]] = x
    print("| shape | rocsweep lt#0 ms | " + " | ".join(f"{m}: K = rocsweep's (K) | {m}: K = 64" for m in modes) + " |")
    print("|---|---|" + "---|---|" * len(modes))
    ratios = {m: [] for m in modes}
    for key, by in sorted(rows.items()):
        t = roc.get(key)
        if not t:
            continue
        cells = []
        for m in modes:
            x = by.get(m)
            if not x:
                cells += ["-", "-"]
                continue
            a, b = float(x["ms"]) / t, float(x["ms64"]) / t
            ratios[m].append(a)
            cells += [f"{a:.3f} ({x['k']})", f"{b:.3f}"]
        short = ";".join(p for p in key.split(";") if p.split("=")[0] in ("m", "n", "k", "dtype"))
        print(f"| {short} | {t:.4f} | " + " | ".join(cells) + " |")
    print()
    for m in modes:
        rs = ratios[m]
        if rs:
            worst = max(rs, key=lambda v: abs(v - 1))
            print(f"- {m} / rocsweep lt#0 (rocsweep's K): within 3% on {sum(abs(v - 1) <= 0.03 for v in rs)} of "
                  f"{len(rs)}; worst {worst:.3f}; median {statistics.median(rs):.3f}")


def main():
    if sys.argv[1:2] == ["--table"]:
        table(sys.argv[2], sys.argv[3:])
        return
    args = sys.argv[1:]
    only = None
    if "--shapes" in args:
        i = args.index("--shapes")
        only = set(args[i + 1].split(","))
        del args[i:i + 2]
    want_timeline = "--timeline" in args
    if want_timeline:
        args.remove("--timeline")
    after = []
    if "--after" in args:
        i = args.index("--after")
        after = [a for a in args[i + 1].split(",") if a]
        del args[i:i + 2]
        unknown = [a for a in after if a not in ACTIONS]
        if unknown:
            raise SystemExit(f"--after: unknown action {', '.join(unknown)} (one of {', '.join(ACTIONS)})")
    run_dir = args[0]
    mode = args[1] if len(args) > 1 else "bare"
    if (after or want_timeline) and mode != "--torch-cuda":
        raise SystemExit("--after and --timeline need --torch-cuda")
    if mode in ("--import-torch", "--torch-cuda"):
        import torch
        if mode == "--torch-cuda":
            torch.cuda.init()
            torch.cuda.synchronize()
            for a in after:
                ACTIONS[a](torch)
    import csv

    import numpy as np

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import lt_ctypes as lc
    d = lc.driver(torch_init=mode == "--torch-cuda")
    policy = lc.policy_of(run_dir)
    kr = lc.rocsweep_lt0_k(run_dir)
    rows = [r for r in csv.DictReader(open(f"{run_dir}/results.csv"))
            if r["op"] == "gemm" and lc.is_lt0(r["solver"]) and r["trans_a"] == "false"
            and r["trans_b"] == "false" and r["batch"] == "1"
            and (only is None or f"{r['m']}x{r['n']}x{r['k']}:{r['dtype']}" in only)]
    rng = np.random.default_rng(1)
    # one library file in every mode (LT_BARE_LIB: the system copy rocsweep loads), loaded by path
    lib_path = os.environ.get("LT_BARE_LIB") or None
    label = (mode.lstrip("-") + "".join(f"+{a}" for a in after)
             + ("+lt-env" if os.environ.get("CUBLAS_WORKSPACE_CONFIG") else "")
             + (f"+{os.environ['LT_BARE_LABEL']}" if os.environ.get("LT_BARE_LABEL") else ""))
    unit = lc.DriverUnit(policy)

    def host(rows_, cols, dt):
        x = (rng.random(rows_ * cols, dtype=np.float32) * 2 - 1).astype(np.float32)
        if dt == "f32":
            return x
        if dt == "f16":
            return x.astype(np.float16)
        u = x.view(np.uint32)  # bf16: round to nearest even, as rocsweep's f32 -> bf16
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)

    size = {"f32": 4, "f16": 2, "bf16": 2}
    for r in rows:
        key = lc.key_of(r, "gemm")
        m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
        lib, handle, plan = lc._plan(r, lib_path)
        ws = d.alloc(plan["size"], zero=True) if plan["size"] else None
        pa = d.alloc(m * k * size[r["dtype"]])
        ha = host(m, k, r["dtype"])
        d.sync()
        d.upload(pa, ha.ctypes.data, ha.nbytes)
        pb = d.alloc(k * n * size[r["dtype"]])
        hb = host(k, n, r["dtype"])
        d.sync()
        d.upload(pb, hb.ctypes.data, hb.nbytes)
        pc = d.alloc(m * n * size[r["out_dtype"]], zero=True)
        d.sync()
        fn = lc._matmul_fn(lib, handle, plan, pa, pb, pc, ws)
        kk = kr.get(key) or 1
        t, t64 = [], []
        for _ in range(int(policy["trials"])):
            t.append(unit.unit(fn, kk))
            t64.append(unit.unit(fn, 64))
        a, b = lc.median_trial(t), lc.median_trial(t64)
        print("BARE", json.dumps({"key": key, "mode": label, "k": kk, "ms": f"{a[0]:.6f}",
                                  "trial_ms": ";".join(f"{x[0]:.6f}" for x in t), "ms64": f"{b[0]:.6f}",
                                  "clock_mhz": a[3], "chosen": plan["chosen"], "rocsweep_chosen": r.get("chosen"),
                                  "b": f"{pb:#x}", "lib": lc._lt(lib_path)[2],
                                  "protocol": lc.graph_protocol()}), flush=True)
        if want_timeline:
            kernels, gap = timeline(lambda: unit.unit(fn, kk))
            print("TIMELINE", json.dumps({"key": key, "mode": label, "k": kk, "kernels": kernels,
                                          "gap_us": gap, "busy_us": round(sum(v[0] for v in kernels.values()), 3)}),
                  flush=True)
        for p in list(d.held):  # the unit ends: its memory goes back to the pool, as a unit's does
            d.ok(d.f["cuMemFreeAsync"](p, d.stream), "cuMemFreeAsync")
        d.held.clear()
        d.sync()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Which algorithm configuration and workspace each side's cublasLtMatmul calls carry, from
cuBLASLt's own trace log (CUBLASLT_LOG_LEVEL=2: every call that launches kernels, with its
descriptors, the whole algorithm configuration that differs from the defaults (algoId, tile,
stages, splitK, reductionScheme, swizzle, customOption, clusterShape, ...) and the workspace
address and size it was given).

usage: CUBLASLT_LOG_LEVEL=2 CUBLASLT_LOG_FILE=DIR/python-%i.log lt_trace.py RUN_DIR
           (with peer_times.LT_ENV set: one call each, per lt#0 GEMM shape of RUN_DIR, of PyTorch's
           matmul on cuBLASLt, rocsweep's call made from Python on PyTorch's memory (the replica), and
           the replica on memory from the driver's pool; prints the replica's configuration as
           cublasLtMatmulAlgoConfigGetAttribute reads it)
       lt_trace.py --replay RUN_DIR M
           (for Nsight Compute: the shape of RUN_DIR with m = M, one variant after the other, each 3
           eager calls then a CUDA graph of 8 calls replayed twice: the replica on PyTorch's memory,
           the replica on memory from the driver's pool, PyTorch's matmul on cuBLASLt)
       lt_trace.py --replay-pristine RUN_DIR M
           (the same with rocsweep's placement first, peer_times.pristine_operands: the replica on
           those operands, then with B copied to PyTorch's memory)
       lt_trace.py --ncu CSV...
           (Nsight Compute's --csv output, one line per profiled kernel: process, name, grid, block
           and the metrics asked for)
       lt_trace.py --summary LOG...
           (per log and shape: each distinct configuration and workspace size, with its number of
           calls; run on rocsweep's worker logs, CUBLASLT_LOG_FILE set for `rocsweep run`, and on the
           Python log, it says whether the two sides' calls differ in anything but addresses)
"""
import collections
import os
import re
import sys


def summary(paths):
    pat = re.compile(r"\[cublasLtMatmul\].*?Adesc=\[type=(\S+) rows=(\d+) cols=(\d+)[^\]]*\].*?"
                     r"Bdesc=\[type=\S+ rows=(\d+) cols=(\d+)[^\]]*\].*?computeDesc=\[([^\]]*)\].*?"
                     r"algo=\[([^\]]*)\].*?workSpace=(\S+) workSpaceSizeInBytes=(\d+)")
    for p in paths:
        seen = collections.Counter()
        for line in open(p, errors="replace"):
            m = pat.search(line)
            if not m:
                continue
            dt, n, k, _, mm, comp, algo, ws, wsz = m.groups()
            seen[(f"m={mm} n={n} k={k} {dt}", comp, algo, wsz, int(ws, 16) % 256 if ws.lower() != "0x0" else "-")] += 1
        print(f"## {os.path.basename(p)}: {sum(seen.values())} cublasLtMatmul calls")
        for (shape, comp, algo, wsz, wsal), c in sorted(seen.items()):
            print(f"{shape} | {comp} | algo=[{algo}] | workspace {wsz} bytes (address mod 256: {wsal}) | {c} calls")


def ncu(paths):
    import csv
    for p in paths:
        lines = [x for x in open(p, errors="replace") if x.startswith('"')]
        by = collections.OrderedDict()
        for r in csv.DictReader(lines):
            k = (r.get("Process ID"), r.get("ID"))
            d = by.setdefault(k, {"name": r.get("Kernel Name", "?").split("<")[0].split("(")[0],
                                  "grid": r.get("Grid Size"), "block": r.get("Block Size"),
                                  "proc": r.get("Process Name")})
            d[r.get("Metric Name")] = f"{r.get('Metric Value')} {r.get('Metric Unit')}"
        print(f"## {os.path.basename(p)}: {len(by)} kernels")
        for (pid, i), d in by.items():
            rest = "; ".join(f"{k}={v}" for k, v in d.items() if k not in ("name", "grid", "block", "proc"))
            print(f"{d['proc']}[{pid}] #{i} {d['name']} grid {d['grid']} block {d['block']}: {rest}")


def main():
    if sys.argv[1:2] == ["--summary"]:
        summary(sys.argv[2:])
        return
    if sys.argv[1:2] == ["--ncu"]:
        ncu(sys.argv[2:])
        return
    import csv

    import torch

    import peer_times as pt
    torch.backends.cuda.preferred_blas_library("cublaslt")
    pristine = sys.argv[1:2] == ["--replay-pristine"]
    replay = sys.argv[1:2] == ["--replay"] or pristine
    run_dir = sys.argv[2] if replay else sys.argv[1]
    rows = {}
    for r in csv.DictReader(open(f"{run_dir}/results.csv")):
        if r["op"] == "gemm" and r["solver"].startswith("lt#0") and r["trans_a"] == "false" and r["trans_b"] == "false":
            rows[pt.key_of(r, "gemm")] = r
    if replay:
        r = next(r for r in rows.values() if r["m"] == sys.argv[3])
        if pristine:
            # rocsweep's placement first (peer_times.pristine_operands), then B moved to PyTorch's memory
            lib, handle, plan, ws, (a, b, c) = pt.pristine_operands(r)
            bb = torch.empty_like(b)
            bb.copy_(b)
            torch.cuda.synchronize()
            variants = (("pristine replica", pt._matmul_fn(lib, handle, plan, a.data_ptr(), b.data_ptr(), c.data_ptr(), ws)),
                        ("replica, B in PyTorch's memory",
                         pt._matmul_fn(lib, handle, plan, a.data_ptr(), bb.data_ptr(), c.data_ptr(), ws)))
        else:
            ops = pt.gemm_operands(r)
            rep, _, keep = pt.replica(r, ops)
            prep, _, pkeep, views = pt.pool_replica(r, ops)
            variants = (("replica", rep), ("pool replica", prep),
                        ("PyTorch", lambda: torch.matmul(ops[0], ops[1], out=ops[2])))
        for name, f in variants:
            g = pt.capture(f, 8)  # 3 eager calls, the capture, one replay
            g.replay()
            torch.cuda.synchronize()
            print("replayed", name, flush=True)
        return
    for key, r in sorted(rows.items()):
        ops = pt.gemm_operands(r)
        torch.matmul(ops[0], ops[1], out=ops[2])
        torch.cuda.synchronize()
        rep, chosen, keep = pt.replica(r, ops)
        rep()
        prep, _, pkeep, views = pt.pool_replica(r, ops)
        prep()
        torch.cuda.synchronize()
        print("shape", key, "| rocsweep chosen:", r.get("chosen"), "| replica:", rep.plan["config"],
              "| pool replica:", prep.plan["config"], flush=True)
        print("launches", key, "| PyTorch:", pt.launches(lambda: torch.matmul(ops[0], ops[1], out=ops[2])),
              "| replica:", pt.launches(rep), "| pool replica:", pt.launches(prep), flush=True)


if __name__ == "__main__":
    main()

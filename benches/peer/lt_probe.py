#!/usr/bin/env python3
"""Where the same-algorithm check's last misses come from: small bf16 GEMMs (m = 1, 8, 32, 128,
n = k = 4096; m = 8 and 32 stayed outside 3% in reports/h200/timing/gemm-fidelity), timed with
peer_times.py's copy of rocsweep's protocol through rocsweep's own cublasLtMatmul call made from
Python (peer_times.replica), in variants that each change one thing:
- lib: PyTorch's cuBLASLt (the wheel's copy, as in gemm-fidelity) or the system one rocsweep
  loads (a second copy in the process, given as SYSTEM_LIB);
- ops: the operands made once (as in gemm-fidelity) or made anew for every trial (new
  addresses each trial, as rocsweep's worker processes have);
- K: by rocsweep's rule from the launch-free time (as peer_times.py) or rocsweep's K for its
  lt#0 unit (its rule on that unit's call_median_ms).
With LT_PROBE_STREAM=side the timing runs on a stream of its own instead of the default stream.
Each figure is the median trial of 3, trials as passes over every shape and variant, against
rocsweep's lt#0 of RUN_DIR (a run of the same shapes in the same device command).

usage: lt_probe.py RUN_DIR OUT.csv [SYSTEM_LIB]
"""
import csv
import os
import sys

import torch

import peer_times as pt

SHAPES = [(1, 4096, 4096), (8, 4096, 4096), (32, 4096, 4096), (128, 4096, 4096)]


def rocsweep_lt0(run_dir):
    out = {}
    for r in csv.DictReader(open(f"{run_dir}/results.csv")):
        if r["op"] == "gemm" and r["status"] == "ok" and r["solver"].startswith("lt#0-") and r["median_ms"]:
            out[pt.key_of(r, "gemm")] = r
    return out


def main():
    run_dir, out = sys.argv[1:3]
    sys_lib = sys.argv[3] if len(sys.argv) > 3 else None
    stream = torch.cuda.Stream() if os.environ.get("LT_PROBE_STREAM") == "side" else None
    policy = pt.policy_of(run_dir)
    roc = rocsweep_lt0(run_dir)
    kr = pt.rocsweep_lt0_k(run_dir)
    x = torch.ones(64, 64, device="cuda", dtype=torch.bfloat16)
    torch.matmul(x, x)  # loads PyTorch's cuBLAS and cuBLASLt
    torch.cuda.synchronize()
    libs = [None] + ([sys_lib] if sys_lib else [])
    for lib in libs:
        print("library", lib or "PyTorch's", "->", pt._lt(lib)[2], flush=True)
    mirror = pt.Mirror(policy)
    shapes = []
    for m, n, k in SHAPES:
        r = {"m": m, "n": n, "k": k, "trans_a": "false", "trans_b": "false", "batch": "1", "dtype": "bf16",
             "out_dtype": "bf16", "compute": "f32"}
        key = pt.key_of(r, "gemm")
        ops = pt.gemm_operands(r)
        for lib in libs:
            fn, chosen, keep = pt.replica(r, ops, lib)
            mirror.prime(fn)
            kdev = pt.probe_k(fn)[1]
            kern = pt.kernels(fn)
            v = {"key": key, "r": r, "lib": lib, "fn": fn, "keep": keep, "chosen": chosen, "kdev": kdev,
                 "kr": kr.get(key), "kernels": kern, "t": {}}
            shapes.append(v)
            print("shape", key, "lib", lib or "torch", chosen, "K", kdev, "rocsweep K", kr.get(key),
                  "rocsweep chosen", roc.get(key, {}).get("chosen"), "kernels", kern, flush=True)
    kept = []
    ctx = torch.cuda.stream(stream) if stream is not None else torch.cuda.stream(torch.cuda.current_stream())
    with ctx, torch.no_grad():
        for t in range(3):
            order = shapes if t % 2 == 0 else list(reversed(shapes))
            for v in order:
                for kname in ("kdev", "kr"):
                    kk = v[kname]
                    if kk is None:
                        continue
                    d = mirror.unit(v["fn"], kk)
                    v["t"].setdefault(("once", kname), []).append(d)
                # the same call on operands made anew (new addresses), the old ones kept alive
                ops = pt.gemm_operands(v["r"])
                fn, _, keep = pt.replica(v["r"], ops, v["lib"])
                kept.append((ops, keep))
                mirror.prime(fn)
                d = mirror.unit(fn, v["kdev"])
                v["t"].setdefault(("fresh", "kdev"), []).append(d)
                print("trial", t + 1, v["key"], "lib", v["lib"] or "torch",
                      {f"{a}/{b}": f"{ts[-1][0]:.6f}" for (a, b), ts in v["t"].items()}, flush=True)
    rows = []
    for v in shapes:
        rr = roc.get(v["key"], {})
        base = float(rr["median_ms"]) if rr.get("median_ms") else None
        for (ops_kind, kname), ts in v["t"].items():
            dev, call, n, clock = pt.median_trial(ts)
            rows.append({"key": v["key"], "lib": pt._lt(v["lib"])[2], "ops": ops_kind, "k_rule": kname,
                         "k": v[kname], "ms": f"{dev:.6f}", "trial_ms": ";".join(f"{t[0]:.6f}" for t in ts),
                         "clock_mhz": clock or "", "rocsweep_ms": rr.get("median_ms", ""),
                         "rocsweep_clock_mhz": rr.get("clock_mhz", ""),
                         "ratio": f"{dev / base:.3f}" if base else "", "chosen": v["chosen"],
                         "rocsweep_chosen": rr.get("chosen", ""), "kernels": v["kernels"],
                         "stream": "side" if stream is not None else "default"})
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    for r in rows:
        print("result", r["key"].split(";trans")[0], "lib", r["lib"].split("/")[-1], r["ops"], r["k_rule"], "K", r["k"],
              "ms", r["ms"], "rocsweep", r["rocsweep_ms"], "ratio", r["ratio"], "stream", r["stream"], flush=True)


if __name__ == "__main__":
    main()

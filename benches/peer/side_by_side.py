#!/usr/bin/env python3
"""rocsweep's best unit per shape next to PyTorch's pick, both launch-free (the headline) and per
call (launch included), as a Markdown table with the summary a reader needs.

usage: side_by_side.py RUN_DIR TORCH.csv [RUN_DIR_2] > table.md

RUN_DIR_2 (optional) is a second run of the same sweep in the same device command: the table
then says how far the best time per shape moved between the two runs.

"PyTorch's pick" is PyTorch with its defaults (torch_ms: cuDNN benchmark mode for conv, matmul
on PyTorch's default BLAS library for GEMM). The fidelity check (same algorithm) compares
rocsweep's lt#0 with PyTorch's matmul on cuBLASLt with rocsweep's workspace (torch_lt_ms, see
peer_times.py); where a TORCH.csv has no torch_lt_ms it falls back to torch_ms and says so.
"""
import csv
import math
import sys

from peer_times import KEYS

TARGET = 0.98


def best_per_shape(run_dir):
    out = {}
    for r in csv.DictReader(open(f"{run_dir}/results.csv")):
        if r["status"] != "ok" or not r["median_ms"]:
            continue
        key = ";".join(f"{c}={r[c]}" for c in KEYS[r["op"]])
        t, c = float(r["median_ms"]), float(r["call_median_ms"] or "nan")
        if key not in out or t < out[key][0]:
            out[key] = (t, c, r["solver"])
    return out


def first_heuristic(run_dir):
    """cuBLASLt's first heuristic algorithm per GEMM shape (solver lt#0-...): what PyTorch's
    matmul runs too when it prefers cuBLASLt (it asks the heuristic for one algorithm), so with
    the same workspace the two launch-free times should agree (the fidelity check)."""
    out = {}
    for r in csv.DictReader(open(f"{run_dir}/results.csv")):
        if r["op"] == "gemm" and r["status"] == "ok" and r["solver"].startswith("lt#0-") and r["median_ms"]:
            out[";".join(f"{c}={r[c]}" for c in KEYS["gemm"])] = (float(r["median_ms"]), r["solver"],
                                                                  r.get("clock_mhz", ""))
    return out


def summary(name, ratios):
    ratios = [x for x in ratios if not math.isnan(x)]
    if not ratios:
        return f"- {name}: no shapes"
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    hit = sum(x >= TARGET for x in ratios)
    return (f"- {name}: >= {TARGET}x PyTorch on {hit} of {len(ratios)} shapes; lowest {min(ratios):.3f}, "
            f"geometric mean {geo:.3f}")


def main():
    ours = best_per_shape(sys.argv[1])
    torch_rows = {r["key"]: r for r in csv.DictReader(open(sys.argv[2]))}
    again = best_per_shape(sys.argv[3]) if len(sys.argv) > 3 else {}
    print("| op | shape | rocsweep best (solver) | device ms | PyTorch's pick device ms | ratio | "
          "rocsweep per call ms | PyTorch's pick per call ms | per-call ratio |" + (" run 2 / run 1 |" if again else ""))
    print("|---|---|---|---|---|---|---|---|---|" + ("---|" if again else ""))
    dev, call, idle, moved = {}, {}, {}, []
    for key, (t, c, solver) in sorted(ours.items()):
        tr = torch_rows.get(key)
        if tr is None:
            continue
        op = "conv2d" if key.startswith("direction") else "gemm"
        td, tc = float(tr["torch_ms"]), float(tr["torch_call_ms"])
        rd, rc = td / t, tc / c
        dev.setdefault(op, []).append(rd)
        call.setdefault(op, []).append(rc)
        if tr.get("torch_idle_ms"):
            idle.setdefault(op, []).append(float(tr["torch_idle_ms"]) / t)
        extra = ""
        if key in again:
            m = again[key][0] / t
            moved.append(m)
            extra = f" {m:.3f} |"
        short = ";".join(p for p in key.split(";") if not p.startswith(("direction", "layout", "dilation", "groups", "trans", "batch", "out_dtype")))
        print(f"| {op} | {short} | {solver} | {t:.4f} | {td:.4f} | {rd:.3f} | {c:.4f} | {tc:.4f} | {rc:.3f} |{extra}")
    print()
    for op in sorted(dev):
        print(summary(f"{op}, launch-free (both sides), against PyTorch's pick", dev[op]))
        print(summary(f"{op}, per call (both sides, launch included), against PyTorch's pick", call[op]))
        if idle.get(op):
            print(summary(f"{op}, launch-free, against PyTorch's pick timed from an idle stream "
                          "(the earlier protocol: graph launch latency included)", idle[op]))
    blas = sorted({r["torch_blas"] for r in torch_rows.values() if r.get("torch_blas")})
    if blas:
        print()
        print(f"PyTorch's pick for GEMM: torch.matmul with PyTorch's defaults (preferred BLAS library {', '.join(blas)}).")
    fid = first_heuristic(sys.argv[1])
    pairs = []
    for k, (t, solver, clock) in sorted(fid.items()):
        tr = torch_rows.get(k)
        if tr is None:
            continue
        lt = float(tr["torch_lt_ms"]) if tr.get("torch_lt_ms") else None
        pairs.append((k, t, solver, clock, lt, float(tr["torch_ms"]), tr))
    if pairs:
        have_lt = all(p[4] is not None for p in pairs)
        lt_blas = sorted({p[6].get("torch_lt_blas") for p in pairs if p[6].get("torch_lt_blas")})
        print()
        if have_lt:
            print("Fidelity (same algorithm): cuBLASLt's first heuristic algorithm timed by rocsweep (`lt#0`), "
                  "launch-free, against PyTorch's matmul on cuBLASLt (which runs the heuristic's first "
                  f"algorithm; {', '.join(lt_blas)}), timed launch-free the same way (CUDA graph, the timed "
                  "replay queued behind a warm one). PyTorch's default pick is shown beside it; busy is the "
                  "device time of PyTorch's kernels (and memsets) per call in one graph replay "
                  "(torch.profiler), without the gaps between them.")
        else:
            print("Fidelity (same algorithm): cuBLASLt's first heuristic algorithm timed by rocsweep (`lt#0`), "
                  "launch-free, against PyTorch's matmul with its defaults (TORCH.csv has no cuBLASLt pass), "
                  "timed launch-free (CUDA graph):")
        print()
        print("| shape | rocsweep lt#0 ms (solver) | PyTorch cuBLASLt ms | cuBLASLt / rocsweep | "
              "PyTorch cuBLASLt busy ms | PyTorch default ms | default / rocsweep | "
              "same kernels (cuBLASLt pass, default pass) | SM MHz (rocsweep, PyTorch cuBLASLt) |")
        print("|---|---|---|---|---|---|---|---|---|")
        off = []
        for k, t, solver, clock, lt, td, tr in pairs:
            short = ";".join(p for p in k.split(";") if p.split("=")[0] in ("m", "n", "k", "dtype"))
            ka, kb = tr.get("torch_kernels", ""), tr.get("torch_lt_kernels", "")
            same = "?" if not ka or not kb or ka.startswith("?") or kb.startswith("?") else ("yes" if ka == kb else "no")
            lts = f"{lt:.4f} | {lt / t:.3f}" if lt is not None else "- | -"
            busy = f"{float(tr['torch_lt_busy_us']) / 1000:.4f}" if tr.get("torch_lt_busy_us") else "-"
            clocks = f"{clock or '?'}, {tr.get('torch_lt_clock_mhz') or '?'}"
            print(f"| {short} | {t:.4f} ({solver}) | {lts} | {busy} | {td:.4f} | {td / t:.3f} | {same} | {clocks} |")
            ref = lt if have_lt else td
            if abs(ref / t - 1) > 0.03:
                off.append((short, ref / t, kb if have_lt else ka))
        print()
        ref_name = "PyTorch on cuBLASLt" if have_lt else "PyTorch's default"
        within = len(pairs) - len(off)
        print(f"- within 3% ({ref_name} / rocsweep lt#0): {within} of {len(pairs)} shapes")
        if have_lt:
            d_within = sum(abs(p[5] / p[1] - 1) <= 0.03 for p in pairs)
            print(f"- for comparison, PyTorch's default pick / rocsweep lt#0 within 3%: {d_within} of {len(pairs)} shapes")
            idle_lt = [float(p[6]["torch_lt_idle_ms"]) / p[1] for p in pairs if p[6].get("torch_lt_idle_ms")]
            if len(idle_lt) == len(pairs):
                print(f"- for comparison, PyTorch on cuBLASLt timed from an idle stream (the earlier protocol) / "
                      f"rocsweep lt#0 within 3%: {sum(abs(x - 1) <= 0.03 for x in idle_lt)} of {len(pairs)} shapes")
        for short, ratio, kern in off:
            print(f"- outside 3%: {short}: {ratio:.3f}; PyTorch ran {kern or '?'}")
    if moved:
        worst = max(abs(m - 1) for m in moved)
        within = sum(abs(m - 1) <= 0.03 for m in moved)
        print(f"- run to run: best time per shape within 3% on {within} of {len(moved)} shapes; largest move {worst * 100:.1f}%")


if __name__ == "__main__":
    main()

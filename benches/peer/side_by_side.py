#!/usr/bin/env python3
"""rocsweep's best unit per shape next to PyTorch's pick, both launch-free (the headline) and per
call (launch included), as a Markdown table with the summary a reader needs.

usage: side_by_side.py RUN_DIR TORCH.csv [RUN_DIR_2] > table.md

RUN_DIR_2 (optional) is a second run of the same sweep in the same device command: the table
then says how far the best time per shape moved between the two runs.
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
    matmul runs too, so the two launch-free times should agree (the fidelity check)."""
    out = {}
    for r in csv.DictReader(open(f"{run_dir}/results.csv")):
        if r["op"] == "gemm" and r["status"] == "ok" and r["solver"].startswith("lt#0-") and r["median_ms"]:
            out[";".join(f"{c}={r[c]}" for c in KEYS["gemm"])] = float(r["median_ms"])
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
    print("| op | shape | rocsweep best (solver) | device ms | PyTorch device ms | ratio | "
          "rocsweep per call ms | PyTorch per call ms | per-call ratio |" + (" run 2 / run 1 |" if again else ""))
    print("|---|---|---|---|---|---|---|---|---|" + ("---|" if again else ""))
    dev, call, moved = {}, {}, []
    for key, (t, c, solver) in sorted(ours.items()):
        tr = torch_rows.get(key)
        if tr is None:
            continue
        op = "conv2d" if key.startswith("direction") else "gemm"
        td, tc = float(tr["torch_ms"]), float(tr["torch_call_ms"])
        rd, rc = td / t, tc / c
        dev.setdefault(op, []).append(rd)
        call.setdefault(op, []).append(rc)
        extra = ""
        if key in again:
            m = again[key][0] / t
            moved.append(m)
            extra = f" {m:.3f} |"
        short = ";".join(p for p in key.split(";") if not p.startswith(("direction", "layout", "dilation", "groups", "trans", "batch", "out_dtype")))
        print(f"| {op} | {short} | {solver} | {t:.4f} | {td:.4f} | {rd:.3f} | {c:.4f} | {tc:.4f} | {rc:.3f} |{extra}")
    print()
    for op in sorted(dev):
        print(summary(f"{op}, launch-free (both sides)", dev[op]))
        print(summary(f"{op}, per call (both sides, launch included)", call[op]))
    fid = first_heuristic(sys.argv[1])
    pairs = [(k, t, float(torch_rows[k]["torch_ms"])) for k, t in sorted(fid.items()) if k in torch_rows]
    if pairs:
        print()
        print("Fidelity (same algorithm): cuBLASLt's first heuristic algorithm timed by rocsweep, launch-free, "
              "against PyTorch's matmul timed launch-free (CUDA graph):")
        print()
        print("| shape | rocsweep lt#0 ms | PyTorch ms | PyTorch / rocsweep |")
        print("|---|---|---|---|")
        for k, t, td in pairs:
            short = ";".join(p for p in k.split(";") if p.split("=")[0] in ("m", "n", "k", "dtype"))
            print(f"| {short} | {t:.4f} | {td:.4f} | {td / t:.3f} |")
        within = sum(abs(td / t - 1) <= 0.03 for _, t, td in pairs)
        print()
        print(f"- within 3%: {within} of {len(pairs)} shapes")
    if moved:
        worst = max(abs(m - 1) for m in moved)
        within = sum(abs(m - 1) <= 0.03 for m in moved)
        print(f"- run to run: best time per shape within 3% on {within} of {len(moved)} shapes; largest move {worst * 100:.1f}%")


if __name__ == "__main__":
    main()

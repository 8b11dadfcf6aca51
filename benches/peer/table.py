#!/usr/bin/env python3
"""Puts rocsweep's best algorithm per shape next to PyTorch's choice, as a Markdown table.

usage: table.py TORCH.csv GEMM_RUN_DIR CONV_RUN_DIR > table.md

Either run directory may be `-` (that op is left out, and so are its PyTorch rows). After the
table: the lowest ratio, how many shapes reach 0.98, and for conv the same per dtype, how many
shapes the legacy algorithms alone and the engine configurations alone would bring to 0.98, and
the cuDNN each side ran (rocsweep's from the run's manifest, PyTorch's from its CSV).
"""
import csv
import json
import sys

TARGET = 0.98


def best(run_dir, key, keep=lambda r: True):
    out = {}
    for r in csv.DictReader(open(f"{run_dir}/results.csv")):
        if r["status"] != "ok" or not r["gflops"] or not keep(r):
            continue
        k = key(r)
        g = float(r["gflops"])
        if k not in out or g > out[k][0]:
            out[k] = (g, r["solver"])
    return out


def cudnn_of(run_dir):
    try:
        return json.load(open(f"{run_dir}/manifest.json"))["backend"]["versions"].get("cudnn", "?")
    except (OSError, KeyError, ValueError):
        return "?"


def version(v):
    """torch.backends.cudnn.version() is an integer (91900); cuDNN's own form is 9.19.0."""
    if v.isdigit() and int(v) >= 10000:
        n = int(v)
        return f"{n // 10000}.{n % 10000 // 100}.{n % 100}"
    return v


def is_engine(r):
    return r["solver"].startswith("eng")


def main():
    torch_rows = list(csv.DictReader(open(sys.argv[1])))
    gemm_dir, conv_dir = sys.argv[2], sys.argv[3]
    ours = {}
    ops = set()
    conv_key = lambda r: ("conv2d", f"c_in={r['c_in']};c_out={r['c_out']};h={r['h']}", r["dtype"], "f32")
    if gemm_dir != "-":
        ours.update(best(gemm_dir, lambda r: ("gemm", f"m={r['m']};n={r['n']};k={r['k']}", r["dtype"], r["compute"])))
        ops.add("gemm")
    if conv_dir != "-":
        ours.update(best(conv_dir, conv_key))
        ops.add("conv2d")
    print("| op | shape | dtype | compute | rocsweep best (TFLOP/s) | algorithm | PyTorch (TFLOP/s) | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    ratios = []
    torch_gflops = {}
    for t in torch_rows:
        if t["op"] not in ops:
            continue
        k = (t["op"], t["shape"], t["dtype"], t["compute"])
        tg = float(t["torch_gflops"])
        torch_gflops[k] = tg
        if k in ours:
            g, solver = ours[k]
            ratio = g / tg
            ratios.append((ratio, k))
            print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {g / 1e3:.1f} | {solver} | {tg / 1e3:.1f} | {ratio:.3f} |")
        else:
            print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | (no ok unit) | | {tg / 1e3:.1f} | |")
    if not ratios:
        return
    worst = min(ratios)
    print(f"\nLowest ratio: {worst[0]:.3f} ({' '.join(worst[1])}); shapes at or above {TARGET}: "
          f"{sum(r >= TARGET for r, _ in ratios)} of {len(ratios)}.")
    if conv_dir == "-":
        return
    conv = [(r, k) for r, k in ratios if k[0] == "conv2d"]
    print()
    for dtype in ["bf16", "f16", "f32"]:
        part = [r for r, k in conv if k[2] == dtype]
        if part:
            print(f"- conv {dtype}: {sum(r >= TARGET for r in part)} of {len(part)} at or above {TARGET}, "
                  f"lowest {min(part):.3f}")
    for label, keep in [("legacy algorithms alone", lambda r: not is_engine(r)),
                        ("engine configurations alone", is_engine)]:
        sub = best(conv_dir, conv_key, keep)
        part = [sub[k][0] / torch_gflops[k] for _, k in conv if k in sub]
        if part:
            print(f"- conv, {label}: {sum(r >= TARGET for r in part)} of {len(conv)} at or above {TARGET}, "
                  f"lowest {min(part):.3f}")
    torch_cudnn = sorted({version(t.get("cudnn") or "") for t in torch_rows if t["op"] == "conv2d"} - {""})
    print(f"- cuDNN: rocsweep {cudnn_of(conv_dir)} (run manifest), PyTorch {', '.join(torch_cudnn) or '?'} "
          f"(torch.backends.cudnn.version())")


if __name__ == "__main__":
    main()

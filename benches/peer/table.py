#!/usr/bin/env python3
"""Puts rocsweep's best algorithm per shape next to PyTorch's choice, as a Markdown table.

usage: table.py TORCH.csv GEMM_RUN_DIR CONV_RUN_DIR > table.md
"""
import csv
import sys


def best(run_dir, key):
    out = {}
    for r in csv.DictReader(open(f"{run_dir}/results.csv")):
        if r["status"] != "ok" or not r["gflops"]:
            continue
        k = key(r)
        g = float(r["gflops"])
        if k not in out or g > out[k][0]:
            out[k] = (g, r["solver"])
    return out


def main():
    torch_rows = list(csv.DictReader(open(sys.argv[1])))
    gemm = best(sys.argv[2], lambda r: ("gemm", f"m={r['m']};n={r['n']};k={r['k']}", r["dtype"], r["compute"]))
    conv = best(sys.argv[3], lambda r: ("conv2d", f"c_in={r['c_in']};c_out={r['c_out']};h={r['h']}", r["dtype"], "f32"))
    ours = {**gemm, **conv}
    print("| op | shape | dtype | compute | rocsweep best (TFLOP/s) | algorithm | PyTorch (TFLOP/s) | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    ratios = []
    for t in torch_rows:
        k = (t["op"], t["shape"], t["dtype"], t["compute"])
        tg = float(t["torch_gflops"])
        if k in ours:
            g, solver = ours[k]
            ratio = g / tg
            ratios.append((ratio, k))
            print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {g / 1e3:.1f} | {solver} | {tg / 1e3:.1f} | {ratio:.3f} |")
        else:
            print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | (no ok unit) | | {tg / 1e3:.1f} | |")
    if ratios:
        worst = min(ratios)
        print(f"\nLowest ratio: {worst[0]:.3f} ({' '.join(worst[1])}); shapes at or above 0.98: "
              f"{sum(r >= 0.98 for r, _ in ratios)} of {len(ratios)}.")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""How far a unit's time moves with where its operands lie: the same units run in several worker
processes, each holding a different amount of device memory before its first unit
(ROCSWEEP_DEBUG_PAD_MIB: cuMemAlloc, outside the stream's pool; ROCSWEEP_DEBUG_PAD_POOL_MIB: from
the pool), against PyTorch's launch-free time for the same shape where TORCH.csv is given.

usage: placement_table.py LABEL=RUN_DIR... [--torch [LABEL=]TORCH.csv]... > table.md

LABEL names the pad of each run (e.g. sync-8192, pool-64, none-a). Per unit: its median_ms in each
run, the spread over the runs ((max - min) / min), and where TORCH.csv has the shape, PyTorch's
time (torch_lt_ms for gemm, the same algorithm; torch_ms for conv2d, PyTorch's pick) / the unit's
time in each run. With several TORCH.csv files (PyTorch's times in several processes, e.g. each
under other environment variables), each labelled, a third table gives each one's time / the
first run's unit time (shapes' best unit for conv2d, lt#0 for gemm).
"""
import csv
import sys

from lt_ctypes import key_of


def short(r):
    if r["op"] == "gemm":
        return f"{r['m']}x{r['n']}x{r['k']} {r['dtype']}"
    return f"{r['c_in']}->{r['c_out']} {r['kernel']}x{r['kernel']} {r['h']}x{r['w']} {r['dtype']}"


def load(runs):
    """{(shape key, solver): (label text, {run label: median ms})}, in first-seen order."""
    units = {}
    for label, run_dir in runs:
        for r in csv.DictReader(open(f"{run_dir}/results.csv")):
            if r["status"] != "ok" or not r["median_ms"]:
                continue
            u = units.setdefault((key_of(r), r["solver"]), (f"{short(r)} {r['solver']}", r["op"], {}))
            u[2][label] = float(r["median_ms"])
    return units


def peer(path):
    if not path:
        return {}
    out = {}
    for r in csv.DictReader(open(path)):
        col = "torch_lt_ms" if r["op"] == "gemm" and r.get("torch_lt_ms") else "torch_ms"
        if r.get(col):
            out[r["key"]] = float(r[col])
    return out


def main():
    args = sys.argv[1:]
    peers = []
    while "--torch" in args:
        i = args.index("--torch")
        lbl, _, path = args[i + 1].rpartition("=")
        peers.append((lbl or "torch", path))
        del args[i:i + 2]
    runs = [tuple(a.split("=", 1)) for a in args if "=" in a]
    if not runs or len(runs) != len(args):
        sys.exit(__doc__)
    labels = [lbl for lbl, _ in runs]
    units = load(runs)
    ref = peer(peers[0][1]) if peers else {}
    print("| unit | " + " | ".join(labels) + " | spread |")
    print("|---|" + "---:|" * (len(labels) + 1))
    spreads = []
    for (key, _), (name, _, t) in units.items():
        v = [t.get(lbl) for lbl in labels]
        have = [x for x in v if x]
        spread = (max(have) - min(have)) / min(have) if len(have) > 1 else 0.0
        spreads.append((spread, name))
        print(f"| {name} | " + " | ".join(f"{x:.6f}" if x else "-" for x in v) + f" | {spread:.1%} |")
    if ref:
        print("\nPyTorch / unit (torch_lt_ms for gemm lt#0 units, torch_ms for conv2d):\n")
        print("| unit | PyTorch ms | " + " | ".join(labels) + " |")
        print("|---|---:|" + "---:|" * len(labels))
        for (key, solver), (name, op, t) in units.items():
            if key not in ref or (op == "gemm" and not solver.startswith("lt#0")):
                continue
            cells = [f"{ref[key] / t[lbl]:.3f}" if t.get(lbl) else "-" for lbl in labels]
            print(f"| {name} | {ref[key]:.6f} | " + " | ".join(cells) + " |")
    if len(peers) > 1:
        by_label = [(lbl, peer(path)) for lbl, path in peers]
        first = labels[0]
        print(f"\nEach PyTorch process / the unit in run {first} (the shape's best unit for conv2d):\n")
        print("| shape | " + " | ".join(lbl for lbl, _ in by_label) + " |")
        print("|---|" + "---:|" * len(by_label))
        best = {}
        for (key, solver), (name, op, t) in units.items():
            if first in t and (op == "conv2d" or solver.startswith("lt#0")):
                cur = best.get(key)
                if cur is None or t[first] < cur[1]:
                    best[key] = (name, t[first])
        for key, (name, ms) in best.items():
            cells = [f"{p[key] / ms:.3f}" if key in p else "-" for _, p in by_label]
            print(f"| {name} | " + " | ".join(cells) + " |")
    if spreads:
        spreads.sort()
        print(f"\n- spread over runs: median {spreads[len(spreads) // 2][0]:.1%}, "
              f"largest {spreads[-1][0]:.1%} ({spreads[-1][1]})")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Per-shape ratio of the direct library's best solver to the torch layer, from two rocsweep runs
of the same sweep (or one run with both backends), as issue 29's search-superset check reads it.

usage: layer_ratio.py LIBRARY_RUN [TORCH_RUN]
       layer_ratio.py --each RUN [RUN...]   (runs with both layers each, pooled: the parts of one
                                             sweep split over GPUs by scripts/device/split_sweep.py)

ratio = torch's median / the library's best median (each a row's median over its trials):
>= 1.00 means the fastest solver rocsweep tries is at least as fast as PyTorch's own pick;
below 1.00 means PyTorch reaches a path that rocsweep's search misses. A ratio is called below
only beyond the two rows' trial spread (`trial_spread`, the relative range across trials);
within it the row says `noise`.
"""
import csv
import math
import sys


def rows(run):
    with open(f"{run}/results.csv") as f:
        return list(csv.DictReader(f))


def fnum(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return math.nan


def main():
    if sys.argv[1] == "--each":
        lib_rows = [r for run in sys.argv[2:] for r in rows(run)]
        torch_rows = []
    else:
        lib_rows = rows(sys.argv[1])
        torch_rows = rows(sys.argv[2]) if len(sys.argv) > 2 else []
    if not torch_rows:
        torch_rows = [r for r in lib_rows if r["backend"] == "torch"]
        lib_rows = [r for r in lib_rows if r["backend"] != "torch"]
    best = {}
    for side, rs in (("lib", lib_rows), ("torch", torch_rows)):
        for r in rs:
            ms = fnum(r["median_ms"])
            if r["status"] != "ok" or not ms > 0:
                continue
            key = (side, r["case_id"])
            if key not in best or ms < best[key][0]:
                best[key] = (ms, r["solver"], fnum(r.get("trial_spread")) or 0.0, r)
    shapes = sorted({cid for (side, cid) in best if side == "lib"})
    lines, ratios, below, noise = [], [], 0, 0
    sizes = ("m", "n", "k", "dtype", "compute", "c_in", "c_out", "h", "kernel", "stride", "direction")
    for cid in shapes:
        if ("torch", cid) not in best:
            continue
        lib_ms, lib_solver, lib_spread, r = best[("lib", cid)]
        t_ms, t_solver, t_spread, _ = best[("torch", cid)]
        ratio = t_ms / lib_ms
        spread = (lib_spread if lib_spread == lib_spread else 0) + (t_spread if t_spread == t_spread else 0)
        verdict = ""
        if ratio < 1.0:
            if 1.0 - ratio > spread:
                verdict = "below"
                below += 1
            else:
                verdict = "noise"
                noise += 1
        ratios.append(ratio)
        shape = " ".join(f"{k}={r[k]}" for k in sizes if r.get(k))
        lines.append(f"| {shape} | {lib_solver} {lib_ms:.4f} | {t_solver} {t_ms:.4f} | {ratio:.3f} | {spread:.3f} | {verdict} |")
    if sys.argv[1] == "--each":
        print(f"# {' + '.join(sys.argv[2:])}, each run's library rows vs its torch rows")
    else:
        print(f"# {sys.argv[1]} vs {sys.argv[2] if len(sys.argv) > 2 else 'its torch rows'}")
    print("| shape | library best (ms) | torch (ms) | torch / library | trial spread | |")
    print("|---|---|---|---:|---:|---|")
    print("\n".join(lines))
    if ratios:
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        print(f"\nshapes: {len(ratios)}; lowest {min(ratios):.3f}; geometric mean {geo:.3f}; "
              f"below 1.00: {sum(1 for x in ratios if x < 1.0)} ({below} beyond the trial spread, {noise} within it)")


if __name__ == "__main__":
    main()

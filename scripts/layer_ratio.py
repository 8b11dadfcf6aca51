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


def pairs(lib_rows, torch_rows):
    """Per case with both layers ok: (case_id, library best, torch best, ratio, spread, verdict),
    each best as (median ms, solver, trial spread, row); verdict "below", "noise" or ""."""
    best = {}
    for side, rs in (("lib", lib_rows), ("torch", torch_rows)):
        for r in rs:
            ms = fnum(r["median_ms"])
            if r["status"] != "ok" or not ms > 0:
                continue
            key = (side, r["case_id"])
            if key not in best or ms < best[key][0]:
                best[key] = (ms, r["solver"], fnum(r.get("trial_spread")) or 0.0, r)
    out = []
    for cid in sorted({cid for (side, cid) in best if side == "lib"}):
        if ("torch", cid) not in best:
            continue
        lib, tor = best[("lib", cid)], best[("torch", cid)]
        ratio = tor[0] / lib[0]
        spread = (lib[2] if lib[2] == lib[2] else 0) + (tor[2] if tor[2] == tor[2] else 0)
        verdict = ""
        if ratio < 1.0:
            verdict = "below" if 1.0 - ratio > spread else "noise"
        out.append((cid, lib, tor, ratio, spread, verdict))
    return out


def split(runs, torch_run=None):
    """(library rows, torch rows): from one run with both layers (or several such runs), or a
    library run and a torch run."""
    lib_rows = [r for run in runs for r in rows(run)]
    torch_rows = rows(torch_run) if torch_run else []
    if not torch_rows:
        torch_rows = [r for r in lib_rows if r["backend"] == "torch"]
        lib_rows = [r for r in lib_rows if r["backend"] != "torch"]
    return lib_rows, torch_rows


SIZES = ("m", "n", "k", "dtype", "compute", "c_in", "c_out", "h", "kernel", "stride", "direction")


def main():
    if sys.argv[1] == "--each":
        lib_rows, torch_rows = split(sys.argv[2:])
    else:
        lib_rows, torch_rows = split(sys.argv[1:2], sys.argv[2] if len(sys.argv) > 2 else None)
    lines, ratios = [], []
    found = pairs(lib_rows, torch_rows)
    for cid, (lib_ms, lib_solver, _, r), (t_ms, t_solver, _, _), ratio, spread, verdict in found:
        ratios.append(ratio)
        shape = " ".join(f"{k}={r[k]}" for k in SIZES if r.get(k))
        lines.append(f"| {shape} | {lib_solver} {lib_ms:.4f} | {t_solver} {t_ms:.4f} | {ratio:.3f} | {spread:.3f} | {verdict} |")
    below = sum(1 for p in found if p[5] == "below")
    noise = sum(1 for p in found if p[5] == "noise")
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

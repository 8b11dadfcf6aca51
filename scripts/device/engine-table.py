#!/usr/bin/env python3
"""The before/after table of scripts/device/engine-before-after.sh: per sweep, the units both
binaries ran, whether status and chosen agree unit by unit, and the median device time after
over before (median, min and max of the per-unit ratios of ok units)."""
import csv, statistics, sys
from pathlib import Path

out = Path(sys.argv[1])
print("| sweep | units before / after | statuses before | same status | same chosen | median_ms after/before: median (min..max) |")
print("|---|---|---|---|---|---|")
before = out / "before"
for sweep in sorted(p.name for p in before.iterdir()) if before.is_dir() else []:
    rows = {}
    for side in ("before", "after"):
        f = out / side / sweep / "results.csv"
        rows[side] = {r["unit_id"]: r for r in csv.DictReader(open(f))} if f.exists() else {}
    common = sorted(set(rows["before"]) & set(rows["after"]))
    b, a = rows["before"], rows["after"]
    statuses = {}
    for u in common:
        statuses[b[u]["status"]] = statuses.get(b[u]["status"], 0) + 1
    same_status = sum(b[u]["status"] == a[u]["status"] for u in common)
    same_chosen = sum(b[u].get("chosen", "") == a[u].get("chosen", "") for u in common)
    ratios = [float(a[u]["median_ms"]) / float(b[u]["median_ms"]) for u in common
              if b[u]["status"] == a[u]["status"] == "ok" and b[u]["median_ms"] and a[u]["median_ms"]
              and float(b[u]["median_ms"]) > 0]
    r = (f"{statistics.median(ratios):.3f} ({min(ratios):.3f}..{max(ratios):.3f})" if ratios else "-")
    st = ", ".join(f"{k} {v}" for k, v in sorted(statuses.items()))
    print(f"| {sweep} | {len(b)} / {len(a)} | {st} | {same_status}/{len(common)} | {same_chosen}/{len(common)} | {r} |")
    for u in common:
        if b[u]["status"] != a[u]["status"]:
            print(f"|  differs: {u} | {b[u]['solver']} | {b[u]['status']} -> {a[u]['status']} | {a[u]['error'][:80]} | | |")

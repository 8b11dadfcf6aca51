#!/usr/bin/env python3
"""Grow a real run directory into a synthetic one of N rows, to measure `report`, `compare`,
`recommend` and `repro` at scale (issue 40, "Scale").

Usage: scripts/scale-run.py BASE_RUN OUT_RUN N

BASE_RUN is a finished run of sweeps/quickstart.toml (`rocsweep run sweeps/quickstart.toml
--trials 1 --no-report --out BASE_RUN`). Its rows at the smallest `h` are repeated over
h = 8, 9, 10, ... (w follows h) until there are N rows, each with its own unit and case id and
its times, flops and bytes scaled with the image's area, so that every row is a distinct shape as in a real map of
10^5-10^6 shapes. The manifest's sweep text gets the matching `h` axis (and loses its `drop`
rule) so that the boundary table re-expands the same cases. Standard library only.
"""

import csv
import hashlib
import json
import os
import re
import sys

# Columns that grow with the image's area (times, work, bytes); throughput stays as measured.
SCALED_COLUMNS = ("first_call_ms", "median_ms", "p10_ms", "p90_ms", "mean_ms", "call_median_ms",
                  "call_p10_ms", "call_p90_ms", "trial_ms", "flops", "bytes")


def scaled(value, factor):
    if not value:
        return value
    return ";".join(f"{float(v) * factor:.6f}" for v in value.split(";"))


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    base, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(os.path.join(base, "results.csv"), newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = list(reader)
    col = {name: i for i, name in enumerate(header)}
    h0 = min(int(r[col["h"]]) for r in rows)
    seeds = [r for r in rows if int(r[col["h"]]) == h0]
    per_h = len(seeds)
    sizes = (n + per_h - 1) // per_h
    os.makedirs(out, exist_ok=False)
    written = 0
    counts = {}
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for step in range(sizes):
            h = h0 + step
            factor = (h * h) / (h0 * h0)
            for s in seeds:
                if written == n:
                    break
                r = list(s)
                r[col["h"]] = str(h)
                r[col["w"]] = str(h)
                key = f"{written}".encode()
                r[col["unit_id"]] = hashlib.sha256(b"u" + key).hexdigest()[:16]
                r[col["case_id"]] = hashlib.sha256(b"c" + key).hexdigest()[:16]
                for c in SCALED_COLUMNS:
                    if c in col:
                        r[col[c]] = scaled(r[col[c]], factor)
                w.writerow(r)
                written += 1
                counts[r[col["status"]]] = counts.get(r[col["status"]], 0) + 1
    with open(os.path.join(base, "manifest.json")) as f:
        manifest = json.load(f)
    text = manifest["sweep"]["text"]
    text = re.sub(r'(?m)^h = .*$', f'h = "range({h0}..={h0 + sizes - 1})"', text)
    text = re.sub(r'(?m)^drop = .*$', "", text)
    manifest["sweep"]["text"] = text
    manifest["sweep"]["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    manifest["units_planned"] = written
    manifest["counts"] = counts
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    print(f"{out}: {written} rows, h = {h0}..={h0 + sizes - 1}")


if __name__ == "__main__":
    main()

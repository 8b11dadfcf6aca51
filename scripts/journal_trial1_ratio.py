#!/usr/bin/env python3
"""Issue 29's per-shape ratio (torch / the library's best) from trial 1 of runs cut before their
second pass, read from their journals (a unit's row is written only after its last trial).

usage: journal_trial1_ratio.py RUN:CASES [RUN:CASES...]
  RUN    a run directory over cuda + torch (journal.ndjson, results.csv)
  CASES  `rocsweep run --dry-run SWEEP` of its sweep (one line per case: id, then its text)

A unit id is sha256("case_id|solver|backend=B")[:16] (op::unit_id with the backend's context
key). The library solvers tried are the union of those the runs' finished rows name; trial-1
events of units whose solver no finished row names are counted, not used: the library's best is
then over a subset of what it tried, so each ratio read here is at most the true one. One trial:
no spread, so nothing here is called beyond noise.
"""
import csv, hashlib, json, math, sys
pairs = [a.rsplit(":", 1) for a in sys.argv[1:]]
runs = [p[0] for p in pairs]
solvers = {"cuda": set(), "torch": {"torch-default", "torch-benchmark"}}
cases = {}
for run in runs:
    for r in csv.DictReader(open(f"{run}/results.csv")):
        solvers[r["backend"]].add(r["solver"])
for run, cases_file in pairs:
    for line in open(cases_file):
        cid, text = line.split()[0], line.split()[1]
        cases[cid] = dict(kv.split("=") for kv in text.split(";")[1:])
ids = {}
for cid in cases:
    for b, ss in solvers.items():
        for s in ss:
            ids[hashlib.sha256(f"{cid}|{s}|backend={b}".encode()).hexdigest()[:16]] = (cid, b, s)
best, unknown = {}, 0
for run in runs:
    for line in open(f"{run}/journal.ndjson"):
        e = json.loads(line)
        if e["ev"] != "trial" or e["trial"] != 1 or e["outcome"]["status"] != "ok":
            continue
        if e["unit"] not in ids:
            unknown += 1
            continue
        cid, b, s = ids[e["unit"]]
        ms = e["outcome"]["stats"]["median"] * 1e3
        if (cid, b) not in best or ms < best[(cid, b)][0]:
            best[(cid, b)] = (ms, s)
print(f"# {' + '.join(runs)}: trial 1 of each unit, library best vs torch")
print("| shape | library best (ms) | torch (ms) | torch / library |")
print("|---|---|---|---:|")
ratios = []
for cid, c in sorted(cases.items(), key=lambda kv: (int(kv[1]["h"]), int(kv[1]["c_in"]), kv[1]["dtype"])):
    if (cid, "cuda") in best and (cid, "torch") in best:
        (lm, ls), (tm, ts) = best[(cid, "cuda")], best[(cid, "torch")]
        ratios.append(tm / lm)
        print(f"| h={c['h']} c_in={c['c_in']} c_out={c['c_out']} {c['dtype']} | {ls} {lm:.4f} | {ts} {tm:.4f} | {tm/lm:.3f} |")
geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
print(f"\nshapes with both layers in trial 1: {len(ratios)} of {len(cases)}; lowest {min(ratios):.3f}; geometric mean {geo:.3f}; below 1.00: {sum(x < 1 for x in ratios)}; trial-1 events of units not mapped (solvers no finished row names): {unknown}")

"""Issue 43's device check, last step: each step of a replayed sequence beside the same call run
as a unit of its own (the imported sweeps, solver default, one trial), matched by case and
backend: device time per call (median_ms) and wall time per step/unit (wall_ms), both from one
device command. Usage: python3 sequence_vs_units.py SEQ_RUN UNIT_RUN..."""
import csv
import statistics
import sys


def rows(path):
    with open(path + "/results.csv", newline="") as f:
        return list(csv.DictReader(f))


def num(s):
    try:
        return float(s)
    except ValueError:
        return None


seq = rows(sys.argv[1])
units = {}
for d in sys.argv[2:]:
    for r in rows(d):
        if r["status"] == "ok":
            units[(r["case_id"], r["backend"])] = r
print(f"sequence: {len(seq)} steps; statuses: "
      + ", ".join(f"{k} {v}" for k, v in sorted(
          {s: sum(1 for r in seq if r['status'] == s) for s in {r['status'] for r in seq}}.items())))
print()
print("| order | backend | step | status | median ms in sequence | median ms alone | ratio | wall ms step | wall ms unit |")
print("|---:|---|---|---|---:|---:|---:|---:|---:|")
ratios, walls = [], []
for r in seq:
    u = units.get((r["case_id"], r["backend"]))
    a, b = num(r["median_ms"]), num(u["median_ms"]) if u else None
    ratio = f"{a / b:.3f}" if a and b else ""
    if a and b:
        ratios.append(a / b)
    ws, wu = num(r["wall_ms"]), num(u["wall_ms"]) if u else None
    if ws and wu:
        walls.append((ws, wu))
    print(f"| {r['order']} | {r['backend']} | {r['params'][:70]} | {r['status']} | {r['median_ms']} | "
          f"{u['median_ms'] if u else '-'} | {ratio} | {r['wall_ms']} | {u['wall_ms'] if u else '-'} |")
print()
if ratios:
    g = statistics.geometric_mean(ratios)
    print(f"device time in sequence / alone over {len(ratios)} matched steps: geometric mean {g:.3f}, "
          f"lowest {min(ratios):.3f}, highest {max(ratios):.3f}")
if walls:
    print(f"wall time: sequence steps {sum(w for w, _ in walls) / 1000:.2f} s in all, "
          f"the same calls as separate units {sum(u for _, u in walls) / 1000:.2f} s")

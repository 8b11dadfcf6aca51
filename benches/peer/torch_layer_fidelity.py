#!/usr/bin/env python3
"""Is the torch layer's time PyTorch's time? Compares every ok torch row of a rocsweep run with
PyTorch itself, timed in clean processes on the same GPU, in the same device command (issue 42's
benchmark; not a timed test).

usage: torch_layer_fidelity.py [--per-shape | --burst-only] RUN_DIR OUT_DIR
       torch_layer_fidelity.py --placements OUT.md TABLE_DIR TABLE_DIR...
       torch_layer_fidelity.py --duty RUN_DIR OUT_DIR      (the long calls with rests; below)
       torch_layer_fidelity.py --summary FIDELITY_CSV...  (the figures' table again, from tables)

RUN_DIR: a run of `--backend torch` with `[timing] cache = "warm"` (`--set timing.cache=warm`):
the launch-free figure compared is a warm one on both sides. Per torch solver in the run, two
fresh Pythons, one after the other (fidelity_reference.py --clean; the second gives PyTorch's
own process-to-process spread), time PyTorch's own calls of the run's rows the way a rocsweep
unit runs (fidelity_reference.py's docstring): the same regime (a burst on a rested card), the
sustained graph of 20 calls, 30 calls back to back, each with the SM clock.
Then, shape by shape: torch layer `median_ms` / same regime (target within 2%), and over the
nearest of PyTorch's clean processes (cuDNN's benchmark picks differ between processes),
`call_median_ms` / same regime's per call (target within 3%), the two clean processes against
each other (PyTorch's own spread), and the layer / sustained with both clocks; lowest, highest,
geometric mean and how many fall outside, per op and solver.
Writes OUT_DIR/fidelity.csv and OUT_DIR/fidelity.md.

FIDELITY_OUTPUT (kept or dropped, what the reference does with each call's output),
FIDELITY_GRAPHS (one graph alive at a time, as the layer, or every K's), FIDELITY_WARMUP (the
call before each capture on the current stream, as the layer, or on a side stream), FIDELITY_NVML
(off: no SM clock read in the clean processes), FIDELITY_CASES (only those case ids),
FIDELITY_PAD_MIB, FIDELITY_PAD_KIND, FIDELITY_MAX_MS and FIDELITY_KERNELS: fidelity_reference.py.
FIDELITY_PROCESSES=N (--per-shape): N clean processes per shape instead of two (below).

--placements OUT.md TABLE_DIR...: the layer against PyTorch over the tables of several references
made with different FIDELITY_PAD_* (the first with none): PyTorch's lowest and highest figure per
row and the layer over the nearest one.

--per-shape: the reference's clean process is one per solver and shape (forked from this process,
which imported torch and never touched CUDA), two per shape, bursts only: PyTorch with nothing
before the shape in its process. --burst-only: the clean process per solver, bursts only (no
sustained pass). The layer's Python per solver runs every unit of its worker in turn.

--duty: for a run made with ROCSWEEP_TORCH_TRACE=1 (the worker logs each sample's start and end),
the gaps between the layer's samples, and torch-matmul's calls of 0.1 ms or more timed again in a
clean process as bursts with the host idle 0, 1, 3, 10 and 30 ms before each sample: which rest
gives the layer's time (a card below its power limit keeps its clock). Writes OUT_DIR/duty.md.
"""
import csv
import json
import math
import os
import subprocess
import sys

from fidelity_reference import DUTY_GAPS_MS, GRAPH_CALLS, MAX_MS, OUTPUT, PAD_KIND, PAD_MIB, forked, key, rows

# The targets: launch-free within 2 % of PyTorch's, per call within 3 %.
TARGET_GRAPH = 0.02
TARGET_CALL = 0.03

# FIDELITY_PROCESSES=N (--per-shape): N clean processes per shape, not two; the table's "PyTorch"
# and "PyTorch again" are the first two, the nearest-process figure and PyTorch's range take all.
PROCESSES = int(os.environ.get("FIDELITY_PROCESSES", "2"))

# The clean processes' script.
REFERENCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fidelity_reference.py")


# --- the comparison ---------------------------------------------------------------------------

def summary(ratios, target, spreads=None):
    """(shapes, lowest, highest, geometric mean, outside the target, outside both the target and
    PyTorch's own process-to-process spread of that shape)."""
    if not ratios:
        return "none", "", "", "", "", ""
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    outside = sum(1 for x in ratios if abs(x - 1) > target)
    beyond = "-"
    if spreads is not None:
        # Outside the target (as counted above) and farther from 1 than PyTorch's two clean
        # processes are from each other.
        beyond = sum(1 for x, s in zip(ratios, spreads)
                     if abs(x - 1) > target and abs(math.log(x)) > abs(math.log(s)))
    return len(ratios), "%.3f" % min(ratios), "%.3f" % max(ratios), "%.3f" % geo, outside, beyond


def clean_shapes(run_dir, out_dir, solvers):
    """Per solver and shape, PROCESSES clean processes of their own (at least two), one after the
    other, as a unit that runs alone: ([{key: figures} per process], versions); burst figures
    only."""
    runs, versions = [{} for _ in range(max(2, PROCESSES))], {}
    mine = list(rows(run_dir))
    for solver in solvers:
        for r in mine:
            if r["solver"] != solver:
                continue
            for n, into in enumerate(runs, 1):
                out = os.path.join(out_dir, "shape-%s-%d.json" % (solver, n))
                got = forked(solver, run_dir, out, key(r))
                os.remove(out)
                versions = got.pop("_versions", versions)
                into.update(got)
    return runs, versions


def clean_runs(run_dir, out_dir, solvers, burst_only=False):
    """Per solver, two clean processes one after the other: ({key: first}, {key: second}, versions)."""
    first, second, versions = {}, {}, {}
    for solver in solvers:
        for n, into in ((1, first), (2, second)):
            out = os.path.join(out_dir, "clean-%s-%d.json" % (solver, n))
            args = ["--clean-burst" if burst_only else "--clean", solver, run_dir, out]
            subprocess.run([sys.executable, REFERENCE] + args, check=True)
            with open(out) as f:
                got = json.load(f)
            versions = got.pop("_versions", versions)
            into.update(got)
    return first, second, versions


def shape_of(r):
    keys = ("n", "c_in", "c_out", "h", "kernel", "stride") if r["op"] == "conv2d" else ("m", "n", "k", "compute")
    return ";".join("%s=%s" % (k, r[k]) for k in keys if k in r)


def table_rows(mine, first, second, more=()):
    """The table's rows; more: the figures of further clean processes ({key: figures} each)."""
    table = []
    for r in mine:
        m, m2 = first.get(key(r)), second.get(key(r))
        if not m or not m2:
            continue
        layer, call = float(r["median_ms"]), float(r["call_median_ms"])
        every = [m["burst_ms"], m2["burst_ms"]] + [x[key(r)]["burst_ms"] for x in more if key(r) in x]
        table.append({
            "op": r["op"], "solver": r["solver"], "case_id": r["case_id"], "shape": shape_of(r),
            "dtype": r["dtype"], "timing_method": r.get("timing_method", ""), "cache": r.get("cache", ""),
            "samples": r.get("samples", ""), "layer_ms": layer, "layer_clock": r.get("clock_mhz", ""),
            "pytorch_ms": m["burst_ms"], "pytorch_clock": m["burst_clock"], "ratio": layer / m["burst_ms"],
            "pytorch_again_ms": m2["burst_ms"], "pytorch_spread": m["burst_ms"] / m2["burst_ms"],
            "nearest_ratio": nearest(layer, *every), "pytorch_processes": len(every),
            "pytorch_lowest_ms": min(every), "pytorch_highest_ms": max(every),
            "layer_call_ms": call, "pytorch_call_ms": m["burst_call_ms"], "call_ratio": call / m["burst_call_ms"],
            "pytorch_call_spread": m["burst_call_ms"] / m2["burst_call_ms"],
            # Absent where the reference timed bursts only (--per-shape, --burst-only).
            "pytorch_sustained_ms": m.get("graph_ms"), "sustained_clock": m.get("graph_clock"),
            "sustained_ratio": layer / m["graph_ms"] if "graph_ms" in m else None,
            "pytorch_call30_ms": m.get("call30_ms"),
            "call30_ratio": call / m["call30_ms"] if "call30_ms" in m else None,
        })
    return table


def nearest(layer, *pytorch):
    """layer / the one of PyTorch's clean processes' figures nearest to it (of two, or of
    FIDELITY_PROCESSES per shape): where cuDNN's
    benchmark picks differ between processes (two levels a few % apart on an H200), whether the
    layer's time is one PyTorch's own processes reach."""
    return min((layer / p for p in pytorch), key=lambda r: abs(math.log(r)))


# (figure, ratio column, target, the column of PyTorch's own spread it is judged against)
FIGURES = (
    ("launch-free / same regime", "ratio", TARGET_GRAPH, "pytorch_spread"),
    ("PyTorch / PyTorch again (launch-free)", "pytorch_spread", TARGET_GRAPH, None),
    ("launch-free / nearest clean process", "nearest_ratio", TARGET_GRAPH, None),
    ("per call / same regime", "call_ratio", TARGET_CALL, "pytorch_call_spread"),
    ("PyTorch / PyTorch again (per call)", "pytorch_call_spread", TARGET_CALL, None),
    ("launch-free / sustained (graph20)", "sustained_ratio", TARGET_GRAPH, None),
    ("per call / 30 back to back", "call30_ratio", TARGET_CALL, None),
)


def worst(table, col, n):
    return sorted(table, key=lambda t: -abs(math.log(t[col])))[:n]


def ms(v):
    return "" if v is None else "%.4f" % v


def clock(v):
    return "" if v in (None, "") else str(v)


REFERENCES = {
    "solver": "a clean process per solver, every shape in turn (as the layer's Python per solver)",
    "solver-burst": "a clean process per solver, every shape in turn, bursts only",
    "shape": "a clean process per solver and shape (a fork of a parent that imported torch and "
             "never touched CUDA), bursts only",
}


OUTPUTS = {
    "dropped": "dropped on return (the next call gets the same block)",
    "kept": "kept until the next call's replaces it (`y = f(x)` in a loop)",
}


def summary_lines(table):
    """The table of figures per op and solver: shapes, lowest, highest, geometric mean, how many
    outside the target."""
    lines = ["| op | solver | figure | shapes | lowest | highest | geometric mean | outside target "
             "| outside target and PyTorch's own spread |",
             "|---|---|---|---|---|---|---|---|---|"]
    for op, solver in sorted({(t["op"], t["solver"]) for t in table}):
        mine = [t for t in table if (t["op"], t["solver"]) == (op, solver)]
        for fig, col, target, spread in FIGURES:
            if any(t.get(col) is None for t in mine):
                continue
            n, lo, hi, geo, out, beyond = summary(
                [t[col] for t in mine], target, [t[spread] for t in mine] if spread else None)
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s (beyond %d%%) | %s |" % (
                op, solver, fig, n, lo, hi, geo, out, round(target * 100), beyond))
    return lines


def from_csv(path):
    """A fidelity.csv read back: its ratios as numbers (empty cells None), and the nearest clean
    process's ratio where the table was written before that column."""
    table = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            t = dict(r)
            for col in ("layer_ms", "pytorch_ms", "pytorch_again_ms") + tuple(c for _, c, _, _ in FIGURES):
                if col in t:
                    t[col] = float(t[col]) if t[col] not in ("", None) else None
            if t.get("nearest_ratio") is None:
                t["nearest_ratio"] = nearest(t["layer_ms"], t["pytorch_ms"], t["pytorch_again_ms"])
            table.append(t)
    return table


def worst_table(table, title, heads, col, n, cells):
    """A titled markdown table of the n rows farthest from 1 in `col`: the row's op, solver,
    shape and dtype, then cells(row)."""
    lines = ["", title, "", "| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for t in worst(table, col, n):
        lines.append("| " + " | ".join([t["op"], t["solver"], t["shape"], t["dtype"]] + cells(t)) + " |")
    return lines


def report(run_dir, table, versions, reference):
    lines = ["# The torch layer against PyTorch in clean processes", "",
             "Run: `%s`; PyTorch %s, cuDNN %s, on %s. The torch layer's `median_ms` (warm, its "
             "`timing_method`) and `call_median_ms` against PyTorch in %s, "
             "timed in the same regime (a rested card, the row's samples: "
             "`benches/peer/torch_layer_fidelity.py`; each call's output %s), a second clean process for "
             "PyTorch's own spread, and (per solver) PyTorch's sustained graph of %d calls, with the SM "
             "clock of each side." % (
                 run_dir, versions.get("torch"), versions.get("cudnn"), versions.get("device"),
                 REFERENCES[reference], OUTPUTS[OUTPUT], GRAPH_CALLS), "",
             ("Diagnostics: %d MiB %s before each shape's inputs; rows under %s ms only." % (PAD_MIB, PAD_KIND, MAX_MS)
              if PAD_MIB or MAX_MS != float("inf") else ""), ""] + summary_lines(table)
    key_cols = ("op", "solver", "shape", "dtype")
    lines += worst_table(
        table, "Shape by shape: `fidelity.csv`. Worst launch-free ratios (same regime):",
        key_cols + ("layer ms", "MHz", "PyTorch ms", "MHz", "ratio", "PyTorch again", "sustained ms", "MHz",
                    "method"), "ratio", 12,
        lambda t: ["%.4f" % t["layer_ms"], clock(t["layer_clock"]), "%.4f" % t["pytorch_ms"],
                   clock(t["pytorch_clock"]), "%.3f" % t["ratio"], "%.3f" % t["pytorch_spread"],
                   ms(t["pytorch_sustained_ms"]), clock(t["sustained_clock"]), t["timing_method"]])
    lines += worst_table(
        table, "Worst launch-free ratios against the nearest of PyTorch's clean processes:",
        key_cols + ("layer ms", "processes", "PyTorch lowest ms", "highest ms", "ratio"), "nearest_ratio", 12,
        lambda t: ["%.4f" % t["layer_ms"], "%d" % t["pytorch_processes"], "%.4f" % t["pytorch_lowest_ms"],
                   "%.4f" % t["pytorch_highest_ms"], "%.3f" % t["nearest_ratio"]])
    lines += worst_table(
        table, "Worst per-call ratios (same regime):",
        key_cols + ("layer call ms", "PyTorch call ms", "ratio", "PyTorch again"), "call_ratio", 8,
        lambda t: ["%.4f" % t["layer_call_ms"], "%.4f" % t["pytorch_call_ms"], "%.3f" % t["call_ratio"],
                   "%.3f" % t["pytorch_call_spread"]])
    return lines


def compare(run_dir, out_dir, reference="solver"):
    os.makedirs(out_dir, exist_ok=True)
    mine = list(rows(run_dir))
    solvers = sorted({r["solver"] for r in mine})
    more = []
    if reference == "shape":
        (first, second, *more), versions = clean_shapes(run_dir, out_dir, solvers)
    else:
        first, second, versions = clean_runs(run_dir, out_dir, solvers, reference == "solver-burst")
    table = table_rows(mine, first, second, more)
    with open(os.path.join(out_dir, "fidelity.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(table[0].keys()) if table else ["op"])
        w.writeheader()
        w.writerows(table)
    lines = report(run_dir, table, versions, reference)
    with open(os.path.join(out_dir, "fidelity.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def layer_gaps(run_dir):
    """(ms the torch layer's device rested between two samples of a unit, ms a sample took), from
    the worker logs of a run made with ROCSWEEP_TORCH_TRACE=1."""
    gaps, busy = [], []
    for root, _, files in os.walk(os.path.join(run_dir, "workers")):
        for name in sorted(files):
            last_end = None
            with open(os.path.join(root, name), errors="replace") as f:
                for line in f:
                    if " prepares " in line:
                        last_end = None
                    if "rocsweep torch worker: run k=" not in line:
                        continue
                    fields = dict(x.split("=", 1) for x in line.split() if "=" in x)
                    start, end = float(fields["start"]), float(fields["end"])
                    busy.append((end - start) * 1e3)
                    if last_end is not None:
                        gaps.append((start - last_end) * 1e3)
                    last_end = end
    return gaps, busy


def duty(run_dir, out_dir):
    """The long calls of torch-matmul: the layer's time against PyTorch's burst with the host idle
    0 to 30 ms between samples, beside the gaps the layer's own trace shows."""
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, "duty-torch-matmul.json")
    subprocess.run([sys.executable, REFERENCE, "--duty-clean", "torch-matmul", run_dir, out], check=True)
    with open(out) as f:
        got = json.load(f)
    gaps, busy = layer_gaps(run_dir)
    q = lambda v, p: sorted(v)[int(p * (len(v) - 1))] if v else float("nan")  # noqa: E731
    lines = ["# The torch layer's rests between samples, and PyTorch's long calls with rests", "",
             "Layer trace (`ROCSWEEP_TORCH_TRACE`): %d gaps between samples of a unit: median %.3f ms, "
             "p10 %.3f, p90 %.3f; a sample took median %.3f ms." % (
                 len(gaps), q(gaps, .5), q(gaps, .1), q(gaps, .9), q(busy, .5)), "",
             "| shape | dtype | layer ms | " + " | ".join("PyTorch, %g ms rests" % g for g in DUTY_GAPS_MS) + " |",
             "|---|---|---|" + "---|" * len(DUTY_GAPS_MS)]
    for r in rows(run_dir):
        m = got.get(key(r))
        if not m:
            continue
        layer = float(r["median_ms"])
        lines.append("| %s | %s | %.4f | %s |" % (shape_of(r), r["dtype"], layer, " | ".join(
            "%.4f (%.3f)" % (m["%g" % g], layer / m["%g" % g]) for g in DUTY_GAPS_MS)))
    with open(os.path.join(out_dir, "duty.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def placements(out_md, table_dirs):
    """The layer against PyTorch over several placements: per row, PyTorch's lowest and highest
    figure over the tables (each a reference run with its own FIDELITY_PAD_*, two clean
    processes each) and the layer over the nearest of them. Writes out_md."""
    tables = []
    for d in table_dirs:
        with open(os.path.join(d, "fidelity.csv"), newline="") as f:
            tables.append({(r["solver"], r["shape"], r["dtype"]): r for r in csv.DictReader(f)})
    first = tables[0]
    lines = ["# The torch layer against PyTorch over %d placements of its operands" % len(tables), "",
             "Tables: %s (the first with no pad); each gives two clean processes." % ", ".join(
                 "`%s`" % os.path.basename(os.path.normpath(d)) for d in table_dirs), "",
             "| solver | shape | dtype | layer us | PyTorch us, lowest-highest | PyTorch's spread "
             "| layer / first table | layer / nearest PyTorch figure |",
             "|---|---|---|---|---|---|---|---|"]
    beyond_first = beyond_nearest = 0
    for k in sorted(first, key=lambda k: float(first[k]["layer_ms"])):
        if not all(k in t for t in tables):
            continue
        layer = float(first[k]["layer_ms"])
        vals = [float(t[k][c]) for t in tables for c in ("pytorch_ms", "pytorch_again_ms")]
        near = min(vals, key=lambda v: abs(math.log(layer / v)))
        ratio_first = layer / float(first[k]["pytorch_ms"])
        beyond_first += abs(ratio_first - 1) > TARGET_GRAPH
        beyond_nearest += abs(layer / near - 1) > TARGET_GRAPH
        lines.append("| %s | %s | %s | %.2f | %.2f-%.2f | %.3f | %.3f | %.3f |" % (
            k[0], k[1], k[2], layer * 1e3, min(vals) * 1e3, max(vals) * 1e3, max(vals) / min(vals),
            ratio_first, layer / near))
    lines += ["", "Rows: %d; the layer beyond %d%% of the first table's PyTorch: %d; beyond %d%% of "
              "the nearest PyTorch figure over all placements: %d." % (
                  len(first), round(TARGET_GRAPH * 100), beyond_first, round(TARGET_GRAPH * 100), beyond_nearest)]
    with open(out_md, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv):
    if len(argv) >= 3 and argv[1] == "--summary":
        for path in argv[2:]:
            print("\n".join(["", "`%s`:" % path, ""] + summary_lines(from_csv(path))))
        return 0
    if len(argv) == 4 and argv[1] == "--duty":
        duty(argv[2], argv[3])
        return 0
    if len(argv) == 3:
        compare(argv[1], argv[2])
        return 0
    if len(argv) >= 5 and argv[1] == "--placements":
        placements(argv[2], argv[3:])
        return 0
    if len(argv) == 4 and argv[1] in ("--per-shape", "--burst-only"):
        compare(argv[2], argv[3], "shape" if argv[1] == "--per-shape" else "solver-burst")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

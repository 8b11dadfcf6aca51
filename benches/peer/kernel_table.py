#!/usr/bin/env python3
"""The kernels of the torch layer's samples against PyTorch's own, shape by shape (issue 42:
where the layer's launch-free time and a clean PyTorch process's differ, is it the kernels that
ran, their durations, or the gaps between them?).

usage: kernel_table.py RUN_DIR LAYER.jsonl REF.jsonl... > kernels.md

RUN_DIR: the torch layer's run (its results.csv names each row's case); LAYER.jsonl: what the
worker wrote under ROCSWEEP_TORCH_KERNELS=LAYER.jsonl in that run; REF.jsonl: what
fidelity_reference.py wrote under FIDELITY_KERNELS (PyTorch's clean processes, pooled). Each line
is one sample: the kernels it ran in order. Of a graph sample (k calls captured, one replay
behind a spin kernel), the kernels after the last spin are the replay's; per side and row, the
medians over its graph samples of: kernels per call, the kernels' summed duration per call,
the gap between one kernel's end and the next's start, the replay's span (first start to last
end) per call, its head (the spin's end to its first kernel: the graph launch's own latency, which
the figure spreads over the calls the replay holds) and those calls; and the sample's own figure
(device_s). LAYER.jsonl and REF.jsonl may be gzipped (.gz). Both sides ran under the profiler, so
their figures compare with each other, not with an unprofiled run's.
"""
import csv
import gzip
import json
import statistics
import sys

SPIN = "spin_kernel"


def short(name, width=70):
    """A kernel's name without its arguments and template parameters."""
    for cut in ("(", "<"):
        if cut in name and not name.startswith(cut):
            name = name.split(cut, 1)[0]
    return name[:width]


def row_key(r):
    if r["op"] == "gemm":
        return ("gemm", r["m"], r["n"], r["k"], r["batch"], r["dtype"])
    return ("conv2d", r["n"], r["c_in"], r["c_out"], r["h"], r["w"], r["kernel"], r["stride"],
            r["pad"], r["dtype"], r["direction"])


def problem_key(p):
    if p["op"] == "gemm":
        return ("gemm",) + tuple(str(p[f]) for f in ("m", "n", "k", "batch", "dtype"))
    g = p["geom"]
    return ("conv2d",) + tuple(str(g[f]) for f in ("n", "c_in", "c_out", "h", "w", "kh", "stride_h",
                                                    "pad_h")) + (p["dtype"], p["direction"])


def label(r):
    if r["op"] == "gemm":
        return "%sx%sx%s %s" % (r["m"], r["n"], r["k"], r["dtype"])
    return "%s->%s %sx%s at %sx%s %s" % (r["c_in"], r["c_out"], r["kernel"], r["kernel"], r["h"],
                                         r["w"], r["dtype"])


def replay(line):
    """(names of one call's kernels, kernels per call, kernel us per call, gap us, span us per
    call, the replay's kernels, head us: the spin's end to the replay's first kernel, calls) of a
    graph sample; None for another sample or a replay the profiler did not see whole."""
    ks = line["kernels"]
    spins = [i for i, e in enumerate(ks) if SPIN in e[0]]
    k = line.get("calls", line["k"])  # the calls the replay held (a kept graph's, not the k asked)
    if line.get("method") != "graph" or not spins:
        return None
    body = ks[spins[-1] + 1:]
    if not body or len(body) % k:
        return None
    per = len(body) // k
    busy = sum(e[2] for e in body)
    span = body[-1][1] + body[-1][2] - body[0][1]
    gaps = [b[1] - (a[1] + a[2]) for a, b in zip(body, body[1:])]
    spin = ks[spins[-1]]
    head = body[0][1] - (spin[1] + spin[2])
    return ([e[0] for e in body[:per]], per, busy / k, statistics.median(gaps) if gaps else 0.0,
            span / k, body, head, k)


def side(lines):
    """Medians over a row's graph samples, and each kernel name's median duration."""
    samples = [(replay(l), l["device_s"] * 1e6) for l in lines]
    samples = [(s, fig) for s, fig in samples if s is not None]
    if not samples:
        return None
    durations = {}
    for s, _ in samples:
        for e in s[5]:
            durations.setdefault(e[0], []).append(e[2])
    names = samples[-1][0][0]
    return {
        "samples": len(samples),
        "names": names,
        "per": statistics.median(s[1] for s, _ in samples),
        "busy": statistics.median(s[2] for s, _ in samples),
        "gap": statistics.median(s[3] for s, _ in samples),
        "span": statistics.median(s[4] for s, _ in samples),
        "figure": statistics.median(fig for _, fig in samples),
        "head": statistics.median(s[6] for s, _ in samples),
        "calls": statistics.median(s[7] for s, _ in samples),
        "each": {n: statistics.median(d) for n, d in durations.items()},  # the replays' kernels
    }


def opened(path):
    """A JSON-lines file, gzipped (.gz) or not."""
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def load(run_dir, layer_path, ref_paths):
    rows = [r for r in csv.DictReader(open("%s/results.csv" % run_dir))
            if r["backend"] == "torch" and r["status"] == "ok"]
    by_shape = {(row_key(r), r["solver"]): r for r in rows}
    layer, ref = {}, {}
    for line in map(json.loads, opened(layer_path)):
        r = by_shape.get((problem_key(line["problem"]), line["solver"]))
        if r is not None:
            layer.setdefault(r["case_id"] + "|" + r["solver"], []).append(line)
    for path in ref_paths:
        for line in map(json.loads, opened(path)):
            ref.setdefault(line["case"], []).append(line)
    return rows, layer, ref


def ratio(a, b):
    return "%.3f" % (a / b) if b else ""


def table(rows, layer, ref):
    out = ["| solver | shape | kernels per call, layer / PyTorch | same kernels | kernel us per call, "
           "layer / PyTorch | ratio | gap us, layer / PyTorch | span us per call, layer / PyTorch "
           "| ratio | head us per replay, layer / PyTorch | calls per replay, layer / PyTorch "
           "| figure us, layer / PyTorch | ratio |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    names = []
    for r in rows:
        key = r["case_id"] + "|" + r["solver"]
        a, b = side(layer.get(key, [])), side(ref.get(key, []))
        if a is None or b is None:
            out.append("| %s | %s | %s |" % (r["solver"], label(r), "no graph sample on the %s side"
                                            % ("layer's" if a is None else "reference's")))
            continue
        same = a["names"] == b["names"]
        out.append("| %s | %s | %g / %g | %s | %.2f / %.2f | %s | %.2f / %.2f | %.2f / %.2f | %s | "
                   "%.1f / %.1f | %g / %g | %.2f / %.2f | %s |" % (
                       r["solver"], label(r), a["per"], b["per"], "yes" if same else "**no**",
                       a["busy"], b["busy"], ratio(a["busy"], b["busy"]), a["gap"], b["gap"],
                       a["span"], b["span"], ratio(a["span"], b["span"]), a["head"], b["head"],
                       a["calls"], b["calls"], a["figure"], b["figure"],
                       ratio(a["figure"], b["figure"])))
        names.append((r, a, b))
    out += ["", "Each kernel's median duration (us), layer / PyTorch:", ""]
    for r, a, b in names:
        out.append("- %s %s (%d / %d graph samples):" % (r["solver"], label(r), a["samples"],
                                                          b["samples"]))
        for n in sorted(set(a["each"]) | set(b["each"])):
            la, lb = a["each"].get(n), b["each"].get(n)
            out.append("  - `%s`: %s / %s%s" % (short(n), "%.2f" % la if la else "-",
                                                 "%.2f" % lb if lb else "-",
                                                 " (%s)" % ratio(la, lb) if la and lb else ""))
    return "\n".join(out)


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    rows, layer, ref = load(argv[1], argv[2], argv[3:])
    print(table(rows, layer, ref))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

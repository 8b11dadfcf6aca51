#!/usr/bin/env python3
"""The same-algorithm check with rotating operands beside the warm one, as Markdown.

usage: rotating_table.py RUN_WARM TORCH_WARM.csv RUN_ROT TORCH_ROT.csv [RUN_ROT_2 [TORCH_ROT_2.csv]] > table.md

RUN_WARM / RUN_ROT: rocsweep runs of the same GEMM shapes, solver lt#0 (cuBLASLt's first heuristic
algorithm), without and with `[timing] rotating_mib`; TORCH_*.csv: peer_times.py on each (the
second with --rotating-mib, the same MiB), whose cuBLASLt pass runs PyTorch's matmul on cuBLASLt
(torch_lt_*: the heuristic's first algorithm, rocsweep's workspace) and rocsweep's call from Python
(rep_*). RUN_ROT_2, TORCH_ROT_2.csv (optional): the rotating runs again, for run to run, and the
same-algorithm ratio of the second pair.

Per shape: rocsweep lt#0's median trial, PyTorch on cuBLASLt (its K, from its launch-free time), the
same with rocsweep's K (kr, where the two differ), the replica; ratios are each / rocsweep. Kernels:
rocsweep's `chosen` (algo id, tile, stages, split-K) against the replica's first heuristic
algorithm, the replica's kernels against PyTorch's by name (torch.profiler), and the rotating
pass's kernels against the warm pass's. `reuse MiB`: with rotation, the bytes of A and B read
between a set's read in a sample's warm replay and its read in the timed replay (K sets, rocsweep's
K / PyTorch's K): below the L2 size, part of a set can still be in L2 when the timed replay reads it.
That applies to the warm-replay protocol (rocsweep before 41f8d8c, peer_times --graph-protocol warm);
with the upload protocol (rocsweep since, peer_times' default) a sample replays its graph once and a
set was last read a whole rotation earlier.
"""
import csv
import math
import statistics
import sys

from lt_ctypes import k_rule, key_of

FIDELITY = 0.03
L2_MIB = 50 * 1000 * 1000 / 2**20  # the H200's L2 (50 MB)
SIZE = {"f32": 4, "f16": 2, "bf16": 2}


def is_lt0(solver):
    """`lt#0-algo<id>` (a sweep of every algorithm) or `lt#0` (a sweep naming it alone), as peer_times'."""
    return solver == "lt#0" or solver.startswith("lt#0-")


def short(key):
    return ";".join(p for p in key.split(";") if p.split("=")[0] in ("m", "n", "k", "dtype"))


def lt0(run_dir):
    return {key_of(r, "gemm"): r for r in csv.DictReader(open(f"{run_dir}/results.csv"))
            if r["op"] == "gemm" and is_lt0(r["solver"])}


def num(row, col):
    try:
        v = (row or {}).get(col)
        return float(v) if v not in (None, "") else None
    except ValueError:
        return None


def ratio(x, y):
    return x / y if x is not None and y else None


def f3(x, fmt="{:.3f}"):
    return fmt.format(x) if x is not None else "-"


def within(name, rs):
    rs = [x for x in rs if x is not None]
    if not rs:
        return f"- {name}: no shapes"
    worst = max(rs, key=lambda x: abs(x - 1))
    hit = sum(abs(x - 1) <= FIDELITY for x in rs)
    geo = math.exp(sum(math.log(x) for x in rs) / len(rs))
    return (f"- {name}: within 3% on {hit} of {len(rs)} shapes; worst {worst:.3f}; range {min(rs):.3f} to "
            f"{max(rs):.3f}; geometric mean {geo:.3f}")


def kernel_names(text):
    out = []
    for part in (text or "?").split(" + "):
        part = part.strip()
        if part.endswith(")") and "(" in part:
            depth = 0
            for i in range(len(part) - 1, -1, -1):
                depth += {")": 1, "(": -1}.get(part[i], 0)
                if depth == 0:
                    part = part[:i]
                    break
        out.append(part.removeprefix("void ").split("<")[0])
    return " + ".join(out)


def same(a, b):
    bad = lambda s: not s or s.startswith("?")
    return "?" if bad(a) or bad(b) else ("yes" if a == b else "no")


def main():
    warm, twarm, rot, trot = lt0(sys.argv[1]), sys.argv[2], lt0(sys.argv[3]), sys.argv[4]
    twarm = {r["key"]: r for r in csv.DictReader(open(twarm))}
    trot = {r["key"]: r for r in csv.DictReader(open(trot))}
    rot2 = lt0(sys.argv[5]) if len(sys.argv) > 5 else {}
    trot2 = {r["key"]: r for r in csv.DictReader(open(sys.argv[6]))} if len(sys.argv) > 6 else {}
    cols = {n: [] for n in ("rot", "rot_kr", "rot_best", "rot_rep", "warm", "warm_kr", "warm_rep",
                            "rs_rot_warm", "pt_rot_warm", "run2", "pt_run2", "rot2",
                            "rot2_best")}
    counts = {"chosen": 0, "rep": 0, "rot_warm": 0, "rs_rot_warm": 0, "n": 0}
    diffs = []
    print("| shape | sets (MiB) | rocsweep lt#0 ms (K) | PyTorch cuBLASLt ms (K) | ratio | kr ratio | replica ratio "
          "| reuse MiB (rocsweep K, PyTorch K) | warm: rocsweep ms | warm: PyTorch ms | warm ratio | warm kr ratio "
          "| warm replica ratio | rotating / warm (rocsweep, PyTorch) | same kernels: rocsweep = replica, replica = PyTorch, "
          "rotating = warm | SM MHz rotating (rocsweep, PyTorch) | kernels (PyTorch, rotating) |")
    print("|" + "---|" * 17)
    for key in sorted(rot, key=lambda k: (short(k).split("dtype=")[1], *(int(p.split("=")[1]) for p in k.split(";")[:3]))):
        r, w, tr, tw = rot[key], warm.get(key), trot.get(key), twarm.get(key)
        if not tr:
            continue
        counts["n"] += 1
        m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
        set_mib = (m * k + k * n) * SIZE[r["dtype"]] / 2**20
        sets = int(tr.get("rot_sets") or 1)
        rs_ms, pt_ms = num(r, "median_ms"), num(tr, "torch_lt_ms")
        kr_ms, rep_ms = num(tr, "torch_lt_kr_ms"), num(tr, "rep_ms")
        rs_k = k_rule(num(r, "call_median_ms")) if num(r, "call_median_ms") else None
        pt_k = int(tr["torch_lt_k"]) if tr.get("torch_lt_k") else None
        x = {"rot": ratio(pt_ms, rs_ms), "rot_kr": ratio(kr_ms, rs_ms), "rot_rep": ratio(rep_ms, rs_ms)}
        x["rot_best"] = x["rot_kr"] if x["rot_kr"] is not None else x["rot"]
        wrs, wpt = num(w, "median_ms"), num(tw, "torch_lt_ms")
        x["warm"] = ratio(wpt, wrs)
        x["warm_kr"] = ratio(num(tw, "torch_lt_kr_ms"), wrs)
        x["warm_rep"] = ratio(num(tw, "rep_ms"), wrs)
        x["rs_rot_warm"], x["pt_rot_warm"] = ratio(rs_ms, wrs), ratio(pt_ms, wpt)
        x["run2"] = ratio(num(rot2.get(key), "median_ms"), rs_ms)
        t2 = trot2.get(key)
        x["pt_run2"] = ratio(num(t2, "torch_lt_ms"), pt_ms)
        x["rot2"] = ratio(num(t2, "torch_lt_ms"), num(rot2.get(key), "median_ms"))
        kr2 = ratio(num(t2, "torch_lt_kr_ms"), num(rot2.get(key), "median_ms"))
        x["rot2_best"] = kr2 if kr2 is not None else x["rot2"]
        for c in cols:
            cols[c].append(x[c])
        c1 = same(r.get("chosen", ""), tr.get("rep_chosen", ""))
        c2 = same(kernel_names(tr.get("rep_kernels")), kernel_names(tr.get("torch_lt_kernels")))
        c3 = same(kernel_names(tr.get("torch_lt_kernels")), kernel_names((tw or {}).get("torch_lt_kernels")))
        c4 = same(r.get("chosen", ""), (w or {}).get("chosen", ""))
        counts["chosen"] += c1 == "yes"
        counts["rep"] += c2 == "yes"
        counts["rot_warm"] += c3 == "yes"
        counts["rs_rot_warm"] += c4 == "yes"
        if c1 != "yes" or c2 != "yes" or c3 != "yes" or c4 != "yes":
            diffs.append(f"{short(key)}: rocsweep {r.get('chosen')} (warm {(w or {}).get('chosen')}), replica "
                         f"{tr.get('rep_chosen')}; PyTorch {kernel_names(tr.get('torch_lt_kernels'))}; replica "
                         f"{kernel_names(tr.get('rep_kernels'))}; warm PyTorch {kernel_names((tw or {}).get('torch_lt_kernels'))}")
        reuse = (f"{rs_k * set_mib:.0f}, {pt_k * set_mib:.0f}" if sets > 1 and rs_k and pt_k else "-")
        print(f"| {short(key)} | {sets} ({sets * set_mib:.0f}) | {f3(rs_ms, '{:.4f}')} ({rs_k}) | "
              f"{f3(pt_ms, '{:.4f}')} ({pt_k}) | {f3(x['rot'])} | {f3(x['rot_kr'])} | {f3(x['rot_rep'])} | {reuse} | "
              f"{f3(wrs, '{:.4f}')} | {f3(wpt, '{:.4f}')} | {f3(x['warm'])} | {f3(x['warm_kr'])} | {f3(x['warm_rep'])} | "
              f"{f3(x['rs_rot_warm'])}, {f3(x['pt_rot_warm'])} | {c1}, {c2}, {c3} | "
              f"{r.get('clock_mhz') or '-'}, {tr.get('torch_lt_clock_mhz') or '-'} | "
              f"{kernel_names(tr.get('torch_lt_kernels'))} |")
    print()
    print(within("rotating, PyTorch on cuBLASLt (its K) / rocsweep lt#0", cols["rot"]))
    print(within("rotating, PyTorch on cuBLASLt with rocsweep's K where the K differ (else its K) / rocsweep lt#0",
                 cols["rot_best"]))
    print(within("rotating, replica (rocsweep's call from Python, PyTorch's K) / rocsweep lt#0", cols["rot_rep"]))
    if trot2:
        print(within("rotating, second pair (run 2 of both sides), PyTorch on cuBLASLt (its K) / rocsweep lt#0", cols["rot2"]))
        print(within("rotating, second pair, PyTorch with rocsweep's K where the K differ / rocsweep lt#0", cols["rot2_best"]))
    print(within("warm, PyTorch on cuBLASLt (its K) / rocsweep lt#0", cols["warm"]))
    print(within("warm, PyTorch on cuBLASLt with rocsweep's K where the K differ (else its K) / rocsweep lt#0",
                 [a if a is not None else b for a, b in zip(cols["warm_kr"], cols["warm"])]))
    print(within("warm, replica / rocsweep lt#0", cols["warm_rep"]))
    rs = [x for x in cols["rs_rot_warm"] if x]
    ps = [x for x in cols["pt_rot_warm"] if x]
    if rs and ps:
        print(f"- rotating / warm: rocsweep {min(rs):.3f} to {max(rs):.3f}, PyTorch {min(ps):.3f} to {max(ps):.3f}")
    r2 = [x for x in cols["run2"] if x]
    if r2:
        worst = max(r2, key=lambda x: abs(x - 1))
        print(f"- run to run (rotating run 2 / run 1, lt#0): within 3% on {sum(abs(x - 1) <= FIDELITY for x in r2)} "
              f"of {len(r2)} shapes; largest move {abs(worst - 1) * 100:.1f}%")
    p2 = [x for x in cols["pt_run2"] if x]
    if p2:
        worst = max(p2, key=lambda x: abs(x - 1))
        print(f"- run to run (rotating run 2 / run 1, PyTorch on cuBLASLt): within 3% on "
              f"{sum(abs(x - 1) <= FIDELITY for x in p2)} of {len(p2)} shapes; largest move {abs(worst - 1) * 100:.1f}%")
    print(f"- kernels: rocsweep's `chosen` = the replica's first heuristic algorithm on {counts['chosen']} of "
          f"{counts['n']}; the replica's kernels = PyTorch's cuBLASLt kernels (by name) on {counts['rep']} of "
          f"{counts['n']}; PyTorch's kernels rotating = warm on {counts['rot_warm']} of {counts['n']}; rocsweep's "
          f"`chosen` rotating = warm on {counts['rs_rot_warm']} of {counts['n']}")
    for d in diffs:
        print(f"- differs: {d}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""rocsweep's best unit per shape next to PyTorch's pick, both launch-free (the headline) and per
call (launch included), then the same-algorithm check, as Markdown with the summary a reader
needs.

usage: side_by_side.py RUN_DIR TORCH.csv [RUN_DIR_2] > table.md

RUN_DIR_2 (optional) is a second run of the same sweep in the same device command: the table
then says how far the best time per shape (and lt#0's time) moved between the two runs.

"PyTorch's pick" is PyTorch with its defaults (torch_ms: cuDNN benchmark mode for conv, matmul
on PyTorch's default BLAS library for GEMM), timed with rocsweep's protocol (peer_times.py).
The fidelity check (same algorithm) compares rocsweep's lt#0 with PyTorch's matmul on cuBLASLt
with rocsweep's workspace (torch_lt_ms), and shows beside it PyTorch on cuBLASLt with rocsweep's
K (torch_lt_kr_ms), rocsweep's own cublasLtMatmul call made from Python and timed by
peer_times.py (rep_ms), and the earlier protocol (torch_lt_old_ms); where a TORCH.csv has no
torch_lt_ms it falls back to torch_ms and says so. Where TORCH.csv has them, two more tables:
the placement and timing-loop variants of the cuBLASLt pass, and the pristine pass (operands
placed as rocsweep places them), each against rocsweep's lt#0. Older TORCH.csv files (without the
new columns) still read.
"""
import csv
import math
import statistics
import sys

from lt_ctypes import key_of

TARGET = 0.98
FIDELITY = 0.03


def best_per_shape(run_dir):
    out = {}
    for r in csv.DictReader(open(f"{run_dir}/results.csv")):
        if r["status"] != "ok" or not r["median_ms"]:
            continue
        key = key_of(r)
        t, c = float(r["median_ms"]), float(r["call_median_ms"] or "nan")
        if key not in out or t < out[key][0]:
            out[key] = (t, c, r["solver"])
    return out


def first_heuristic(run_dir):
    """cuBLASLt's first heuristic algorithm per GEMM shape (solver lt#0-...): what PyTorch's
    matmul runs too when it prefers cuBLASLt (it asks the heuristic for one algorithm), so with
    the same workspace the two launch-free times should agree (the fidelity check)."""
    out = {}
    for r in csv.DictReader(open(f"{run_dir}/results.csv")):
        if r["op"] == "gemm" and r["status"] == "ok" and r["solver"].startswith("lt#0-") and r["median_ms"]:
            out[key_of(r)] = r
    return out


def spread(text):
    """(max - min) / median of a `;`-separated list of times, or None."""
    xs = [float(x) for x in (text or "").split(";") if x]
    if len(xs) < 2:
        return None
    return (max(xs) - min(xs)) / statistics.median(xs)


def summary(name, ratios):
    ratios = [x for x in ratios if not math.isnan(x)]
    if not ratios:
        return f"- {name}: no shapes"
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    hit = sum(x >= TARGET for x in ratios)
    return (f"- {name}: >= {TARGET}x PyTorch on {hit} of {len(ratios)} shapes; lowest {min(ratios):.3f}, "
            f"geometric mean {geo:.3f}")


def within(name, ratios):
    """The fidelity summary of PyTorch / rocsweep ratios: how many within 3%, the worst."""
    rs = [x for x in ratios if x is not None]
    if not rs:
        return f"- {name}: no shapes"
    worst = max(rs, key=lambda x: abs(x - 1))
    hit = sum(abs(x - 1) <= FIDELITY for x in rs)
    return f"- {name}: within 3% on {hit} of {len(rs)} shapes; worst {worst:.3f}; range {min(rs):.3f} to {max(rs):.3f}"


def fnum(tr, col):
    v = tr.get(col)
    try:
        return float(v) if v not in (None, "") else None
    except ValueError:
        return None


def kernel_names(text):
    """Kernel names without their parameter lists (torch.profiler gives whole signatures)."""
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
        out.append(part[:100] + ("..." if len(part) > 100 else ""))
    return " + ".join(out)


def short_of(key):
    return ";".join(p for p in key.split(";") if p.split("=")[0] in ("m", "n", "k", "dtype"))


def main():
    ours = best_per_shape(sys.argv[1])
    torch_rows = {r["key"]: r for r in csv.DictReader(open(sys.argv[2]))}
    again_dir = sys.argv[3] if len(sys.argv) > 3 else None
    again = best_per_shape(again_dir) if again_dir else {}
    print("| op | shape | rocsweep best (solver) | device ms | PyTorch's pick device ms | ratio | "
          "rocsweep per call ms | PyTorch's pick per call ms | per-call ratio |" + (" run 2 / run 1 |" if again else ""))
    print("|---|---|---|---|---|---|---|---|---|" + ("---|" if again else ""))
    dev, call, idle, old, moved = {}, {}, {}, {}, []
    for key, (t, c, solver) in sorted(ours.items()):
        tr = torch_rows.get(key)
        if tr is None:
            continue
        op = "conv2d" if key.startswith("direction") else "gemm"
        td, tc = float(tr["torch_ms"]), float(tr["torch_call_ms"])
        rd, rc = td / t, tc / c
        dev.setdefault(op, []).append(rd)
        call.setdefault(op, []).append(rc)
        if fnum(tr, "torch_idle_ms"):
            idle.setdefault(op, []).append(fnum(tr, "torch_idle_ms") / t)
        if fnum(tr, "torch_old_ms"):
            old.setdefault(op, []).append(fnum(tr, "torch_old_ms") / t)
        extra = ""
        if key in again:
            m = again[key][0] / t
            moved.append(m)
            extra = f" {m:.3f} |"
        short = ";".join(p for p in key.split(";") if not p.startswith(("direction", "layout", "dilation", "groups", "trans", "batch", "out_dtype")))
        print(f"| {op} | {short} | {solver} | {t:.4f} | {td:.4f} | {rd:.3f} | {c:.4f} | {tc:.4f} | {rc:.3f} |{extra}")
    print()
    for op in sorted(dev):
        print(summary(f"{op}, launch-free (both sides), against PyTorch's pick", dev[op]))
        print(summary(f"{op}, per call (both sides, launch included), against PyTorch's pick", call[op]))
        if old.get(op):
            print(summary(f"{op}, launch-free, against PyTorch's pick timed with the earlier protocol "
                          "(K from its per-call time, 20 replays back to back)", old[op]))
        if idle.get(op):
            print(summary(f"{op}, launch-free, against PyTorch's pick timed from an idle stream "
                          "(graph launch latency included)", idle[op]))
    if moved:
        worst = max(abs(m - 1) for m in moved)
        hit = sum(abs(m - 1) <= FIDELITY for m in moved)
        print(f"- run to run (run 2 / run 1, best time per shape): within 3% on {hit} of {len(moved)} shapes; "
              f"largest move {worst * 100:.1f}%")
    blas = sorted({r["torch_blas"] for r in torch_rows.values() if r.get("torch_blas")})
    if blas:
        print()
        print(f"PyTorch's pick for GEMM: torch.matmul with PyTorch's defaults (preferred BLAS library {', '.join(blas)}).")
    fid = first_heuristic(sys.argv[1])
    fid2 = first_heuristic(again_dir) if again_dir else {}
    pairs = [(k, r, torch_rows[k]) for k, r in sorted(fid.items()) if k in torch_rows]
    if not pairs:
        return
    have_lt = all(fnum(tr, "torch_lt_ms") is not None for _, _, tr in pairs)
    lt_blas = sorted({tr.get("torch_lt_blas") for _, _, tr in pairs if tr.get("torch_lt_blas")})
    print()
    if have_lt:
        print("Fidelity (same algorithm): cuBLASLt's first heuristic algorithm timed by rocsweep (`lt#0`, its "
              "median trial), against PyTorch's matmul on cuBLASLt (which runs the heuristic's first algorithm; "
              f"{', '.join(lt_blas)}), timed with rocsweep's protocol (peer_times.py: K by rocsweep's rule from "
              "the launch-free time, rocsweep's warm-up and samples per unit, trials as passes). Beside it: "
              "PyTorch on cuBLASLt with rocsweep's K for the unit (`kr`, where it differs), rocsweep's own "
              "cublasLtMatmul call made from Python and timed the same way (`replica`), and PyTorch on cuBLASLt "
              "timed with the earlier protocol (`old`). Kernels: `rocsweep = replica` compares rocsweep's "
              "`chosen` (algo id, tile, stages, split-K) with the replica's first heuristic algorithm; "
              "`replica = PyTorch` compares the kernels the two ran, by name (torch.profiler); `lt = default` "
              "PyTorch's cuBLASLt and default passes. SM MHz: NVML, the lower of before and after the samples, "
              "on both sides.")
    else:
        print("Fidelity (same algorithm): cuBLASLt's first heuristic algorithm timed by rocsweep (`lt#0`), "
              "launch-free, against PyTorch's matmul with its defaults (TORCH.csv has no cuBLASLt pass), "
              "timed launch-free (CUDA graph):")
    print()
    print("| shape | rocsweep lt#0 ms (trial spread) | PyTorch cuBLASLt ms (K) | ratio | kr ms (K) | kr ratio | "
          "replica ms | replica ratio | old ratio | rocsweep = replica | replica = PyTorch | lt = default | "
          "SM MHz (rocsweep, PyTorch, replica) | ratio at equal clocks |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    ratios, kr_ratios, rep_ratios, old_ratios, eq_ratios, best_of = [], [], [], [], [], []
    chosen_same = kern_same = lt_def_same = 0
    off = []
    rocs_spread, torch_spread, moved_lt = [], [], []
    for k, r, tr in pairs:
        t = float(r["median_ms"])
        lt = fnum(tr, "torch_lt_ms") if have_lt else float(tr["torch_ms"])
        ratio = lt / t
        ratios.append(ratio)
        kr = fnum(tr, "torch_lt_kr_ms")
        krk = tr.get("torch_lt_kr") or ""
        kr_ratio = (kr / t) if kr is not None else None
        rep = fnum(tr, "rep_ms")
        rep_ratio = (rep / t) if rep is not None else None
        oldv = fnum(tr, "torch_lt_old_ms")
        old_ratio = (oldv / t) if oldv is not None else None
        kr_ratios.append(kr_ratio if kr_ratio is not None else ratio)
        rep_ratios.append(rep_ratio)
        old_ratios.append(old_ratio)
        best_of.append(min((x for x in (ratio, kr_ratio) if x is not None), key=lambda x: abs(x - 1)))
        ch = r.get("chosen", "")
        rc = tr.get("rep_chosen", "")
        c_same = "?" if not ch or not rc else ("yes" if ch == rc else f"no ({ch} / {rc})")
        chosen_same += c_same == "yes"
        ka, kb, kc = tr.get("torch_kernels", ""), tr.get("torch_lt_kernels", ""), tr.get("rep_kernels", "")
        bad = lambda s: not s or s.startswith("?")
        k_same = "?" if bad(kb) or bad(kc) else ("yes" if kb == kc else "no")
        kern_same += k_same == "yes"
        d_same = "?" if bad(ka) or bad(kb) else ("yes" if ka == kb else "no")
        lt_def_same += d_same == "yes"
        clk_r, clk_t, clk_p = fnum(r, "clock_mhz"), fnum(tr, "torch_lt_clock_mhz"), fnum(tr, "rep_clock_mhz")
        eq = ratio * clk_t / clk_r if clk_r and clk_t else None
        eq_ratios.append(eq)
        sp = spread(r.get("trial_ms"))
        if sp is not None:
            rocs_spread.append(sp)
        st = spread(tr.get("torch_lt_trial_ms"))
        if st is not None:
            torch_spread.append(st)
        if k in fid2:
            moved_lt.append(float(fid2[k]["median_ms"]) / t)
        f = lambda v, d=4: "-" if v is None else f"{v:.{d}f}"
        clocks = ", ".join("?" if x is None else f"{x:.0f}" for x in (clk_r, clk_t, clk_p))
        lt_k = tr.get("torch_lt_k") or "?"
        print(f"| {short_of(k)} | {t:.4f} ({'-' if sp is None else f'{sp * 100:.1f}%'}) | {lt:.4f} ({lt_k}) | "
              f"{ratio:.3f} | {f(kr)}{f' ({krk})' if kr is not None else ''} | {f(kr_ratio, 3)} | {f(rep)} | "
              f"{f(rep_ratio, 3)} | {f(old_ratio, 3)} | {c_same} | {k_same} | {d_same} | {clocks} | {f(eq, 3)} |")
        if abs(ratio - 1) > FIDELITY:
            off.append((short_of(k), ratio, kr_ratio, rep_ratio, kb))
    n = len(pairs)
    print()
    ref_name = "PyTorch on cuBLASLt" if have_lt else "PyTorch's default"
    print(within(f"same algorithm ({ref_name} / rocsweep lt#0, PyTorch's K from its launch-free time)", ratios))
    if any(x is not None for x in rep_ratios):
        print(within("replica (rocsweep's cublasLtMatmul call from Python, timed by peer_times.py) / rocsweep lt#0",
                     rep_ratios))
        print(within("PyTorch on cuBLASLt / replica (same harness, same process)",
                     [p[2] and fnum(p[2], "torch_lt_ms") / fnum(p[2], "rep_ms") if fnum(p[2], "rep_ms") else None
                      for p in pairs]))
    if any(fnum(tr, "torch_lt_kr_ms") is not None for _, _, tr in pairs):
        print(within("PyTorch on cuBLASLt with rocsweep's K where it differs (else PyTorch's K) / rocsweep lt#0",
                     kr_ratios))
    if any(x is not None for x in eq_ratios):
        print(within("same algorithm at equal clocks (ratio x PyTorch's MHz / rocsweep's MHz; an estimate, exact "
                     "only for a compute-bound kernel)", eq_ratios))
    if any(x is not None for x in old_ratios):
        print(within("for comparison, PyTorch on cuBLASLt timed with the earlier protocol / rocsweep lt#0", old_ratios))
    if have_lt:
        print(within("for comparison, PyTorch's default pick / rocsweep lt#0",
                     [float(tr["torch_ms"]) / float(r["median_ms"]) for _, r, tr in pairs]))
        print(f"- kernels: rocsweep's `chosen` = the replica's first heuristic algorithm on {chosen_same} of {n}; "
              f"the replica's kernels = PyTorch's cuBLASLt kernels on {kern_same} of {n}; PyTorch's cuBLASLt "
              f"kernels = its default pass's on {lt_def_same} of {n}")
    for short, ratio, krr, rr, kern in off:
        extra = "".join(f"; {nm} {x:.3f}" for nm, x in (("kr", krr), ("replica", rr)) if x is not None)
        print(f"- outside 3%: {short}: {ratio:.3f}{extra}; PyTorch ran {kernel_names(kern)}")
    if rocs_spread:
        print(f"- rocsweep lt#0 trial spread ((max - min) / median of its {len(rocs_spread)} units' trials): "
              f"median {statistics.median(rocs_spread) * 100:.1f}%, largest {max(rocs_spread) * 100:.1f}%")
    if torch_spread:
        print(f"- PyTorch cuBLASLt trial spread: median {statistics.median(torch_spread) * 100:.1f}%, "
              f"largest {max(torch_spread) * 100:.1f}%")
    if moved_lt:
        worst = max(abs(m - 1) for m in moved_lt)
        hit = sum(abs(m - 1) <= FIDELITY for m in moved_lt)
        print(f"- run to run (run 2 / run 1, lt#0): within 3% on {hit} of {len(moved_lt)} shapes; largest move "
              f"{worst * 100:.1f}%")
    variants(pairs)
    pristine(pairs)


def pristine(pairs):
    """The pristine pass (peer_times.pristine_one): each shape in a fresh process whose first device
    memory is the shape's operands, from the driver's pool in a rocsweep unit's order."""
    if not any(fnum(tr, "torch_lt_pristine_ms") is not None for _, _, tr in pairs):
        return
    print()
    print("Operands placed as rocsweep places them (peer_times.py --pristine): one fresh process per shape, "
          "whose first device memory is the shape's workspace, A, B and C from the CUDA driver's default pool "
          "in a rocsweep unit's order (PyTorch's BLAS workspaces come after). Each / rocsweep lt#0: `rep` "
          "rocsweep's call in rocsweep's loop (K = rocsweep's), `torch` PyTorch's matmul on cuBLASLt on the "
          "same operands in peer_times' loop (PyTorch's K), `torch drv` the same in rocsweep's loop, "
          "`rep mirror` rocsweep's call in peer_times' loop; `B moved` rocsweep's call in rocsweep's loop with "
          "B copied to 6 other places in the same process (PyTorch's allocator and the pool alternately): "
          "lowest to highest; `torch_lt` PyTorch in the cuBLASLt pass (its own memory), for comparison.")
    print()
    print("| shape | rocsweep lt#0 ms | rep | torch | torch drv | rep mirror | B moved: ratio range | torch_lt | "
          "same output (rep, torch) | B address |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    cols = {c: [] for c in ("rep_pristine", "torch_lt_pristine", "torch_lt_pristine_drv", "rep_pristine_mirror")}
    spreads = []
    for k, r, tr in pairs:
        t = float(r["median_ms"])
        cells = []
        for c in cols:
            x = fnum(tr, f"{c}_ms")
            cols[c].append(x / t if x is not None else None)
            cells.append("-" if x is None else f"{x / t:.3f}")
        sp = [float(v) / t for v in (tr.get("pristine_spread_ms") or "").split(";") if v]
        if sp:
            spreads.append((min(sp), max(sp)))
        lt = fnum(tr, "torch_lt_ms")
        b = next((w.split("=", 1)[1] for w in (tr.get("pristine_addrs") or "").split() if w.startswith("b=")), "?")
        print(f"| {short_of(k)} | {t:.4f} | " + " | ".join(cells) + " | "
              + (f"{min(sp):.3f} to {max(sp):.3f}" if sp else "-") + f" | {'-' if lt is None else f'{lt / t:.3f}'} | "
              f"{tr.get('pristine_same_output') or '?'} | {b} |")
    print()
    print(within("same algorithm, operands placed as rocsweep's (PyTorch on cuBLASLt, pristine / rocsweep lt#0)",
                 cols["torch_lt_pristine"]))
    print(within("rocsweep's call and loop in a pristine Python process / rocsweep lt#0", cols["rep_pristine"]))
    print(within("PyTorch on cuBLASLt, pristine, in rocsweep's loop / rocsweep lt#0", cols["torch_lt_pristine_drv"]))
    print(within("rocsweep's call, pristine, in peer_times' loop / rocsweep lt#0", cols["rep_pristine_mirror"]))
    if spreads:
        widest = max(spreads, key=lambda x: x[1] - x[0])
        print(f"- B moved (rocsweep's call and loop, 6 other places of B per shape): widest range {widest[0]:.3f} to "
              f"{widest[1]:.3f} of rocsweep's time")


VARIANT_NAMES = {
    "torch_lt": "PyTorch's matmul, PyTorch's memory, peer_times' loop",
    "rep": "replica, PyTorch's memory, peer_times' loop",
    "torch_lt_pool": "PyTorch's matmul, pool memory, peer_times' loop",
    "rep_pool": "replica, pool memory, peer_times' loop",
    "rep_drv": "replica, PyTorch's memory, rocsweep's loop",
    "rep_drv_pool": "replica, pool memory, rocsweep's loop",
    "torch_lt_drv": "PyTorch's matmul, PyTorch's memory, rocsweep's loop",
    "torch_lt_drv_pool": "PyTorch's matmul, pool memory, rocsweep's loop",
}


def variants(pairs):
    """The cuBLASLt pass's placement and timer variants (peer_times.VARIANTS), each against
    rocsweep's lt#0: which of operand placement (PyTorch's caching allocator or the driver's pool,
    as rocsweep's) and timing loop (peer_times' Mirror or rocsweep's own through the driver API)
    moves the ratio."""
    names = list(VARIANT_NAMES)
    if not any(fnum(tr, f"{v}_ms") is not None for _, _, tr in pairs for v in names[2:]):
        return
    print()
    print("Placement and timing loop (cuBLASLt pass), each / rocsweep lt#0. `pool`: operands and workspace "
          "from the CUDA driver's default memory pool (cuMemAllocAsync, in a rocsweep unit's order), as "
          "rocsweep's cudarc allocates them, holding the same bits; else PyTorch's caching allocator. `drv`: "
          "rocsweep's own timing loop through the driver API (a non-blocking stream of its own, thread-local "
          "capture, K = rocsweep's K for its unit), else peer_times' Mirror (PyTorch's K). Names: "
          + "; ".join(f"`{v}` {d}" for v, d in VARIANT_NAMES.items()) + ".")
    print()
    print("| shape | rocsweep lt#0 ms | " + " | ".join(names) + " | drv K | configuration (replica) | "
          "B address (PyTorch's memory; pool) |")
    print("|---|---|" + "---|" * len(names) + "---|---|---|")
    cols = {v: [] for v in names}
    for k, r, tr in pairs:
        t = float(r["median_ms"])
        cells = []
        for v in names:
            x = fnum(tr, f"{v}_ms")
            cols[v].append(x / t if x is not None else None)
            cells.append("-" if x is None else f"{x / t:.3f}")
        b = lambda text: next((w.split("=", 1)[1] for w in (text or "").split() if w.startswith("b=")), "?")
        print(f"| {short_of(k)} | {t:.4f} | " + " | ".join(cells) + f" | {tr.get('drv_k') or '-'} | "
              f"{tr.get('rep_config') or '?'} | {b(tr.get('torch_addrs'))}; {b(tr.get('pool_addrs'))} |")
    print()
    for v in names:
        if any(x is not None for x in cols[v]):
            print(within(f"{v} ({VARIANT_NAMES[v]}) / rocsweep lt#0", cols[v]))
    same = [(tr.get("rep_kernels"), tr.get("rep_pool_kernels"), tr.get("torch_lt_kernels")) for _, _, tr in pairs]
    n = sum(1 for a, b, c in same if a and b and a == b == c)
    print(f"- kernels by name: replica on pool memory = replica = PyTorch's cuBLASLt on {n} of {len(same)}")
    for k, r, tr in pairs:
        la, lb, lc = tr.get("torch_lt_launches"), tr.get("rep_launches"), tr.get("rep_pool_launches")
        if la or lb or lc:
            same_l = "all three the same" if la == lb == lc else f"replica {lb}; replica on pool memory {lc}"
            print(f"- launches, {short_of(k)} (torch.profiler: kernel<<<grid,block>>>): PyTorch {la}; {same_l}")
    errs = [fnum(tr, "rep_pool_err") for _, _, tr in pairs] + [fnum(tr, "torch_lt_pool_err") for _, _, tr in pairs]
    errs = [e for e in errs if e is not None]
    if errs:
        print(f"- outputs on pool memory against torch.matmul on PyTorch's: largest relative difference {max(errs):.3e}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""rocsweep's graph-upload timing (41f8d8c: the sample's graph uploaded and replayed once, no warm
replay) against the warm-replay protocol before it, as Markdown (reports/h200/timing/gemm-fidelity-5).

usage: protocol_table.py CMD1 CMD2 OLD_CMD > tables.md

CMD1: the first command's files (gemm-fidelity-5/device-1.sh): run-warm/, run-rot/, run-warm2/,
  run-rot2/ (rocsweep, new protocol), torch-warm.csv and torch-rot.csv (peer_times.py
  --graph-protocol upload), torch-warm-oldwarm.csv (warm), torch-warm-held.csv and
  torch-rot-held.csv (held), bare-*.log (lt_bare.py), libraries.txt.
CMD2: the second command's (device-2.sh): new-warm/, old-warm/, new-warm2/, old-warm2/, new-rot/,
  old-rot/ (rocsweep of 41f8d8c and of its parent, interleaved).
OLD_CMD: gemm-fidelity-4's cmd1/ (run-warm/, run-rot/, run-rot2/, torch-warm.csv, torch-rot.csv:
  the old protocol on both sides).

Tables: (a) rotating / warm per shape; (b) rocsweep's warm times, new protocol against the old
(gemm-fidelity-4's run, and the parent commit's binary in the same command); (c) PyTorch on cuBLASLt /
rocsweep lt#0 like for like (PyTorch with rocsweep's K where the two K differ, else its own), by
PyTorch's protocol; (d) lt_bare.py per library copy.
"""
import csv
import glob
import json
import math
import os
import sys

from lt_ctypes import is_lt0, k_rule, key_of

FIDELITY = 0.03
SMALL = {(512, 1024, 512, "bf16"), (1000, 1001, 999, "bf16"), (1000, 1001, 999, "f32")}


def shape(key):
    d = dict(p.split("=") for p in key.split(";"))
    return f"{d['m']}x{d['n']}x{d['k']} {d['dtype']}"


def run(d):
    p = f"{d}/results.csv"
    if not os.path.exists(p):
        return {}
    return {key_of(r, "gemm"): r for r in csv.DictReader(open(p)) if r["op"] == "gemm" and is_lt0(r["solver"])}


def torch_csv(p):
    return {r["key"]: r for r in csv.DictReader(open(p))} if os.path.exists(p) else {}


def num(row, col):
    try:
        v = (row or {}).get(col)
        return float(v) if v not in (None, "") else None
    except ValueError:
        return None


def ms(run_rows, key):
    return num(run_rows.get(key), "median_ms")


def div(a, b):
    return a / b if a is not None and b else None


def f3(x):
    return f"{x:.3f}" if x is not None else "-"


def k_of(run_rows, key):
    c = num(run_rows.get(key), "call_median_ms")
    return k_rule(c) if c else None


def like(t, key):
    """PyTorch on cuBLASLt with rocsweep's K where the two differ (torch_lt_kr_ms), else its own K."""
    row = t.get(key)
    return num(row, "torch_lt_kr_ms") or num(row, "torch_lt_ms")


def within(name, rs):
    rs = [x for x in rs if x is not None]
    if not rs:
        return f"- {name}: no shapes"
    worst = max(rs, key=lambda x: abs(x - 1))
    geo = math.exp(sum(math.log(x) for x in rs) / len(rs))
    return (f"- {name}: within 3% on {sum(abs(x - 1) <= FIDELITY for x in rs)} of {len(rs)}; worst {worst:.3f}; "
            f"geometric mean {geo:.3f}")


def main():
    c1, c2, old = sys.argv[1:4]
    w, r, w2, r2 = (run(f"{c1}/{d}") for d in ("run-warm", "run-rot", "run-warm2", "run-rot2"))
    nw, ow, nw2, ow2, nr, orot = (run(f"{c2}/{d}") for d in ("new-warm", "old-warm", "new-warm2", "old-warm2",
                                                             "new-rot", "old-rot"))
    fw, fr = run(f"{old}/run-warm"), run(f"{old}/run-rot")
    tw, tr = torch_csv(f"{c1}/torch-warm.csv"), torch_csv(f"{c1}/torch-rot.csv")
    tow, thw, thr = (torch_csv(f"{c1}/{n}.csv") for n in ("torch-warm-oldwarm", "torch-warm-held", "torch-rot-held"))
    ftw, ftr = torch_csv(f"{old}/torch-warm.csv"), torch_csv(f"{old}/torch-rot.csv")
    keys = list(w)

    print("## (a) rotating_mib = 1024 / warm, per shape\n")
    print("rocsweep lt#0 (median trial / median trial); `*` marks the small shapes whose K sets fit in L2. "
          "PyTorch on cuBLASLt, its own K, same command.\n")
    print("| shape | new: cmd 1 | new: cmd 1, run 2 | new: cmd 2 | old binary: cmd 2 | gemm-fidelity-4 (old) "
          "| PyTorch upload | PyTorch held | PyTorch, gemm-fidelity-4 (warm replay) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for k in keys:
        d = dict(p.split("=") for p in k.split(";"))
        star = "*" if (int(d["m"]), int(d["n"]), int(d["k"]), d["dtype"]) in SMALL else ""
        print(f"| {shape(k)}{star} | {f3(div(ms(r, k), ms(w, k)))} | {f3(div(ms(r2, k), ms(w2, k)))} | "
              f"{f3(div(ms(nr, k), ms(nw, k)))} | {f3(div(ms(orot, k), ms(ow, k)))} | {f3(div(ms(fr, k), ms(fw, k)))} | "
              f"{f3(div(num(tr.get(k), 'torch_lt_ms'), num(tw.get(k), 'torch_lt_ms')))} | "
              f"{f3(div(num(thr.get(k), 'torch_lt_ms'), num(thw.get(k), 'torch_lt_ms')))} | "
              f"{f3(div(num(ftr.get(k), 'torch_lt_ms'), num(ftw.get(k), 'torch_lt_ms')))} |")

    print("\n## (b) rocsweep warm: new protocol / old protocol\n")
    print("`new / gemm-fidelity-4`: this session's runs against gemm-fidelity-4's warm run (another session, old "
          "binary). `same command`: device-2.sh, the new binary and its parent (old protocol) interleaved. PyTorch "
          "columns: the same change on PyTorch's side in one command (torch_lt_ms, its own K): upload / warm "
          "replay, and held (launch-free, no warm replay) / warm replay.\n")
    print("| shape | K (new) | new ms | gemm-fidelity-4 ms | new / gf4 | run 2 / gf4 | same command, pair 1 | pair 2 "
          "| PyTorch upload / warm | PyTorch held / warm | us per graph, PyTorch upload - warm |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    cols = {"gf4": [], "gf4_2": [], "p1": [], "p2": []}
    for k in keys:
        x = {"gf4": div(ms(w, k), ms(fw, k)), "gf4_2": div(ms(w2, k), ms(fw, k)),
             "p1": div(ms(nw, k), ms(ow, k)), "p2": div(ms(nw2, k), ms(ow2, k))}
        for c in cols:
            cols[c].append(x[c])
        up, wr = num(tw.get(k), "torch_lt_ms"), num(tow.get(k), "torch_lt_ms")
        kk = num(tw.get(k), "torch_lt_k")
        lat = (up - wr) * kk * 1e3 if up and wr and kk else None
        print(f"| {shape(k)} | {k_of(w, k)} | {ms(w, k):.5f} | {ms(fw, k):.5f} | {f3(x['gf4'])} | {f3(x['gf4_2'])} | "
              f"{f3(x['p1'])} | {f3(x['p2'])} | {f3(div(up, wr))} | "
              f"{f3(div(num(thw.get(k), 'torch_lt_ms'), wr))} | {f'{lat:.1f}' if lat is not None else '-'} |")
    print()
    print(within("new / gemm-fidelity-4 (run 1)", cols["gf4"]))
    print(within("new / gemm-fidelity-4 (run 2)", cols["gf4_2"]))
    print(within("new / old, same command, pair 1", cols["p1"]))
    print(within("new / old, same command, pair 2", cols["p2"]))

    print("\n## (c) PyTorch on cuBLASLt / rocsweep lt#0, like for like\n")
    print("PyTorch with rocsweep's K where they differ (`kr`), else its own; rocsweep: this session's cmd 1 "
          "(new protocol). `upload` is rocsweep's protocol mirrored (the default of peer_times.py now); `held` "
          "the diagnostic (uploaded, timed replay queued behind a spin kernel); `warm` PyTorch with a warm "
          "replay. gemm-fidelity-4: both sides with the warm replay.\n")
    print("| shape | K (warm; rotating) | warm: upload, own K | warm: upload | warm: held | warm: warm replay "
          "| rotating: upload, own K | rotating: upload | rotating: held | gf4 warm | gf4 rotating |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    cc = {n: [] for n in ("wu_own", "wu", "wh", "wo", "ru_own", "ru", "rh", "fw", "fr")}
    for k in keys:
        rw, rr = ms(w, k), ms(r, k)
        x = {"wu_own": div(num(tw.get(k), "torch_lt_ms"), rw), "wu": div(like(tw, k), rw), "wh": div(like(thw, k), rw),
             "wo": div(like(tow, k), rw), "ru_own": div(num(tr.get(k), "torch_lt_ms"), rr), "ru": div(like(tr, k), rr),
             "rh": div(like(thr, k), rr), "fw": div(like(ftw, k), ms(fw, k)), "fr": div(like(ftr, k), ms(fr, k))}
        for c in cc:
            cc[c].append(x[c])
        kw = f"{tw.get(k, {}).get('torch_lt_k')}/{k_of(w, k)}"
        kr = f"{tr.get(k, {}).get('torch_lt_k')}/{k_of(r, k)}"
        print(f"| {shape(k)} | {kw}; {kr} | " + " | ".join(f3(x[c]) for c in cc) + " |")
    print()
    names = {"wu_own": "warm, upload, PyTorch's K", "wu": "warm, upload, like for like",
             "wh": "warm, held, like for like", "wo": "warm, warm replay (PyTorch) against rocsweep new",
             "ru_own": "rotating, upload, PyTorch's K", "ru": "rotating, upload, like for like",
             "rh": "rotating, held, like for like", "fw": "gemm-fidelity-4 warm, like for like",
             "fr": "gemm-fidelity-4 rotating, like for like"}
    for c, n in names.items():
        print(within(n, cc[c]))

    print("\n## (d) lt_bare.py: rocsweep's call and loop from Python, per cuBLASLt copy\n")
    libs = open(f"{c1}/libraries.txt").read() if os.path.exists(f"{c1}/libraries.txt") else ""
    print("```\n" + "\n".join(line for line in libs.splitlines() if line[:1] in "0123456789abcdef" and "  /" in line)
          + "\n```\n")
    rows = {}
    for p in sorted(glob.glob(f"{c1}/bare-*.log")):
        rep = p.rsplit("-", 1)[1].split(".")[0]
        for line in open(p):
            if line.startswith("BARE "):
                x = json.loads(line[5:])
                rows.setdefault(x["key"], {}).setdefault(x["mode"], []).append((rep, x))
    modes = ["bare+sys", "bare+wheel", "torch-cuda+sys", "torch-cuda+wheel"]
    print("Per shape: each mode's two processes (1; 2), time / rocsweep lt#0 (cmd 1 warm), with rocsweep's K "
          "and with K = 64.\n")
    print("| shape | rocsweep ms (K) | " + " | ".join(f"{m}: K rocsweep's | {m}: K 64" for m in modes) + " |")
    print("|---|---|" + "---|---|" * len(modes))
    for key, by in rows.items():
        t = ms(w, key)
        cells = []
        for m in modes:
            xs = sorted(by.get(m, []), key=lambda q: q[0])
            cells.append("; ".join(f3(div(float(x["ms"]), t)) for _, x in xs))
            cells.append("; ".join(f3(div(float(x["ms64"]), t)) for _, x in xs))
        print(f"| {shape(key)} | {t:.5f} ({k_of(w, key)}) | " + " | ".join(cells) + " |")
    print()
    for key, by in rows.items():
        for k_col in ("ms", "ms64"):
            s = [float(x[k_col]) for m in ("bare+sys", "torch-cuda+sys") for _, x in by.get(m, [])]
            h = [float(x[k_col]) for m in ("bare+wheel", "torch-cuda+wheel") for _, x in by.get(m, [])]
            if s and h:
                print(f"- {shape(key)}, {'rocsweep K' if k_col == 'ms' else 'K = 64'}: wheel copy / system copy "
                      f"(mean of 4 processes each) {sum(h) / len(h) / (sum(s) / len(s)):.3f}")


if __name__ == "__main__":
    main()

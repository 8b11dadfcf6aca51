#!/usr/bin/env python3
"""Split a committed sweep into K sweeps by shape, so that K GPUs of one host can each run a
share of it with both layers (`backend = ["cuda", "torch"]`) in one run of their own.

usage: split_sweep.py SWEEP.toml K OUT_DIR [BACKEND,BACKEND]

Every axis except `solver` and every zip group are expanded into rows (the product of the axes
and zip groups, less the rows the sweep's `drop` rules remove); the rows are sorted by their
size and dealt out to the K parts in turn, so that each part gets large and small cases alike.
Each part is the same sweep (name, op, timing, limits, verify, env) whose rows form one zip
group: it runs exactly the cases of its rows, with every solver. A case's two layers are in the
same part, so they run on the same GPU in the same run. Writes OUT_DIR/<name>-<i>.toml.
"""
import itertools
import math
import os
import sys
import tomllib


def value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(value(x) for x in v) + "]"
    raise SystemExit(f"split_sweep: cannot write {v!r}")


def table(name, d):
    lines = [f"[{name}]"]
    for k, v in d.items():
        if isinstance(v, dict):
            continue
        lines.append(f"{k} = {value(v)}")
    return "\n".join(lines)


def listed(v):
    return v if isinstance(v, list) else [v]


def rows(sweep):
    # One list of choices per axis ({axis: value}) and per zip group ({key: value, ...}).
    groups = [[{k: x} for x in listed(v)] for k, v in sweep.get("axes", {}).items() if k != "solver"]
    for z in sweep.get("zip", {}).values():
        n = len(next(iter(z.values())))
        groups.append([{k: z[k][i] for k in z} for i in range(n)])
    out = []
    for combo in itertools.product(*groups):
        row = {}
        for part in combo:
            row.update(part)
        # The sweep's drop rules (`compute == 'tf32' and dtype != 'f32'`) read as Python here.
        if any(eval(rule, {}, dict(row)) for rule in sweep.get("drop", [])):
            continue
        out.append(row)
    return out


def size(row):
    keys = ("m", "n", "k", "c_in", "c_out", "h", "w", "kernel")
    return math.prod(float(row[k]) for k in keys if isinstance(row.get(k), (int, float)))


def main():
    path, k, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    backends = sys.argv[4].split(",") if len(sys.argv) > 4 else ["cuda", "torch"]
    with open(path, "rb") as f:
        sweep = tomllib.load(f)
    all_rows = sorted(rows(sweep), key=size, reverse=True)
    parts = [all_rows[i::k] for i in range(k)]
    keys = list(all_rows[0].keys())
    os.makedirs(out, exist_ok=True)
    solver = sweep.get("axes", {}).get("solver", "all")
    for i, part in enumerate(parts, 1):
        if not part:
            continue
        top = {k2: v for k2, v in sweep.items() if not isinstance(v, dict) and k2 != "drop"}
        top["name"] = f"{sweep['name']}-part{i}of{k}"
        top["backend"] = backends
        head = [f"# Part {i} of {k} of {path} ({len(part)} of {len(all_rows)} cases), by scripts/device/split_sweep.py"]
        head += [f"{k2} = {value(v)}" for k2, v in top.items()]
        text = ["\n".join(head)]
        text.append(table("axes", {"solver": solver}))
        text.append(table("zip.part", {key: [r[key] for r in part] for key in keys}))
        for name, d in sweep.items():
            if isinstance(d, dict) and name not in ("axes", "zip"):
                text.append(table(name, d))
                for sub, sd in d.items():
                    if isinstance(sd, dict):
                        text.append(table(f"{name}.{sub}", sd))
        with open(os.path.join(out, f"{sweep['name']}-{i}.toml"), "w") as f:
            f.write("\n\n".join(text) + "\n")
        print(f"{out}/{sweep['name']}-{i}.toml: {len(part)} cases")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The re-measure of issue 29's search-superset check: the shapes where the torch layer read
faster than the library's best in a run (ratio below 1.00, beyond the trial spread or within it),
as a sweep of their own, to be run again over both layers with more trials.

usage: confirm_sweep.py PART.toml RUN OUT.toml

PART.toml is a part written by split_sweep.py (its cases are the rows of one zip group) and RUN
the run of it with both layers. OUT.toml is PART.toml with only the rows of the shapes that read
below 1.00; exit 0 when it was written, 3 when no shape read below (nothing written), 1 when
shapes read below but none matches a row of PART.toml.

Why: an H100's time for the same call moves by up to 0.7 % from one moment to the next (the
same torch.mm on the same buffers read 21.16 ms, then 21.29 ms, in one process; rocsweep's own
lt#0 read 21.16 in one trial and 21.28 in the other: reports/h100x4-confirm/place). A ratio of 0.993
from two trials per layer can be that state, not a path the library search misses. A miss is
one that reproduces in a re-measure whose trials alternate the layers' order.
"""
import os
import sys
import tomllib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from layer_ratio import pairs, split  # noqa: E402
from split_sweep import table, value  # noqa: E402


def same(row_value, csv_value):
    if isinstance(row_value, bool):
        return str(row_value).lower() == csv_value.lower()
    if isinstance(row_value, (int, float)):
        try:
            return float(csv_value) == float(row_value)
        except ValueError:
            return False
    return str(row_value) == csv_value


def main():
    part, run, out = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(part, "rb") as f:
        sweep = tomllib.load(f)
    zips = sweep.get("zip", {})
    if len(zips) != 1:
        raise SystemExit(f"confirm_sweep: {part} has {len(zips)} zip groups, expected 1 (a split_sweep.py part)")
    (zname, z), = zips.items()
    keys = list(z)
    flagged = [p[1][3] for p in pairs(*split([run])) if p[3] < 1.0]
    rows = [{k: z[k][i] for k in keys} for i in range(len(z[keys[0]]))]
    keep = [r for r in rows if any(all(same(r[k], f.get(k, "")) for k in keys) for f in flagged)]
    if flagged and not keep:
        raise SystemExit(f"confirm_sweep: {len(flagged)} shape(s) of {run} read below 1.00, but none matches a "
                         f"row of {part} on its keys {keys} (a key that results.csv has no column for?)")
    if not keep:
        print(f"{run}: no shape below 1.00, nothing to confirm")
        sys.exit(3)
    top = {k: v for k, v in sweep.items() if not isinstance(v, dict)}
    top["name"] = f"{sweep['name']}-confirm"
    text = [f"# The shapes of {part} that read below 1.00 in {run} ({len(keep)} of {len(rows)}), "
            "by scripts/device/confirm_sweep.py"]
    text.append("\n".join(f"{k} = {value(v)}" for k, v in top.items()))
    for name, d in sweep.items():
        if not isinstance(d, dict):
            continue
        if name == "zip":
            text.append(table(f"zip.{zname}", {k: [r[k] for r in keep] for k in keys}))
            continue
        text.append(table(name, d))
        for sub, sd in d.items():
            if isinstance(sd, dict):
                text.append(table(f"{name}.{sub}", sd))
    with open(out, "w") as f:
        f.write("\n\n".join(text) + "\n")
    print(f"{out}: {len(keep)} of {len(rows)} shapes to confirm")


if __name__ == "__main__":
    main()

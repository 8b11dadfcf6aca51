#!/usr/bin/env bash
# Issue 7's multi-GPU target on a 2 x H200 host: sweeps/h200-conv.toml on one GPU
# (`--devices 0`), then on both (`--devices 0,1`), from the repository root with the release
# binary carried in. Stage 1 runs the one-GPU sweep, stage 2 the two-GPU sweep (one device
# command may run at most 10 minutes); stage 2 then compares the two: wall time from each run's
# manifest, and the set of (unit id, status) pairs. Everything lands in $OUT/two-gpus.tgz.
set -u
B=target/carry/rocsweep
stage=${1:-1}
mkdir -p "$OUT/two"
if [ "$stage" = 1 ]; then
  nvidia-smi -L > "$OUT/two/gpus.txt" 2>&1
  timeout 560 $B run sweeps/h200-conv.toml --devices 0 --out "$OUT/two/one-gpu" --quiet --no-report \
    > "$OUT/two/one-gpu.log" 2>&1
  echo "one-gpu rc=$?" >> "$OUT/two/rc.txt"
  # Kept on the machine for stage 2 (the same warm machine).
  mkdir -p /tmp/keep && cp -r "$OUT/two/one-gpu" /tmp/keep/
else
  timeout 560 $B run sweeps/h200-conv.toml --devices 0,1 --out "$OUT/two/two-gpus" --quiet --no-report \
    > "$OUT/two/two-gpus.log" 2>&1
  echo "two-gpus rc=$?" >> "$OUT/two/rc.txt"
  cp -r /tmp/keep/one-gpu "$OUT/two/" 2>/dev/null
  python3 - "$OUT/two" <<'PY' | tee "$OUT/two/compare.txt"
import csv, json, sys, datetime
root = sys.argv[1]
def load(name):
    m = json.load(open(f"{root}/{name}/manifest.json"))
    t = lambda s: datetime.datetime.fromisoformat(s[:26] + s[-6:] if "." in s else s)
    wall = (t(m["finished_at"]) - t(m["started_at"])).total_seconds()
    rows = list(csv.DictReader(open(f"{root}/{name}/results.csv")))
    return wall, {(r["unit_id"], r["status"]) for r in rows}, rows
w1, s1, r1 = load("one-gpu")
w2, s2, r2 = load("two-gpus")
dev = sorted({r["device_index"] for r in r2})
print(f"one GPU: {w1:.1f} s, {len(r1)} units; two GPUs: {w2:.1f} s, {len(r2)} units, device_index values {dev}")
print(f"ratio two/one = {w2 / w1:.3f} (target <= 0.6)")
print(f"same (unit id, status) set: {s1 == s2}; only in one-gpu: {len(s1 - s2)}, only in two-gpus: {len(s2 - s1)}")
for u in sorted(s1 ^ s2)[:20]:
    print("  differs:", u)
PY
fi
rm -f "$OUT"/two/*/run.lock
tar -C "$OUT" -czf "$OUT/two-gpus-$stage.tgz" two && rm -rf "$OUT/two"

#!/usr/bin/env bash
# The H200 proof run (issue 4), run on the device machine from the repository root with the
# release binary carried in (`target/release/rocsweep`). Two stages, because one device command
# may run at most 10 minutes; run them back to back on the same machine:
#   stage a: h200-conv and the PyTorch peer timings (GEMM and conv shapes)
#   stage b: h200-gemm, h200-graph, the probes, the never-ending kernel
# Every run directory is packed into $OUT/runs.tgz; reports are drawn afterwards with
# `rocsweep report` (no device needed).
set -u
B=target/release/rocsweep
stage=${1:-a}
mkdir -p "$OUT/runs"
run() { # name, timeout
  timeout "$2" $B run "sweeps/$1.toml" --out "$OUT/runs/$1" --quiet --no-report > "$OUT/runs/$1.log" 2>&1
  echo "$1 rc=$?" >> "$OUT/runs/rc.txt"
}
if [ "$stage" = a ]; then
  nvidia-smi > "$OUT/runs/nvidia-smi.txt" 2>&1
  python3 benches/peer/torch_peer.py "$OUT/runs/torch_peer.csv" > "$OUT/runs/torch_peer.log" 2>&1
  echo "torch_peer rc=$?" >> "$OUT/runs/rc.txt"
  run h200-conv 480
  # A unit cut off by the timeout above is `interrupted`; finish it.
  $B run --resume "$OUT/runs/h200-conv" --retry-interrupted --quiet --no-report >> "$OUT/runs/h200-conv.log" 2>&1
  echo "h200-conv resume rc=$?" >> "$OUT/runs/rc.txt"
else
  run h200-gemm 400
  for s in h200-graph h200-probe-rng h200-probe-copy h200-probe-cast; do run $s 120; done
  # The watchdog on real hardware: a kernel that never ends, then the GPU must serve the next units.
  cat > /tmp/hang.toml <<'TOML'
name = "h200-hang-kernel"
op = "copy"
backend = "cuda"
[axes]
bytes = [4096, 8192, 16384, 32768]
[limits]
run = 3
grace = 2
TOML
  ROCSWEEP_TEST_FAULT="bytes=8192:gpuhang@run" $B run /tmp/hang.toml --out "$OUT/runs/h200-hang-kernel" --quiet --no-report > "$OUT/runs/hang.log" 2>&1
  echo "hang rc=$?" >> "$OUT/runs/rc.txt"
fi
cat "$OUT/runs/rc.txt"
for d in "$OUT"/runs/h200-*/; do
  python3 - "$d" <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1] + "/results.csv")))
print(sys.argv[1].rstrip("/").split("/")[-1], len(rows), dict(collections.Counter(r["status"] for r in rows)))
PY
done
rm -f "$OUT"/runs/*/run.lock
tar czf "$OUT/runs.tgz" -C "$OUT" runs && rm -rf "$OUT/runs"

#!/usr/bin/env bash
# Issue 12's whole H200 check in one device command: scripts/device/h200-timing.sh for the GEMM
# shapes (twice, with selftest) and for ResNet-50's convolutions in f16 and in f32, then one
# tarball of everything ($OUT/all.tgz) and the summaries on stdout.
# Since units run 3 trials by default and peer_times.py repeats rocsweep's protocol (trials
# included), the GEMM part takes about 5 minutes on its own: scripts/device/h200-gemm-fidelity.sh
# runs it in a command of its own, and this script no longer fits one 10-minute command.
set -u
PART=gemm timeout 200 bash scripts/device/h200-timing.sh > /dev/null 2>&1
for d in f16 f32; do PART=conv DTYPE=$d timeout 170 bash scripts/device/h200-timing.sh > /dev/null 2>&1; done
for p in gemm conv-f16 conv-f32; do
  echo "== $p"; tr '\n' ' ' < "$OUT/$p/stage.log"; echo; grep -E "^- " "$OUT/$p/table.md"
  rm -rf "$OUT"/$p/*/workers
done
cd "$OUT" && tar czf all.tgz gemm conv-f16 conv-f32 && rm -rf gemm conv-f16 conv-f32

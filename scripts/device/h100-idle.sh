#!/usr/bin/env bash
# Issue 29 point 6: is the same GEMM faster in the first second after the card was idle?
# scripts/device/idle_probe.py on every GPU of the host at once, nvidia-smi sampling all along.
set -u
R="$OUT/idle"; mkdir -p "$R"
nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,temperature.memory,clocks_event_reasons.active \
  --format=csv -lms 100 > "$R/smi.csv" 2>&1 &
SMI=$!
N=$(nvidia-smi -L | grep -c '^GPU')
for g in $(seq 0 $((N - 1))); do
  CUDA_VISIBLE_DEVICES=$g timeout 200 python3 scripts/device/idle_probe.py 2.0 > "$R/gpu$g.txt" 2>&1 &
done
wait $(jobs -p | grep -v "^$SMI$")
kill $SMI
for g in $(seq 0 $((N - 1))); do echo "== gpu$g"; cut -c1-150 "$R/gpu$g.txt"; done
tar czf "$OUT/idle.tgz" -C "$OUT" idle && rm -rf "$R"

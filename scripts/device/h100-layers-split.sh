#!/usr/bin/env bash
# Issue 29 point 6 over every shape of the committed GEMM and conv sweeps, both layers in one
# run per GPU: each sweep is split by shape into one part per GPU (scripts/device/split_sweep.py),
# and GPU i runs part i of each sweep named in SWEEPS, one after the other, over cuda + torch
# (--trials 2), with CUDA_VISIBLE_DEVICES=i. A case's library rows and torch rows are in the same
# run on the same GPU. Then the per-shape ratios of each sweep over all its parts
# (scripts/layer_ratio.py --each). The binary travels xz-compressed as target/carry/split/rocsweep.xz.
#   SWEEPS="h200-gemm h200-resnet50-conv" bash scripts/device/h100-layers-split.sh
# SEEDS=1 first runs the seeds' sweeps (sweeps/seed-00*.toml) over cuda + torch, one run each with
# its report and which-layer table, dealt out over the GPUs (seed i on GPU i mod G), so that the
# seeds and the committed sweeps come from one device command (issue 29 point 7).
# CPU references above verify.max_reference_gflop=10 are left to the device reference (cuda)
# or none (torch): the timings are what this measures, and 8192^3 references on the CPU would
# take the whole command. Runs cut by the deadline keep what they finished (resume them later).
# Then the re-measure: on each GPU, the shapes of its parts that read below 1.00 (beyond the
# trial spread or within it) run again over both layers with 4 trials, whose order of layers
# alternates (scripts/device/confirm_sweep.py; until CONFIRM_DEADLINE), and their ratios are
# <sweep>-confirm-ratio.txt: a miss is a shape below beyond the spread there too.
set -u
SWEEPS=${SWEEPS:-h200-gemm h200-conv h200-resnet50-conv}
# The whole command must end within the device's 600 s: the main stage until DEADLINE, the
# re-measure until CONFIRM_DEADLINE, then the ratios and the archive.
DEADLINE=${DEADLINE:-470}
CONFIRM_DEADLINE=${CONFIRM_DEADLINE:-565}
R="$OUT/split"
mkdir -p "$R"
python3 -c "import lzma;open('/tmp/rs','wb').write(lzma.open('target/carry/split/rocsweep.xz').read())" && chmod +x /tmp/rs
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
G=$(nvidia-smi -L | wc -l)
export ROCSWEEP_PYTHON=$(command -v python3)
for s in $SWEEPS; do python3 scripts/device/split_sweep.py "sweeps/$s.toml" "$G" "$R/sweeps" >> "$R/stage.log"; done
SEED_SWEEPS=(seed-000-randn-like seed-001-to-device seed-002-bf16-to-f32 seed-003-reduce-overhead seed-004-conv2d-benchmark)
for i in $(seq 1 "$G"); do
  (
    if [ "${SEEDS:-0}" = 1 ]; then
      for j in "${!SEED_SWEEPS[@]}"; do
        [ $((j % G)) -eq $((i - 1)) ] || continue
        s=${SEED_SWEEPS[$j]}
        extra=()
        [ "$s" = seed-004-conv2d-benchmark ] && extra=(--axis solver=engine_heuristic,torch-benchmark)
        CUDA_VISIBLE_DEVICES=$((i - 1)) timeout 120 /tmp/rs run --quiet --backend cuda,torch --trials 1 \
          "${extra[@]}" "sweeps/$s.toml" --out "$R/$s" > "$R/$s.log" 2>&1
        echo "gpu $i: $s rc $? at ${SECONDS}s" >> "$R/stage.log"
      done
    fi
    for s in $SWEEPS; do
      left=$((DEADLINE - SECONDS))
      [ "$left" -gt 20 ] || { echo "gpu $i: $s skipped at ${SECONDS}s" >> "$R/stage.log"; continue; }
      CUDA_VISIBLE_DEVICES=$((i - 1)) timeout "$left" /tmp/rs run --quiet --no-report --trials 2 \
        --set verify.max_reference_gflop=10 "$R/sweeps/$s-$i.toml" --out "$R/$s-$i" > "$R/$s-$i.log" 2>&1
      echo "gpu $i: $s rc $? at ${SECONDS}s" >> "$R/stage.log"
    done
  ) &
done
wait
for i in $(seq 1 "$G"); do
  (
    for s in $SWEEPS; do
      [ -d "$R/$s-$i" ] || continue
      python3 scripts/device/confirm_sweep.py "$R/sweeps/$s-$i.toml" "$R/$s-$i" "$R/sweeps/$s-$i-confirm.toml" \
        >> "$R/stage.log" 2>&1 || continue
      left=$((CONFIRM_DEADLINE - SECONDS))
      [ "$left" -gt 20 ] || { echo "gpu $i: $s confirm skipped at ${SECONDS}s" >> "$R/stage.log"; continue; }
      CUDA_VISIBLE_DEVICES=$((i - 1)) timeout "$left" /tmp/rs run --quiet --no-report --trials 4 \
        --set verify.max_reference_gflop=10 "$R/sweeps/$s-$i-confirm.toml" --out "$R/$s-$i-confirm" \
        > "$R/$s-$i-confirm.log" 2>&1
      echo "gpu $i: $s confirm rc $? at ${SECONDS}s" >> "$R/stage.log"
    done
  ) &
done
wait
cat "$R/stage.log"
rm -f "$R"/*/run.lock
for s in $SWEEPS; do
  runs=$(for i in $(seq 1 "$G"); do [ -d "$R/$s-$i" ] && echo "$R/$s-$i"; done)
  python3 scripts/layer_ratio.py --each $runs > "$R/$s-ratio.txt" 2>&1
  echo "$s: $(tail -1 "$R/$s-ratio.txt")"
  runs=$(for i in $(seq 1 "$G"); do [ -d "$R/$s-$i-confirm" ] && echo "$R/$s-$i-confirm"; done)
  if [ -n "$runs" ]; then
    python3 scripts/layer_ratio.py --each $runs > "$R/$s-confirm-ratio.txt" 2>&1
    echo "$s re-measured: $(tail -1 "$R/$s-confirm-ratio.txt")"
  fi
done
if [ "${SEEDS:-0}" = 1 ]; then
  for s in "${SEED_SWEEPS[@]}"; do
    echo "## $s"
    sed -n '/^## Which layer fails/,/^### /p' "$R/$s/summary.md" 2>/dev/null | grep '^|' | head -80
  done > "$R/which-layer.md"
fi
rm -rf "$R"/*/workers
tar czf "$OUT/split.tgz" -C "$OUT" split && rm -rf "$R"

#!/usr/bin/env bash
# Issue 29 on a real GPU in one device command (at most 10 minutes), from the repository root
# with the release binary carried in as target/carry/rocsweep:
#   the seeds' sweeps (sweeps/seed-00*.toml) over cuda + torch, each one run with both layers
#   and its which-layer table (summary.md);
#   sweeps/h200-gemm-shapes.toml and a slice of sweeps/h200-conv.toml (h=64, f16 and f32) over
#   cuda + torch in one run each, 2 trials, and the per-shape ratio of the best library solver
#   to the torch layer (scripts/layer_ratio.py).
# Everything lands in $OUT/layers/; the tables on stdout.
set -u
B=${B:-target/carry/rocsweep}
R="$OUT/layers"
DEADLINE=${DEADLINE:-575}
mkdir -p "$R"
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
stage() {
  local name=$1 need=$2 out=$3
  shift 3
  local left=$((DEADLINE - 10 - SECONDS))
  if [ "$left" -lt "$need" ]; then log "skip $name ($left s left, needs $need)"; return; fi
  log "$name"
  timeout "$left" "$@" > "$out" 2>&1
  log "$name rc $?"
}
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
export ROCSWEEP_PYTHON=$(command -v python3)
"$B" probe --backend torch > "$R/probe-torch.txt" 2>&1
BOTH=(run --quiet --backend cuda,torch)
stage seed-000 30 "$R/seed-000.log" "$B" "${BOTH[@]}" --trials 1 sweeps/seed-000-randn-like.toml --out "$R/seed-000"
stage seed-001 30 "$R/seed-001.log" "$B" "${BOTH[@]}" --trials 1 sweeps/seed-001-to-device.toml --out "$R/seed-001"
stage seed-002 30 "$R/seed-002.log" "$B" "${BOTH[@]}" --trials 1 sweeps/seed-002-bf16-to-f32.toml --out "$R/seed-002"
stage seed-003 60 "$R/seed-003.log" "$B" "${BOTH[@]}" --trials 1 sweeps/seed-003-reduce-overhead.toml --out "$R/seed-003"
stage seed-004 30 "$R/seed-004.log" "$B" "${BOTH[@]}" --trials 1 sweeps/seed-004-conv2d-benchmark.toml --axis solver=engine_heuristic,torch-benchmark --out "$R/seed-004"
stage gemm 120 "$R/gemm.log" "$B" "${BOTH[@]}" --trials 2 --no-report sweeps/h200-gemm-shapes.toml --out "$R/gemm"
stage conv 60 "$R/conv.log" "$B" "${BOTH[@]}" --trials 2 --no-report sweeps/h200-conv.toml --axis h=64 --axis dtype=f16,f32 --out "$R/conv"
log tables
for s in 000 001 002 003 004; do
  echo "## seed $s"
  sed -n '/^## Which layer fails/,/^### /p' "$R/seed-$s/summary.md" 2>/dev/null | grep '^|' | head -60
done | tee "$R/which-layer.md"
for p in gemm conv; do
  python3 scripts/layer_ratio.py "$R/$p" 2>&1 | tee "$R/$p-ratio.txt"
done
tar czf "$OUT/layers.tgz" -C "$OUT" layers

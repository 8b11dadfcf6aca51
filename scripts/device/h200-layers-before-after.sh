#!/usr/bin/env bash
# Issue 42: the which-layer ratios of reports/h100/layers/ again, before and after the torch layer
# measured what PyTorch does (a Python per torch solver, graphs for launch-free samples), in one
# device command from the repository root with both binaries carried in as
# target/carry/{before,after}/rocsweep(.xz):
# - sweeps/h200-gemm-shapes.toml and the h=64 f16/f32 slice of sweeps/h200-conv.toml over
#   cuda + torch, one trial, warm cache on both sides (the before binary's only state), before
#   then after, and the per-shape ratio torch / best library solver (scripts/layer_ratio.py);
# - the seeds' sweeps over cuda + torch with the after binary and the default cold cache, and
#   their which-layer tables (summary.md).
# BOTH_WARM=1: the before binary runs with the warm cache too (both binaries know
# [timing] cache). SEEDS=0: no seed sweeps.
# Everything lands in $OUT/layers/; the tables on stdout.
set -u
R="$OUT/layers"
mkdir -p "$R"
for b in before after; do
  f=target/carry/$b/rocsweep
  if [ ! -x "$f" ] && [ -f "$f.xz" ]; then
    python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$f.xz" "$f" &&
      chmod +x "$f" || exit 1
  fi
done
DEADLINE=${DEADLINE:-580}
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
for b in before after; do
  B=target/carry/$b/rocsweep
  BOTH=(run --quiet --no-report --backend cuda,torch --trials 1)
  if [ $b = after ] || [ "${BOTH_WARM:-0}" = 1 ]; then BOTH+=(--set 'timing.cache="warm"'); fi
  stage "gemm-$b" 60 "$R/gemm-$b.log" "$B" "${BOTH[@]}" sweeps/h200-gemm-shapes.toml --out "$R/gemm-$b"
  stage "conv-$b" 40 "$R/conv-$b.log" "$B" "${BOTH[@]}" sweeps/h200-conv.toml --axis h=64 --axis dtype=f16,f32 --out "$R/conv-$b"
done
B=target/carry/after/rocsweep
AFTER=(run --quiet --backend cuda,torch --trials 1)
if [ "${SEEDS:-1}" != 0 ]; then
  stage seed-000 25 "$R/seed-000.log" "$B" "${AFTER[@]}" sweeps/seed-000-randn-like.toml --out "$R/seed-000"
  stage seed-001 30 "$R/seed-001.log" "$B" "${AFTER[@]}" sweeps/seed-001-to-device.toml --out "$R/seed-001"
  stage seed-002 25 "$R/seed-002.log" "$B" "${AFTER[@]}" sweeps/seed-002-bf16-to-f32.toml --out "$R/seed-002"
  stage seed-004 25 "$R/seed-004.log" "$B" "${AFTER[@]}" sweeps/seed-004-conv2d-benchmark.toml --axis solver=engine_heuristic,torch-benchmark --out "$R/seed-004"
  stage seed-003 45 "$R/seed-003.log" "$B" "${AFTER[@]}" sweeps/seed-003-reduce-overhead.toml --out "$R/seed-003"
fi
log tables
for p in gemm conv; do
  for b in before after; do
    echo "# $p $b"
    python3 scripts/layer_ratio.py "$R/$p-$b" 2>&1 | tail -3
  done
done | tee "$R/ratios-summary.txt"
for p in gemm conv; do
  for b in before after; do
    python3 scripts/layer_ratio.py "$R/$p-$b" > "$R/$p-$b-ratio.txt" 2>&1
  done
done
for s in 000 001 002 003 004; do
  echo "## seed $s"
  sed -n '/^## Which layer fails/,/^### /p' "$R/seed-$s/summary.md" 2>/dev/null | grep '^|' | head -40
done > "$R/which-layer.md"
# What comes back: the tables on top, the run directories (less their worker logs) in one archive.
cp "$R/ratios-summary.txt" "$R/which-layer.md" "$OUT/" 2>/dev/null
tar czf "$OUT/layers.tgz" -C "$OUT" --exclude=workers --exclude=caches layers
rm -rf "$R"

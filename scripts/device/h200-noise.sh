#!/usr/bin/env bash
# Issue 13 on the H200 in one device command (from the repository root, with the stripped
# release binary carried in as target/carry/rocsweep): the tf32-override recommendation, a
# placebo axis, and two identical runs each of two sweeps compared. Everything lands in
# $OUT/noise.tgz; the headlines go to stdout.
set -u
B=target/carry/rocsweep
R="$OUT/noise"
mkdir -p "$R"
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
log tf32-override
$B run sweeps/h200-tf32-override.toml --out "$R/h200-tf32-override" --quiet --no-report > "$R/tf32.log" 2>&1
$B recommend "$R/h200-tf32-override" --out "$R/h200-tf32-override/recommend" > /dev/null 2>> "$R/tf32.log"
for i in 1 2; do
  log "placebo run $i"
  $B run sweeps/h200-gemm-placebo.toml --out "$R/h200-gemm-placebo-$i" --quiet --no-report > "$R/placebo-$i.log" 2>&1
  log "graph run $i"
  $B run sweeps/h200-graph.toml --out "$R/h200-graph-$i" --quiet --no-report > "$R/graph-$i.log" 2>&1
done
$B recommend "$R/h200-gemm-placebo-1" --out "$R/h200-gemm-placebo-1/recommend" > /dev/null 2>> "$R/placebo-1.log"
for s in h200-gemm-placebo h200-graph; do
  $B compare "$R/$s-1" "$R/$s-2" --out "$R/compare-$s" --fail-on regression > "$R/compare-$s.txt" 2>&1
  echo "exit $?" >> "$R/compare-$s.txt"
done
log done
rm -rf "$R"/*/workers "$R"/*/run.lock
echo "== tf32"; sed -n 1,8p "$R/h200-tf32-override/recommend/recommend.md"; grep -E "^export|^# NVIDIA" "$R/h200-tf32-override/recommend/rocsweep-env.sh"
echo "== placebo"; sed -n 1,6p "$R/h200-gemm-placebo-1/recommend/recommend.md"; grep -E "PLACEBO" "$R/h200-gemm-placebo-1/recommend/rocsweep-env.sh" | cut -c1-300
echo "== compare"; cat "$R"/compare-*.txt
cat "$R/stage.log"
cd "$OUT" && tar czf noise.tgz noise && rm -rf noise

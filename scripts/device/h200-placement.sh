#!/usr/bin/env bash
# Does a unit's time depend on where its operands lie? (issue 12: the same-algorithm GEMM shapes
# outside 3% and the one conv shape under 0.98x). One device command (nvidia-h200), from the
# repository root with the stripped release binary carried in as target/carry/rocsweep:
#   the six GEMM shapes of reports/h200/timing/gemm-fidelity-3 (lt#0 only) and the four f16 1x1
#   convolutions of side-by-side/cmd3 (eng58, this nvjet family, k25 = 0, 1, 2), verification
#   off, 3 trials, each in a run whose worker holds a different amount of device memory before its
#   first unit (ROCSWEEP_DEBUG_PAD_MIB through cuMemAlloc, as PyTorch's caching allocator takes
#   memory; ROCSWEEP_DEBUG_PAD_POOL_MIB from the stream's pool), with no pad first and last;
#   PyTorch's times for the same shapes (peer_times.py, PEER_VARIANTS=0), on the first run;
#   the tables (benches/peer/placement_table.py).
# Everything lands in $OUT/placement/ and $OUT/placement.tgz.
set -u
B=${B:-target/carry/rocsweep}
R="$OUT/placement"
mkdir -p "$R"
export PYTHONUNBUFFERED=1
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
sed -e 's/^name = .*/name = "placement-gemm"/' reports/h200/timing/gemm-fidelity-3/cmd3/lt0-shapes.toml > "$R/gemm.toml"
sed -e 's/^name = .*/name = "placement-conv"/' -e 's/^solver = .*/solver = ["eng58-k25=0", "eng58-k25=1", "eng58-k25=2"]/' \
  reports/h200/timing/side-by-side/cmd3/cudnn/four.toml > "$R/conv.toml"
RUN=(run --quiet --no-report --set verify.enabled=false)
# pads: label sync-MiB / pool-MiB / none-X
PADS=(none-a sync-2 sync-64 sync-1024 sync-8192 pool-64 pool-1024 pool-8192 sync-24576 none-b)
for p in "${PADS[@]}"; do
  env=()
  case $p in
    sync-*) env=(ROCSWEEP_DEBUG_PAD_MIB=${p#sync-}) ;;
    pool-*) env=(ROCSWEEP_DEBUG_PAD_POOL_MIB=${p#pool-}) ;;
  esac
  for s in gemm conv; do
    log "$s $p"
    timeout 90 env "${env[@]}" "$B" "${RUN[@]}" "$R/$s.toml" --out "$R/$s-$p" > "$R/$s-$p.log" 2>&1
    log "$s $p rc $?"
  done
done
export PEER_VARIANTS=0
for s in gemm conv; do
  log "pytorch $s"
  timeout 150 python3 benches/peer/peer_times.py "$R/$s-none-a" "$R/torch-$s.csv" > "$R/torch-$s.log" 2>&1
  log "pytorch $s rc $?"
done
for s in gemm conv; do
  args=()
  for p in "${PADS[@]}"; do [ -s "$R/$s-$p/results.csv" ] && args+=("$p=$R/$s-$p"); done
  python3 benches/peer/placement_table.py "${args[@]}" --torch "$R/torch-$s.csv" > "$R/table-$s.md" 2>&1
  echo "== $s"; cat "$R/table-$s.md"
done
log done
rm -f "$R"/*/run.lock
rm -rf "$R"/*/workers "$R"/*/caches
cd "$OUT" && tar czf placement.tgz placement && rm -rf placement && ls -la "$OUT"

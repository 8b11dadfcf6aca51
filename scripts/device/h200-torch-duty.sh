#!/usr/bin/env bash
# Issue 42: why the torch layer reads the long bf16 GEMMs faster than PyTorch's own bursts. One
# device command from the repository root, the release binary carried in as
# target/carry/after/rocsweep(.xz):
# - sweeps/h200-gemm-shapes.toml through the torch layer, warm cache, one trial, with
#   ROCSWEEP_TORCH_TRACE=1 (each sample's start and end in the worker logs);
# - benches/peer/torch_layer_fidelity.py --duty: the gaps between the layer's samples, and
#   torch-matmul's calls of 0.1 ms or more as PyTorch bursts with the host idle 0-30 ms between
#   samples, in a clean process;
# - nvidia-smi's SM clock, power, temperature and clock-event reasons every 100 ms (smi.csv).
set -u
R="$OUT/duty"
SMI_MS=100
. scripts/device/torch-layer-start.sh
log "gemm layer"
ROCSWEEP_TORCH_TRACE=1 timeout 120 "$f" run --quiet --no-report --backend torch --trials 1 \
  --set 'timing.cache="warm"' sweeps/h200-gemm-shapes.toml --out "$R/gemm" > "$R/gemm.log" 2>&1
log "gemm layer rc $?"
log duty
timeout 200 python3 benches/peer/torch_layer_fidelity.py --duty "$R/gemm" "$R/duty-table" > "$R/duty.log" 2>&1
log "duty rc $?"
cat "$R/duty-table/duty.md" 2>/dev/null
[ -n "$SMI" ] && kill "$SMI" 2>/dev/null
tar czf "$OUT/duty.tgz" -C "$OUT" --exclude=caches duty
rm -rf "$R"

#!/usr/bin/env bash
# Issue 42, point 1: does reading the SM clock through NVML in the reference's clean process
# slow PyTorch's later shapes there? One device command from the repository root, the release
# binary carried in as target/carry/after/rocsweep(.xz):
# - sweeps/h200-resnet50-conv.toml through the torch layer (every torch solver, warm cache, one
#   trial);
# - benches/peer/torch_layer_fidelity.py --burst-only against it (a clean process per solver,
#   every shape in turn, two per solver, outputs kept), once for each of VARIANTS (default
#   "on off": FIDELITY_NVML=on reads the SM clock after every burst, off never opens NVML), one
#   after the other on the same layer run.
# Everything lands in $OUT/nvml/ (one archive); the tables on stdout.
set -u
R="$OUT/nvml"
SMI_MS=200
. scripts/device/torch-layer-start.sh
export FIDELITY_OUTPUT=kept
log "conv layer"
timeout 120 "$f" "${WARM[@]}" sweeps/h200-resnet50-conv.toml --out "$R/conv" > "$R/conv.log" 2>&1
log "conv layer rc $?"
for v in ${VARIANTS:-on off}; do
  log "fidelity nvml=$v"
  FIDELITY_NVML=$v timeout "${FID_TIMEOUT:-200}" python3 benches/peer/torch_layer_fidelity.py --burst-only \
    "$R/conv" "$R/nvml-$v" > "$R/nvml-$v.log" 2>&1
  log "fidelity nvml=$v rc $?"
  cat "$R/nvml-$v/fidelity.md" 2>/dev/null
done
[ -n "$SMI" ] && kill "$SMI" 2>/dev/null
tar czf "$OUT/nvml.tgz" -C "$OUT" --exclude=workers --exclude=caches nvml
rm -rf "$R"

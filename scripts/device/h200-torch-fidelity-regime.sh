#!/usr/bin/env bash
# Issue 42, point 1, again, in one device command from the repository root, with the release
# binary carried in as target/carry/after/rocsweep(.xz): the torch layer against PyTorch in clean
# processes timed in the same regime (a rested card, the row's samples), PyTorch against itself
# in a second clean process, and PyTorch's sustained graph of 20 calls, each with its SM clock
# (benches/peer/torch_layer_fidelity.py).
# - sweeps/h200-resnet50-conv.toml (46 convolutions) and sweeps/h200-gemm-shapes.toml (24 GEMMs)
#   through the torch layer (`--backend torch`: every torch solver, each in a Python of its own),
#   warm cache, one trial;
# - nvidia-smi's SM clock, power and temperature every 200 ms for the whole command (smi.csv).
# PARTS="gemm" (or "conv") runs one half; MODE=burst-only (or per-shape) passes that mode to the
# benchmark (bursts only, without the sustained and back-to-back passes; per-shape: a clean
# process per shape, two per shape, about 1.5 s each on the H200). FID_TIMEOUT (default 260)
# bounds each part's benchmark in seconds: per-shape on the whole conv sweep needs about 300.
# SOLVER=NAME: the layer runs that torch solver only (with FIDELITY_CASES and FIDELITY_PROCESSES,
# benches/peer/: a few shapes against more clean processes).
# Everything lands in $OUT/regime/ (one archive); the tables on stdout.
set -u
R="$OUT/regime"
SMI_MS=200
. scripts/device/torch-layer-start.sh
for p in ${PARTS:-conv gemm}; do
  sweep=sweeps/h200-resnet50-conv.toml
  [ "$p" = gemm ] && sweep=sweeps/h200-gemm-shapes.toml
  log "$p layer"
  timeout 120 "$f" "${WARM[@]}" ${SOLVER:+--axis "solver=$SOLVER"} "$sweep" --out "$R/$p" > "$R/$p.log" 2>&1
  log "$p layer rc $?"
  log "$p fidelity"
  timeout "${FID_TIMEOUT:-260}" python3 benches/peer/torch_layer_fidelity.py ${MODE:+"--$MODE"} "$R/$p" "$R/$p-table" > "$R/$p-fidelity.log" 2>&1
  log "$p fidelity rc $?"
  cat "$R/$p-table/fidelity.md" 2>/dev/null
  cp "$R/$p-table/fidelity.md" "$OUT/$p-fidelity.md" 2>/dev/null
done
[ -n "$SMI" ] && kill "$SMI" 2>/dev/null
tar czf "$OUT/regime.tgz" -C "$OUT" --exclude=workers --exclude=caches regime
rm -rf "$R"

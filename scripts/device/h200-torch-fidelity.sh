#!/usr/bin/env bash
# Issue 42, point 1, in one device command from the repository root (the first run,
# reports/h200/torch-layer/fidelity/, used benches/peer/torch_layer_fidelity.py as of 2204a66;
# h200-torch-fidelity-regime.sh is the newer command), with the release binary
# carried in as target/carry/after/rocsweep(.xz): is the torch layer's time PyTorch's time?
# - sweeps/h200-resnet50-conv.toml (46 convolutions) and sweeps/h200-gemm-shapes.toml (24 GEMMs)
#   through the torch layer (`--backend torch`: every torch solver, each in a Python of its own),
#   warm cache (`[timing] cache = "warm"`), one trial;
# - benches/peer/torch_layer_fidelity.py on each run: PyTorch itself, a clean process per torch
#   solver, its CUDA-graph time (20 calls) and one call between events, shape by shape;
# - the GEMMs once more with the default cold cache (the `cache` column says `cold`).
# Everything lands in $OUT/fidelity/; the tables on stdout.
set -u
R="$OUT/fidelity"
SMI_MS=0
. scripts/device/torch-layer-start.sh
log conv
timeout 200 "$f" "${WARM[@]}" sweeps/h200-resnet50-conv.toml --out "$R/conv" > "$R/conv.log" 2>&1
log "conv rc $?"
log gemm
timeout 120 "$f" "${WARM[@]}" sweeps/h200-gemm-shapes.toml --out "$R/gemm" > "$R/gemm.log" 2>&1
log "gemm rc $?"
log gemm-cold
timeout 90 "$f" run --quiet --no-report --backend torch --trials 1 sweeps/h200-gemm-shapes.toml --out "$R/gemm-cold" > "$R/gemm-cold.log" 2>&1
log "gemm-cold rc $?"
for p in conv gemm; do
  log "fidelity $p"
  timeout 150 python3 benches/peer/torch_layer_fidelity.py "$R/$p" "$R/$p-table" > "$R/$p-fidelity.log" 2>&1
  log "fidelity $p rc $?"
  cat "$R/$p-table/fidelity.md" 2>/dev/null
done
# What comes back: the tables and logs as they are, the run directories (less their worker
# logs) in one archive.
cp "$R"/*-table/fidelity.md "$OUT/" 2>/dev/null
for p in conv gemm; do cp "$R/$p-table/fidelity.md" "$OUT/$p-fidelity.md" 2>/dev/null; done
tar czf "$OUT/fidelity.tgz" -C "$OUT" --exclude=workers --exclude=caches fidelity
rm -rf "$R" "$OUT/fidelity.md"

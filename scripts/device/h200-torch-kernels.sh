#!/usr/bin/env bash
# Issue 42, point 1: the kernels behind the short calls where the torch layer stays 2-5 % under
# PyTorch's nearest figure over several operand placements (reports/h200/torch-layer/shape/).
# One device command from the repository root, with the release binary carried in as
# target/carry/after/rocsweep(.xz). Per part and sweep (WHERE: `small`, the stubborn shapes and
# two that agree, scripts/device/kernels-PART.toml, so they run first in the layer's processes;
# `full`, the committed sweep, where they run after the others):
# 1. the torch layer (`--backend torch`, warm cache, one trial) and PyTorch timed beside it
#    (benches/peer/torch_layer_fidelity.py --per-shape, output kept), once per GRAPHS (default
#    "one every": FIDELITY_GRAPHS, one graph alive at a time as the layer, or every K's graph
#    kept through a burst): the figures unprofiled;
# 2. the same two again under torch.profiler (the worker's ROCSWEEP_TORCH_KERNELS, the
#    reference's FIDELITY_KERNELS): every sample's kernels, held side by side by
#    benches/peer/kernel_table.py (the same kernels? their durations? the gaps between them?).
# PARTS (default "gemm conv"), WHERE (default "small"); FIDELITY_MAX_MS passes through (the
# reference times only the rows faster than that). nvidia-smi every 200 ms (smi.csv). Everything
# lands in $OUT/kernels.tgz; the tables on stdout.
set -u
R="$OUT/kernels"
SMI_MS=200
. scripts/device/torch-layer-start.sh
FID=benches/peer/torch_layer_fidelity.py
for p in ${PARTS:-gemm conv}; do
  for where in ${WHERE:-small}; do
    sweep=scripts/device/kernels-$p.toml
    if [ "$where" = full ]; then
      sweep=sweeps/h200-resnet50-conv.toml
      [ "$p" = gemm ] && sweep=sweeps/h200-gemm-shapes.toml
    fi
    d="$R/$p-$where"
    log "$p $where layer"
    timeout 150 "$f" "${WARM[@]}" "$sweep" --out "$d" > "$d.log" 2>&1
    log "$p $where layer rc $?"
    for g in ${GRAPHS:-one every}; do
      FIDELITY_GRAPHS=$g FIDELITY_OUTPUT=kept timeout 240 python3 "$FID" --per-shape "$d" "$d-ref-$g" > "$d-ref-$g.log" 2>&1
      log "$p $where reference graphs $g rc $?"
      sed -n '/^| op /,/^$/p' "$d-ref-$g/fidelity.md" 2>/dev/null
    done
    log "$p $where layer profiled"
    ROCSWEEP_TORCH_KERNELS="$d-k-layer.jsonl" timeout 240 "$f" "${WARM[@]}" "$sweep" --out "$d-k" > "$d-k.log" 2>&1
    log "$p $where layer profiled rc $?"
    FIDELITY_KERNELS="$d-k-ref.jsonl" FIDELITY_GRAPHS=one FIDELITY_OUTPUT=kept timeout 240 \
      python3 "$FID" --per-shape "$d-k" "$d-k-ref" > "$d-k-ref.log" 2>&1
    log "$p $where reference profiled rc $?"
    python3 benches/peer/kernel_table.py "$d-k" "$d-k-layer.jsonl" "$d-k-ref.jsonl" > "$d-kernels.md" 2>&1
    sed -n '1,/^$/p' "$d-kernels.md"
    gzip -f "$d-k-layer.jsonl" "$d-k-ref.jsonl"
  done
done
[ -n "$SMI" ] && kill "$SMI" 2>/dev/null
gzip -f "$R/smi.csv"
tar czf "$OUT/kernels.tgz" -C "$OUT" --exclude=workers --exclude=caches kernels
rm -rf "$R"

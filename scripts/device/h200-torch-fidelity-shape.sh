#!/usr/bin/env bash
# Issue 42, point 1: is the short calls' 2-8 % the reference's process state? One device command
# from the repository root, with the release binary carried in as target/carry/after/rocsweep(.xz):
# per part, the torch layer's run (`--backend torch`, every torch solver, warm cache, one trial),
# then PyTorch timed in the same regime (benches/peer/torch_layer_fidelity.py) two ways:
# - `--per-shape`: a clean process per solver and shape, two per shape (PyTorch with nothing
#   before the shape in its process);
# - `--burst-only`: a clean process per solver running every shape in turn, two (the reference
#   of scripts/device/h200-torch-fidelity-regime.sh without its sustained pass).
# REFS picks the references, each MODE:OUTPUT (default "per-shape:dropped burst-only:dropped"):
# OUTPUT is FIDELITY_OUTPUT, what the reference does with each call's output (`kept` until the
# next call's replaces it, as the torch layer's op does, or `dropped` as it returns).
# PADS (default "0"): for each N, the references again with FIDELITY_PAD_MIB=N (N MiB held
# before each shape's inputs: where PyTorch's allocator places them; `freedN`: N MiB allocated
# and freed, the inputs carved from the cached segment, FIDELITY_PAD_KIND=freed);
# FIDELITY_MAX_MS passes through (only rows faster than that).
# nvidia-smi's SM clock, power and temperature every 200 ms for the whole command (smi.csv).
# PARTS="gemm" (default "gemm conv") picks the committed sweeps: sweeps/h200-gemm-shapes.toml
# (24 GEMMs), sweeps/h200-resnet50-conv.toml (46 convolutions). Everything lands in
# $OUT/shape.tgz; the tables on stdout.
set -u
R="$OUT/shape"
SMI_MS=200
. scripts/device/torch-layer-start.sh
for p in ${PARTS:-gemm conv}; do
  sweep=sweeps/h200-resnet50-conv.toml
  [ "$p" = gemm ] && sweep=sweeps/h200-gemm-shapes.toml
  log "$p layer"
  timeout 120 "$f" "${WARM[@]}" "$sweep" --out "$R/$p" > "$R/$p.log" 2>&1
  log "$p layer rc $?"
  for pad in ${PADS:-0}; do
    for ref in ${REFS:-per-shape:dropped burst-only:dropped}; do
      mode=${ref%%:*} out=${ref#*:}
      d="$R/$p-$mode-$out"
      [ "$pad" = 0 ] || d="$d-pad$pad"
      kind=held mib=$pad
      case $pad in freed*) kind=freed mib=${pad#freed} ;; esac
      log "$p $mode output $out pad $pad MiB"
      FIDELITY_PAD_KIND=$kind FIDELITY_PAD_MIB=$mib FIDELITY_OUTPUT=$out timeout 300 \
        python3 benches/peer/torch_layer_fidelity.py "--$mode" "$R/$p" "$d" > "$d.log" 2>&1
      log "$p $mode output $out pad $pad MiB rc $?"
      sed -n '/^| op /,/^$/p' "$d/fidelity.md" 2>/dev/null
    done
  done
done
[ -n "$SMI" ] && kill "$SMI" 2>/dev/null
gzip -f "$R/smi.csv"
tar czf "$OUT/shape.tgz" -C "$OUT" --exclude=workers --exclude=caches shape
rm -rf "$R"

#!/usr/bin/env bash
# Issue 29 point 6 over the whole committed sweeps, in one device command (at most 10 minutes):
# sweeps/h200-gemm.toml and sweeps/h200-conv.toml over cuda + torch in one run each, 2 trials,
# then the per-shape ratios (scripts/layer_ratio.py). The binary travels xz-compressed as
# target/carry/fixed/rocsweep.xz. A run cut by the deadline keeps the units it finished.
# On 2026-11-27 (H100) it did not fit one command: h200-gemm wrote no row in 250 s (its CPU
# references of the 8192^3 shapes come first) and h200-conv 120 cuda rows in 310 s, none through
# torch yet. Split it over several commands (e.g. --axis per shape group) to finish point 6.
set -u
R="$OUT/full"
mkdir -p "$R"
python3 -c "import lzma;open('/tmp/rs','wb').write(lzma.open('target/carry/fixed/rocsweep.xz').read())" && chmod +x /tmp/rs
export ROCSWEEP_PYTHON=$(command -v python3)
timeout 250 /tmp/rs run --quiet --no-report --backend cuda,torch --trials 2 sweeps/h200-gemm.toml --out "$R/gemm" > "$R/gemm.log" 2>&1
echo "gemm rc $? at ${SECONDS}s" | tee -a "$R/stage.log"
timeout $((560 - SECONDS)) /tmp/rs run --quiet --no-report --backend cuda,torch --trials 2 sweeps/h200-conv.toml --out "$R/conv" > "$R/conv.log" 2>&1
echo "conv rc $? at ${SECONDS}s" | tee -a "$R/stage.log"
rm -f "$R"/*/run.lock
for p in gemm conv; do python3 scripts/layer_ratio.py "$R/$p" > "$R/$p-ratio.txt" 2>&1; tail -1 "$R/$p-ratio.txt"; done
rm -rf "$R"/*/workers
tar czf "$OUT/full.tgz" -C "$OUT" full && rm -rf "$R"

#!/usr/bin/env bash
# Issue 29 point 6, the 8192^3 shapes: is torch's lead there the rest its worker gave the card
# before every sample? One GPU, one device command, binary carried as target/carry/split/rocsweep.xz:
# 1. scripts/device/hold_rest.py: the same torch matmul with the old long spin and the new short
#    one, alternated;
# 2. reports/engine/h100-engine2/gemm-8192.toml over cuda + torch (the worker with the short
#    spin), 3 trials, and its per-shape ratios.
set -u
python3 -c "import lzma;open('/tmp/rs','wb').write(lzma.open('target/carry/split/rocsweep.xz').read())" && chmod +x /tmp/rs
R="$OUT/hold"; mkdir -p "$R"
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
timeout 120 python3 scripts/device/hold_rest.py 20 > "$R/hold_rest.txt" 2>&1; echo "hold_rest rc $?" >> "$R/rc.txt"
export ROCSWEEP_PYTHON=$(command -v python3)
timeout 200 /tmp/rs run --quiet --no-report --trials 3 reports/engine/h100-engine2/gemm-8192.toml \
  --out "$R/gemm-8192" > "$R/gemm-8192.log" 2>&1; echo "gemm-8192 rc $?" >> "$R/rc.txt"
rm -f "$R"/*/run.lock; rm -rf "$R"/*/workers
python3 scripts/layer_ratio.py "$R/gemm-8192" > "$R/gemm-8192-ratio.txt" 2>&1
cat "$R/rc.txt" "$R/hold_rest.txt" "$R/gemm-8192-ratio.txt"
tar czf "$OUT/hold.tgz" -C "$OUT" hold && rm -rf "$R"

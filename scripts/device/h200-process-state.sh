#!/usr/bin/env bash
# Which state of a process makes the same kernels take longer in PyTorch's process than in
# rocsweep's worker (issue 12: 8x4096x4096 and 32x4096x4096 bf16 read about 1.07 on the same
# algorithm, and scripts/device/h200-placement.sh found no such move from where rocsweep's
# operands lie)? One device command (nvidia-h200), from the repository root with the stripped
# release binary carried in as target/carry/rocsweep: the same GEMM (lt#0) and conv (eng58) units
# as h200-placement.sh, and PyTorch's times for them (peer_times.py, PEER_VARIANTS=0), each side
# in processes under other driver settings (VARIANTS: label and environment):
#   CUDA_DEVICE_MAX_CONNECTIONS (the hardware work queues a context uses: 8 by default),
#   CUDA_MODULE_LOADING=EAGER (every kernel of every loaded library in the context at load time).
# Tables: benches/peer/placement_table.py. Everything lands in $OUT/process-state/ and its .tgz.
set -u
B=${B:-target/carry/rocsweep}
R="$OUT/process-state"
mkdir -p "$R"
export PYTHONUNBUFFERED=1
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
sed -e 's/^name = .*/name = "state-gemm"/' reports/h200/timing/gemm-fidelity-3/cmd3/lt0-shapes.toml > "$R/gemm.toml"
sed -e 's/^name = .*/name = "state-conv"/' -e 's/^solver = .*/solver = ["eng58-k25=0", "eng58-k25=1", "eng58-k25=2"]/' \
  reports/h200/timing/side-by-side/cmd3/cudnn/four.toml > "$R/conv.toml"
RUN=(run --quiet --no-report --set verify.enabled=false)
VARIANTS=("none-a:" "cdmc1:CUDA_DEVICE_MAX_CONNECTIONS=1" "cdmc32:CUDA_DEVICE_MAX_CONNECTIONS=32"
          "eager:CUDA_MODULE_LOADING=EAGER" "none-b:")
for v in "${VARIANTS[@]}"; do
  lbl=${v%%:*}; env=(); [ -n "${v#*:}" ] && env=("${v#*:}")
  for s in gemm conv; do
    log "rocsweep $s $lbl"
    timeout 90 env "${env[@]}" "$B" "${RUN[@]}" "$R/$s.toml" --out "$R/$s-$lbl" > "$R/$s-$lbl.log" 2>&1
    log "rocsweep $s $lbl rc $?"
  done
done
export PEER_VARIANTS=0
for v in "${VARIANTS[@]:0:4}"; do
  lbl=${v%%:*}; env=(); [ -n "${v#*:}" ] && env=("${v#*:}")
  for s in gemm conv; do
    log "pytorch $s $lbl"
    timeout 150 env "${env[@]}" python3 benches/peer/peer_times.py "$R/$s-none-a" "$R/torch-$s-$lbl.csv" > "$R/torch-$s-$lbl.log" 2>&1
    log "pytorch $s $lbl rc $?"
  done
done
for s in gemm conv; do
  args=(); peers=()
  for v in "${VARIANTS[@]}"; do
    lbl=${v%%:*}
    [ -s "$R/$s-$lbl/results.csv" ] && args+=("$lbl=$R/$s-$lbl")
    [ -s "$R/torch-$s-$lbl.csv" ] && peers+=(--torch "$lbl=$R/torch-$s-$lbl.csv")
  done
  python3 benches/peer/placement_table.py "${args[@]}" "${peers[@]}" > "$R/table-$s.md" 2>&1
  echo "== $s"; cat "$R/table-$s.md"
done
log done
rm -f "$R"/*/run.lock
rm -rf "$R"/*/workers "$R"/*/caches
cd "$OUT" && tar czf process-state.tgz process-state && rm -rf process-state && ls -la "$OUT"

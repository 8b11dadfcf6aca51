#!/usr/bin/env bash
# Issue 12's side-by-side on the H200 in one device command (at most 10 minutes), from the
# repository root with the stripped release binary carried in as target/carry/rocsweep:
#   selftest --backend cuda;
#   sweeps/h200-gemm-shapes (24 GEMM shapes, m 1 to 8192, odd sizes, every cuBLASLt heuristic
#   algorithm) and sweeps/h200-resnet50-conv in f16 and in f32 (ResNet-50's 23 convolutions at
#   batch 32: 7x7 stride 2, 1x1, 1x1 stride 2, 3x3, 3x3 stride 2; every cuDNN engine
#   configuration and legacy algorithm), the default 3 trials;
#   PyTorch's times for the same shapes (benches/peer/peer_times.py, rocsweep's protocol, the
#   held graph protocol; PEER_VARIANTS=0 leaves out the placement experiments of gemm-fidelity-3);
#   the three sweeps again (run to run), each only if the deadline leaves it time, with
#   verification off (it does not touch the timed samples and costs a third of a GEMM run);
#   the tables (benches/peer/side_by_side.py).
# Everything lands in $OUT/side-by-side/ and $OUT/side-by-side.tgz; the summaries on stdout.
set -u
B=${B:-target/carry/rocsweep}
R="$OUT/side-by-side"
DEADLINE=${DEADLINE:-585}
mkdir -p "$R"
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
# stage NAME SECONDS_NEEDED LOG COMMAND...: runs COMMAND (output to LOG) under the time left
# before the deadline (less 25 s for the tables), or skips it when fewer than SECONDS_NEEDED remain.
stage() {
  local name=$1 need=$2 out=$3
  shift 3
  local left=$((DEADLINE - 25 - SECONDS))
  if [ "$left" -lt "$need" ]; then log "skip $name ($left s left, needs $need)"; return; fi
  log "$name"
  timeout "$left" "$@" > "$out" 2>&1
  log "$name rc $?"
}
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
nvidia-smi -q -d CLOCK,POWER,PERFORMANCE > "$R/nvidia-smi-clocks-before.txt" 2>&1
python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())' > "$R/versions.txt" 2>&1
mkdir -p "$R/gemm" "$R/conv-f16" "$R/conv-f32"
RUN=(run --quiet --no-report)
stage selftest 10 "$R/selftest-cuda.txt" "$B" selftest --backend cuda
G="$R/gemm/h200-gemm-shapes"
stage "gemm run 1" 60 "$G.log" "$B" "${RUN[@]}" sweeps/h200-gemm-shapes.toml --out "$G"
for d in f16 f32; do
  C="$R/conv-$d/h200-resnet50-conv"
  stage "conv $d run 1" 60 "$C.log" "$B" "${RUN[@]}" sweeps/h200-resnet50-conv.toml --axis "dtype=$d" --out "$C"
done
export PEER_VARIANTS=0
stage "pytorch gemm" 40 "$R/gemm/torch.log" python3 benches/peer/peer_times.py "$G" "$R/gemm/torch.csv"
for d in f16 f32; do
  C="$R/conv-$d/h200-resnet50-conv"
  stage "pytorch conv $d" 20 "$R/conv-$d/torch.log" python3 benches/peer/peer_times.py "$C" "$R/conv-$d/torch.csv"
done
stage "gemm run 2" 40 "$G-again.log" "$B" "${RUN[@]}" sweeps/h200-gemm-shapes.toml --out "$G-again" --set verify.enabled=false
for d in f16 f32; do
  C="$R/conv-$d/h200-resnet50-conv"
  stage "conv $d run 2" 40 "$C-again.log" "$B" "${RUN[@]}" sweeps/h200-resnet50-conv.toml --axis "dtype=$d" --out "$C-again" --set verify.enabled=false
done
nvidia-smi -q -d CLOCK,POWER,PERFORMANCE > "$R/nvidia-smi-clocks-after.txt" 2>&1
log tables
for p in gemm conv-f16 conv-f32; do
  run="$R/$p/h200-resnet50-conv"
  [ "$p" = gemm ] && run="$G"
  again=""
  [ -s "$run-again/results.csv" ] && again="$run-again"
  python3 benches/peer/side_by_side.py "$run" "$R/$p/torch.csv" $again > "$R/$p/table.md" 2>&1
  echo "== $p"; grep -E "^- " "$R/$p/table.md"
done
log done
rm -f "$R"/*/*/run.lock
rm -rf "$R"/*/*/workers "$R"/*/*/caches
cat "$R/stage.log"
cd "$OUT" && tar czf side-by-side.tgz side-by-side && rm -rf side-by-side && ls -la "$OUT"

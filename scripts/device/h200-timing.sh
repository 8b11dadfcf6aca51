#!/usr/bin/env bash
# Issue 12 on the H200: launch-free timing, checked against PyTorch timed the same way, in one
# device command each (at most 10 minutes), from the repository root with the stripped release
# binary carried in as target/carry/rocsweep.
#   PART=gemm: selftest --backend cuda; h200-gemm-shapes twice (run to run); PyTorch's times for
#              the same shapes (benches/peer/peer_times.py); the table (side_by_side.py).
#   PART=conv DTYPE=f16|f32: h200-resnet50-conv in that dtype (one dtype per command keeps it
#              under 10 minutes); PyTorch's times; the table.
# Everything lands in $OUT/<part>/.
set -u
B=target/carry/rocsweep
P=${PART:-gemm}
R="$OUT/$P${DTYPE:+-$DTYPE}"
mkdir -p "$R"
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
case "$P" in
gemm)
  log selftest
  $B selftest --backend cuda > "$R/selftest-cuda.txt" 2>&1
  log "run 1"
  $B run sweeps/h200-gemm-shapes.toml --out "$R/h200-gemm-shapes" --quiet --no-report > "$R/run1.log" 2>&1
  log "run 2"
  $B run sweeps/h200-gemm-shapes.toml --out "$R/h200-gemm-shapes-again" --quiet --no-report > "$R/run2.log" 2>&1
  log pytorch
  python3 benches/peer/peer_times.py "$R/h200-gemm-shapes" "$R/torch.csv" > "$R/torch.log" 2>&1
  python3 benches/peer/side_by_side.py "$R/h200-gemm-shapes" "$R/torch.csv" "$R/h200-gemm-shapes-again" > "$R/table.md" 2>&1
  ;;
conv)
  log "run"
  $B run sweeps/h200-resnet50-conv.toml --axis "dtype=${DTYPE:-f16}" --out "$R/h200-resnet50-conv" --quiet --no-report > "$R/run1.log" 2>&1
  log pytorch
  python3 benches/peer/peer_times.py "$R/h200-resnet50-conv" "$R/torch.csv" > "$R/torch.log" 2>&1
  python3 benches/peer/side_by_side.py "$R/h200-resnet50-conv" "$R/torch.csv" > "$R/table.md" 2>&1
  ;;
esac
log done
rm -f "$R"/*/run.lock
cat "$R/table.md"

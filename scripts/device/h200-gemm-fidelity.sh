#!/usr/bin/env bash
# Issue 12's same-algorithm check for GEMM on the H200, in one device command (at most 10
# minutes), from the repository root with the stripped release binary carried in as
# target/carry/rocsweep: selftest --backend cuda; sweeps/h200-gemm-shapes (24 shapes, every
# cuBLASLt heuristic algorithm, the default 3 trials); PyTorch's times for the same shapes with
# rocsweep's protocol (benches/peer/peer_times.py: K from the launch-free time, rocsweep's
# warm-up, samples and trials, SM clock on both sides, PyTorch's default and cuBLASLt paths, and
# rocsweep's cublasLt call made from Python); the sweep again (run to run, last, cut at the
# deadline); the table (side_by_side.py). Everything lands in $OUT/gemm-fidelity/ and
# $OUT/gemm-fidelity.tgz.
set -u
B=${B:-target/carry/rocsweep}
R="$OUT/gemm-fidelity"
DEADLINE=${DEADLINE:-570}
mkdir -p "$R"
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
nvidia-smi -q -d CLOCK,POWER,PERFORMANCE > "$R/nvidia-smi-clocks-before.txt" 2>&1
log selftest
timeout 60 $B selftest --backend cuda > "$R/selftest-cuda.txt" 2>&1
log "run 1 (rc of selftest $?)"
timeout 240 $B run sweeps/h200-gemm-shapes.toml --out "$R/h200-gemm-shapes" --quiet --no-report > "$R/run1.log" 2>&1
log "pytorch (rc of run 1 $?)"
timeout $((DEADLINE - 60 - SECONDS)) python3 benches/peer/peer_times.py "$R/h200-gemm-shapes" "$R/torch.csv" > "$R/torch.log" 2>&1
log "run 2 (rc of pytorch $?)"
left=$((DEADLINE - 15 - SECONDS))
if [ "$left" -gt 20 ]; then
  timeout "$left" $B run sweeps/h200-gemm-shapes.toml --out "$R/h200-gemm-shapes-again" --quiet --no-report > "$R/run2.log" 2>&1
  log "table (rc of run 2 $?)"
else
  log "no time left for run 2"
fi
AGAIN=""
[ -s "$R/h200-gemm-shapes-again/results.csv" ] && AGAIN="$R/h200-gemm-shapes-again"
python3 benches/peer/side_by_side.py "$R/h200-gemm-shapes" "$R/torch.csv" $AGAIN > "$R/table.md" 2>&1
nvidia-smi -q -d CLOCK,POWER,PERFORMANCE > "$R/nvidia-smi-clocks-after.txt" 2>&1
log done
rm -f "$R"/*/run.lock
rm -rf "$R"/*/workers "$R"/*/caches
grep -E "^- " "$R/table.md"
cat "$R/stage.log"
cd "$OUT" && tar czf gemm-fidelity.tgz gemm-fidelity && rm -rf gemm-fidelity && ls -la "$OUT"

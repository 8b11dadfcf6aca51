#!/usr/bin/env bash
# One device command (nvidia-h200), from the repository root with the stripped release binary
# carried in as target/carry/rocsweep. Everything lands in $OUT/gf3/ and $OUT/gf3.tgz:
# - run1/: rocsweep on shapes.toml (6 bf16 shapes, every cuBLASLt heuristic algorithm, 3 trials);
# - trace-run/ and trace/rocsweep-*.log: the same shapes, lt#0 only, 1 trial, with cuBLASLt's trace
#   log on (CUBLASLT_LOG_LEVEL=2: every cublasLtMatmul with its whole algorithm configuration and
#   the workspace it was given);
# - torch.csv, torch.log: benches/peer/peer_times.py on run1 (PyTorch's pick; PyTorch on cuBLASLt;
#   rocsweep's call made from Python; the placement and timing-loop variants);
# - trace.txt, trace/python-*.log: benches/peer/lt_trace.py (PyTorch's call, the replica and the
#   replica on pool memory, one each per shape, with the trace log on); trace-summary.txt;
# - run2/: rocsweep again (run to run); table.md: benches/peer/side_by_side.py.
set -u
B=${B:-target/carry/rocsweep}
D=reports/h200/timing/gemm-fidelity-3
R="$OUT/gf3"
mkdir -p "$R/trace"
export PYTHONUNBUFFERED=1
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
log "run 1"
timeout 120 $B run $D/shapes.toml --out "$R/run1" --quiet --no-report > "$R/run1.log" 2>&1
log "trace run (rc of run 1 $?)"
sed -e 's/^solver = "all"/solver = "lt#0"/' -e 's/^name = .*/name = "h200-gemm-fidelity-6-trace"/' $D/shapes.toml > "$R/trace-shapes.toml"
CUBLASLT_LOG_LEVEL=2 CUBLASLT_LOG_FILE="$R/trace/rocsweep-%i.log" timeout 60 $B run "$R/trace-shapes.toml" --out "$R/trace-run" --set timing.trials=1 --quiet --no-report > "$R/trace-run.log" 2>&1
log "pytorch (rc of trace run $?)"
timeout 300 python3 benches/peer/peer_times.py "$R/run1" "$R/torch.csv" > "$R/torch.log" 2>&1
log "python trace (rc of pytorch $?)"
CUBLASLT_WORKSPACE_SIZE=65536 CUBLAS_WORKSPACE_CONFIG=:4096:16 CUBLASLT_LOG_LEVEL=2 CUBLASLT_LOG_FILE="$R/trace/python-%i.log" \
  timeout 60 python3 benches/peer/lt_trace.py "$R/run1" > "$R/trace.txt" 2>&1
log "run 2 (rc of python trace $?)"
timeout 100 $B run $D/shapes.toml --out "$R/run2" --quiet --no-report > "$R/run2.log" 2>&1
log "table (rc of run 2 $?)"
python3 benches/peer/lt_trace.py --summary "$R"/trace/*.log > "$R/trace-summary.txt" 2>&1
python3 benches/peer/side_by_side.py "$R/run1" "$R/torch.csv" "$R/run2" > "$R/table.md" 2>&1
log "ncu (Nsight Compute, m = 8: rocsweep's lt#0 unit, then the Python variants)"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
MET=gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct,launch__grid_size,sm__cycles_elapsed.avg.per_second,dram__cycles_elapsed.avg.per_second
sed -e 's/^solver = "all"/solver = "lt#0"/' -e 's/^name = .*/name = "ncu-m8"/' -e 's/^m = .*/m = [8]/' -e 's/^n = .*/n = [4096]/' -e 's/^k = .*/k = [4096]/' $D/shapes.toml > "$R/ncu-shape.toml"
timeout 100 "$NCU" --target-processes all --kernel-name regex:nvjet --launch-skip 30 --launch-count 12 --cache-control none --clock-control none --metrics $MET --csv --log-file "$R/ncu-rocsweep.csv" $B run "$R/ncu-shape.toml" --out "$R/ncu-run" --set timing.trials=1 --quiet --no-report > "$R/ncu-rocsweep.log" 2>&1
log "ncu python (rc of ncu rocsweep $?)"
CUBLASLT_WORKSPACE_SIZE=65536 CUBLAS_WORKSPACE_CONFIG=:4096:16 timeout 90 "$NCU" --target-processes all --kernel-name regex:nvjet --cache-control none --clock-control none --metrics $MET --csv --log-file "$R/ncu-python.csv" python3 benches/peer/lt_trace.py --replay "$R/run1" 8 > "$R/ncu-python.log" 2>&1
log "done (rc of ncu python $?)"
python3 benches/peer/lt_trace.py --ncu "$R/ncu-rocsweep.csv" "$R/ncu-python.csv" > "$R/ncu-summary.txt" 2>&1
cut -c1-300 "$R/ncu-summary.txt" | head -80
rm -f "$R"/*/run.lock
rm -rf "$R"/*/workers "$R"/*/caches
cat "$R/trace-summary.txt" | cut -c1-400
sed -n '/^Fidelity/,$p' "$R/table.md"
grep -h "failed\|Error\|error" "$R/torch.log" "$R/trace.txt" | head -20
cat "$R/stage.log"
cd "$OUT" && tar czf gf3.tgz gf3 && rm -rf gf3 && ls -la "$OUT"

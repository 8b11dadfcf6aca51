#!/usr/bin/env bash
# The second device command (nvidia-h200), from the repository root with the stripped release
# binary carried in as target/carry/rocsweep. Everything lands in $OUT/gf4/ and $OUT/gf4.tgz:
# - run1/: rocsweep on shapes.toml (6 bf16 shapes, every cuBLASLt heuristic algorithm, 3 trials);
# - torch.csv, torch.log: benches/peer/peer_times.py on run1 (PyTorch's pick; PyTorch on cuBLASLt;
#   rocsweep's call made from Python; the placement and timing-loop variants), then
#   peer_times.py --pristine (pristine.log): each shape in a fresh process whose first device memory
#   is the shape's operands, placed as a rocsweep unit places them;
# - run2/: rocsweep again (run to run); table.md: benches/peer/side_by_side.py;
# - ncu-*.csv, ncu-summary.txt: Nsight Compute on the GEMM kernel (DRAM bytes read, L2 hit rate,
#   time, grid, clocks) in rocsweep's lt#0 units (m = 8 and 128) and in Python, m = 8 and 128, with
#   rocsweep's placement and with B moved to PyTorch's memory (lt_trace.py --replay-pristine).
set -u
B=${B:-target/carry/rocsweep}
D=reports/h200/timing/gemm-fidelity-3
R="$OUT/gf4"
mkdir -p "$R"
export PYTHONUNBUFFERED=1
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
log "run 1"
timeout 120 $B run $D/shapes.toml --out "$R/run1" --quiet --no-report > "$R/run1.log" 2>&1
log "pytorch (rc of run 1 $?)"
timeout 240 python3 benches/peer/peer_times.py "$R/run1" "$R/torch.csv" > "$R/torch.log" 2>&1
log "pristine (rc of pytorch $?)"
timeout 200 python3 benches/peer/peer_times.py --pristine "$R/run1" "$R/torch.csv" > "$R/pristine.log" 2>&1
log "run 2 (rc of pristine $?)"
timeout 100 $B run $D/shapes.toml --out "$R/run2" --quiet --no-report > "$R/run2.log" 2>&1
log "table (rc of run 2 $?)"
python3 benches/peer/side_by_side.py "$R/run1" "$R/torch.csv" "$R/run2" > "$R/table.md" 2>&1
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
MET=gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct,launch__grid_size,sm__cycles_elapsed.avg.per_second,dram__cycles_elapsed.avg.per_second
sed -e 's/^solver = "all"/solver = "lt#0"/' -e 's/^name = .*/name = "ncu-m8-m128"/' -e 's/^m = .*/m = [8, 128]/' -e 's/^n = .*/n = [4096, 4096]/' -e 's/^k = .*/k = [4096, 4096]/' $D/shapes.toml > "$R/ncu-shape.toml"
log "ncu rocsweep"
timeout 120 "$NCU" --target-processes all --kernel-name regex:nvjet --launch-skip 3 --launch-count 40 --cache-control none --clock-control none --metrics $MET --csv --log-file "$R/ncu-rocsweep.csv" $B run "$R/ncu-shape.toml" --out "$R/ncu-run" --set timing.trials=1 --quiet --no-report > "$R/ncu-rocsweep.log" 2>&1
for M in 8 128; do
  log "ncu python m=$M (rc $?)"
  CUBLASLT_WORKSPACE_SIZE=65536 CUBLAS_WORKSPACE_CONFIG=:4096:16 timeout 60 "$NCU" --target-processes all --kernel-name regex:nvjet --cache-control none --clock-control none --metrics $MET --csv --log-file "$R/ncu-python-m$M.csv" python3 benches/peer/lt_trace.py --replay-pristine "$R/run1" $M > "$R/ncu-python-m$M.log" 2>&1
done
log "done (rc $?)"
python3 benches/peer/lt_trace.py --ncu "$R/ncu-rocsweep.csv" "$R/ncu-python-m8.csv" "$R/ncu-python-m128.csv" > "$R/ncu-summary.txt" 2>&1
rm -f "$R"/*/run.lock
rm -rf "$R"/*/workers "$R"/*/caches
sed -n '/^Fidelity/,$p' "$R/table.md" | cut -c1-600
grep -h "failed\|Error\|error\|exit [1-9]" "$R/torch.log" "$R/pristine.log" | head -20
python3 - "$R/ncu-summary.txt" <<'PY'
import re, sys, collections
g = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r"(\S+)\[(\d+)\] #(\d+) (\S+) grid .*dram__bytes_read.sum=([\d,]+).*gpu__time_duration.sum=([\d,]+).*lts__t_sector_hit_rate.pct=([\d.]+)", line)
    if m:
        g[(m.group(1), m.group(2), m.group(4))].append((int(m.group(3)), int(m.group(5).replace(",", "")), int(m.group(6).replace(",", "")), float(m.group(7))))
    elif line.startswith("##"):
        print(line.strip())
for k, v in g.items():
    print(k, len(v), "kernels; dram MB, ns, L2 hit %:", " ".join(f"#{i}:{b/1e6:.1f}/{t}/{h:.0f}" for i, b, t, h in v))
PY
cat "$R/stage.log"
cd "$OUT" && tar czf gf4.tgz gf4 && rm -rf gf4 && ls -la "$OUT"

#!/usr/bin/env bash
# The third device command (nvidia-h200), from the repository root with the stripped release
# binary carried in as target/carry/rocsweep. Everything lands in $OUT/gf5/ and $OUT/gf5.tgz:
# - run1/: rocsweep on shapes.toml (6 bf16 shapes, every cuBLASLt heuristic algorithm, 3 trials);
# - run-ltenv/: rocsweep, lt#0 only, with peer_times' LT_ENV set (CUBLASLT_WORKSPACE_SIZE,
#   CUBLAS_WORKSPACE_CONFIG): does the environment of the cuBLASLt pass change rocsweep?
# - bare-*.log, bare.md: benches/peer/lt_bare.py, rocsweep's call, allocations and loop in Python
#   without PyTorch, with LT_ENV, with PyTorch imported, with PyTorch initialising CUDA;
# - torch.csv, torch.log, pristine.log: benches/peer/peer_times.py and its pristine pass;
# - run2/: rocsweep again (run to run); table.md: benches/peer/side_by_side.py.
set -u
B=${B:-target/carry/rocsweep}
D=reports/h200/timing/gemm-fidelity-3
R="$OUT/gf5"
mkdir -p "$R"
export PYTHONUNBUFFERED=1
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
SYS=$(ldconfig -p | awk '/libcublasLt\.so\.13 /{print $NF; exit}')
echo "system cuBLASLt: $SYS" > "$R/libraries.txt"
log "run 1"
timeout 120 $B run $D/shapes.toml --out "$R/run1" --quiet --no-report > "$R/run1.log" 2>&1
log "rocsweep lt#0 with LT_ENV (rc of run 1 $?)"
sed -e 's/^solver = "all"/solver = "lt#0"/' -e 's/^name = .*/name = "h200-gemm-fidelity-6-lt0"/' $D/shapes.toml > "$R/lt0-shapes.toml"
CUBLASLT_WORKSPACE_SIZE=65536 CUBLAS_WORKSPACE_CONFIG=:4096:16 timeout 60 $B run "$R/lt0-shapes.toml" --out "$R/run-ltenv" --quiet --no-report > "$R/run-ltenv.log" 2>&1
for MODE in bare ltenv --import-torch --torch-cuda; do
  log "lt_bare $MODE (rc $?)"
  if [ "$MODE" = ltenv ]; then
    CUBLASLT_WORKSPACE_SIZE=65536 CUBLAS_WORKSPACE_CONFIG=:4096:16 LT_BARE_LIB=$SYS timeout 60 python3 benches/peer/lt_bare.py "$R/run1" > "$R/bare-ltenv.log" 2>&1
  elif [ "$MODE" = bare ]; then
    LT_BARE_LIB=$SYS timeout 60 python3 benches/peer/lt_bare.py "$R/run1" > "$R/bare-bare.log" 2>&1
  else
    LT_BARE_LIB=$SYS timeout 60 python3 benches/peer/lt_bare.py "$R/run1" $MODE > "$R/bare$MODE.log" 2>&1
  fi
done
log "pytorch (rc $?)"
timeout 200 python3 benches/peer/peer_times.py "$R/run1" "$R/torch.csv" > "$R/torch.log" 2>&1
log "pristine (rc of pytorch $?)"
timeout 150 python3 benches/peer/peer_times.py --pristine "$R/run1" "$R/torch.csv" > "$R/pristine.log" 2>&1
log "run 2 (rc of pristine $?)"
timeout 100 $B run $D/shapes.toml --out "$R/run2" --quiet --no-report > "$R/run2.log" 2>&1
log "tables (rc of run 2 $?)"
python3 benches/peer/side_by_side.py "$R/run1" "$R/torch.csv" "$R/run2" > "$R/table.md" 2>&1
python3 benches/peer/lt_bare.py --table "$R/run1" "$R"/bare-*.log > "$R/bare.md" 2>&1
log done
rm -f "$R"/*/run.lock
rm -rf "$R"/*/workers "$R"/*/caches
cat "$R/bare.md"
python3 - "$R" <<'PY'
import csv, sys
R = sys.argv[1]
a = {r["m"]: r for r in csv.DictReader(open(f"{R}/run1/results.csv")) if r["solver"].startswith("lt#0")}
for r in csv.DictReader(open(f"{R}/run-ltenv/results.csv")):
    x = a.get(r["m"])
    if x and r["median_ms"] and x["median_ms"]:
        print("rocsweep lt#0 with LT_ENV / without: m", r["m"], f"{float(r['median_ms']) / float(x['median_ms']):.3f}", r["median_ms"], x["median_ms"])
PY
grep -h "Error\|error\|Traceback\|exit [1-9]" "$R"/bare*.log "$R/torch.log" "$R/pristine.log" | head -20
sed -n '/^Fidelity/,/^Placement/p' "$R/table.md" | cut -c1-400
sed -n '/^Operands placed/,$p' "$R/table.md" | cut -c1-400
cat "$R/stage.log"
cd "$OUT" && tar czf gf5.tgz gf5 && rm -rf gf5 && ls -la "$OUT"

#!/usr/bin/env bash
# The GEMM shapes the same-algorithm check left outside 3% (m = 8 and 32, n = k = 4096, bf16, with
# m = 1 and 128 beside them), in one device command: which cuBLASLt library files each side loads;
# rocsweep's lt#0 on those shapes (a run before and a run after); benches/peer/lt_probe.py, which
# times rocsweep's own cublasLtMatmul call from Python with each library copy, on operands made
# once or anew per trial, with PyTorch's K or rocsweep's, on the default stream and (second
# process) on a stream of its own. Everything lands in $OUT/gemm-lt-probe/ and its .tgz.
set -u
B=${B:-target/carry/rocsweep}
R="$OUT/gemm-lt-probe"
mkdir -p "$R"
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
cat > "$R/small-bf16.toml" <<'TOML'
name = "h200-gemm-small-bf16"
op = "gemm"
backend = "cuda"

[axes]
dtype = "bf16"
compute = "f32"
solver = "all"

[zip.shape]
m = [1,    8,    32,   128]
n = [4096, 4096, 4096, 4096]
k = [4096, 4096, 4096, 4096]

[timing]
warmup = 2
min_samples = 5
max_samples = 30
max_time = 0.1
TOML
log libraries
{
  echo "# rocsweep (LD_DEBUG=libs, selftest):"
  LD_DEBUG=libs timeout 60 $B selftest --backend cuda 2>&1 | grep -i "cublasLt" | grep -i "calling init\|trying file" | sort -u | head -20
  echo "# ldconfig:"; ldconfig -p | grep -i cublaslt
  echo "# files:"; ls -la /usr/local/cuda/lib64/libcublasLt* /usr/local/nvidia/lib64/libcublasLt* 2>&1
  python3 -c "import torch, glob, os; d = os.path.dirname(torch.__file__) + '/../nvidia'; [print(p, os.path.getsize(p)) for p in glob.glob(d + '/*/lib/libcublasLt*')]" 2>&1
  pip list 2>/dev/null | grep -i cublas
} > "$R/libraries.txt" 2>&1
SYS=$(LD_DEBUG=libs timeout 60 $B selftest --backend cuda 2>&1 | grep -o "calling init: [^ ]*libcublasLt[^ ]*" | head -1 | awk '{print $3}')
[ -n "$SYS" ] || SYS=$(ldconfig -p | awk '/libcublasLt\.so\.13 /{print $NF; exit}')
echo "# rocsweep's library: $SYS" >> "$R/libraries.txt"
sha256sum "$SYS" $(python3 -c "import torch, glob, os; print(' '.join(glob.glob(os.path.dirname(torch.__file__) + '/../nvidia/*/lib/libcublasLt.so*')))") >> "$R/libraries.txt" 2>&1
log "run 1"
timeout 120 $B run "$R/small-bf16.toml" --out "$R/run" --quiet --no-report > "$R/run1.log" 2>&1
log "probe (rc of run 1 $?)"
timeout 150 python3 benches/peer/lt_probe.py "$R/run" "$R/probe.csv" "$SYS" > "$R/probe.log" 2>&1
log "probe, side stream (rc $?)"
LT_PROBE_STREAM=side timeout 120 python3 benches/peer/lt_probe.py "$R/run" "$R/probe-side.csv" "$SYS" > "$R/probe-side.log" 2>&1
log "run 2 (rc $?)"
timeout 100 $B run "$R/small-bf16.toml" --out "$R/run-again" --quiet --no-report > "$R/run2.log" 2>&1
log "done (rc of run 2 $?)"
rm -f "$R"/*/run.lock
rm -rf "$R"/*/workers "$R"/*/caches
cat "$R/libraries.txt"
python3 - "$R" <<'PY'
import csv, sys
R = sys.argv[1]
for d in ("run", "run-again"):
    try:
        for r in csv.DictReader(open(f"{R}/{d}/results.csv")):
            if r["solver"].startswith("lt#0"):
                print(d, r["m"], r["solver"], r["median_ms"], r.get("trial_ms", ""), r["call_median_ms"], r["clock_mhz"], r.get("chosen", ""))
    except OSError as e:
        print(d, e)
PY
grep -h "^result\|^library" "$R/probe.log" "$R/probe-side.log"
cat "$R/stage.log"
cd "$OUT" && tar czf gemm-lt-probe.tgz gemm-lt-probe && rm -rf gemm-lt-probe

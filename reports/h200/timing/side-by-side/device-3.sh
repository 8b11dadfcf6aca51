#!/usr/bin/env bash
# The third device command of this report (nvidia-h200), from the repository root with the
# stripped release binary carried in as target/carry/rocsweep. Everything lands in $OUT/cmd3/ and
# $OUT/cmd3.tgz:
# - cudnn/: the four f16 1x1 convolutions closest to 0.98x in cmd1 and cmd2, every configuration,
#   3 trials, verification off, on the system's cuDNN (9.14, rocsweep's) and on PyTorch's own
#   (9.19, LD_LIBRARY_PATH), then PyTorch's times; tables for each against the same PyTorch times.
# - kernels/: Nsight Compute on rocsweep's eng58 units and on PyTorch's pick for 64->64 1x1 at
#   56x56 f16: kernel names and durations (gpu__time_duration), both sides under the same tool.
# - bare/: benches/peer/lt_bare.py (the warm graph protocol: its driver loop has no held one),
#   rocsweep's cuBLASLt call and loop from Python after each kind of PyTorch GPU work alone.
set -u
B=${B:-target/carry/rocsweep}
R="$OUT/cmd3"
mkdir -p "$R/cudnn" "$R/kernels" "$R/bare"
export PYTHONUNBUFFERED=1
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
RUN=(run --quiet --no-report --set verify.enabled=false)

C="$R/cudnn"
cat > "$C/four.toml" <<'TOML'
name = "h200-conv-1x1-f16-four"
op = "conv2d"
backend = "cuda"
[axes]
direction = "fwd"
n = 32
dtype = "f16"
kernel = 1
pad = 0
stride = 1
solver = "all"
[zip.layer]
c_in  = [64, 256, 512, 256]
c_out = [64, 64,  128, 1024]
h     = [56, 56,  28,  14]
[timing]
warmup = 2
min_samples = 5
max_samples = 30
max_time = 0.1
TOML
log "system cuDNN"
timeout 60 "$B" "${RUN[@]}" "$C/four.toml" --out "$C/system" > "$C/system.log" 2>&1
lib=$(python3 - <<'PY'
import torch
x = torch.zeros(1, 1, 8, 8, device="cuda")
torch.nn.functional.conv2d(x, torch.zeros(1, 1, 3, 3, device="cuda"))
for line in open("/proc/self/maps"):
    path = line.split()[-1]
    if "/libcudnn.so" in path:
        print(path)
        break
PY
)
log "torch's libcudnn: $lib"
if [ -n "$lib" ]; then
  mkdir -p /tmp/torch-cudnn && ln -sf "$lib" /tmp/torch-cudnn/libcudnn.so
  LD_LIBRARY_PATH="/tmp/torch-cudnn:$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$B" probe > "$C/probe-torch-cudnn.txt" 2>&1
  LD_LIBRARY_PATH="/tmp/torch-cudnn:$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 60 "$B" "${RUN[@]}" "$C/four.toml" --out "$C/torch-cudnn" > "$C/torch-cudnn.log" 2>&1
  log "torch-cudnn run rc $?"
fi
timeout 60 python3 benches/peer/peer_times.py "$C/system" "$C/torch.csv" > "$C/torch.log" 2>&1
log "pytorch rc $?"
timeout 60 "$B" "${RUN[@]}" "$C/four.toml" --out "$C/system-again" > "$C/system-again.log" 2>&1
log "system again rc $?"
python3 benches/peer/side_by_side.py "$C/system" "$C/torch.csv" "$C/system-again" > "$C/table-system.md" 2>&1
[ -s "$C/torch-cudnn/results.csv" ] && python3 benches/peer/side_by_side.py "$C/torch-cudnn" "$C/torch.csv" > "$C/table-torch-cudnn.md" 2>&1

K="$R/kernels"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
echo "ncu: ${NCU:-none}" > "$K/tools.txt"
if [ -n "$NCU" ]; then
  sed -e 's/^c_in  = .*/c_in  = [64]/' -e 's/^c_out = .*/c_out = [64]/' -e 's/^h     = .*/h     = [56]/' \
      -e 's/^solver = .*/solver = ["eng58-k25=0", "eng58-k25=1", "eng58-k25=2"]/' -e 's/^name = .*/name = "ncu-64"/' "$C/four.toml" > "$K/one.toml"
  log "ncu rocsweep"
  timeout 90 "$NCU" --target-processes all --kernel-name regex:'nvjet|xmma|cutlass|sm90|conv|gemm' --launch-skip 20 --launch-count 30 \
    --metrics gpu__time_duration.sum --csv --log-file "$K/ncu-rocsweep.csv" "$B" "${RUN[@]}" "$K/one.toml" --set timing.trials=1 --out "$K/run" > "$K/ncu-rocsweep.log" 2>&1
  log "ncu pytorch (rc $?)"
  timeout 90 "$NCU" --nvtx --nvtx-include "timed/" --metrics gpu__time_duration.sum --csv --log-file "$K/ncu-torch.csv" \
    python3 benches/peer/conv_kernels.py "$C/system" c_in=64 c_out=64 h=56 > "$K/ncu-torch.log" 2>&1
  log "ncu done (rc $?)"
fi

G="$R/bare/run"
sed -e 's/^solver = "all"/solver = "lt#0"/' -e 's/^name = .*/name = "h200-lt0-six"/' reports/h200/timing/gemm-fidelity-3/shapes.toml > "$R/bare/shapes.toml"
log "bare: rocsweep lt#0 on the six shapes"
timeout 60 "$B" run --quiet --no-report "$R/bare/shapes.toml" --out "$G" > "$G.log" 2>&1
export LT_BARE_LIB=$(ldconfig -p | awk '/libcublasLt\.so\.13 /{print $NF; exit}')
export PEER_GRAPH_PROTOCOL=warm
log "lt_bare bare (rc $?)"
timeout 40 python3 benches/peer/lt_bare.py "$G" > "$R/bare/bare-bare.log" 2>&1
log "lt_bare torch-cuda (rc $?)"
timeout 40 python3 benches/peer/lt_bare.py "$G" --torch-cuda > "$R/bare/bare-torch-cuda.log" 2>&1
for a in matmul matmul-lt graph stream sleep alloc matmul,matmul-lt,graph,stream,sleep,alloc; do
  log "lt_bare --after $a (rc $?)"
  timeout 40 python3 benches/peer/lt_bare.py "$G" --torch-cuda --after "$a" > "$R/bare/bare-after-$a.log" 2>&1
done
log "bare table (rc $?)"
python3 benches/peer/lt_bare.py --table "$G" "$R"/bare/bare-*.log > "$R/bare/bare.md" 2>&1
log done
rm -f "$R"/*/*/run.lock
rm -rf "$R"/*/*/workers "$R"/*/*/caches
grep -E "^- " "$C"/table-*.md
grep -h -A3 '^| shape' "$C"/table-*.md | cut -c1-300
cut -c1-250 "$K"/ncu-*.csv 2>/dev/null | grep -v '^==' | head -30
tail -3 "$K"/*.log | cut -c1-300
cat "$R/bare/bare.md"
cat "$R/stage.log"
cd "$OUT" && tar czf cmd3.tgz cmd3 && rm -rf cmd3 && ls -la "$OUT"

#!/usr/bin/env bash
# The second device command of this report (nvidia-h200), from the repository root with the
# stripped release binary carried in as target/carry/rocsweep. Everything lands in $OUT/cmd2/ and
# $OUT/cmd2.tgz:
# - conv-f16/, conv-f32/: ResNet-50's convolutions run twice (A, B) with verification off (cmd1
#   verified them; verification costs four fifths of a conv run and touches no sample) and
#   PyTorch's times twice (torch1 before B, torch2 after B), so that both sides' run to run is
#   measured in one command; tables A/torch1/B and B/torch2.
# - kernels/: the kernels rocsweep's eng58 units and PyTorch's pick run for 64->64 1x1 at 56x56
#   f16 (cmd1's one shape under 0.98x), under nsys where the machine has it, with their durations.
# - bare/: benches/peer/lt_bare.py, rocsweep's cuBLASLt call and loop from Python, after each kind
#   of PyTorch GPU work alone (--after), against rocsweep's lt#0 on six bf16 shapes.
set -u
B=${B:-target/carry/rocsweep}
D=reports/h200/timing/side-by-side
R="$OUT/cmd2"
mkdir -p "$R/conv-f16" "$R/conv-f32" "$R/kernels" "$R/bare"
export PYTHONUNBUFFERED=1
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
RUN=(run --quiet --no-report --set verify.enabled=false)
for d in f16 f32; do
  C="$R/conv-$d"
  log "conv $d A"
  timeout 90 "$B" "${RUN[@]}" sweeps/h200-resnet50-conv.toml --axis "dtype=$d" --out "$C/run-a" > "$C/run-a.log" 2>&1
  log "conv $d pytorch 1 (rc $?)"
  timeout 60 python3 benches/peer/peer_times.py "$C/run-a" "$C/torch1.csv" > "$C/torch1.log" 2>&1
  log "conv $d B (rc $?)"
  timeout 90 "$B" "${RUN[@]}" sweeps/h200-resnet50-conv.toml --axis "dtype=$d" --out "$C/run-b" > "$C/run-b.log" 2>&1
  log "conv $d pytorch 2 (rc $?)"
  timeout 60 python3 benches/peer/peer_times.py "$C/run-a" "$C/torch2.csv" > "$C/torch2.log" 2>&1
  log "conv $d tables (rc $?)"
  python3 benches/peer/side_by_side.py "$C/run-a" "$C/torch1.csv" "$C/run-b" > "$C/table-a.md" 2>&1
  python3 benches/peer/side_by_side.py "$C/run-b" "$C/torch2.csv" > "$C/table-b.md" 2>&1
done

log "kernels"
K="$R/kernels"
cat > "$K/one.toml" <<'TOML'
name = "h200-conv-64-64-1x1-f16"
op = "conv2d"
backend = "cuda"
[axes]
direction = "fwd"
n = 32
c_in = 64
c_out = 64
h = 56
kernel = 1
pad = 0
stride = 1
dtype = "f16"
solver = ["eng58-k25=0", "eng58-k25=1", "eng58-k25=2", "implicit_precomp_gemm"]
[timing]
trials = 1
TOML
NSYS=$(command -v nsys || ls /opt/nvidia/nsight-systems/*/bin/nsys /usr/local/cuda/bin/nsys 2>/dev/null | head -1)
echo "nsys: ${NSYS:-none}" > "$K/tools.txt"
timeout 60 python3 benches/peer/conv_kernels.py "$R/conv-f16/run-a" c_in=64 c_out=64 h=56 kernel=1 stride=1 dtype=f16 > "$K/torch-kernels.log" 2>&1
if [ -n "$NSYS" ]; then
  timeout 90 "$NSYS" profile -t cuda --cuda-graph-trace node -o "$K/rocsweep" --force-overwrite true "$B" "${RUN[@]}" "$K/one.toml" --out "$K/run" > "$K/nsys-rocsweep.log" 2>&1
  log "nsys pytorch (rc $?)"
  timeout 90 "$NSYS" profile -t cuda,nvtx --capture-range nvtx --nvtx-capture timed -o "$K/torch" --force-overwrite true python3 benches/peer/conv_kernels.py "$R/conv-f16/run-a" c_in=64 c_out=64 h=56 kernel=1 stride=1 dtype=f16 > "$K/nsys-torch.log" 2>&1
  log "nsys stats (rc $?)"
  for f in rocsweep torch; do
    timeout 60 "$NSYS" stats --report cuda_gpu_kern_sum --format csv --output "$K/$f" "$K/$f.nsys-rep" > "$K/stats-$f.log" 2>&1
  done
  rm -f "$K"/*.sqlite
fi

log "bare: rocsweep lt#0 on the six shapes"
G="$R/bare/run"
sed -e 's/^solver = "all"/solver = "lt#0"/' -e 's/^name = .*/name = "h200-lt0-six"/' reports/h200/timing/gemm-fidelity-3/shapes.toml > "$R/bare/shapes.toml"
timeout 90 "$B" run --quiet --no-report "$R/bare/shapes.toml" --out "$G" > "$G.log" 2>&1
SYS=$(ldconfig -p | awk '/libcublasLt\.so\.13 /{print $NF; exit}')
export LT_BARE_LIB=$SYS
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
for d in f16 f32; do echo "== $d"; grep -E "^- " "$R/conv-$d/table-a.md" "$R/conv-$d/table-b.md"; done
cat "$R/kernels/torch-kernels.log" | cut -c1-400; head -20 "$R/kernels/"*.csv 2>/dev/null | cut -c1-300
cat "$R/bare/bare.md"
cat "$R/stage.log"
cd "$OUT" && tar czf cmd2.tgz cmd2 && rm -rf cmd2 && ls -la "$OUT"

#!/usr/bin/env bash
# The device command (nvidia-h200), from the repository root with the stripped release binary of
# 41f8d8c (graph upload, one timed replay, no warm replay) carried in as target/carry/rocsweep.
# gemm-fidelity-4's experiment again (its shapes.toml and shapes-rotating.toml: 13 GEMM shapes,
# lt#0, warm and rotating_mib = 1024), both sides in this command. Everything lands in $OUT/gf5/,
# then $OUT/gf5.tgz:
# - probe.txt: does PyTorch expose CUDAGraph.raw_cuda_graph_exec(), and does cuGraphUpload on it
#   work (then a replay computes the right thing)?
# - libraries.txt: the system cuBLASLt (ldconfig) and PyTorch's wheel copy, realpaths, sha256sum;
# - run-warm/, run-rot/: rocsweep warm and rotating; run-warm2/, run-rot2/: both again (run to run);
# - torch-warm.csv, torch-rot.csv: peer_times.py with --graph-protocol upload (rocsweep's new
#   protocol), on run-warm and run-rot;
# - torch-warm-oldwarm.csv: peer_times.py --graph-protocol warm (the old protocol, as gemm-fidelity-4)
#   on run-warm: the protocol change on the PyTorch side, same command;
# - torch-warm-held.csv, torch-rot-held.csv: --graph-protocol held (uploaded, stream held by a spin
#   kernel, timed replay queued: launch-free with no warm replay), a diagnostic;
# - bare-*.log: lt_bare.py (rocsweep's call and loop, upload protocol) on 1/8/32x4096x4096 bf16 with
#   the system cuBLASLt and with PyTorch's wheel copy, without PyTorch and with PyTorch initialising
#   CUDA, each twice (sys, wheel, sys, wheel);
# - cast/: a plain CUDA sweep (sweeps/h200-probe-cast.toml, 12 units) with its report.
set -u
B=${B:-target/carry/rocsweep}
D=reports/h200/timing/gemm-fidelity-4
R="$OUT/gf5"
mkdir -p "$R"
export PYTHONUNBUFFERED=1 PEER_VARIANTS=0
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)" > "$R/versions.txt" 2>&1
$B --version >> "$R/versions.txt" 2>&1
log "probe"
python3 - > "$R/probe.txt" 2>&1 <<'P'
import ctypes, torch
print("torch", torch.__version__, "has raw_cuda_graph_exec:", hasattr(torch.cuda.CUDAGraph, "raw_cuda_graph_exec"))
a = torch.ones(1 << 20, device="cuda"); s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
g = torch.cuda.CUDAGraph()
with torch.cuda.stream(s):
    g.capture_begin(); a.mul_(3); g.capture_end()
torch.cuda.synchronize()
ex = g.raw_cuda_graph_exec(); print("raw_cuda_graph_exec ->", hex(ex))
f = ctypes.CDLL("libcuda.so.1").cuGraphUpload; f.argtypes = [ctypes.c_void_p, ctypes.c_void_p]; f.restype = ctypes.c_int
rc = f(ctypes.c_void_p(ex), ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)); print("cuGraphUpload rc", rc)
g.replay(); torch.cuda.synchronize(); print("after one replay a[0] =", a[0].item(), "(3.0 expected)")
P
cat "$R/probe.txt"
SYS=$(ldconfig -p | awk '/libcublasLt\.so\.13 /{print $NF; exit}')
WHL=$(python3 -c "import glob, os, torch; print(sorted(glob.glob(os.path.join(os.path.dirname(torch.__file__), '..', 'nvidia', '*', 'lib', 'libcublasLt.so.13')))[0])")
{ echo "system: $SYS -> $(readlink -f "$SYS")"; echo "wheel: $WHL -> $(readlink -f "$WHL")";
  sha256sum "$(readlink -f "$SYS")" "$(readlink -f "$WHL")"; ls -lL "$SYS" "$WHL"; ldconfig -p | grep -i cublas; } > "$R/libraries.txt" 2>&1
log "rocsweep warm"
timeout 100 $B run $D/shapes.toml --out "$R/run-warm" --quiet --no-report > "$R/run-warm.log" 2>&1
log "rocsweep rotating (rc of warm $?)"
timeout 100 $B run $D/shapes-rotating.toml --out "$R/run-rot" --quiet --no-report > "$R/run-rot.log" 2>&1
log "pytorch warm, upload (rc of rotating $?)"
timeout 150 python3 benches/peer/peer_times.py --graph-protocol upload "$R/run-warm" "$R/torch-warm.csv" > "$R/torch-warm.log" 2>&1
log "pytorch rotating, upload (rc $?)"
timeout 150 python3 benches/peer/peer_times.py --graph-protocol upload --rotating-mib 1024 "$R/run-rot" "$R/torch-rot.csv" > "$R/torch-rot.log" 2>&1
log "rocsweep warm 2 (rc $?)"
timeout 100 $B run $D/shapes.toml --out "$R/run-warm2" --quiet --no-report > "$R/run-warm2.log" 2>&1
log "rocsweep rotating 2 (rc $?)"
timeout 100 $B run $D/shapes-rotating.toml --out "$R/run-rot2" --quiet --no-report > "$R/run-rot2.log" 2>&1
log "pytorch warm, old warm-replay protocol (rc $?)"
timeout 150 python3 benches/peer/peer_times.py --graph-protocol warm "$R/run-warm" "$R/torch-warm-oldwarm.csv" > "$R/torch-warm-oldwarm.log" 2>&1
log "pytorch warm, held (rc $?)"
timeout 150 python3 benches/peer/peer_times.py --graph-protocol held "$R/run-warm" "$R/torch-warm-held.csv" > "$R/torch-warm-held.log" 2>&1
log "pytorch rotating, held (rc $?)"
timeout 150 python3 benches/peer/peer_times.py --graph-protocol held --rotating-mib 1024 "$R/run-rot" "$R/torch-rot-held.csv" > "$R/torch-rot-held.log" 2>&1
log "lt_bare (rc $?)"
SH=1x4096x4096:bf16,8x4096x4096:bf16,32x4096x4096:bf16
for i in 1 2; do
  for MODE in bare --torch-cuda; do
    for L in sys wheel; do
      LIB=$SYS; [ $L = wheel ] && LIB=$WHL
      LT_BARE_LIB=$LIB LT_BARE_LABEL=$L timeout 60 python3 benches/peer/lt_bare.py "$R/run-warm" $MODE --shapes $SH > "$R/bare-$L$MODE-$i.log" 2>&1
      log "lt_bare $L $MODE $i rc $?"
    done
  done
done
python3 benches/peer/lt_bare.py --table "$R/run-warm" "$R"/bare-*.log > "$R/bare.md" 2>&1
log "cast sweep"
$B run sweeps/h200-probe-cast.toml --dry-run > "$R/cast-dry.txt" 2>&1
timeout 90 $B run sweeps/h200-probe-cast.toml --out "$R/cast" > "$R/cast.log" 2>&1
log "cast sweep rc $?"
python3 benches/peer/rotating_table.py "$R/run-warm" "$R/torch-warm.csv" "$R/run-rot" "$R/torch-rot.csv" "$R/run-rot2" > "$R/table.md" 2>&1
log done
rm -f "$R"/*/run.lock
rm -rf "$R"/*/workers "$R"/*/caches
grep -h "Error\|error\|Traceback\|WARNING\|exit [1-9]\|failed" "$R"/torch-*.log "$R"/bare-*.log | sort | uniq -c | head -20
for f in run-warm run-rot run-warm2 run-rot2 cast; do echo "== $f"; tail -2 "$R/$f.log"; done
cat "$R/libraries.txt" "$R/bare.md"
cut -c1-300 "$R/table.md" | head -20
cat "$R/stage.log"
cd "$OUT" && tar czf gf5.tgz gf5 && rm -rf gf5 && ls -la "$OUT"

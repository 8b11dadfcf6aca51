#!/usr/bin/env bash
# Longer kernels or longer gaps? (issue 12: the same cuBLASLt call reads about 1.07 on
# 8x4096x4096 and 32x4096x4096 bf16 in a process where PyTorch has worked.) One device command
# (nvidia-h200), from the repository root with the stripped release binary carried in as
# target/carry/rocsweep:
#   rocsweep lt#0 on the six GEMM shapes of reports/h200/timing/gemm-fidelity-3 (the reference);
#   benches/peer/lt_bare.py (rocsweep's call, placement and loop from Python) with --timeline, in
#   a process where PyTorch only initialised CUDA and in one where it first did all six kinds of
#   its GPU work (--after), twice each, alternating: the times against rocsweep's, and each
#   kernel's duration and the gaps between kernels (torch.profiler, CUPTI);
#   PyTorch's own times and timelines for the same shapes (peer_times.py, PEER_VARIANTS=0).
# Everything lands in $OUT/kernel-timeline/ and its .tgz.
set -u
B=${B:-target/carry/rocsweep}
R="$OUT/kernel-timeline"
mkdir -p "$R"
export PYTHONUNBUFFERED=1
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
sed -e 's/^name = .*/name = "timeline-gemm"/' reports/h200/timing/gemm-fidelity-3/cmd3/lt0-shapes.toml > "$R/gemm.toml"
G="$R/gemm-lt0"
log "rocsweep lt#0"
timeout 60 "$B" run --quiet --no-report --set verify.enabled=false "$R/gemm.toml" --out "$G" > "$G.log" 2>&1
log "rocsweep rc $?"
export LT_BARE_LIB=$(ldconfig -p | awk '/libcublasLt\.so\.13 /{print $NF; exit}')
export PEER_GRAPH_PROTOCOL=warm
ALL=matmul,matmul-lt,graph,stream,sleep,alloc
for pass in 1 2; do
  log "lt_bare torch-cuda, pass $pass"
  timeout 90 python3 benches/peer/lt_bare.py "$G" --torch-cuda --timeline > "$R/bare-torch-cuda-$pass.log" 2>&1
  log "lt_bare after all six, pass $pass (rc $?)"
  timeout 90 python3 benches/peer/lt_bare.py "$G" --torch-cuda --after "$ALL" --timeline > "$R/bare-after-all-$pass.log" 2>&1
  log "rc $?"
done
unset PEER_GRAPH_PROTOCOL
log "pytorch"
PEER_VARIANTS=0 timeout 150 python3 benches/peer/peer_times.py "$G" "$R/torch.csv" > "$R/torch.log" 2>&1
log "pytorch rc $?"
python3 benches/peer/lt_bare.py --table "$G" "$R"/bare-*.log > "$R/bare.md" 2>&1
python3 - "$R" > "$R/timeline.md" 2>&1 <<'PY'
import csv, glob, json, sys
sys.path.insert(0, "benches/peer")
from lt_ctypes import key_of
R = sys.argv[1]
roc = {key_of(r): float(r["median_ms"]) * 1000 for r in csv.DictReader(open(f"{R}/gemm-lt0/results.csv")) if r["median_ms"]}
torch = {r["key"]: r for r in csv.DictReader(open(f"{R}/torch.csv"))} if glob.glob(f"{R}/torch.csv") else {}
print("| shape | process | kernels (median us each) | busy us per call | median gap us | rocsweep us per call |")
print("|---|---|---|---:|---:|---:|")
for p in sorted(glob.glob(f"{R}/bare-*.log")):
    for line in open(p):
        if line.startswith("TIMELINE "):
            x = json.loads(line[9:])
            ks = "; ".join(f"{n.split('<')[0][:40]} {v[0]}" for n, v in x["kernels"].items())
            short = "x".join(x["key"].split(";")[i].split("=")[1] for i in range(3))
            print(f"| {short} | {p.rsplit('/', 1)[1][5:-4]} | {ks} | {x['busy_us']} | {x['gap_us']} | {roc.get(x['key'], 0):.3f} |")
for key, r in torch.items():
    short = "x".join(key.split(";")[i].split("=")[1] for i in range(3))
    print(f"| {short} | PyTorch on cuBLASLt (peer_times) | {r.get('torch_lt_kernels', '')[:80]} | {r.get('torch_lt_busy_us')} | {r.get('torch_lt_gap_us')} | {roc.get(key, 0):.3f} |")
PY
cat "$R/bare.md" "$R/timeline.md"
log done
rm -f "$R"/*/run.lock
rm -rf "$R"/*/workers "$R"/*/caches
cd "$OUT" && tar czf kernel-timeline.tgz kernel-timeline && rm -rf kernel-timeline && ls -la "$OUT"

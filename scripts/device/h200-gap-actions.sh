#!/usr/bin/env bash
# Which PyTorch work widens the gap between consecutive kernels of a graph replay (0.10-0.13 us in
# a process where PyTorch only initialised CUDA, 0.29 us after all six kinds of its GPU work:
# scripts/device/h200-kernel-timeline.sh)? One device command (nvidia-h200), from the repository
# root with the stripped release binary carried in as target/carry/rocsweep: rocsweep lt#0 on two
# GEMM shapes (8x4096x4096 and 512x1024x512 bf16), then benches/peer/lt_bare.py --timeline on
# them after each action alone (ACTS; SH the shapes), twice. Everything lands in $OUT/gap-actions/ and its .tgz.
set -u
B=${B:-target/carry/rocsweep}
R="$OUT/${NAME:-gap-actions}"
mkdir -p "$R"
export PYTHONUNBUFFERED=1
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
sed -e 's/^name = .*/name = "gap-gemm"/' reports/h200/timing/gemm-fidelity-3/cmd3/lt0-shapes.toml > "$R/gemm.toml"
G="$R/gemm-lt0"
timeout 60 "$B" run --quiet --no-report --set verify.enabled=false "$R/gemm.toml" --out "$G" > "$G.log" 2>&1
log "rocsweep rc $?"
export LT_BARE_LIB=$(ldconfig -p | awk '/libcublasLt\.so\.13 /{print $NF; exit}')
export PEER_GRAPH_PROTOCOL=warm
SH=${SH:-8x4096x4096:bf16,512x1024x512:bf16}
ACTS=${ACTS:-none matmul matmul-lt graph stream sleep alloc}
for pass in 1 2; do
  for a in $ACTS; do
    after=(); [ "$a" != none ] && after=(--after "$a")
    timeout 60 python3 benches/peer/lt_bare.py "$G" --torch-cuda "${after[@]}" --timeline --shapes "$SH" > "$R/bare-$a-$pass.log" 2>&1
    log "$a pass $pass rc $?"
  done
done
for f in "$R"/bare-*.log; do
  grep -h '^TIMELINE' "$f" | python3 -c '
import json, sys
for line in sys.stdin:
    x = json.loads(line[9:])
    print("%-28s %-22s gap %s busy %s" % (sys.argv[1], x["key"][:22], x["gap_us"], x["busy_us"]))' "$(basename "$f" .log)"
done | tee "$R/gaps.txt"
python3 benches/peer/lt_bare.py --table "$G" "$R"/bare-*.log > "$R/bare.md" 2>&1
tail -12 "$R/bare.md"
rm -f "$R"/*/run.lock; rm -rf "$R"/*/workers "$R"/*/caches
cd "$OUT" && tar czf "${NAME:-gap-actions}.tgz" "${NAME:-gap-actions}" && rm -rf "${NAME:-gap-actions}"

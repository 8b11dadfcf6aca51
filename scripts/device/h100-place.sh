#!/usr/bin/env bash
# Issue 29 point 6: is torch's 0.7% lead on the f32 GEMMs of reports/h100x4-layers where the
# operands lie? One device command, every GPU of the host at once (one process tree per card),
# binary carried as target/carry/split/rocsweep.xz. Per card:
#   1. scripts/device/place-f32.toml over cuda + torch, 2 trials, and its per-shape ratios;
#   2. the same sweep over cuda alone, once per worker pad (ROCSWEEP_DEBUG_PAD_MIB: memory held
#      through cuMemAlloc before the first unit, so the units' buffers get other pages;
#      ROCSWEEP_DEBUG_PAD_POOL_MIB: held from the stream's pool, so their addresses move too);
#   3. scripts/device/place_probe.py: torch.mm with A, B, C at 24 offsets in one slab.
# nvidia-smi samples clocks, power and throttle reasons all along (smi.csv).
set -u
R="$OUT/place"; mkdir -p "$R"
python3 -c "import lzma;open('/tmp/rs','wb').write(lzma.open('target/carry/split/rocsweep.xz').read())" && chmod +x /tmp/rs
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv -lms 250 > "$R/smi.csv" 2>&1 &
SMI=$!
export ROCSWEEP_PYTHON=$(command -v python3) PYTHONUNBUFFERED=1
card() {
  local g=$1 D="$R/gpu$1"; mkdir -p "$D"
  export CUDA_VISIBLE_DEVICES=$g
  timeout 150 /tmp/rs run --quiet --no-report --trials 2 scripts/device/place-f32.toml --out "$D/layers" \
    > "$D/layers.log" 2>&1; echo "layers rc $?" >> "$D/rc.txt"
  for p in none-a sync-256 sync-1024 sync-4096 pool-256 pool-1024 pool-4096 none-b; do
    local env=()
    case $p in
      sync-*) env=(ROCSWEEP_DEBUG_PAD_MIB=${p#sync-}) ;;
      pool-*) env=(ROCSWEEP_DEBUG_PAD_POOL_MIB=${p#pool-}) ;;
    esac
    env ${env[@]+"${env[@]}"} timeout 60 /tmp/rs run --quiet --no-report --backend cuda --trials 1 \
      scripts/device/place-f32.toml --out "$D/pad-$p" > "$D/pad-$p.log" 2>&1; echo "pad-$p rc $?" >> "$D/rc.txt"
  done
  timeout 120 python3 scripts/device/place_probe.py 24 7 > "$D/probe.txt" 2>&1; echo "probe rc $?" >> "$D/rc.txt"
  rm -f "$D"/*/run.lock; rm -rf "$D"/*/workers
  python3 scripts/layer_ratio.py "$D/layers" > "$D/layers-ratio.txt" 2>&1
}
N=$(nvidia-smi -L | grep -c '^GPU')
for g in $(seq 0 $((N - 1))); do card "$g" & done
wait $(jobs -p | grep -v "^$SMI$")
kill $SMI
python3 - "$R" <<'PY'
import csv, glob, os, sys
R = sys.argv[1]
for d in sorted(glob.glob(f"{R}/gpu*")):
    print(f"== {os.path.basename(d)}")
    for f in sorted(glob.glob(f"{d}/*/results.csv")):
        for r in csv.DictReader(open(f)):
            if r["solver"] in ("cublas", "torch-matmul", "torch-linear") or r["solver"].startswith("lt#0"):
                print(f"{os.path.basename(os.path.dirname(f)):14} {r['m']}x{r['n']}x{r['k']} {r['backend']:5} "
                      f"{r['solver']:14} {r['status']:4} {r['median_ms']:>10} trials {r['trial_ms']} clk {r['clock_mhz']}")
    print(open(f"{d}/rc.txt").read())
    print(open(f"{d}/layers-ratio.txt").read())
    print(open(f"{d}/probe.txt").read())
PY
tar czf "$OUT/place.tgz" -C "$OUT" place && rm -rf "$R"

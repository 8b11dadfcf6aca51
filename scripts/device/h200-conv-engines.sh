#!/usr/bin/env bash
# The H200 conv comparison with cuDNN's backend-API engine configurations (issue 4), run on the
# device machine from the repository root with the stripped release binary carried in as
# target/carry/rocsweep, in one device command (at most 10 minutes):
#   1. nvidia-smi and `rocsweep probe` (the cuDNN the binary loads);
#   2. h200-conv-engine-directions: every direction/layout/dtype with the engine configurations
#      and the legacy algorithms (seconds); if no engine unit is ok it stops there and keeps
#      cuDNN's debug log of one case;
#   3. PyTorch's conv timings (benches/peer/torch_peer.py --only conv);
#   4. h200-conv until the deadline less TAIL seconds (stopped with SIGINT, so the running
#      unit finishes and `run --resume` could continue it);
#   5. with what is left: h200-conv with `--axis solver=engine_heuristic` (mode A's first
#      configuration per shape) on PyTorch's own cuDNN (LD_LIBRARY_PATH to the libcudnn that
#      torch loads, found in /proc/self/maps) instead of the system's.
# Everything is packed into $OUT/runs.tgz; reports are drawn afterwards with `rocsweep report`.
set -u
B=target/carry/rocsweep
deadline=${DEADLINE:-580} # seconds of this command, leaving time to pack
R="$OUT/runs"
mkdir -p "$R"
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
left() { # seconds left before the deadline, at least 1 (timeout 0 would mean no limit)
  local t=$((deadline - SECONDS))
  [ "$t" -lt 1 ] && t=1
  echo "$t"
}
counts() { # run dir -> statuses of legacy and engine units
  python3 - "$1" <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1] + "/results.csv")))
c = collections.Counter(("engine" if r["solver"].startswith("eng") else "legacy", r["status"]) for r in rows)
print(sys.argv[1].rstrip("/").split("/")[-1], len(rows), dict(sorted(c.items())))
eng = {r["solver"] for r in rows if r["solver"].startswith("eng")}
print("   distinct engine configurations %d, with knob choices %d, e.g. %s" % (len(eng), sum("-k" in e for e in eng), sorted(eng)[:3]))
bad = [r for r in rows if r["solver"].startswith("eng") and r["status"] not in ("ok", "unsupported")]
for r in bad[:8]:
    print("  ", r["direction"], r["layout"], r["dtype"], r["solver"], r["status"], r["phase"], r["error"][:200])
uns = collections.Counter(r["error"][:90] for r in rows if r["solver"].startswith("eng") and r["status"] == "unsupported")
for e, n in uns.most_common(5):
    print("   unsupported x%d: %s" % (n, e))
PY
}
pack() {
  rm -f "$R"/*/run.lock
  tar czf "$OUT/runs.tgz" -C "$OUT" runs && rm -rf "$R"
  exit 0
}

nvidia-smi > "$R/nvidia-smi.txt" 2>&1
$B probe > "$R/probe.txt" 2>&1
log "probe: $(grep -i cudnn "$R/probe.txt" | head -1)"
timeout -s INT -k 20 60 $B run sweeps/h200-conv-engine-directions.toml \
  --out "$R/h200-conv-engine-directions" --quiet --no-report > "$R/directions.log" 2>&1
log "directions rc=$?"
counts "$R/h200-conv-engine-directions" | tee -a "$R/stage.log"
ok=$(python3 -c "import csv,sys; print(sum(r['status']=='ok' and r['solver'].startswith('eng') for r in csv.DictReader(open(sys.argv[1]))))" "$R/h200-conv-engine-directions/results.csv")
if [ "${ok:-0}" = 0 ]; then
  log "no engine unit ok: cuDNN debug log of one case, then stop"
  CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG="$R/cudnn-debug.log" timeout -s INT -k 10 60 \
    $B run sweeps/h200-conv-engine-directions.toml --axis direction=fwd --axis layout=nchw \
    --axis dtype=f32 --axis groups=1 --out "$R/diag" --quiet --no-report > "$R/diag.log" 2>&1
  truncate -s 8M "$R/cudnn-debug.log" 2>/dev/null
  pack
fi
PYTHONUNBUFFERED=1 python3 benches/peer/torch_peer.py "$R/torch_peer.csv" --only conv > "$R/torch_peer.log" 2>&1
log "torch_peer rc=$? $(tail -1 "$R/torch_peer.log")"
t=$(( $(left) - ${TAIL:-30} ))
[ "$t" -lt 1 ] && t=1
log "h200-conv for ${t}s"
timeout -s INT -k 60 "$t" $B run sweeps/h200-conv.toml --out "$R/h200-conv" --quiet --no-report > "$R/h200-conv.log" 2>&1
log "h200-conv rc=$?"
counts "$R/h200-conv" | tee -a "$R/stage.log"
t=$(left)
if [ "$t" -gt 20 ]; then
  lib=$(python3 - <<'PY'
import torch
torch.backends.cudnn.version()
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
    export LD_LIBRARY_PATH="/tmp/torch-cudnn:$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    $B probe > "$R/probe-torch-cudnn.txt" 2>&1
    log "probe with torch's cuDNN: $(grep -i cudnn "$R/probe-torch-cudnn.txt" | head -1)"
    timeout -s INT -k 20 "$(left)" $B run sweeps/h200-conv.toml --axis solver=engine_heuristic \
      --out "$R/h200-conv-torch-cudnn-heuristic" --quiet --no-report > "$R/torch-cudnn.log" 2>&1
    log "h200-conv-torch-cudnn-heuristic rc=$?"
    counts "$R/h200-conv-torch-cudnn-heuristic" | tee -a "$R/stage.log"
  fi
fi
pack

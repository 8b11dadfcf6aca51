#!/usr/bin/env bash
# The torch backend on a real GPU in one device command (at most 10 minutes), from the
# repository root with the release binary carried in as target/carry/rocsweep:
#   probe --backend torch and --backend cuda;
#   every op through torch on the GPU (tests/torch.rs's cases, on the device instead of the CPU);
#   the GEMM shapes of sweeps/h200-gemm-shapes.toml (plus issue 29's m=1, n=k=4096 TF32 case)
#   and a slice of sweeps/h200-conv.toml, once on the cuda backend (every solver) and once on
#   torch, for the per-shape ratio of the best library solver to the torch layer
#   (scripts/layer_ratio.py).
# Everything lands in $OUT/torch/; the summaries on stdout.
set -u
B=${B:-target/carry/rocsweep}
R="$OUT/torch"
DEADLINE=${DEADLINE:-570}
mkdir -p "$R"
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
stage() {
  local name=$1 need=$2 out=$3
  shift 3
  local left=$((DEADLINE - 15 - SECONDS))
  if [ "$left" -lt "$need" ]; then log "skip $name ($left s left, needs $need)"; return; fi
  log "$name"
  timeout "$left" "$@" > "$out" 2>&1
  log "$name rc $?"
}
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
PY=$(command -v python3)
export ROCSWEEP_PYTHON=$PY
"$B" probe --backend torch > "$R/probe-torch.txt" 2>&1; cat "$R/probe-torch.txt"
"$B" probe --backend cuda > "$R/probe-cuda.txt" 2>&1
RUN=(run --quiet --trials 1)
T="[timing]
warmup = 1
min_samples = 3
max_time = 0.05"
mkdir -p "$R/ops"
cat > "$R/ops/conv.toml" <<EOT
name = "torch-conv"
op = "conv2d"
backend = "torch"
[axes]
direction = ["fwd", "bwd_data", "bwd_weights"]
layout = ["nchw", "nhwc"]
dtype = ["f32", "f16", "bf16"]
n = 2
c_in = 16
c_out = 32
h = 24
solver = "all"
$T
EOT
cat > "$R/ops/gemm.toml" <<EOT
name = "torch-gemm"
op = "gemm"
backend = "torch"
drop = ["compute == 'tf32' and dtype != 'f32'"]
[axes]
m = [1, 77]
n = 96
k = 130
trans_a = [false, true]
trans_b = [false, true]
batch = [1, 3]
dtype = ["f32", "f16", "bf16"]
compute = ["f32", "tf32"]
solver = ["torch-matmul", "torch-linear", "torch-matmul+cublas", "torch-matmul+cublaslt"]
$T
EOT
cat > "$R/ops/rng.toml" <<EOT
name = "torch-rng"
op = "rng"
backend = "torch"
[axes]
count = [4096, 1000001]
mean = [0, 3]
dtype = ["f32", "f16", "bf16"]
solver = "all"
$T
EOT
cat > "$R/ops/copy.toml" <<EOT
name = "torch-copy"
op = "copy"
backend = "torch"
[axes]
direction = ["h2d", "d2h", "d2d"]
memory = ["pageable", "pinned", "mmap"]
bytes = [4096, 16777216]
solver = "all"
$T
EOT
cat > "$R/ops/cast.toml" <<EOT
name = "torch-cast"
op = "cast"
backend = "torch"
[axes]
from = ["f32", "f16", "bf16"]
to = ["f32", "f16", "bf16"]
count = [4099, 1048576]
solver = "all"
$T
EOT
cat > "$R/ops/graph.toml" <<EOT
name = "torch-graph"
op = "graph"
backend = "torch"
[axes]
channels = 16
size = 16
replays = 4
keep_outputs = [false, true]
dtype = ["f32", "bf16"]
solver = "all"
[limits]
compile = 300
$T
EOT
for op in conv gemm rng copy cast graph; do
  stage "torch $op" 20 "$R/ops/$op.log" "$B" "${RUN[@]}" "$R/ops/$op.toml" --out "$R/ops/$op"
done
# The layers' timing: the same shapes on the cuda backend (every solver) and through torch.
cat > "$R/gemm-tf32.toml" <<EOT
name = "gemm-tf32-m1"
op = "gemm"
backend = "cuda"
[axes]
m = 1
n = 4096
k = 4096
dtype = "f32"
compute = "tf32"
solver = "all"
[timing]
warmup = 2
min_samples = 5
max_samples = 30
max_time = 0.1
EOT
for s in sweeps/h200-gemm-shapes.toml "$R/gemm-tf32.toml"; do
  n=$(basename "$s" .toml)
  stage "$n cuda" 60 "$R/$n-cuda.log" "$B" run --quiet --no-report --trials 2 "$s" --out "$R/$n-cuda"
  stage "$n torch" 30 "$R/$n-torch.log" "$B" run --quiet --no-report --trials 2 "$s" --backend torch --axis solver=torch-matmul --out "$R/$n-torch"
done
stage "conv cuda" 60 "$R/conv-cuda.log" "$B" run --quiet --no-report --trials 2 sweeps/h200-conv.toml --axis h=64 --axis dtype=f16,f32 --out "$R/conv-cuda"
stage "conv torch" 30 "$R/conv-torch.log" "$B" run --quiet --no-report --trials 2 sweeps/h200-conv.toml --axis h=64 --axis dtype=f16,f32 --backend torch --axis solver=torch-benchmark,torch-default --out "$R/conv-torch"
log summaries
for op in conv gemm rng copy cast graph; do
  python3 - "$R/ops/$op/results.csv" <<'PY'
import csv, collections, sys
try:
    rows = list(csv.DictReader(open(sys.argv[1])))
except OSError as e:
    print(sys.argv[1], e); sys.exit()
c = collections.Counter((r["solver"], r["status"]) for r in rows)
print(sys.argv[1].split("/")[-2], dict(c))
for r in rows:
    if r["status"] not in ("ok", "unsupported"):
        print("   ", r["status"], r["solver"], r["phase"], r["error"][:200])
PY
done
for p in h200-gemm-shapes gemm-tf32 conv; do
  python3 scripts/layer_ratio.py "$R/$p-cuda" "$R/$p-torch" 2>&1 | tee "$R/$p-ratio.txt"
done
tar czf "$OUT/torch.tgz" -C "$OUT" torch

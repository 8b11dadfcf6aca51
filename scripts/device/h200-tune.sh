#!/usr/bin/env bash
# Issue 44 (and 45's sharing strategy) on an NVIDIA GPU in one device command, from the
# repository root with the release binary carried in as target/carry/after/rocsweep(.xz) and the
# fake ROCm as target/carry/after/libfake_rocm.so(.xz):
# 1. the committed GEMM sweep (sweeps/h200-gemm-shapes.toml, bf16) over cuda with `default`
#    beside every cuBLASLt algorithm, 2 trials: the report's default against best;
# 2. rocsweep tune on it, with the machine's PyTorch as --python: what a CUDA stack can be
#    handed (cuBLASLt's algorithms by no file; TunableOp on CUDA knows only `Default`);
# 3. the machine's torch.cuda.tunable: its validators and solutions, read by PyTorch itself;
# 4. tune --verify of a fake-ROCm hipBLASLt run on this machine, with this machine's PyTorch as
#    the TunableOp target: the validators read through a real GPU build of torch;
# 5. seed 001's DataLoader path with the sharing strategy axis over cuda + torch.
# Everything lands in $OUT.
set -u
unpack() {
  local f=$1
  if [ ! -e "$f" ] && [ -f "$f.xz" ]; then
    python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$f.xz" "$f" || exit 1
  fi
}
bin=target/carry/after/rocsweep
fake=target/carry/after/libfake_rocm.so
unpack "$bin"; unpack "$fake"; chmod +x "$bin"
py=$(command -v python3)
export ROCSWEEP_PYTHON=$py
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))" > "$OUT/torch.txt" 2>&1

# 1. default against best on the committed sweep.
s=$(date +%s.%N)
timeout 330 "$bin" run sweeps/h200-gemm-shapes.toml --axis solver=default,all --axis dtype=bf16 \
  --trials 2 --set timing.max_time=0.05 --set timing.max_samples=20 --quiet --out "$OUT/gemm" \
  > "$OUT/gemm.log" 2>&1
echo "rc $? wall $(python3 -c "import time; print(round(time.time() - $s, 1))") s" >> "$OUT/gemm.log"
tail -2 "$OUT/gemm.log"
sed -n '/## Default against best/,/## Fastest/p' "$OUT/gemm/summary.md" | head -30

# 2. tune: what a CUDA stack can be handed.
"$bin" tune "$OUT/gemm" --out "$OUT/gemm-tuned" --verify > "$OUT/tune-cuda.log" 2>&1
echo "rc $?" >> "$OUT/tune-cuda.log"
cat "$OUT/tune-cuda.log"

# 3. PyTorch's own TunableOp on this machine.
python3 - > "$OUT/tunableop-cuda.txt" 2>&1 <<'EOF'
import torch, torch.cuda.tunable as t
print("torch", torch.__version__)
print("validators", t.get_validators())
t.enable(True); t.tuning_enable(True)
a = torch.randn(1024, 512, device="cuda", dtype=torch.bfloat16)
b = torch.randn(512, 256, device="cuda", dtype=torch.bfloat16)
(a @ b).sum().item()
print("results after tuning one matmul:", t.get_results())
EOF
cat "$OUT/tunableop-cuda.txt"

# 4. a fake-ROCm hipBLASLt run tuned with this machine's torch as the TunableOp target.
lib=$(mktemp -d)/lib; mkdir -p "$lib/rocblas/library" "$lib/hipblaslt/library"
for n in libamdhip64.so.6 libMIOpen.so.1 libhipblaslt.so.0 librocblas.so.4 libhiprand.so.1; do
  ln -s "$PWD/$fake" "$lib/$n"
done
touch "$lib/rocblas/library/TensileLibrary_lazy_gfx1100.dat" "$lib/hipblaslt/library/TensileLibrary_lazy_gfx1100.dat"
cat > "$OUT/fake-model.toml" <<'EOF'
[versions]
hipblaslt = "0.12.1"
hipblaslt_git = "d3f1a2b"
[hipblaslt]
algos = 4
repeat = [16, 12, 1, 8]
[rocblas]
repeat = [8, 8, 8]
EOF
cat > "$OUT/fake-gemm.toml" <<'EOF'
name = "fake-gemm"
op = "gemm"
backend = "rocm"
[axes]
m = [64, 128]
n = 64
k = 64
dtype = "f32"
solver = ["default", "all"]
[timing]
min_samples = 3
max_time = 0.02
trials = 3
EOF
export FAKE_ROCM_MODEL=$OUT/fake-model.toml
"$bin" run "$OUT/fake-gemm.toml" --rocm "$lib" --quiet --no-report --out "$OUT/fake" > "$OUT/fake.log" 2>&1
echo "run rc $?" >> "$OUT/fake.log"
"$bin" tune "$OUT/fake" --rocm "$lib" --out "$OUT/fake-tuned" --verify >> "$OUT/fake.log" 2>&1
echo "tune rc $?" >> "$OUT/fake.log"
unset FAKE_ROCM_MODEL
grep -v "^rocm:" "$OUT/fake.log"
grep -o "tunableop0.csv | [^|]*|[^|]*|" "$OUT/fake-tuned/tune.md" | head -2
cut -d, -f10-11 "$OUT/fake-tuned/tune.csv" | head -3

# 5. seed 001's batch path with the sharing strategy over cuda + torch.
timeout 200 "$bin" run sweeps/seed-001-to-device.toml --backend cuda,torch --axis bytes=4096,1048576 \
  --axis memory=pageable,dataloader,accelerate --axis direction=h2d --trials 1 --quiet \
  --out "$OUT/seed-001" > "$OUT/seed-001.log" 2>&1
echo "rc $?" >> "$OUT/seed-001.log"
python3 - "$OUT/seed-001/results.csv" > "$OUT/seed-001-sharing.md" <<'EOF'
import csv, collections, sys
r = list(csv.DictReader(open(sys.argv[1])))
c = collections.Counter((x["backend"], x["memory"], x["sharing_strategy"], x["status"]) for x in r)
print("| backend | memory | sharing_strategy | status | units |\n|---|---|---|---|---:|")
for k, n in sorted(c.items()):
    print("| " + " | ".join(k) + " | %d |" % n)
for x in r:
    if x["backend"] == "torch" and x["memory"] == "dataloader":
        print("chosen:", x["sharing_strategy"], x["pin_memory"], "->", x["chosen"])
        break
EOF
cat "$OUT/seed-001-sharing.md"
sed -n '/## Which layer fails/,/^## [^W]/p' "$OUT/seed-001/summary.md" | head -12

tar czf "$OUT/runs.tgz" -C "$OUT" --exclude=workers --exclude='*.svg' --exclude=report.html \
  gemm gemm-tuned fake fake-tuned seed-001
rm -rf "$OUT"/gemm "$OUT"/fake "$OUT"/seed-001
rm -rf "$OUT"/fake-tuned/verify-* "$OUT"/gemm-tuned/verify-*

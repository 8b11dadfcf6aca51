#!/usr/bin/env bash
# Issue 32 (second pass, branch engine2) and issue 29 point 6 (the cublas solver) on one GPU in
# one device command, from the repository root with both binaries carried xz-compressed as
# target/carry/{before,after}/rocsweep.xz:
#   before: bd59aca's tree (no engine2, no cublas solver); after: main with both.
# 1. `selftest --backend cuda` with each binary;
# 2. the committed GEMM, conv, graph, rng and cast sweeps narrowed by --axis, one trial, before
#    then after (scripts/device/engine-table.py makes the table; `after` has one unit more per
#    GEMM case, `cublas`, which the table leaves out as it has no `before`);
# 3. reports/engine/h100-engine2/gemm-8192.toml over cuda + torch with the after binary, 2
#    trials, and the per-shape ratios (scripts/layer_ratio.py).
set -u
mkdir -p "$OUT"
for b in before after; do
  f=target/carry/$b/rocsweep
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$f.xz" "/tmp/rs-$b" &&
    chmod +x "/tmp/rs-$b" || exit 1
done
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
for b in before after; do
  timeout 25 "/tmp/rs-$b" selftest --backend cuda > "$OUT/selftest-$b.txt" 2>&1
  echo "selftest $b rc=$?" >> "$OUT/rc.txt"
done
run() { # sweep, timeout (seconds, per binary), axis overrides...
  local sweep=$1 limit=$2
  shift 2
  for b in before after; do
    timeout "$limit" "/tmp/rs-$b" run "sweeps/$sweep.toml" --out "$OUT/$b/$sweep" \
      --quiet --no-report --trials 1 "$@" > "$OUT/$b-$sweep.log" 2>&1
    echo "$sweep $b rc=$?" >> "$OUT/rc.txt"
  done
}
run h200-probe-rng 20
run h200-probe-cast 15
run h200-graph 30 --axis dtype=f32 --axis size=32,64
run h200-gemm 40 --axis dtype=bf16,f16 --axis m=1024,2048
run h200-conv 40 --axis h=32 --axis dtype=f32
export ROCSWEEP_PYTHON=$(command -v python3)
mkdir -p "$OUT/layers"
timeout 150 /tmp/rs-after run --quiet --no-report --trials 2 reports/engine/h100-engine2/gemm-8192.toml \
  --out "$OUT/layers/gemm-8192" > "$OUT/layers/gemm-8192.log" 2>&1
echo "gemm-8192 after rc=$?" >> "$OUT/rc.txt"
cat "$OUT/rc.txt"
rm -f "$OUT"/*/*/run.lock
python3 scripts/device/engine-table.py "$OUT" > "$OUT/table.md" 2>&1; cat "$OUT/table.md"
python3 scripts/layer_ratio.py "$OUT/layers/gemm-8192" > "$OUT/gemm-8192-ratio.txt" 2>&1; cat "$OUT/gemm-8192-ratio.txt"
rm -rf "$OUT"/*/*/workers
tar czf "$OUT/runs.tgz" -C "$OUT" before after layers && rm -rf "$OUT/before" "$OUT/after" "$OUT/layers"

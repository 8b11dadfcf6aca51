#!/usr/bin/env bash
# Issue 32 proof on the H100/H200: the rocsweep binaries from before and after the GPU engine
# (backend/engine), side by side in one device command, from the repository root with both
# carried in as target/carry/{before,after}/rocsweep. Each sweep runs narrowed by --axis to fit
# one 8-minute command, one trial, before then after (a run cut by its timeout keeps the units
# it finished); `selftest --backend cuda` runs with each binary.
# scripts/device/engine-table.py makes the before/after table from $OUT.
set -u
mkdir -p "$OUT"
# The binaries may travel stripped and xz-compressed (the device tool's 64 MiB limit).
for b in before after; do
  f=target/carry/$b/rocsweep
  if [ ! -x "$f" ] && [ -f "$f.xz" ]; then
    python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$f.xz" "$f" &&
      chmod +x "$f" || exit 1
  fi
done
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
for b in before after; do
  timeout 25 "target/carry/$b/rocsweep" selftest --backend cuda > "$OUT/selftest-$b.txt" 2>&1
  echo "selftest $b rc=$?" >> "$OUT/rc.txt"
done
run() { # sweep, timeout (seconds, per binary), axis overrides...
  local sweep=$1 limit=$2
  shift 2
  for b in before after; do
    timeout "$limit" "target/carry/$b/rocsweep" run "sweeps/$sweep.toml" --out "$OUT/$b/$sweep" \
      --quiet --no-report --trials 1 "$@" > "$OUT/$b-$sweep.log" 2>&1
    echo "$sweep $b rc=$?" >> "$OUT/rc.txt"
  done
}
run h200-probe-copy 45
run h200-probe-rng 20
run h200-probe-cast 15
run h200-graph 30 --axis dtype=f32 --axis size=32,64
run h200-gemm 45 --axis dtype=bf16,f16 --axis m=1024,2048
run h200-conv 45 --axis h=32 --axis dtype=f32
cat "$OUT/rc.txt"
rm -f "$OUT"/*/*/run.lock

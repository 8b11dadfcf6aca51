#!/usr/bin/env bash
# Issue 43 on an NVIDIA GPU in one device command, from the repository root with the release
# binary carried in as target/carry/after/rocsweep(.xz): a profiler trace of a small CNN's
# training iterations (scripts/device/cnn_trace.py), imported (rocsweep import writes
# sequence.toml beside the weighted sweeps), the sequence replayed over cuda + torch in one
# process per backend, then the same calls as separate units (the imported sweeps, solver
# default, one trial), side by side (scripts/device/sequence_vs_units.py). Then --processes 3
# over the imported GEMMs on cuda. Everything lands in $OUT.
set -u
f=target/carry/after/rocsweep
if [ ! -x "$f" ] && [ -f "$f.xz" ]; then
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$f.xz" "$f" &&
    chmod +x "$f" || exit 1
fi
export ROCSWEEP_PYTHON=$(command -v python3)
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
python3 scripts/device/cnn_trace.py "$OUT/trace.json" > "$OUT/trace.log" 2>&1 || { cat "$OUT/trace.log"; exit 1; }
"$f" import "$OUT/trace.json" --out "$OUT/cnn" > "$OUT/import.log" 2>&1
echo "import rc $?" >> "$OUT/import.log"
tail -8 "$OUT/cnn/summary.md"
s=$(date +%s.%N)
timeout 200 "$f" run "$OUT/cnn/sequence.toml" --backend cuda,torch --set timing.max_time=0.2 \
  --out "$OUT/seq" > "$OUT/seq.log" 2>&1
echo "rc $? wall $(python3 -c "import time; print(round(time.time() - $s, 1))") s" >> "$OUT/seq.log"
cat "$OUT/seq.log"
units=()
for sw in "$OUT"/cnn/conv2d.toml "$OUT"/cnn/gemm.toml; do
  [ -f "$sw" ] || continue
  n=$(basename "$sw" .toml)
  s=$(date +%s.%N)
  timeout 120 "$f" run "$sw" --backend cuda,torch --axis solver=default --trials 1 --quiet --no-report \
    --set timing.max_time=0.2 --out "$OUT/units-$n" > "$OUT/units-$n.log" 2>&1
  echo "rc $? wall $(python3 -c "import time; print(round(time.time() - $s, 1))") s" >> "$OUT/units-$n.log"
  units+=("$OUT/units-$n")
done
python3 scripts/device/sequence_vs_units.py "$OUT/seq" "${units[@]}" > "$OUT/sequence-vs-units.md" 2>&1
head -4 "$OUT/sequence-vs-units.md"; tail -3 "$OUT/sequence-vs-units.md"
if [ -f "$OUT/cnn/gemm.toml" ]; then
  timeout 80 "$f" run "$OUT/cnn/gemm.toml" --backend cuda --axis solver=default --processes 3 --quiet \
    --out "$OUT/processes" > "$OUT/processes.log" 2>&1
  echo "rc $?" >> "$OUT/processes.log"
  python3 -c "
import csv,collections,sys
r=list(csv.DictReader(open(sys.argv[1])))
print('--processes 3 on cuda:', len(r), 'units, stable:', dict(collections.Counter(x['stable'] for x in r)))
for x in r:
    if x['stable']=='no': print(' ', x['case_id'], x['unstable'])
" "$OUT/processes/results.csv" | tee "$OUT/processes.md"
fi
tar czf "$OUT/runs.tgz" -C "$OUT" --exclude=workers --exclude='*.png' --exclude='*.svg' --exclude=report.html \
  cnn seq $(cd "$OUT" && ls -d units-* processes 2>/dev/null)
rm -rf "$OUT"/cnn "$OUT"/seq "$OUT"/units-* "$OUT"/processes
gzip -9 "$OUT/trace.json"

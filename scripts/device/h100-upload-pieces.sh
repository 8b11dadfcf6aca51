#!/usr/bin/env bash
# Proof on a real GPU that inputs larger than the 64 MiB pinned stage (mem::STAGE_BYTES) arrive
# whole: `selftest --backend cuda`, then scripts/device/pieces-gemm.toml (a 512 MiB input, CPU
# reference) and pieces-conv.toml (a 411 MB input, CPU reference) over cuda + torch.
# Binary: target/carry/split/rocsweep.xz.
set -u
R="$OUT/pieces"; mkdir -p "$R"
python3 -c "import lzma;open('/tmp/rs','wb').write(lzma.open('target/carry/split/rocsweep.xz').read())" && chmod +x /tmp/rs
nvidia-smi -L > "$R/nvidia-smi.txt" 2>&1
timeout 40 /tmp/rs selftest --backend cuda > "$R/selftest.txt" 2>&1; echo "selftest rc $?" >> "$R/rc.txt"
export ROCSWEEP_PYTHON=$(command -v python3)
for s in gemm conv; do
  timeout 100 /tmp/rs run --quiet --no-report --trials 1 "scripts/device/pieces-$s.toml" \
    --out "$R/$s" > "$R/$s.log" 2>&1; echo "$s rc $?" >> "$R/rc.txt"
done
rm -f "$R"/*/run.lock; rm -rf "$R"/*/workers
cat "$R/rc.txt"; tail -20 "$R/selftest.txt"
python3 - "$R/gemm/results.csv" "$R/conv/results.csv" <<'PY'
import csv, sys, collections
rows = [r for f in sys.argv[1:] for r in csv.DictReader(open(f))]
print(collections.Counter((r["backend"], r["status"], r["reference"][:24]) for r in rows))
for r in rows:
    if r["status"] != "ok":
        print(r["backend"], r["solver"], r["status"], r["error"][:200])
PY
tar czf "$OUT/pieces.tgz" -C "$OUT" pieces && rm -rf "$R"

#!/usr/bin/env bash
# The torch backend's rows carry the device's clock and temperature (NVML, read by the Rust side
# from the PCI bus id torch reports), as the cuda rows do: `probe --backend torch`, then
# reports/engine/h100-engine2/gemm-8192.toml over cuda + torch, one trial (the TF32 and bf16
# shapes run the card into its power limit, so a clock drop can show on either layer).
# Binary: target/carry/split/rocsweep.xz.
set -u
R="$OUT/telemetry"; mkdir -p "$R"
python3 -c "import lzma;open('/tmp/rs','wb').write(lzma.open('target/carry/split/rocsweep.xz').read())" && chmod +x /tmp/rs
export ROCSWEEP_PYTHON=$(command -v python3)
nvidia-smi -L > "$R/nvidia-smi.txt" 2>&1
/tmp/rs probe --backend torch > "$R/probe.txt" 2>&1; echo "probe rc $?" >> "$R/rc.txt"
timeout 200 /tmp/rs run --quiet --no-report --trials 1 reports/engine/h100-engine2/gemm-8192.toml \
  --out "$R/gemm-8192" > "$R/gemm-8192.log" 2>&1; echo "gemm-8192 rc $?" >> "$R/rc.txt"
rm -f "$R"/*/run.lock; rm -rf "$R"/*/workers
cat "$R/rc.txt" "$R/probe.txt"
python3 - "$R/gemm-8192/results.csv" <<'PY' | tee "$R/telemetry.txt"
import csv, sys
print("| backend | solver | m n k | dtype/compute | status | median ms | clock MHz | temp C | clock drop |")
print("|---|---|---|---|---|---:|---:|---:|---|")
for r in csv.DictReader(open(sys.argv[1])):
    if r["backend"] == "torch" or r["solver"] in ("cublas",) or r["solver"].startswith("lt#0"):
        print(f"| {r['backend']} | {r['solver']} | {r['m']} {r['n']} {r['k']} | {r['dtype']}/{r['compute']} | {r['status']} | "
              f"{r['median_ms']} | {r['clock_mhz']} | {r['temp_c']} | {r['clock_drop']} |")
PY
tar czf "$OUT/telemetry.tgz" -C "$OUT" telemetry && rm -rf "$R"

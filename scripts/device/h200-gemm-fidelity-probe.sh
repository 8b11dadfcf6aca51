#!/usr/bin/env bash
# Both GEMM same-algorithm runs in one device command (at most 10 minutes), from the repository
# root with the stripped release binary carried in as target/carry/rocsweep:
# h200-gemm-fidelity.sh (cut at FIDELITY_DEADLINE seconds, about 245 s when nothing hangs), then
# h200-gemm-lt-probe.sh with what is left before TOTAL seconds. Each leaves its own .tgz; a probe
# cut short is packed here. Both land in $OUT/gemm-rerun.tgz (gemm-fidelity.tgz and
# gemm-lt-probe.tgz inside).
set -u
TOTAL=${TOTAL:-580}
FIDELITY_DEADLINE=${FIDELITY_DEADLINE:-380}
export PYTHONUNBUFFERED=1
echo "[$(date -u +%H:%M:%S) +${SECONDS}s] fidelity"
DEADLINE=$FIDELITY_DEADLINE bash scripts/device/h200-gemm-fidelity.sh
echo "[$(date -u +%H:%M:%S) +${SECONDS}s] lt probe (rc of fidelity $?)"
left=$((TOTAL - 10 - SECONDS))
timeout -k 5 "$left" bash scripts/device/h200-gemm-lt-probe.sh
echo "[$(date -u +%H:%M:%S) +${SECONDS}s] packing (rc of lt probe $?)"
cd "$OUT" || exit 1
[ -d gemm-lt-probe ] && tar czf gemm-lt-probe.tgz gemm-lt-probe && rm -rf gemm-lt-probe
[ -d gemm-fidelity ] && tar czf gemm-fidelity.tgz gemm-fidelity && rm -rf gemm-fidelity
tar czf gemm-rerun.tgz gemm-*.tgz && rm -f gemm-fidelity.tgz gemm-lt-probe.tgz
ls -la "$OUT"
echo "[$(date -u +%H:%M:%S) +${SECONDS}s] done"

#!/usr/bin/env bash
# The fourth device command of this report (nvidia-h200), from the repository root with the
# stripped release binary carried in as target/carry/rocsweep (this one with
# ROCSWEEP_DEBUG_GRAPH and the conv_engine split). Everything lands in $OUT/cmd4/ and
# $OUT/cmd4.tgz:
# - selftest --backend cuda;
# - conv/: cmd3's four f16 1x1 convolutions, every configuration, verified, one trial, with
#   ROCSWEEP_DEBUG_GRAPH=1: the worker logs (workers/) name each sample graph's nodes and kernels;
# - gemm/: the six bf16 shapes of gemm-fidelity-3, lt#0, the same;
# - torch-kernels.log: PyTorch's kernels for 64->64 1x1 f16 and where the outputs of a captured
#   graph of 4 calls lie (benches/peer/conv_kernels.py).
set -u
B=${B:-target/carry/rocsweep}
D=reports/h200/timing/side-by-side
R="$OUT/cmd4"
mkdir -p "$R"
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
log selftest
timeout 60 "$B" selftest --backend cuda > "$R/selftest-cuda.txt" 2>&1
log "conv (rc $?)"
sed -n '/^cat > "\$C\/four.toml" <<.TOML.$/,/^TOML$/p' $D/device-3.sh | sed '1d;$d' > "$R/four.toml"
ROCSWEEP_DEBUG_GRAPH=1 timeout 120 "$B" run --quiet --no-report "$R/four.toml" --set timing.trials=1 --out "$R/conv" > "$R/conv.log" 2>&1
log "gemm (rc $?)"
sed -e 's/^solver = "all"/solver = "lt#0"/' -e 's/^name = .*/name = "h200-lt0-six"/' reports/h200/timing/gemm-fidelity-3/shapes.toml > "$R/six.toml"
ROCSWEEP_DEBUG_GRAPH=1 timeout 60 "$B" run --quiet --no-report "$R/six.toml" --set timing.trials=1 --out "$R/gemm" > "$R/gemm.log" 2>&1
log "pytorch (rc $?)"
timeout 60 python3 benches/peer/conv_kernels.py "$R/conv" c_in=64 c_out=64 h=56 > "$R/torch-kernels.log" 2>&1
log "done (rc $?)"
rm -f "$R"/*/run.lock
rm -rf "$R"/*/caches
for d in conv gemm; do
  echo "== $d: $(python3 -c "import json;print(json.load(open('$R/$d/manifest.json'))['counts'])")"
  grep -h 'rocsweep graph' "$R/$d"/workers/* | sort | uniq -c | sort -rn | cut -c1-400 | head -40
done
grep -E 'KERNELS|OUTPUTS' "$R/torch-kernels.log"
tail -2 "$R/selftest-cuda.txt"
cat "$R/stage.log"
cd "$OUT" && tar czf cmd4.tgz cmd4 && rm -rf cmd4 && ls -la "$OUT"

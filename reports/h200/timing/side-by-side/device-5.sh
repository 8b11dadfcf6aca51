#!/usr/bin/env bash
# The fifth device command of this report (nvidia-h200), from the repository root with the
# stripped release binary of eea91787bfcc carried in as target/carry/rocsweep. Does PyTorch's
# conv time depend on its operands' values? Everything lands in $OUT/cmd5/ and $OUT/cmd5.tgz:
# - four/: cmd3's four f16 1x1 convolutions (rocsweep runs A and B, 3 trials, verification off)
#   and PyTorch four times in turn: operands drawn as rocsweep's (uniform in [-1, 1), now
#   peer_times' default: torch-r1, torch-r2) and PyTorch's own (PEER_CONV_OPERANDS=torch:
#   torch-t1, torch-t2); tables of each against run A.
# - conv-f16/, conv-f32/: the ResNet-50 sweeps again (verification off) against PyTorch on
#   operands drawn as rocsweep's.
set -u
B=${B:-target/carry/rocsweep}
D=reports/h200/timing/side-by-side
R="$OUT/cmd5"
mkdir -p "$R/four" "$R/conv-f16" "$R/conv-f32"
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
RUN=(run --quiet --no-report --set verify.enabled=false)
F="$R/four"
sed -n '/^cat > "\$C\/four.toml" <<.TOML.$/,/^TOML$/p' $D/device-3.sh | sed '1d;$d' > "$F/four.toml"
log "four A"
timeout 60 "$B" "${RUN[@]}" "$F/four.toml" --out "$F/run-a" > "$F/run-a.log" 2>&1
for i in 1 2; do
  log "pytorch rocsweep's operands $i (rc $?)"
  timeout 60 python3 benches/peer/peer_times.py "$F/run-a" "$F/torch-r$i.csv" > "$F/torch-r$i.log" 2>&1
  log "pytorch its own operands $i (rc $?)"
  PEER_CONV_OPERANDS=torch timeout 60 python3 benches/peer/peer_times.py "$F/run-a" "$F/torch-t$i.csv" > "$F/torch-t$i.log" 2>&1
done
log "four B (rc $?)"
timeout 60 "$B" "${RUN[@]}" "$F/four.toml" --out "$F/run-b" > "$F/run-b.log" 2>&1
for t in r1 r2 t1 t2; do
  python3 benches/peer/side_by_side.py "$F/run-a" "$F/torch-$t.csv" "$F/run-b" > "$F/table-$t.md" 2>&1
done
for d in f16 f32; do
  C="$R/conv-$d"
  log "conv $d"
  timeout 90 "$B" "${RUN[@]}" sweeps/h200-resnet50-conv.toml --axis "dtype=$d" --out "$C/run" > "$C/run.log" 2>&1
  log "conv $d pytorch (rc $?)"
  timeout 60 python3 benches/peer/peer_times.py "$C/run" "$C/torch.csv" > "$C/torch.log" 2>&1
  python3 benches/peer/side_by_side.py "$C/run" "$C/torch.csv" > "$C/table.md" 2>&1
done
log done
rm -f "$R"/*/*/run.lock
rm -rf "$R"/*/*/workers "$R"/*/*/caches
for t in r1 r2 t1 t2; do echo "== four $t"; grep -E "^- conv2d, launch-free \(both" "$F/table-$t.md"; grep -E '^\| conv2d' "$F/table-$t.md" | cut -d'|' -f3-7; done
for d in f16 f32; do echo "== $d"; grep -E "^- " "$R/conv-$d/table.md" | head -2; done
cat "$R/stage.log"
cd "$OUT" && tar czf cmd5.tgz cmd5 && rm -rf cmd5 && ls -la "$OUT"

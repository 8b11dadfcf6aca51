#!/usr/bin/env bash
# The device command (nvidia-h200), from the repository root with the stripped release binary
# carried in as target/carry/rocsweep. (Run twice: the first run's files did not come back, too
# many of them under $OUT, and its rocsweep units are named `lt#0`, which peer_times and the table
# did not match yet: no kr column, an empty table. Only the second run is committed.)
# Everything lands in $OUT/gf7/, then $OUT/gf7.tgz:
# - run-warm/: rocsweep on shapes.toml (13 GEMM shapes, lt#0 = cuBLASLt's first heuristic
#   algorithm, 3 trials), no rotation;
# - run-rot/: the same with rotating_mib = 1024 (shapes-rotating.toml);
# - torch-warm.csv/.log: benches/peer/peer_times.py on run-warm (PyTorch's pick, then PyTorch on
#   cuBLASLt and rocsweep's call from Python, rocsweep's protocol; no placement variants);
# - torch-rot.csv/.log: the same with --rotating-mib 1024 (copies of A and B used in turn, as
#   rocsweep's rotation);
# - run-rot2/, torch-rot2.csv/.log: the rotating runs again, both sides (run to run);
# - table.md: benches/peer/rotating_table.py; side-warm.md: benches/peer/side_by_side.py (warm).
set -u
B=${B:-target/carry/rocsweep}
D=reports/h200/timing/gemm-fidelity-4
R="$OUT/gf7"
mkdir -p "$R"
export PYTHONUNBUFFERED=1 PEER_VARIANTS=0
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)" > "$R/versions.txt" 2>&1
log "rocsweep warm"
timeout 100 $B run $D/shapes.toml --out "$R/run-warm" --quiet --no-report > "$R/run-warm.log" 2>&1
log "rocsweep rotating (rc of warm $?)"
timeout 100 $B run $D/shapes-rotating.toml --out "$R/run-rot" --quiet --no-report > "$R/run-rot.log" 2>&1
log "pytorch warm (rc of rotating $?)"
timeout 150 python3 benches/peer/peer_times.py "$R/run-warm" "$R/torch-warm.csv" > "$R/torch-warm.log" 2>&1
log "pytorch rotating (rc of pytorch warm $?)"
timeout 150 python3 benches/peer/peer_times.py --rotating-mib 1024 "$R/run-rot" "$R/torch-rot.csv" > "$R/torch-rot.log" 2>&1
log "rocsweep rotating run 2 (rc of pytorch rotating $?)"
timeout 80 $B run $D/shapes-rotating.toml --out "$R/run-rot2" --quiet --no-report > "$R/run-rot2.log" 2>&1
log "pytorch rotating run 2 (rc of run 2 $?)"
timeout 150 python3 benches/peer/peer_times.py --rotating-mib 1024 "$R/run-rot2" "$R/torch-rot2.csv" > "$R/torch-rot2.log" 2>&1
log "tables (rc of pytorch run 2 $?)"
python3 benches/peer/rotating_table.py "$R/run-warm" "$R/torch-warm.csv" "$R/run-rot" "$R/torch-rot.csv" "$R/run-rot2" "$R/torch-rot2.csv" > "$R/table.md" 2>&1
python3 benches/peer/side_by_side.py "$R/run-warm" "$R/torch-warm.csv" > "$R/side-warm.md" 2>&1
log done
rm -f "$R"/*/run.lock
rm -rf "$R"/*/workers "$R"/*/caches
grep -h "Error\|error\|Traceback\|WARNING\|exit [1-9]\|failed" "$R/torch-warm.log" "$R/torch-rot.log" "$R/torch-rot2.log" | head -20
for f in run-warm run-rot run-rot2; do echo "== $f"; tail -3 "$R/$f.log"; done
cat "$R/table.md" | cut -c1-600
cat "$R/stage.log"
cd "$OUT" && tar czf gf7.tgz gf7 && rm -rf gf7 && ls -la "$OUT"

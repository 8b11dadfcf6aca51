#!/usr/bin/env bash
# The device command (nvidia-h200), from the repository root with the stripped release binary of
# a4330ed carried in as target/carry/rocsweep: a sample's graph is uploaded and its one replay is
# queued behind the blocking kernel (no warm replay, no host launch in the timed interval).
# gemm-fidelity-4's 13 GEMM shapes (lt#0), warm and rotating_mib = 1024, rocsweep and PyTorch in
# this one command; PyTorch timed the same way (peer_times.py --graph-protocol held). Everything
# lands in $OUT/gf6/, then $OUT/gf6.tgz:
# - run-warm/, run-rot/ and run-warm2/, run-rot2/: rocsweep warm and rotating, twice (run to run);
# - torch-warm.csv, torch-rot.csv: peer_times.py --graph-protocol held on run-warm and run-rot;
# - table.md: rotating_table.py (same algorithm, warm and rotating, kernels compared);
# - cast/, rng/: two plain CUDA sweeps with their reports (every op's timing goes through the
#   same graph path).
set -u
B=${B:-target/carry/rocsweep}
D=reports/h200/timing/gemm-fidelity-4
R="$OUT/gf6"
mkdir -p "$R"
export PYTHONUNBUFFERED=1 PEER_VARIANTS=0
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)" > "$R/versions.txt" 2>&1
$B --version >> "$R/versions.txt" 2>&1
log "rocsweep warm"
timeout 100 $B run $D/shapes.toml --out "$R/run-warm" --quiet --no-report > "$R/run-warm.log" 2>&1
log "rocsweep rotating (rc of warm $?)"
timeout 100 $B run $D/shapes-rotating.toml --out "$R/run-rot" --quiet --no-report > "$R/run-rot.log" 2>&1
log "pytorch warm, held (rc of rotating $?)"
timeout 150 python3 benches/peer/peer_times.py --graph-protocol held "$R/run-warm" "$R/torch-warm.csv" > "$R/torch-warm.log" 2>&1
log "pytorch rotating, held (rc $?)"
timeout 150 python3 benches/peer/peer_times.py --graph-protocol held --rotating-mib 1024 "$R/run-rot" "$R/torch-rot.csv" > "$R/torch-rot.log" 2>&1
log "rocsweep warm 2 (rc $?)"
timeout 100 $B run $D/shapes.toml --out "$R/run-warm2" --quiet --no-report > "$R/run-warm2.log" 2>&1
log "rocsweep rotating 2 (rc $?)"
timeout 100 $B run $D/shapes-rotating.toml --out "$R/run-rot2" --quiet --no-report > "$R/run-rot2.log" 2>&1
log "cast sweep (rc $?)"
timeout 90 $B run sweeps/h200-probe-cast.toml --out "$R/cast" > "$R/cast.log" 2>&1
log "rng sweep (rc $?)"
timeout 90 $B run sweeps/h200-probe-rng.toml --out "$R/rng" > "$R/rng.log" 2>&1
log "table (rc $?)"
python3 benches/peer/rotating_table.py "$R/run-warm" "$R/torch-warm.csv" "$R/run-rot" "$R/torch-rot.csv" "$R/run-rot2" > "$R/table.md" 2>&1
python3 - "$R" > "$R/rocsweep.md" 2>&1 <<'P'
import csv, sys
R = sys.argv[1]
def rs(d):
    return {(r["m"], r["n"], r["k"], r["dtype"]): r for r in csv.DictReader(open(f"{R}/{d}/results.csv"))}
runs = {d: rs(d) for d in ("run-warm", "run-warm2", "run-rot", "run-rot2")}
print("| shape | warm ms | warm2 / warm | rotating ms | rot2 / rot | rotating / warm | statuses |")
print("|---|---:|---:|---:|---:|---:|---|")
for k in runs["run-warm"]:
    f = lambda d: float(runs[d][k]["median_ms"])
    print(f"| {'x'.join(k[:3])} {k[3]} | {f('run-warm'):.4f} | {f('run-warm2') / f('run-warm'):.3f} | "
          f"{f('run-rot'):.4f} | {f('run-rot2') / f('run-rot'):.3f} | {f('run-rot') / f('run-warm'):.3f} | "
          f"{sorted({runs[d][k]['status'] for d in runs})} |")
P
log done
rm -f "$R"/*/run.lock
rm -rf "$R"/*/workers "$R"/*/caches
grep -h "Error\|error\|Traceback\|WARNING\|failed" "$R"/torch-*.log | sort | uniq -c | head -20
for f in run-warm run-rot run-warm2 run-rot2 cast rng; do echo "== $f"; tail -2 "$R/$f.log"; done
cat "$R/rocsweep.md"
cut -c1-400 "$R/table.md" | head -40
cat "$R/stage.log"
cd "$OUT" && tar czf gf6.tgz gf6 && rm -rf gf6 && ls -la "$OUT"

#!/usr/bin/env bash
# The second device command (nvidia-h200): rocsweep's new protocol (41f8d8c, graph uploaded, one
# timed replay; target/carry/rocsweep) against its old one (ff4d02f, the parent commit: one warm
# replay, then the timed replay; target/carry/rocsweep-old, built from a worktree of HEAD~1) in the
# same command, interleaved, on gemm-fidelity-4's shapes: warm twice each (new, old, old, new) and
# rotating once each. Everything lands in $OUT/gf5b/, then $OUT/gf5b.tgz.
set -u
# the two binaries travel as target/carry/bins.tar.xz (the working tree limit), unpacked here
mkdir -p /tmp/bins && tar xJf target/carry/bins.tar.xz -C /tmp/bins
NEW=${NEW:-/tmp/bins/rocsweep}
OLD=${OLD:-/tmp/bins/rocsweep-old}
D=reports/h200/timing/gemm-fidelity-4
R="$OUT/gf5b"
mkdir -p "$R"
log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$R/stage.log"; }
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
for step in new:warm:shapes old:warm:shapes old:rot:shapes-rotating new:rot:shapes-rotating old:warm2:shapes new:warm2:shapes; do
  IFS=: read -r which name toml <<< "$step"
  B=$NEW; [ "$which" = old ] && B=$OLD
  log "$which $name"
  timeout 100 $B run $D/$toml.toml --out "$R/$which-$name" --quiet --no-report > "$R/$which-$name.log" 2>&1
  log "$which $name rc $?"
done
rm -f "$R"/*/run.lock
rm -rf "$R"/*/workers "$R"/*/caches "$R"/*/journal.ndjson
python3 - "$R" <<'P'
import csv, sys
R = sys.argv[1]
def rs(d):
    return {(r["m"], r["n"], r["k"], r["dtype"]): r for r in csv.DictReader(open(f"{R}/{d}/results.csv"))}
runs = {d: rs(d) for d in ("new-warm", "old-warm", "new-warm2", "old-warm2", "new-rot", "old-rot")}
print("shape | new/old warm | new/old warm2 | rot/warm new | rot/warm old | status")
for k, r in runs["new-warm"].items():
    f = lambda d, c="median_ms": float(runs[d][k][c])
    print(" x ".join(k[:3]), k[3], f"{f('new-warm') / f('old-warm'):.3f} {f('new-warm2') / f('old-warm2'):.3f} "
          f"{f('new-rot') / f('new-warm'):.3f} {f('old-rot') / f('old-warm'):.3f}",
          {runs[d][k]["status"] for d in runs})
P
cat "$R/stage.log"
cd "$OUT" && tar czf gf5b.tgz gf5b && rm -rf gf5b && ls -la "$OUT"

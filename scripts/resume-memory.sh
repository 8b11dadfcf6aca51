#!/usr/bin/env bash
# Peak memory of a run of N units and of resuming it when it has nothing left to do (issue 30,
# defect 7: a resume held about 8 KB per unit). Usage: scripts/resume-memory.sh [N] [ROCSWEEP]
# N defaults to 100000 (about 45 minutes of copy units on 2 busy cores); ROCSWEEP to the
# release binary. Prints the two peaks (GNU time's maximum resident set size) and their ratio.
set -euo pipefail
n=${1:-100000}
bin=${2:-target/release/rocsweep}
dir=$(mktemp -d)
last=$((64 + 20 * (n - 1)))
cat > "$dir/big.toml" <<TOML
name = "big"
op = "copy"
backend = "cpu"
[axes]
bytes = "range(64..=$last, step=20)"
[timing]
enabled = false
TOML
peak() { grep 'Maximum resident' "$1" | awk '{print $NF}'; }
/usr/bin/time -v "$bin" run "$dir/big.toml" --out "$dir/run" --quiet --trials 1 --no-report 2> "$dir/run.time"
/usr/bin/time -v "$bin" run --resume "$dir/run" --quiet 2> "$dir/resume.time"
run_kb=$(peak "$dir/run.time")
resume_kb=$(peak "$dir/resume.time")
echo "units: $n"
echo "run peak: $run_kb KB"
echo "resume (nothing to do) peak: $resume_kb KB"
awk -v a="$resume_kb" -v b="$run_kb" 'BEGIN { printf "ratio: %.2f\n", a / b }'
rm -rf "$dir"

#!/usr/bin/env bash
# Peak memory and time of `report`, `compare` and `recommend` over a run of N rows (issue 40,
# "Scale"). Usage: scripts/scale-memory.sh [N] [ROCSWEEP]. N defaults to 1000000; ROCSWEEP to
# the release binary. A real CPU run of sweeps/quickstart.toml (72 units, --trials 1) is grown
# to N rows by scripts/scale-run.py (each row a distinct shape), twice for compare. Needs GNU
# time (/usr/bin/time) and python3; about 1 GB of disk per 10^6 rows.
set -euo pipefail
n=${1:-1000000}
bin=${2:-target/release/rocsweep}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$bin" run "$here/../sweeps/quickstart.toml" --out "$dir/base" --quiet --trials 1 --no-report
python3 "$here/scale-run.py" "$dir/base" "$dir/a" "$n"
python3 "$here/scale-run.py" "$dir/base" "$dir/b" "$n"
measure() {
    /usr/bin/time -v "$bin" "$@" > /dev/null 2> "$dir/time.txt"
    local kb elapsed
    kb=$(grep 'Maximum resident' "$dir/time.txt" | awk '{print $NF}')
    elapsed=$(grep 'Elapsed' "$dir/time.txt" | awk '{print $NF}')
    printf '%-10s peak %6d MB  %s\n' "$1" $((kb / 1024)) "$elapsed"
}
echo "rows: $n"
measure report "$dir/a"
measure compare "$dir/a" "$dir/b" --out "$dir/cmp"
measure recommend "$dir/a"

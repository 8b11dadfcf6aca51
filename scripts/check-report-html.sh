#!/usr/bin/env bash
# Screenshots RUN_DIR/report.html in headless Chromium, to check that the page renders (and to
# look at it). Usage: scripts/check-report-html.sh RUN_DIR [OUT.png]
# OUT.png defaults to ${TMPDIR:-/tmp}/rocsweep-report-<run dir name>.png; the run directory is
# left as it was. Make the report first with `rocsweep report RUN_DIR`.
# Exit codes: 0 screenshot written, 1 Chromium failed or wrote nothing useful, 2 bad usage or
# no report.html, 3 no Chromium (install: apt-get install -y chromium).
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 RUN_DIR [OUT.png]" >&2
  exit 2
fi
run_dir=$(cd "$1" 2>/dev/null && pwd) || { echo "error: $1: no such directory" >&2; exit 2; }
html="$run_dir/report.html"
if [[ ! -s "$html" ]]; then
  echo "error: $html: missing or empty (run \`rocsweep report $1\` first)" >&2
  exit 2
fi
out=${2:-${TMPDIR:-/tmp}/rocsweep-report-$(basename "$run_dir").png}

chromium=${CHROMIUM:-}
if [[ -z "$chromium" ]]; then
  for c in /usr/bin/chromium chromium chromium-browser google-chrome; do
    if command -v "$c" >/dev/null 2>&1; then chromium=$(command -v "$c"); break; fi
  done
fi
if [[ -z "$chromium" ]]; then
  echo "error: no Chromium found (apt-get install -y chromium, or set CHROMIUM)" >&2
  exit 3
fi

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
rm -f "$out"
# A fresh profile and no background networking: the page is self-contained and the check must
# not depend on (or wait for) anything outside this machine.
timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --screenshot="$out" --window-size=1400,2000 \
  "file://$html" >"$profile/chromium.log" 2>&1 || {
    echo "error: chromium failed; its output:" >&2
    cat "$profile/chromium.log" >&2
    exit 1
  }
if [[ ! -s "$out" ]]; then
  echo "error: chromium wrote no screenshot to $out; its output:" >&2
  cat "$profile/chromium.log" >&2
  exit 1
fi
# A blank white page still makes a PNG, but a small one; a rendered report is far larger.
size=$(stat -c %s "$out")
if (( size < 20000 )); then
  echo "error: $out is only $size bytes: the page looks blank" >&2
  exit 1
fi
echo "$out"

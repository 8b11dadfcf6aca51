#!/usr/bin/env bash
# The wheel, tested as a user without Rust gets it: builds the wheel from this checkout with
# maturin (manylinux_2_28 through zig), checks its tags and metadata, installs it into a fresh
# virtual environment, and runs the installed `rocsweep` on a PATH without cargo, from a
# directory outside the checkout: --version, probe, selftest --backend rocm and the README's
# quickstart.
#
#   scripts/wheel-test.sh                  build the wheel here, then test it
#   scripts/wheel-test.sh --wheel FILE     test a wheel built elsewhere (the release workflow)
#   scripts/wheel-test.sh --build-only     build and check the wheel, install nothing
#
# Environment: WHEEL_OUT (where the wheel is written; default a temporary directory),
# CARGO_TARGET_DIR (default target/, shared with cargo's own builds), PYTHON (default python3),
# WHEEL_TEST_ROCM=require|skip (default require: `selftest --backend rocm` must compile the
# kernels with the system's hipRTC, package libamdhip64-5).
set -euo pipefail
cd "$(dirname "$0")/.."
checkout=$PWD

# Pinned: the build tools live in their own throwaway environment, never in the one tested.
MATURIN_VERSION=1.16.0
ZIGLANG_VERSION=0.17.1

PYTHON=${PYTHON:-python3}
ROCM_CHECK=${WHEEL_TEST_ROCM:-require}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$checkout/target}

fail() {
    echo "wheel-test: FAIL: $*" >&2
    exit 1
}
step() { echo "== wheel: $*"; }

wheel=""
build_only=0
while [ $# -gt 0 ]; do
    case "$1" in
        --wheel)
            [ $# -ge 2 ] || fail "--wheel needs a file"
            wheel=$(realpath "$2") || fail "no such wheel: $2"
            shift 2
            ;;
        --build-only)
            build_only=1
            shift
            ;;
        *) fail "unknown argument: $1 (see the comment at the top of $0)" ;;
    esac
done
case "$ROCM_CHECK" in require | skip) ;; *) fail "WHEEL_TEST_ROCM must be require or skip" ;; esac

work=$(mktemp -d -t rocsweep-wheel-XXXXXX)
echo "wheel-test: working in $work"

if [ -z "$wheel" ]; then
    step "build tools (maturin $MATURIN_VERSION, ziglang $ZIGLANG_VERSION) in a throwaway venv"
    "$PYTHON" -m venv "$work/tools" || fail "cannot create a venv with $PYTHON"
    "$work/tools/bin/python" -m pip install --quiet --disable-pip-version-check \
        "maturin==$MATURIN_VERSION" "ziglang==$ZIGLANG_VERSION" \
        || fail "cannot install maturin and ziglang from PyPI"

    out=${WHEEL_OUT:-$work/dist}
    mkdir -p "$out"
    # From a checkout, Cargo.lock must be used as it is. An unpacked sdist (it has PKG-INFO) has
    # no workspace, and its Cargo.lock still lists the member maturin left out (tests/fake-rocm):
    # cargo drops those entries and changes no version.
    locked=--locked
    [ -f PKG-INFO ] && locked=""
    step "maturin build --release ${locked:+$locked }--zig --compatibility manylinux_2_28 (target dir $CARGO_TARGET_DIR)"
    start=$(date +%s)
    # maturin finds zig through the tools venv's python (python -m ziglang).
    PATH="$work/tools/bin:$PATH" maturin build --release $locked --zig \
        --compatibility manylinux_2_28 --out "$out" \
        || fail "maturin build failed"
    echo "wheel-test: built in $(($(date +%s) - start)) s"
    shopt -s nullglob
    wheels=("$out"/rocsweep-*.whl)
    shopt -u nullglob
    [ ${#wheels[@]} -eq 1 ] || fail "expected one wheel in $out, found ${#wheels[@]}"
    wheel=${wheels[0]}
fi
[ -f "$wheel" ] || fail "no such wheel: $wheel"

step "check $(basename "$wheel")"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
[ -n "$version" ] || fail "cannot read the version from Cargo.toml"
"$PYTHON" scripts/wheel_check.py "$wheel" --version "$version" \
    || fail "the wheel's tags, metadata or contents are wrong (above)"
echo "wheel-test: $(basename "$wheel"), $(du -k "$wheel" | cut -f1) KiB"

if [ "$build_only" = 1 ]; then
    echo "wheel-test: built and checked $wheel"
    exit 0
fi

step "install into a fresh venv (no index: the wheel must need nothing else)"
"$PYTHON" -m venv "$work/venv" || fail "cannot create a venv with $PYTHON"
start=$(date +%s%N)
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index \
    --no-cache-dir "$wheel" || fail "pip could not install $wheel into a fresh venv"
echo "wheel-test: installed in $((($(date +%s%N) - start) / 1000000)) ms"
[ -x "$work/venv/bin/rocsweep" ] || fail "the wheel installed no $work/venv/bin/rocsweep"
head -c 4 "$work/venv/bin/rocsweep" | grep -q "ELF" \
    || fail "$work/venv/bin/rocsweep is not the ELF binary itself"

# The user's side: the venv's bin and the system's, no cargo or rustup, nothing from the build
# environment, and a directory outside the checkout holding only a copy of the sweep.
user_path="$work/venv/bin:/usr/local/bin:/usr/bin:/bin"
as_user() {
    env -i HOME="$HOME" PATH="$user_path" LANG=C.UTF-8 TMPDIR="${TMPDIR:-/tmp}" \
        VIRTUAL_ENV="$work/venv" CI="${CI:-}" "$@"
}
if as_user sh -c 'command -v cargo || command -v rustc || command -v rustup'; then
    fail "cargo, rustc or rustup is on the user's PATH ($user_path): the test proves nothing"
fi
[ "$(as_user sh -c 'command -v rocsweep')" = "$work/venv/bin/rocsweep" ] \
    || fail "rocsweep on the user's PATH is not the venv's"
mkdir -p "$work/user"
cp sweeps/quickstart.toml "$work/user/quickstart.toml"
cd "$work/user"

step "rocsweep --version"
got=$(as_user rocsweep --version) || fail "rocsweep --version exited non-zero"
echo "$got"
case "$got" in *"$version"*) ;; *) fail "--version does not say $version: $got" ;; esac

step "rocsweep probe"
as_user rocsweep probe >"$work/probe.txt" 2>&1 || {
    cat "$work/probe.txt"
    fail "rocsweep probe exited non-zero"
}
cat "$work/probe.txt"
grep -q "^cpu: available" "$work/probe.txt" || fail "probe does not find the CPU backend"

step "rocsweep selftest --backend rocm"
set +e
as_user rocsweep selftest --backend rocm >"$work/selftest.txt" 2>&1
code=$?
set -e
cat "$work/selftest.txt"
echo "wheel-test: selftest exited $code"
if grep -q "^FAIL" "$work/selftest.txt"; then
    fail "selftest --backend rocm has a failed check"
fi
compiled=$(grep -c "^PASS .*compile kernels for" "$work/selftest.txt" || true)
if [ "$ROCM_CHECK" = require ]; then
    [ "$compiled" -gt 0 ] \
        || fail "selftest compiled no kernels (is libamdhip64-5 installed? WHEEL_TEST_ROCM=skip to skip)"
    # 0: a GPU ran every case; 5: no AMD GPU here after the compile checks passed.
    case "$code" in 0 | 5) ;; *) fail "selftest --backend rocm exited $code" ;; esac
    echo "wheel-test: hipRTC compiled the kernels for $compiled targets"
else
    echo "wheel-test: WHEEL_TEST_ROCM=skip: selftest's exit code $code not judged"
fi

step "rocsweep run quickstart.toml (the README's quickstart) from $work/user"
as_user rocsweep run quickstart.toml --out "$work/user/quickstart" --quiet \
    || fail "the quickstart run failed"
test -s "$work/user/quickstart/results.csv" || fail "the quickstart wrote no results.csv"
test -s "$work/user/quickstart/manifest.json" || fail "the quickstart wrote no manifest.json"
rows=$(($(wc -l <"$work/user/quickstart/results.csv") - 1))
[ "$rows" -gt 0 ] || fail "the quickstart's results.csv has no rows"
if grep -q "$checkout" "$work/user/quickstart/manifest.json"; then
    fail "the quickstart's manifest names the checkout ($checkout)"
fi
echo "wheel-test: the installed rocsweep wrote $rows rows to $work/user/quickstart"

cd "$checkout"
rm -rf "$work/tools" "$work/venv"
echo "wheel-test: passed ($(basename "$wheel"))"

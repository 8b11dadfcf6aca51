#!/usr/bin/env bash
# A Python environment with PyTorch from PyPI, for the torch backend's tests: on a machine
# without a GPU, torch runs on its CPU device. Prints the environment's directory.
#
#   scripts/torch-venv.sh        create it (or keep it, when it already has this torch)
#
# Where: $ROCSWEEP_TORCH_VENV, else ${XDG_CACHE_HOME:-~/.cache}/rocsweep/torch-venv, outside
# the checkout so that a fresh clone (CI's) reuses it; the tests look there (tests/torch.rs),
# or use the python named by $ROCSWEEP_TEST_PYTHON.
set -euo pipefail

# Pinned, so that every machine tests the same torch (and accelerate: seed 001's batch path).
TORCH_VERSION=2.15.0
ACCELERATE_VERSION=1.15.0
dir=${ROCSWEEP_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/rocsweep/torch-venv}
has_torch() {
    "$dir/bin/python" -c "import sys, torch; sys.exit(torch.__version__.split('+')[0] != '$TORCH_VERSION')" \
        >/dev/null 2>&1
}
if ! has_torch; then
    echo "torch-venv: installing torch $TORCH_VERSION from PyPI into $dir" >&2
    rm -rf "$dir"
    mkdir -p "$(dirname "$dir")"
    python3 -m venv "$dir"
    "$dir/bin/pip" install --quiet --disable-pip-version-check "torch==$TORCH_VERSION" >&2
    has_torch || { echo "torch-venv: torch $TORCH_VERSION does not import in $dir" >&2; exit 1; }
fi
has_accelerate() {
    "$dir/bin/python" -c "import sys, accelerate; sys.exit(accelerate.__version__ != '$ACCELERATE_VERSION')" \
        >/dev/null 2>&1
}
if ! has_accelerate; then
    echo "torch-venv: installing accelerate $ACCELERATE_VERSION from PyPI into $dir" >&2
    "$dir/bin/pip" install --quiet --disable-pip-version-check "accelerate==$ACCELERATE_VERSION" "torch==$TORCH_VERSION" >&2
    has_accelerate || { echo "torch-venv: accelerate $ACCELERATE_VERSION does not import in $dir" >&2; exit 1; }
fi
echo "$dir"

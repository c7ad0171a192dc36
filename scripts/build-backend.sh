#!/usr/bin/env bash
# Builds the cudawheel backend wheel (abi3, one wheel for CPython >= 3.9) into OUT
# (default: wheelhouse/). Installs maturin with pip if it is missing. Prints the wheel path.
# CUDAWHEEL_BACKEND_PROFILE=dev builds without optimisation (much faster; for quick local loops).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-wheelhouse}
PY=${PYTHON:-python3}
if ! "$PY" -m maturin --version >/dev/null 2>&1; then
  "$PY" -m pip install -q "maturin>=1.5,<2"
fi
mkdir -p "$OUT"
rm -f "$OUT"/cudawheel-*.whl
PROFILE=(--release)
[[ ${CUDAWHEEL_BACKEND_PROFILE:-release} == dev ]] && PROFILE=()
"$PY" -m maturin build "${PROFILE[@]}" --quiet -o "$OUT" >&2
ls "$OUT"/cudawheel-*.whl

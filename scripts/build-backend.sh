#!/usr/bin/env bash
# Builds the cudawheel backend wheel (abi3, one wheel for CPython >= 3.9) into OUT
# (default: wheelhouse/). Installs maturin with pip if it is missing. Prints the wheel path(s).
# CUDAWHEEL_BACKEND_PROFILE=dev builds without optimisation (much faster; for quick local loops).
# CUDAWHEEL_FT_PYTHON=PATH (a free-threaded interpreter, e.g. scripts/env/python-ft.sh's) also
# builds the backend's version-specific wheel for it (cp313t) into OUT/free-threaded/ (apart, so
# `OUT/cudawheel-*.whl` stays the one abi3 wheel): free-threaded CPython has no stable ABI before
# 3.15, so that wheel is built with the `abi3` cargo feature off.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-wheelhouse}
PY=${PYTHON:-python3}
if ! "$PY" -m maturin --version >/dev/null 2>&1; then
  "$PY" -m pip install -q "maturin>=1.5,<2"
fi
mkdir -p "$OUT"
rm -f "$OUT"/cudawheel-*.whl "$OUT"/free-threaded/cudawheel-*.whl
PROFILE=(--release)
[[ ${CUDAWHEEL_BACKEND_PROFILE:-release} == dev ]] && PROFILE=()
"$PY" -m maturin build "${PROFILE[@]}" --quiet -o "$OUT" >&2
FT=${CUDAWHEEL_FT_PYTHON:-}
if [[ -n $FT ]]; then
  ft_info=$("$FT" -c 'import sys, sysconfig; print(sysconfig.get_config_var("Py_GIL_DISABLED") or 0, "%d.%d" % sys.version_info[:2])')
  [[ ${ft_info%% *} == 1 ]] || { echo "build-backend: CUDAWHEEL_FT_PYTHON=$FT is not a free-threaded interpreter" >&2; exit 1; }
  skip=()
  # PyO3 0.30 declares 3.14t its oldest free-threaded target, yet still carries 3.13t's FFI
  # definitions (the object header and reference counts); the backend uses nothing else that
  # differs, so its 3.13t build skips that version gate (the tests import and run it on 3.13t).
  [[ ${ft_info#* } == 3.13 ]] && skip=(UNSAFE_PYO3_SKIP_VERSION_CHECK=1)
  env "${skip[@]}" "$PY" -m maturin build "${PROFILE[@]}" --quiet --no-default-features --features python \
    -i "$FT" -o "$OUT/free-threaded" >&2
fi
ls "$OUT"/cudawheel-*.whl
[[ -z $FT ]] || ls "$OUT"/free-threaded/cudawheel-*.whl

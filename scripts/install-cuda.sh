#!/usr/bin/env bash
# install-cuda.sh MAJOR PREFIX — the project's own CUDA toolchain installer for tests.
#
#   13: NVIDIA's wheels from PyPI (`nvidia-cuda-nvcc`, `-cccl`, `-runtime`, and `-cuobjdump`
#       for tests that look inside fatbins) with
#       `pip install --target PREFIX`; the toolkit root is PREFIX/nvidia/cu13 (bin/nvcc,
#       include/, lib/), usable as CUDA_HOME.
# Idempotent (a stamp records what was installed). Last line of stdout: the toolkit root.
set -euo pipefail
MAJOR=${1:?usage: install-cuda.sh MAJOR PREFIX}
PREFIX=${2:?usage: install-cuda.sh MAJOR PREFIX}
PY=${PYTHON:-python3}
log() { echo "[install-cuda $MAJOR] $*" >&2; }
mkdir -p "$PREFIX"; PREFIX=$(cd "$PREFIX" && pwd)
case "$MAJOR" in
  13)
    SPEC=("nvidia-cuda-nvcc>=13,<14" "nvidia-cuda-cccl>=13,<14" "nvidia-cuda-runtime>=13,<14" "nvidia-cuda-cuobjdump>=13,<14")
    ROOT="$PREFIX/nvidia/cu13"
    STAMP="$PREFIX/.cudawheel-toolchain"
    if [[ -f $STAMP && "$(cat "$STAMP")" == "${SPEC[*]}" && -x $ROOT/bin/nvcc ]]; then
      log "already installed: $ROOT"; echo "$ROOT"; exit 0
    fi
    rm -f "$STAMP"
    PIP_ROOT_USER_ACTION=ignore "$PY" -m pip install -q --disable-pip-version-check --retries 5 \
      --upgrade --target "$PREFIX" "${SPEC[@]}" >&2
    "$ROOT/bin/nvcc" --version | tail -n 2 >&2
    echo "${SPEC[*]}" > "$STAMP"
    echo "$ROOT"
    ;;
  *) log "CUDA $MAJOR: not handled by this installer yet"; exit 2 ;;
esac

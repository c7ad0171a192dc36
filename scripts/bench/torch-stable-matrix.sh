#!/usr/bin/env bash
# torch-stable-matrix.sh [WORK]: which torch releases a stable-ABI wheel installs and runs
# beside, measured. examples/torch_stable is built ONCE per CUDA major:
#   -cu13: against the newest PyPI torch (CUDA 13), nvcc from its cuda-toolkit pin;
#   -cu12: against torch 2.10.0 (PyPI's last CUDA 12 torch, 12.8), nvcc 12 from the project's
#          installer (scripts/env/install-cuda.sh 12);
# then, for each torch release, a fresh venv is asked for `WHEEL torch==X` (uv resolves both:
# "refused" means the requirements exclude that torch), and where it resolves, the CPU op is
# compared with eager torch and the CUDA kernel looked up under the CUDA dispatch key. A last
# column installs the wheel alone and says which torch the installer picked.
#
# Several GB per torch release: uv's cache is CUDAWHEEL_TEST_CACHE/uv (default .cache/uv), so
# releases pinning the same cuda-toolkit share their NVIDIA wheels and a second run downloads
# nothing. Prints a markdown table; the venvs and wheels stay under WORK (default a temp dir).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${CUDAWHEEL_TEST_CACHE:-$ROOT/.cache}
WORK=${1:-$(mktemp -d)}
TORCHES=${TORCHES:-"2.10.0 2.11.0 2.13.0 2.15.0"}
PY=${PYTHON:-python3.11}
export UV_CACHE_DIR=$CACHE/uv UV_PYTHON_DOWNLOADS=never
mkdir -p "$WORK"
log() { echo "torch-stable-matrix: $*" >&2; }

if [[ -n "${CUDAWHEEL_WHEELHOUSE:-}" ]]; then
  house=$CUDAWHEEL_WHEELHOUSE
else
  house=$WORK/wheelhouse
  bash "$ROOT/scripts/build-backend.sh" "$house" >&2
fi
export UV_FIND_LINKS=$house

venv() {  # venv DIR REQ...
  local dir=$1
  shift
  rm -rf "$dir"
  uv venv -q -p "$PY" "$dir"
  [[ $# -eq 0 ]] || uv pip install -q -p "$dir/bin/python" "$@"
}

project() {  # a copy of the example (its build folder stays out of the repository; a rerun
  # with the same WORK reuses it)
  mkdir -p "$WORK/$1"
  cp -r "$ROOT/examples/torch_stable/." "$WORK/$1/"
  echo "$WORK/$1"
}

build_cu13() {
  venv "$WORK/b13" cudawheel "torch>=2.11" "cuda-toolkit[cccl,cudart,nvcc]>=13,<14"
  "$WORK/b13/bin/python" -m cudawheel wheel "$(project p13)" -o "$WORK/w13" -C archs=90-real | tail -n1
}

build_cu12() {
  local home
  home=$(bash "$ROOT/scripts/env/install-cuda.sh" 12 "$CACHE/toolchains/cu12" | tail -n1)
  # torch 2.10's torch.utils.cpp_extension imports setuptools.
  venv "$WORK/b12" cudawheel "torch==2.10.0" setuptools
  CUDA_HOME=$home "$WORK/b12/bin/python" -m cudawheel wheel "$(project p12)" \
    -o "$WORK/w12" -C archs=80-real -C cuda=12 -C toolkit=system | tail -n1
}

CHECK='
import torch, torch_axpy
x, y = torch.randn(4097), torch.randn(4097)
torch.testing.assert_close(torch_axpy.axpy(x, y, 0.5), 0.5 * x + y, rtol=0, atol=1e-6)
try:
    torch.ops.torch_axpy.axpy.default(x, torch.randn(3), 1.0)
    raise SystemExit("no error for mismatched shapes")
except RuntimeError:
    pass
has = torch._C._dispatch_has_kernel_for_dispatch_key
assert has("torch_axpy::axpy", "CPU") and has("torch_axpy::axpy", "CUDA")
print(torch.__version__)
'

cell() {  # cell WHEEL TORCH -> one table cell
  local wheel=$1 torch=$2 dir=$WORK/v-$RANDOM version
  if ! venv "$dir" "$wheel" "torch==$torch" numpy 2>"$dir.err"; then
    echo "refused"
  elif version=$("$dir/bin/python" -c "$CHECK" 2>"$dir.err"); then
    echo "OK ($version, $(runtime "$dir"))"
  else
    echo "FAILS: $(tail -n1 "$dir.err")"
  fi
  rm -rf "$dir"
}

RUNTIME='
import importlib.metadata as m
found = [(d.metadata["Name"], d.version) for d in m.distributions()]
print(next((n + " " + v for n, v in found if n.startswith("nvidia-cuda-runtime")), "no CUDA runtime"))
'

runtime() {  # the CUDA runtime wheel the venv got
  "$1/bin/python" -c "$RUNTIME"
}

picked() {  # the torch an installer picks for the wheel alone
  local dir=$WORK/v-alone
  venv "$dir" "$1" numpy 2>/dev/null && "$dir/bin/python" -c 'import torch; print(torch.__version__)'
  rm -rf "$dir"
}

log "building the CUDA 13 wheel"
w13=$(build_cu13)
log "building the CUDA 12 wheel"
w12=$(build_cu12)
echo "| wheel | Requires-Dist (torch, CUDA runtime) |"
echo "|---|---|"
for w in "$w13" "$w12"; do
  reqs=$(unzip -p "$w" '*.dist-info/METADATA' | grep -E '^Requires-Dist: (torch|nvidia-cuda-runtime)' | cut -d' ' -f2 | paste -sd' ')
  echo "| $(basename "$w") | $reqs |"
done
echo
header="| wheel |"
rule="|---|"
for t in $TORCHES; do header+=" torch $t |"; rule+="---|"; done
echo "$header installed alone |"
echo "$rule---|"
for w in "$w13" "$w12"; do
  row="| $(basename "$w" | cut -d- -f1) |"
  for t in $TORCHES; do
    log "$(basename "$w") beside torch $t"
    row+=" $(cell "$w" "$t") |"
  done
  echo "$row picks torch $(picked "$w") |"
done

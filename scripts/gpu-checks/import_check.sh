# GPU check part "import_check": the GPU check runs at `import` by itself.
#
# prepare_import_check (here) builds packages whose __init__.py imports the extension directly
# and never calls _cuda_libs (as most packages do), into $GPU/import_check/<case>/:
#   a  saxpy,          archs = ["80-real"], nvcc 13.x from PyPI -> on an sm_90 GPU: `import saxpy`
#                                                                  raises the ImportError naming sm_90
#   b  saxpy,          archs = ["80"],      nvcc 13.x from PyPI -> PTX only, made by CUDA 13.x: a
#                                                                  13.0 driver cannot JIT it: ImportError
#                                                                  naming the driver (a ptx-jit warning
#                                                                  and a run where the driver is newer)
#   c  saxpy,          default archs                           -> imports and runs the kernel (CPU-checked)
#   d  pybind_saxpy,   default archs, CPython 3.12             -> the same
#   e  nanobind_saxpy, default archs, CPython 3.12             -> the same
#   f  pybind_saxpy,   archs = ["80-real"], CPython 3.12       -> ImportError naming sm_90
# and downloads the runtime wheels they require into $GPU/import_check/wheels.
# device_import_check installs each in a fresh python3 venv from there and checks the above,
# plus CUDAWHEEL_SKIP_GPU_CHECK=1 (case a imports) and `python -m cudawheel check` (exit 1 / 0).

_import_check_init() {
  # $1: package folder. The package imports its extension directly: no _cuda_libs call.
  printf '"""%s: imports its extension directly."""\n\nfrom ._core import saxpy, device_count, runtime_version, driver_version\n' \
    "$(basename "$1")" >"$1/__init__.py"
}

prepare_import_check() {
  local cache=${CUDAWHEEL_TEST_CACHE:-$ROOT/.cache}
  local out=$GPU/import_check cu13 V=$cache/gpu-import-check-venv py312
  cu13=$(bash scripts/env/install-cuda.sh 13 "$cache/toolchains/cu13" | tail -n1)
  # The GPU machine's python3 is 3.12: the pybind11/nanobind wheels are built for it.
  py312=$(python3.12 -c 'import sys; print(sys.executable)' 2>/dev/null \
    || ls "$(pyenv root 2>/dev/null)"/versions/3.12*/bin/python3.12 2>/dev/null | head -n1 \
    || uv python find 3.12)
  [[ -x $V/bin/python ]] || "$py312" -m venv "$V"
  "$V/bin/pip" install -q --force-reinstall --no-deps "$ROOT"/wheelhouse/cudawheel-*.whl
  "$V/bin/pip" install -q "pybind11>=2.12" "nanobind>=2.0"
  rm -rf "$out"; mkdir -p "$out"
  local case example archs src
  for case in a:saxpy:80-real b:saxpy:80 c:saxpy: d:pybind_saxpy: e:nanobind_saxpy: f:pybind_saxpy:80-real; do
    IFS=: read -r case example archs <<<"$case"
    src=$cache/gpu-import-check-src/$case
    rm -rf "$src"; mkdir -p "$src"; cp -r "examples/$example" "$src/$example"; rm -rf "$src/$example/build"
    _import_check_init "$src/$example/$example"
    local settings=()
    [[ -n $archs ]] && settings=(-C "archs=$archs")
    CUDA_HOME=$cu13 "$V/bin/python" -m cudawheel wheel "$src/$example" -o "$out/$case" "${settings[@]}" 2>&1 | tail -n1 >&2
    "$V/bin/python" -m cudawheel audit "$out/$case"/*.whl >&2
    cp "examples/$example/check_gpu.py" "$out/$case/check_gpu.py"
  done
  local reqs=()
  mapfile -t reqs < <(wheel_requires "$out"/?/*.whl)
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 -d "$out/wheels" "${reqs[@]}"
  du -sh "$out" >&2
}

device_import_check() {
  local out=$GPU/import_check V case msg pkg
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader || true
  for case in a b c d e f; do
    V=/tmp/cudawheel-import-check-$case
    rm -rf "$V"; python3 -m venv "$V"
    "$V/bin/pip" install -q --no-index --find-links "$out/wheels" --find-links "$GPU" cudawheel "$out/$case"/*.whl
    pkg=$(basename "$out/$case"/*.whl | cut -d- -f1 | sed 's/_cu13$//')
    echo "--- case $case: $(basename "$out/$case"/*.whl) (import $pkg)"
    msg=$(cd /tmp && "$V/bin/python" -W always -c "import $pkg; print('imported $pkg')" 2>&1 || true)
    echo "$msg" | grep -v '^  File \|^    \|^Traceback' || true
    "$V/bin/python" -m cudawheel check "$pkg" && echo "check: exit 0" || echo "check: exit $?"
    case $case in
      a|f)
        grep -q "ImportError: $pkg: GPU 0 (.*, sm_90) cannot run this package, which carries GPU code for sm_80 only" <<<"$msg" \
          || { echo "FAIL: case $case expected the ImportError naming sm_90 at import"; return 1; }
        (cd /tmp && CUDAWHEEL_SKIP_GPU_CHECK=1 "$V/bin/python" -c "import $pkg; print('CUDAWHEEL_SKIP_GPU_CHECK=1: imported')") \
          || { echo "FAIL: case $case with CUDAWHEEL_SKIP_GPU_CHECK=1 must import"; return 1; }
        if "$V/bin/python" -m cudawheel check "$pkg" >/dev/null; then
          echo "FAIL: case $case: cudawheel check exited 0"; return 1
        fi ;;
      b)
        if grep -q "ImportError: saxpy: GPU 0 (.*, sm_90) cannot run this package: its only code for sm_90 is PTX made by CUDA" <<<"$msg"; then
          grep -q "update the driver" <<<"$msg" || { echo "FAIL: case b: the fix is missing"; return 1; }
        else
          grep -q "imported saxpy" <<<"$msg" && grep -q "PTX JIT" <<<"$msg" \
            || { echo "FAIL: case b expected the PTX/driver ImportError (or a JIT warning on a newer driver)"; return 1; }
          (cd /tmp && "$V/bin/python" -W ignore "$out/$case/check_gpu.py")
        fi ;;
      c|d|e)
        grep -q "imported $pkg" <<<"$msg" || { echo "FAIL: case $case did not import"; return 1; }
        (cd /tmp && "$V/bin/python" "$out/$case/check_gpu.py") || { echo "FAIL: case $case kernel"; return 1; } ;;
    esac
  done
}

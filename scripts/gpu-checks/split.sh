# GPU check part "split" (issue 25): `split = "library"` wheels run on the GPU.
#
# prepare_split (here) builds examples/pybind_saxpy with `-C split=library` for CPython 3.12 (the
# device's python3; nvcc 13.x from PyPI) twice, into $GPU/split/<case>/:
#   ok     default archs      -> the library wheel pybind_saxpy_lib_cu13 (py3-none, the GPU code)
#                                and the cp312 binding wheel: installed by name, pip pulls the
#                                library; the kernel runs and matches the CPU reference
#                                (examples/pybind_saxpy/check_gpu.py), the library is loaded from
#                                its own folder in site-packages
#   sm80   archs = 80-real    -> the same pair with sm_80 code only: on an sm_90 GPU the binding's
#                                import check (which reads the library's GPU code) raises the
#                                ImportError naming sm_90
# and downloads the runtime wheels they require into $GPU/split/wheels.
# device_split installs each pair in a fresh python3 venv from there only and checks the above.

prepare_split() {
  local cache=${CUDAWHEEL_TEST_CACHE:-$ROOT/.cache}
  local out=$GPU/split cu13 V=$cache/gpu-split-venv py312 src case archs
  cu13=$(bash scripts/install-cuda.sh 13 "$cache/toolchains/cu13" | tail -n1)
  py312=$(python3.12 -c 'import sys; print(sys.executable)' 2>/dev/null \
    || ls "$(pyenv root 2>/dev/null)"/versions/3.12*/bin/python3.12 2>/dev/null | head -n1 \
    || uv python find 3.12)
  [[ -x $V/bin/python ]] || "$py312" -m venv "$V"
  "$V/bin/pip" install -q --force-reinstall --no-deps "$ROOT"/wheelhouse/cudawheel-*.whl
  "$V/bin/pip" install -q "pybind11>=2.12"
  rm -rf "$out"; mkdir -p "$out"
  for case in ok: sm80:80-real; do
    IFS=: read -r case archs <<<"$case"
    src=$cache/gpu-split-src/$case
    rm -rf "$src"; mkdir -p "$src"; cp -r examples/pybind_saxpy "$src/"; rm -rf "$src/pybind_saxpy/build"
    local settings=(-C split=library)
    [[ -n $archs ]] && settings+=(-C "archs=$archs")
    CUDA_HOME=$cu13 "$V/bin/python" -m cudawheel wheel "$src/pybind_saxpy" -o "$out/$case" "${settings[@]}" >&2
    "$V/bin/python" -m cudawheel audit "$out/$case"/*.whl >&2
  done
  cp examples/pybind_saxpy/check_gpu.py "$out/check_gpu.py"
  local w reqs=()
  for w in "$out"/ok/*.whl; do
    mapfile -t -O "${#reqs[@]}" reqs < <(whl_cat "$w" '*.dist-info/METADATA' | sed -n 's/^Requires-Dist: //p' | grep -v lib-cu13)
  done
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 -d "$out/wheels" "${reqs[@]}"
  ls -l "$out"/*/*.whl >&2
  du -sh "$out" >&2
}

device_split() {
  local out=$GPU/split V case msg
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader || true
  for case in ok sm80; do
    V=/tmp/cudawheel-split-$case
    rm -rf "$V"; python3 -m venv "$V"
    echo "--- split case $case: $(cd "$out/$case" && echo *.whl)"
    # The binding wheel by name: pip takes the library wheel from the same folder.
    "$V/bin/pip" install -q --no-index --find-links "$out/wheels" --find-links "$out/$case" pybind_saxpy_cu13 \
      || { echo "FAIL: split $case: pip could not install the binding wheel with its library"; return 1; }
    "$V/bin/pip" list 2>/dev/null | grep -i 'pybind-saxpy' || true
    "$V/bin/pip" show pybind-saxpy-lib-cu13 >/dev/null \
      || { echo "FAIL: split $case: installing the binding wheel did not pull the library wheel"; return 1; }
    if [[ $case == ok ]]; then
      (cd /tmp && "$V/bin/python" "$out/check_gpu.py") \
        || { echo "FAIL: split: the kernel did not match the CPU reference"; return 1; }
      msg=$(cd /tmp && "$V/bin/python" -c "
import pybind_saxpy as m
assert m.saxpy(2.0, [1.0, 2.0], [1.0, 1.0]) == [3.0, 5.0]
print([l.split()[-1] for l in open('/proc/self/maps') if 'libpybind_saxpy__core_gpu.so' in l][0])") \
        || { echo "FAIL: split: $msg"; return 1; }
      [[ $msg == */site-packages/pybind_saxpy_lib_cu13/libpybind_saxpy__core_gpu.so ]] \
        || { echo "FAIL: split: the GPU code was not loaded from the library wheel's folder: $msg"; return 1; }
      echo "split ok: GPU code loaded from $msg"
    else
      msg=$(cd /tmp && "$V/bin/python" -c "import pybind_saxpy" 2>&1 || true)
      echo "$msg" | tail -n1
      grep -q "ImportError: pybind_saxpy: GPU 0 (.*, sm_90) cannot run this package, which carries GPU code for sm_80 only" <<<"$msg" \
        || { echo "FAIL: split sm80: expected the ImportError naming sm_90 (the check must read the library's GPU code)"; return 1; }
      echo "split sm80: the import check read the library's GPU code and refused the sm_90 GPU"
    fi
  done
}

# GPU check part "split": `split = "library"` wheels run on the GPU.
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
# and downloads the runtime wheels they require into $GPU/split/wheels. Then, with
# `-C variant=cuda` too, for CUDA 12 and 13 (archs 80;90) into $GPU/split/variant/: the library
# wheel pybind_saxpy_lib and the cp312 binding pybind_saxpy, both labelled cu12/cu13, with their
# -variants.json files.
# device_split installs each pair in a fresh python3 venv from there only and checks the above;
# for the variant case, uv (no override variable: the real driver and GPU) installs
# `pybind-saxpy` by name and must pick the driver's label for both the binding and the library,
# whose kernel then runs; forced to driver 12.8 it must pick cu12 for both, which runs too. That
# case needs uv and the CUDA 12 runtime wheel, which the "variants" part carries (run both parts
# in one call; without it the case is skipped, and says so).

prepare_split() {
  local cache=${CUDAWHEEL_TEST_CACHE:-$ROOT/.cache}
  local out=$GPU/split cu13 V=$cache/gpu-split-venv py312 src case archs
  cu13=$(bash scripts/env/install-cuda.sh 13 "$cache/toolchains/cu13" | tail -n1)
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
  local cu12
  cu12=$(bash scripts/env/install-cuda.sh 12 "$cache/toolchains/cu12" | tail -n1)
  src=$cache/gpu-split-src/variant
  rm -rf "$src"; mkdir -p "$src"; cp -r examples/pybind_saxpy "$src/"; rm -rf "$src/pybind_saxpy/build"
  CUDA_HOME=$cu12 CUDA_PATH=$cu13 "$V/bin/python" -m cudawheel wheel "$src/pybind_saxpy" -o "$out/variant" \
    --cuda 12 --cuda 13 -C split=library -C variant=cuda -C 'archs=80;90' >&2
  "$V/bin/python" -m cudawheel audit "$out/variant"/*.whl >&2
  ls "$out"/variant/pybind_saxpy{,_lib}-0.1.0-*-cu1[23].whl "$out"/variant/pybind_saxpy{,_lib}-0.1.0-variants.json >&2
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
  device_split_variant
}

# The split + variant case: uv picks the label of both wheels by the real driver and GPU.
device_split_variant() {
  local out=$GPU/split T=/tmp/cudawheel-split-variant uvwhl driver want got
  uvwhl=$(ls "$GPU"/variants/uv/uv-*.whl 2>/dev/null | head -n1)
  if [[ -z $uvwhl ]]; then
    echo "split variant: SKIPPED (no uv carried: run it with the variants part, GPU_CHECK_PARTS=\"split variants\")"
    return 0
  fi
  rm -rf "$T"; mkdir -p "$T"
  python3 -m venv "$T/tool"
  "$T/tool/bin/pip" install -q --no-index "$uvwhl"
  driver=$(nvidia-smi | sed -n 's/.*CUDA Version: *\([0-9][0-9]*\.[0-9]*\).*/\1/p' | head -n1)
  want=cu${driver%%.*}
  # pick NAME [VAR=VALUE...]: uv installs pybind-saxpy into a fresh venv; prints both labels.
  pick() {
    local venv=$T/$1; shift
    "$T/tool/bin/uv" venv -q --offline --python python3 "$venv"
    env -u NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION -u NV_VARIANT_PROVIDER_FORCE_SM_ARCH \
      UV_CACHE_DIR=$T/uv-cache "$@" "$T/tool/bin/uv" pip install --offline --no-index --python "$venv/bin/python" \
      --preview-features wheel-variants --find-links "$out/variant" --find-links "$out/wheels" --find-links "$GPU" \
      pybind-saxpy >&2 || return 1
    (cd /tmp && "$venv/bin/python" -c '
import json, importlib.metadata as md
print(*[next(iter(json.loads(md.distribution(d).read_text("variant.json"))["variants"])) for d in ("pybind-saxpy", "pybind-saxpy-lib")])')
  }
  local case env_set
  for case in "real:" "forced12:NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION=12.8"; do
    IFS=: read -r case env_set <<<"$case"
    [[ $case == forced12 ]] && want=cu12
    got=$(pick "$case" ${env_set:+"$env_set"}) || { echo "FAIL: split variant $case: uv could not install pybind-saxpy"; return 1; }
    echo "split variant $case (driver CUDA $driver): uv picked binding/library $got"
    [[ $got == "$want $want" ]] || { echo "FAIL: split variant $case: expected $want for both"; return 1; }
    (cd /tmp && "$T/$case/bin/python" "$out/check_gpu.py") \
      || { echo "FAIL: split variant $case: the kernel did not match the CPU reference"; return 1; }
    got=$(cd /tmp && "$T/$case/bin/python" -c "
import pybind_saxpy as m
m.saxpy(1.0, [1.0], [1.0])
print([l.split()[-1] for l in open('/proc/self/maps') if 'libpybind_saxpy__core_gpu.so' in l][0])")
    [[ $got == */site-packages/pybind_saxpy_lib/libpybind_saxpy__core_gpu.so ]] \
      || { echo "FAIL: split variant $case: the GPU code was not loaded from pybind_saxpy_lib: $got"; return 1; }
  done
  echo "split variant ok: uv picked the driver's label for the binding and the library; cu12 runs too"
}

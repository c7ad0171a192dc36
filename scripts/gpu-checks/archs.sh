# GPU check part "archs": the import-time GPU check of `_cuda_libs.preload()` on a
# real GPU, and whether a cold build uses every core (scripts/bench/bench_cores.py).
#
# prepare_archs (here) builds the saxpy example four times into $GPU/archs/<case>/:
#   a  archs = ["80-real"], nvcc 13.x from PyPI    -> on an sm_90 GPU: ImportError naming sm_90
#   b  archs = ["80"],      nvcc 13.x from PyPI    -> PTX only; a driver older than 13.x cannot JIT
#                                                      it: ImportError naming the driver needed
#                                                      (runs with a PTX-JIT warning on a newer driver)
#   c  archs = ["80"],      nvcc 12.4              -> runs through PTX JIT (warning), kernel checked
#   d  default archs,       nvcc 13.x from PyPI    -> runs (SASS), kernel checked
# and downloads the runtime wheels they require into $GPU/archs/wheels.
# device_archs installs each in a fresh venv from there, checks the verdict (found through NVML,
# honouring CUDA_VISIBLE_DEVICES, never cuInit), runs check_saxpy.py for c and d and, for d, the
# kernel in a child forked after the import (plus a cuInit-before-fork control), then runs the
# core benchmark with /usr/local/cuda.

prepare_archs() {
  local cache=${CUDAWHEEL_TEST_CACHE:-$ROOT/.cache}
  local out=$GPU/archs cu13 cu12 V=$cache/gpu-archs-venv
  cu13=$(bash scripts/env/install-cuda.sh 13 "$cache/toolchains/cu13" | tail -n1)
  cu12=$(bash scripts/env/install-cuda.sh 12 "$cache/toolchains/cu12" | tail -n1)
  [[ -x $V/bin/python ]] || "$PY" -m venv "$V"
  "$V/bin/pip" install -q --force-reinstall --no-deps "$ROOT"/wheelhouse/cudawheel-*.whl
  local case archs home src
  for case in a:80-real:$cu13 b:80:$cu13 c:80:$cu12 d::$cu13; do
    IFS=: read -r case archs home <<<"$case"
    src=$cache/gpu-archs-src/$case
    rm -rf "$src"; mkdir -p "$src"; cp -r examples/saxpy "$src/saxpy"; rm -rf "$src/saxpy/build"
    local settings=()
    [[ -n $archs ]] && settings=(-C "archs=$archs")
    CUDA_HOME=$home "$V/bin/python" -m cudawheel wheel "$src/saxpy" -o "$out/$case" "${settings[@]}" 2>&1 | tail -n1 >&2
    "$V/bin/python" -m cudawheel audit "$out/$case"/*.whl >&2
  done
  local reqs=()
  mapfile -t reqs < <(wheel_requires "$out"/?/*.whl)
  "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$out/wheels" "${reqs[@]}"
  du -sh "$out" >&2
}

# Evaluates a Python expression with `m` = the installed saxpy/_cuda_libs.py, loaded on its own
# (importing the package would run preload(), which is what may fail).
_archs_helper() {
  "$1/bin/python" -c '
import importlib.util, os, sys, sysconfig
path = os.path.join(sysconfig.get_paths()["purelib"], "saxpy", "_cuda_libs.py")
spec = importlib.util.spec_from_file_location("cuda_libs", path)
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
print(eval(sys.argv[1]))' "$2"
}

device_archs() {
  local out=$GPU/archs V case msg driver need
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader || true
  # The driver's CUDA version, e.g. 13000 (what `_cuda_libs.driver_version()` reports).
  driver=$(python3 -c 'import ctypes; v = ctypes.c_int(); ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(v)); print(v.value)')
  echo "driver supports CUDA $driver"
  for case in a b c d; do
    V=/tmp/cudawheel-archs-$case
    rm -rf "$V"; python3 -m venv "$V"
    "$V/bin/pip" install -q --no-index --find-links "$out/wheels" --find-links "$GPU" "$out/$case"/*.whl
    echo "--- case $case: $(basename "$out/$case"/*.whl)"
    echo "GPU code: $(_archs_helper "$V" 'm.GPU_CODE')"
    msg=$(cd /tmp && "$V/bin/python" -W always -c '
import saxpy
from saxpy import _cuda_libs
for v in _cuda_libs.gpu_verdicts(): print("verdict:", tuple(v))
' 2>&1 || true)
    echo "$msg"
    case $case in
      a)
        grep -q "ImportError: saxpy: GPU 0 (.*, sm_90) cannot run this package, which carries GPU code for sm_80 only" <<<"$msg" \
          || { echo "FAIL: case a expected the ImportError naming sm_90"; return 1; }
        # CUDA_VISIBLE_DEVICES as CUDA reads it: this GPU by UUID prefix -> the same error; -1 -> no GPU, no check.
        local uuid
        uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -n1 | cut -c1-12)
        msg=$(cd /tmp && CUDA_VISIBLE_DEVICES=$uuid "$V/bin/python" -c 'import saxpy' 2>&1 || true)
        echo "CUDA_VISIBLE_DEVICES=$uuid: ${msg##*$'\n'}"
        grep -q "ImportError: saxpy: GPU 0 (.*, sm_90) cannot run" <<<"$msg" \
          || { echo "FAIL: case a with CUDA_VISIBLE_DEVICES=$uuid expected the ImportError"; return 1; }
        (cd /tmp && CUDA_VISIBLE_DEVICES=-1 "$V/bin/python" -c 'import saxpy; from saxpy import _cuda_libs as c; assert c.gpu_verdicts() == [], c.gpu_verdicts(); print("CUDA_VISIBLE_DEVICES=-1: imports, no GPU checked")') \
          || { echo "FAIL: case a with CUDA_VISIBLE_DEVICES=-1 expected no check"; return 1; } ;;
      b)
        # The PTX came from nvcc 13.x (PTX ISA 9.x): a driver below that version cannot JIT it.
        need=$(_archs_helper "$V" '(lambda t: t[0] * 1000 + t[1] * 10)(next(iter(m.GPU_CODE.values()))["ptx_toolkit"])')
        echo "case b: PTX needs a driver for $need, the driver has $driver"
        if (( driver < need )); then
          grep -q "cannot run this package: its only code for sm_90 is PTX made by CUDA" <<<"$msg" \
            && grep -q "update the driver" <<<"$msg" \
            || { echo "FAIL: case b expected the PTX/driver ImportError"; return 1; }
        else
          grep -q "verdict: (0, .*'ptx-jit'" <<<"$msg" || { echo "FAIL: case b expected ptx-jit"; return 1; }
          (cd /tmp && "$V/bin/python" "$GPU/check_saxpy.py")
        fi ;;
      c)
        grep -q "verdict: (0, .*'ptx-jit'" <<<"$msg" || { echo "FAIL: case c expected ptx-jit"; return 1; }
        (cd /tmp && "$V/bin/python" -W ignore "$GPU/check_saxpy.py") ;;
      d)
        grep -q "verdict: (0, .*'sass'" <<<"$msg" || { echo "FAIL: case d expected sass"; return 1; }
        (cd /tmp && "$V/bin/python" "$GPU/check_saxpy.py")
        # Fork safety: the import's check (NVML) leaves CUDA uninitialised, so a child forked
        # after `import saxpy` runs the kernel. The control calls cuInit before the fork (the old
        # check did), after which CUDA refuses to work in the child.
        local fork=$'import ctypes, os, sys, saxpy\nfrom saxpy import _cuda_libs\nassert _cuda_libs.gpu_verdicts()[0].verdict == "sass"\nif sys.argv[1] == "cuinit": ctypes.CDLL("libcuda.so.1").cuInit(0)\npid = os.fork()\nif pid == 0:\n    try: os._exit(0 if saxpy.saxpy(2.0, [1.0, 2.0], [1.0, 1.0]) == [3.0, 5.0] else 1)\n    except BaseException as e: print("  child:", e, flush=True); os._exit(2)\nsys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))'
        if (cd /tmp && timeout 120 "$V/bin/python" -c "$fork" import); then
          echo "fork after import: the child ran the kernel"
        else
          echo "FAIL: a child forked after import saxpy could not run the kernel"; return 1
        fi
        if (cd /tmp && timeout 120 "$V/bin/python" -c "$fork" cuinit); then
          echo "control (cuInit before fork): the child still ran the kernel (the fork test proves less than hoped)"
        else
          echo "control (cuInit before fork): the child failed, as expected"
        fi
        # CUDA_VISIBLE_DEVICES read as CUDA reads it: the GPUs checked (NVML) number what the
        # CUDA runtime counts (cudaGetDeviceCount, after the check), for each spelling.
        local cvd count uuid8
        uuid8=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -n1 | cut -c1-12)
        # The documented spellings must agree (FAIL otherwise); the edge cases (a repeated
        # index, an unknown UUID, a space) are reported as NOTE when CUDA reads them otherwise.
        for cvd in UNSET 0 "$uuid8" -1 "" 1 "0,1" "0,-1" "0,0" "GPU-zzzz" " 0"; do
          count=$(cd /tmp && if [[ $cvd == UNSET ]]; then unset CUDA_VISIBLE_DEVICES; else export CUDA_VISIBLE_DEVICES=$cvd; fi
            "$V/bin/python" -c 'import saxpy
from saxpy import _cuda_libs
try: n = saxpy.device_count()
except RuntimeError: n = 0
print(len(_cuda_libs.gpu_verdicts()), n)')
          echo "CUDA_VISIBLE_DEVICES='$cvd': checked, CUDA counts: $count"
          if [[ ${count% *} != "${count#* }" ]]; then
            case $cvd in
              "0,0"|GPU-zzzz|" 0") echo "NOTE: the check and CUDA disagree on CUDA_VISIBLE_DEVICES='$cvd'" ;;
              *) echo "FAIL: the check and CUDA disagree on CUDA_VISIBLE_DEVICES='$cvd'"; return 1 ;;
            esac
          fi
        done ;;
    esac
  done
  if [[ -x /usr/local/cuda/bin/nvcc ]]; then
    V=/tmp/cudawheel-archs-bench
    rm -rf "$V"; python3 -m venv "$V"
    "$V/bin/pip" install -q --no-index "$GPU"/cudawheel-*.whl
    # archs = "native": the build asks the driver (dlopen libcuda.so.1) for this GPU.
    rm -rf /tmp/archs-native; cp -r examples/saxpy /tmp/archs-native; rm -rf /tmp/archs-native/build
    CUDA_HOME=/usr/local/cuda "$V/bin/python" -m cudawheel wheel /tmp/archs-native -o /tmp/archs-native/out \
      -C toolkit=system -C archs=native -C verbose=true 2>&1 | grep -o -- '-gencode [^ ]*' | sort -u
    "$V/bin/python" -m cudawheel audit /tmp/archs-native/out/*.whl | grep 'GPU code'
    "$V/bin/python" -m cudawheel audit /tmp/archs-native/out/*.whl | grep -q "SASS sm_$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n1 | tr -d .) " \
      || { echo "FAIL: archs=native did not build this GPU's SASS"; return 1; }
    # Item 6: a cold build against the hand-run floor with the same flags, on every core.
    python3 scripts/bench/bench_cores.py --python "$V/bin/python" --cuda-home /usr/local/cuda --rounds 3
  else
    echo "NOT MEASURED: no /usr/local/cuda/bin/nvcc for the core benchmark"
  fi
}

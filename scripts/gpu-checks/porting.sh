# GPU part `porting` (a setup.py-shaped project ported). Two checks:
#
#   1. examples/tiny_conv's CUDA kernel (the .cu the torch extension compiles, behind a C
#      interface) with a plain C++ harness, built with the example's setup.py-style nvcc flags
#      (--use_fast_math, -U__CUDA_NO_HALF_OPERATORS__..., --ptxas-options=-v, -lineinfo), sm_90
#      SASS + PTX, cudart static; compared with a CPU reference there. (torch itself cannot be
#      carried: several GB.)
#   2. a top-level extension module built by cudawheel (`topmod_cuda`, abi3 cp39, a kernel
#      launched from the CPython C API): installed from the carried wheel and the runtime wheel,
#      its generated `_topmod_cuda_cuda_libs.py` checks the real driver and GPU (gpu_verdicts)
#      and preloads libcudart, then the module runs its kernel.
#
#   prepare_porting: builds both here (nvcc 13 from the project's installer), downloads the
#                    runtime wheel the module's METADATA asks for; a few MB.
#   device_porting:  runs the harness; installs the wheel in a fresh venv offline, imports
#                    through the helper, runs the kernel. Prints "porting part OK" or exits 1.

PORTING_NVCC_FLAGS=(-O3 -U__CUDA_NO_HALF_OPERATORS__ -U__CUDA_NO_HALF_CONVERSIONS__
  -U__CUDA_NO_BFLOAT16_OPERATORS__ -U__CUDA_NO_BFLOAT16_CONVERSIONS__ --expt-relaxed-constexpr
  --expt-extended-lambda --use_fast_math --ptxas-options=-v -lineinfo
  -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 -cudart static)

porting_topmod_project() {
  local dir=$1
  rm -rf "$dir"; mkdir -p "$dir/csrc"
  cat > "$dir/pyproject.toml" <<'TOML'
[build-system]
requires = ["cudawheel"]
build-backend = "cudawheel"

[project]
name = "topmod"
version = "1.0"

[tool.cudawheel]
archs = ["80-real", "90"]
py-limited-api = "cp39"
name-suffix = ""

[[tool.cudawheel.extension]]
name = "topmod_cuda"
sources = ["csrc/topmod.cu"]
nvcc-flags = ["--ptxas-options=-v"]
TOML
  cat > "$dir/csrc/topmod.cu" <<'CU'
#define Py_LIMITED_API 0x03090000
#include <Python.h>
#include <cuda_runtime.h>

__global__ void twice(int* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = 2 * i;
}

// Sum of 2*i for i < 4096 computed on the GPU; -1 on a CUDA error.
static PyObject* check(PyObject*, PyObject*) {
  const int n = 4096;
  int* d = nullptr;
  int h[n];
  if (cudaMalloc(&d, n * sizeof(int)) != cudaSuccess) return PyLong_FromLong(-1);
  twice<<<(n + 255) / 256, 256>>>(d, n);
  if (cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess) return PyLong_FromLong(-1);
  cudaFree(d);
  long long s = 0;
  for (int i = 0; i < n; ++i) s += h[i];
  return PyLong_FromLongLong(s);
}

static PyMethodDef methods[] = {{"check", check, METH_NOARGS, nullptr}, {nullptr, nullptr, 0, nullptr}};
static PyModuleDef module = {PyModuleDef_HEAD_INIT, "topmod_cuda", nullptr, -1, methods};
PyMODINIT_FUNC PyInit_topmod_cuda(void) { return PyModule_Create(&module); }
CU
}

prepare_porting() {
  local out=$GPU/porting home V=$ROOT/.cache/gpu-venv work=$ROOT/.cache/gpu-porting
  mkdir -p "$out/src"
  cp examples/tiny_conv/csrc/causal_conv1d_kernel.cu examples/tiny_conv/csrc/causal_conv1d.h \
    scripts/gpu-checks/tiny_conv_harness.cu "$out/src/"
  home=$(bash scripts/env/install-cuda.sh 13 "${CUDAWHEEL_TEST_CACHE:-$ROOT/.cache}/toolchains/cu13" | tail -n1)
  "$home/bin/nvcc" "${PORTING_NVCC_FLAGS[@]}" -Xcompiler -static-libstdc++ -Xcompiler -static-libgcc \
    -I"$out/src" -o "$out/tiny_conv_harness" "$out/src/tiny_conv_harness.cu" "$out/src/causal_conv1d_kernel.cu" \
    2> "$out/ptxas.txt"
  grep -q "ptxas info" "$out/ptxas.txt"
  "$home/bin/nvcc" --version | tail -n1 > "$out/built-with.txt"
  # The top-level module, built by cudawheel (its ptxas statistics go to the build log).
  [[ -x $V/bin/python ]] || "$PY" -m venv "$V"
  "$V/bin/pip" install -q --force-reinstall --no-deps wheelhouse/cudawheel-*.whl
  porting_topmod_project "$work"
  CUDA_HOME=$home "$V/bin/python" -m cudawheel wheel "$work" -o "$out" 2> "$work/log"
  cat "$work/log" >&2
  ! grep -q "ptxas info" "$work/log"
  grep -q "ptxas info" "$work/build/cudawheel/build.log"
  unzip -l "$out"/topmod-1.0-*.whl | grep -q " _topmod_cuda_cuda_libs.py"
  local reqs=()
  mapfile -t reqs < <(unzip -p "$out"/topmod-1.0-*.whl '*.dist-info/METADATA' | sed -n 's/^Requires-Dist: //p')
  "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$out" "${reqs[@]}"
  du -sh "$out" >&2
}

device_porting() {
  local dir=$GPU/porting V=/tmp/cudawheel-gpu-porting
  echo "porting part: the harness built with $(cat "$dir/built-with.txt")"
  "$dir/tiny_conv_harness"
  rm -rf "$V"; python3 -m venv "$V"
  "$V/bin/pip" install -q --no-index --find-links "$dir" --find-links "$GPU" "$dir"/topmod-1.0-*.whl
  (cd /tmp && "$V/bin/python" - <<'PY'
import _topmod_cuda_cuda_libs as h
h.preload()
print("driver", h.driver_version(), "verdicts", h.gpu_verdicts())
assert h.driver_version(), "no driver found"
assert all(v.verdict in ("sass", "ptx-jit") for v in h.gpu_verdicts()), h.gpu_verdicts()
import topmod_cuda
got = topmod_cuda.check()
assert got == 2 * sum(range(4096)), got
print("topmod_cuda.check() =", got)
print("porting part OK")
PY
  )
}

# GPU part `torch_stable` (`torch-stable-abi`). The GPU machine has no torch and no internet,
# and torch with its CUDA wheels (several GB) cannot be carried. So this part proves the CUDA
# kernel of examples/torch_stable itself: csrc/axpy_kernels.cu (the file the stable-ABI
# extension compiles and launches on torch's current stream) with a plain C++ harness, against
# a CPU reference.
#
#   prepare_torch_stable: builds the harness here with nvcc 13 from the project's installer,
#                         the nvcc flags cudawheel gives stable-ABI targets (C++20, USE_CUDA,
#                         relaxed constexpr), sm_90 SASS + PTX, the CUDA runtime, libstdc++
#                         and libgcc linked statically (needs only glibc and the driver
#                         there); carries the executable and the sources (a few hundred kB).
#   device_torch_stable:  runs the carried executable, then builds the same sources with the
#                         machine's own /usr/local/cuda nvcc and runs that too. Each prints
#                         "torch_stable kernel OK" or exits non-zero.

TORCH_STABLE_NVCC_FLAGS=(-std=c++20 -O3 -DUSE_CUDA --expt-relaxed-constexpr
  -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 -cudart static)

prepare_torch_stable() {
  local out=$GPU/torch_stable home
  mkdir -p "$out/src"
  cp examples/torch_stable/csrc/axpy_kernels.cu examples/torch_stable/csrc/axpy_kernels.cuh \
    scripts/gpu-checks/torch_stable_harness.cu "$out/src/"
  home=$(bash scripts/env/install-cuda.sh 13 "${CUDAWHEEL_TEST_CACHE:-$ROOT/.cache}/toolchains/cu13" | tail -n1)
  "$home/bin/nvcc" "${TORCH_STABLE_NVCC_FLAGS[@]}" -Xcompiler -static-libstdc++ -Xcompiler -static-libgcc \
    -I"$out/src" -o "$out/axpy_harness" \
    "$out/src/torch_stable_harness.cu" "$out/src/axpy_kernels.cu"
  "$home/bin/nvcc" --version | tail -n1 > "$out/built-with.txt"
  du -sh "$out" >&2
}

device_torch_stable() {
  local dir=$GPU/torch_stable
  echo "torch_stable part: the harness built with $(cat "$dir/built-with.txt")"
  "$dir/axpy_harness"
  local nvcc=/usr/local/cuda/bin/nvcc tmp
  tmp=$(mktemp -d)
  "$nvcc" "${TORCH_STABLE_NVCC_FLAGS[@]}" -I"$dir/src" -o "$tmp/axpy_harness" \
    "$dir/src/torch_stable_harness.cu" "$dir/src/axpy_kernels.cu"
  echo "torch_stable part: the harness built there with $("$nvcc" --version | tail -n1)"
  "$tmp/axpy_harness"
  rm -rf "$tmp"
}

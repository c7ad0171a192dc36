# GPU part `release`: the backend's x86_64 release wheel (scripts/release.sh: abi3,
# manylinux_2_17, built with zig) builds a CUDA example on the GPU machine and its kernel runs.
#
# prepare_release (here): scripts/release.sh without the free-threaded wheel (the GPU machine
# has no free-threaded Python; CUDAWHEEL_BACKEND_PROFILE=dev is honoured), keeping only the
# x86_64 wheel, plus NVIDIA's CUDA 13 runtime wheel and saxpy's check script, into $GPU/release/.
# device_release (GPU machine): a fresh venv with only that wheel (offline), saxpy built there
# with the machine's own CUDA toolkit (toolkit = "system", no build isolation), installed in a
# second fresh venv with the runtime wheel, and check_gpu.py compares the kernel with the CPU
# reference (non-zero exit on a mismatch).

prepare_release() {
  local out=$GPU/release rel=$ROOT/.cache/gpu-release
  mkdir -p "$out"
  rm -rf "$rel"
  CUDAWHEEL_RELEASE_FT=0 bash scripts/release.sh "$rel" >&2
  cp "$rel"/cudawheel-*-cp39-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl "$out/"
  "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$out" "nvidia-cuda-runtime>=13,<14"
  cp "$ROOT/examples/saxpy/check_gpu.py" "$out/check_saxpy.py"
  du -sh "$out" >&2
}

device_release() {
  local out=$GPU/release V=/tmp/cudawheel-gpu-release W=/tmp/cudawheel-gpu-release-run
  if ! command -v nvcc >/dev/null && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
    echo "NOT CHECKED: release (no CUDA toolkit on this machine to build with)"
    return 0
  fi
  rm -rf "$V" "$W" /tmp/release-saxpy /tmp/release-w
  python3 -m venv "$V"
  "$V/bin/pip" install -q --no-index "$out"/cudawheel-*.whl
  echo "release wheel: $(basename "$out"/cudawheel-*.whl) on $(ldd --version | head -n1)"
  cp -r examples/saxpy /tmp/release-saxpy; rm -rf /tmp/release-saxpy/build
  "$V/bin/python" -m cudawheel wheel /tmp/release-saxpy -o /tmp/release-w -C toolkit=system -C archs=90
  python3 -m venv "$W"
  "$W/bin/pip" install -q --no-index --find-links "$out" /tmp/release-w/*.whl
  (cd /tmp && "$W/bin/python" "$out/check_saxpy.py")
}

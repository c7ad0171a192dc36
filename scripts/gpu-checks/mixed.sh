# GPU part "mixed": the machine's system toolkit (/usr/local/cuda 13.0) next to a
# runtime wheel of another CUDA release (nvidia-cuda-runtime 13.x, x != 0) in the venv, as a
# `pip install torch` leaves it; no nvidia-cuda-crt / -cccl wheels. Built there without isolation
# with CUDA_HOME=/usr/local/cuda: host code (module.cpp) and kernels (haxpy.cu) must both compile
# against the toolkit's headers (CUDART_VERSION read back from the module), the wheel must link
# the venv's libcudart, install into that venv without an index, and compute on the GPU what the
# CPU computes.

prepare_mixed() {
  local dir=$GPU/mixed
  mkdir -p "$dir/wheels"
  "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$dir/wheels" "nvidia-cuda-runtime>=13.1,<14"
  local w; w=$(ls "$dir"/wheels/nvidia_cuda_runtime-*.whl)
  [[ $(basename "$w") != nvidia_cuda_runtime-13.0.* ]] || { echo "mixed: need a runtime wheel other than 13.0: $w" >&2; return 1; }
  rm -rf "$dir/project"
  cp -r examples/mixed_headers "$dir/project"
  rm -rf "$dir/project/build"
  echo "mixed: carries $(basename "$w") and examples/mixed_headers ($(du -sh "$dir" | cut -f1))" >&2
}

device_mixed() {
  local dir=$GPU/mixed V=/tmp/cudawheel-gpu-mixed src=/tmp/mixed-src out=/tmp/mixed-out
  local home=${MIXED_CUDA_HOME:-/usr/local/cuda}  # another toolkit only to try this part elsewhere
  if [[ ! -x $home/bin/nvcc ]]; then
    echo "NOT CHECKED: mixed (no $home/bin/nvcc here)"; return 1
  fi
  rm -rf "$V" "$src" "$out"; python3 -m venv "$V"
  "$V/bin/pip" install -q --no-index --find-links "$GPU" --find-links "$dir/wheels" cudawheel "$dir"/wheels/nvidia_cuda_runtime-*.whl
  "$V/bin/pip" list 2>/dev/null | grep -i -E 'cudawheel|nvidia'
  cp -r "$dir/project" "$src"
  local toolkit
  toolkit=$(sed -n 's/^#define CUDART_VERSION *//p' "$home/include/cuda_runtime_api.h")
  echo "mixed: $home headers CUDART_VERSION=$toolkit; venv runtime wheel: $(ls "$dir"/wheels)"
  # Which headers, which libcudart, and why (doctor, then the build's own lines).
  CUDA_HOME=$home "$V/bin/python" -m cudawheel doctor "$src" | sed -n '/^Header set/,/^Build requirements/p'
  CUDA_HOME=$home "$V/bin/python" -m cudawheel wheel "$src" -o "$out" -C archs=90 2>&1 | tee /tmp/mixed-build.log
  grep -q "^cudawheel: headers: CUDA $((toolkit / 1000)).$((toolkit % 1000 / 10)) " /tmp/mixed-build.log
  grep -q "^cudawheel: libcudart: $V/.*/nvidia/cu13/lib/libcudart.so.13 " /tmp/mixed-build.log
  local whl; whl=$(ls "$out"/mixed_headers_cu13-*.whl)
  whl_cat "$whl" '*.dist-info/METADATA' | grep '^Requires-Dist:'
  [[ "$(whl_cat "$whl" '*.dist-info/METADATA' | sed -n 's/^Requires-Dist: //p')" == "nvidia-cuda-runtime>=$((toolkit / 1000)).$((toolkit % 1000 / 10)),<14" ]]
  # Satisfiable by the environment it was built in: no index.
  "$V/bin/pip" install -q --no-index "$whl"
  # (not from $src, whose source package would shadow the installed one)
  cp "$src/check_gpu.py" /tmp/check_mixed_headers.py
  (cd /tmp && "$V/bin/python" /tmp/check_mixed_headers.py)
  (cd /tmp && "$V/bin/python" -c "import mixed_headers as m, sys; v = (m.cpp_cudart_version(), m.cu_cudart_version()); print('mixed: .cpp/.cu CUDART_VERSION', v, 'runtime loaded', m.runtime_version()); sys.exit(0 if v == ($toolkit, $toolkit) else 1)")
}

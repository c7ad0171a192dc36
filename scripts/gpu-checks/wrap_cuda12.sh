# GPU part `wrap_cuda12`: a wrapped CMake project written for CUDA 12 (tests/data/wrap-cuda12,
# shaped like isoext: its build loads the module it just built), built with a system CUDA 12.4
# toolkit (the project's installer, given as CUDA_HOME, as a user with /usr/local/cuda-12.x does).
#
#   prepare_wrap_cuda12 (here): `pip wheel` of the project in wrap mode for CPython 3.12 (the GPU
#       machine's), archs=90, build isolation, CUDA_HOME the CUDA 12.4 toolkit; NVIDIA's CUDA 12
#       runtime wheel beside it (what the wheel requires).
#   device_wrap_cuda12: a venv with the wheel and that runtime wheel: `_k.scale` runs on the GPU
#       (the machine's driver is for CUDA 13.0; a CUDA 12 build runs on it), matches the CPU, and
#       the libcudart loaded is the wheel's `libcudart.so.12`, reached through the wheel's RPATH.

prepare_wrap_cuda12() {
  local out=$GPU/wrap_cuda12 py312 cu12
  py312=${PY312:-$(ls -d "$HOME"/.pyenv/versions/3.12.*/bin/python3 2>/dev/null | tail -n1)}
  [[ -x $py312 ]] || { echo "wrap_cuda12: needs a CPython 3.12 to build for the GPU machine's (set PY312)" >&2; return 1; }
  cu12=$(bash scripts/env/install-cuda.sh 12 "${CUDAWHEEL_TEST_CACHE:-$ROOT/.cache}/toolchains/cu12" | tail -n1)
  rm -rf "$out" "$ROOT/.cache/gpu-wrap-cuda12"; mkdir -p "$out" "$ROOT/.cache"
  cp -r tests/data/wrap-cuda12 "$ROOT/.cache/gpu-wrap-cuda12"   # built outside the repository's tree
  CUDA_HOME=$cu12 PIP_FIND_LINKS="$ROOT/wheelhouse" "$py312" -m pip wheel -q --no-deps -w "$out" \
    --config-settings archs=90 "$ROOT/.cache/gpu-wrap-cuda12" >&2
  "$py312" -m pip download -q --no-deps --only-binary=:all: -d "$out/wheels" "nvidia-cuda-runtime-cu12>=12.4,<13"
  ls -l "$out"/*.whl "$out"/wheels >&2
}

device_wrap_cuda12() {
  local out=$GPU/wrap_cuda12 A=/tmp/cudawheel-wrap-cuda12
  rm -rf "$A"; python3 -m venv "$A"
  "$A/bin/pip" install -q --no-index --no-deps "$out"/wrap_cuda12_cu12-*.whl "$out"/wheels/nvidia_cuda_runtime_cu12-*.whl
  "$A/bin/python" - <<'PYEOF'
import wrap_cuda12._k as k
ys = [float(i) for i in range(4097)]
got = k.scale(3.0, ys)
assert got == [3.0 * y for y in ys], got[:4]
maps = sorted({l.split()[-1] for l in open("/proc/self/maps") if "libcudart" in l})
assert len(maps) == 1 and maps[0].endswith("site-packages/nvidia/cuda_runtime/lib/libcudart.so.12"), maps
v = k.runtime_version()
assert v // 1000 == 12, v
print("wrap_cuda12 kernel OK on the GPU (built with a system CUDA 12.4), runtime", v, "libcudart from", maps[0])
PYEOF
}

# GPU part `multi_major`: one wheel for CUDA 12 and 13 (`cuda = ["12", "13"]`), on the GPU.
#
# prepare: examples/saxpy with `cuda = ["12", "13"]` built once (archs 90) from the CUDA 12.4
#   reference toolkit (`[tool.cudawheel.toolkits]`) and NVIDIA's CUDA 13 wheels: one
#   `saxpy-0.1.0-cp39-abi3-…whl`; with it the two runtime wheels its extras name
#   (nvidia-cuda-runtime-cu12 12.4, nvidia-cuda-runtime 13) and cudawheel (for `check`).
# device: two fresh venvs, offline: `saxpy[cu12]` and `saxpy[cu13]`. In each, the loader must
#   pick the build of the runtime installed (read back from `saxpy._cuda_select.choice()` and
#   /proc/self/maps: that build's file and that libcudart), run the kernel against the CPU
#   reference (examples/saxpy/check_gpu.py), and `python -m cudawheel check saxpy` must say the
#   choice and why. The CUDA 12 build runs on the machine's CUDA 13 driver (backward compatible).

prepare_multi_major() {
  local dir=$GPU/multi_major V=$ROOT/.cache/gpu-multi-venv home12 home13 src=$ROOT/.cache/gpu-multi-src
  rm -rf "$dir" "$src"; mkdir -p "$dir" "$src"
  [[ -x $V/bin/python ]] || "$PY" -m venv "$V"
  "$V/bin/pip" install -q --force-reinstall --no-deps "$ROOT"/wheelhouse/cudawheel-*.whl
  home12=$(bash scripts/env/install-cuda.sh 12 "${CUDAWHEEL_TEST_CACHE:-$ROOT/.cache}/toolchains/cu12" | tail -n1)
  home13=$(bash scripts/env/install-cuda.sh 13 "${CUDAWHEEL_TEST_CACHE:-$ROOT/.cache}/toolchains/cu13" | tail -n1)
  cp -r examples/saxpy "$src/saxpy"; rm -rf "$src/saxpy/build"
  sed -i 's/^\[tool.cudawheel\]$/[tool.cudawheel]\ncuda = ["12", "13"]/' "$src/saxpy/pyproject.toml"
  printf '\n[tool.cudawheel.toolkits]\n"12" = "%s"\n"13" = "%s"\n' "$home12" "$home13" >> "$src/saxpy/pyproject.toml"
  "$V/bin/python" -m cudawheel wheel "$src/saxpy" -o "$dir" -C archs=90 >&2
  cp examples/saxpy/check_gpu.py "$dir/check_saxpy.py"
  cp "$ROOT"/wheelhouse/cudawheel-*.whl "$dir/"
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 -d "$dir" \
    "nvidia-cuda-runtime-cu12==12.4.*" "nvidia-cuda-runtime>=13,<14"
  ls -l "$dir" >&2
}

device_multi_major() {
  local dir=$GPU/multi_major T=/tmp/cudawheel-multi major
  rm -rf "$T"; mkdir -p "$T"
  for major in 12 13; do
    python3 -m venv "$T/v$major"
    "$T/v$major/bin/pip" install -q --no-index --find-links "$dir" "saxpy[cu$major]" cudawheel
    echo "multi_major: venv with saxpy[cu$major]: $("$T/v$major/bin/pip" list 2>/dev/null | grep -i -E '^(saxpy|nvidia-cuda-runtime)' | tr -s ' ' | paste -sd, -)"
    (cd "$T" && "$T/v$major/bin/python" - "$major" <<'PYEOF'
import sys
want = int(sys.argv[1])
import saxpy
major, why = saxpy._cuda_select.choice()
maps = open("/proc/self/maps").read()
files = sorted({l.split()[-1] for l in maps.splitlines() if "_core.cudawheel-cu" in l or "libcudart.so" in l})
print(f"multi_major: chose CUDA {major}: {why}")
print("  mapped:", *files, sep="\n    ")
assert major == want, (major, why)
assert f"_core.cudawheel-cu{want}" in maps and f"libcudart.so.{want}" in maps, files
other = 25 - want
assert f"_core.cudawheel-cu{other}" not in maps and f"libcudart.so.{other}" not in maps, files
x = [float(i) for i in range(1 << 16)]
y = [1.0] * len(x)
got = saxpy.saxpy(2.0, x, y)
assert got == [2.0 * a + b for a, b in zip(x, y)], got[:4]
print(f"multi_major: the CUDA {want} build's kernel on the GPU: saxpy on {len(x)} elements OK; runtime {saxpy.runtime_version()}")
PYEOF
    )
    "$T/v$major/bin/python" "$dir/check_saxpy.py"
    (cd "$T" && "$T/v$major/bin/python" -m cudawheel check saxpy)
  done
}

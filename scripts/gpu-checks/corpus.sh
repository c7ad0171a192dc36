# GPU part `corpus`: real third-party projects from PyPI, built unchanged in wrap mode by
# scripts/bench/corpus.py (docs/benchmarks.md, "Real projects in wrap mode"), run on the GPU.
#
#   prepare_corpus (here): cuvec 6.0.1 (scikit-build-core; CUDA's static runtime; its own
#       `native` archs replaced by the hint's `-C cmake.define.CMAKE_CUDA_ARCHITECTURES=90`) for
#       CPython 3.12 (the GPU machine's), with numpy beside it.
#   device_corpus: a fresh venv, the wheel and numpy offline: cuvec's CUDA managed memory
#       (`cuvec.zeros`, cudaMallocManaged through its CPython extension), written and read back,
#       and the project's own example kernel (`cuvec.example_cpython.increment2d_f`: src + 1).

prepare_corpus() {
  local out=$GPU/corpus work=$ROOT/.cache/gpu-corpus py312 src
  py312=${PY312:-$(ls -d "$HOME"/.pyenv/versions/3.12.*/bin/python3 2>/dev/null | tail -n1)}
  [[ -x $py312 ]] || { echo "corpus: needs a CPython 3.12 to build for the GPU machine's (set PY312)" >&2; return 1; }
  rm -rf "$out" "$work"; mkdir -p "$out" "$work/src"
  "$py312" -m pip download -q --no-deps --no-binary :all: --no-build-isolation -d "$work" cuvec==6.0.1 2>/dev/null \
    || "$py312" -m pip download -q --no-deps --no-binary :all: -d "$work" cuvec==6.0.1
  tar -xzf "$work"/cuvec-6.0.1.tar.gz -C "$work/src"
  src=$work/src/cuvec-6.0.1
  "$py312" scripts/bench/corpus.py --frontends pip --only none --wheelhouse "$ROOT/wheelhouse" \
    --work "$work/runs" --local "cuvec=$src:scikit_build_core.build" \
    --local-config cuvec=cmake.define.CMAKE_CUDA_ARCHITECTURES=90 >&2
  find "$work/runs" -name 'cuvec_cu13-*.whl' -exec cp {} "$out/" \;
  "$py312" -m pip download -q --no-deps --only-binary=:all: -d "$out" "numpy>=2"
  ls -l "$out" >&2
}

device_corpus() {
  local out=$GPU/corpus V=/tmp/cudawheel-corpus
  rm -rf "$V"; python3 -m venv "$V"
  "$V/bin/pip" install -q --no-index --no-deps "$out"/cuvec_cu13-*.whl "$out"/numpy-*.whl
  "$V/bin/python" - <<'PYEOF'
import numpy as np
import cuvec
a = cuvec.zeros((1 << 20,), "float32")
a[:] = 2.0
total = float(np.asarray(a).sum())
assert total == 2.0 * (1 << 20), total
print("cuvec (PyPI 6.0.1, wrapped): CUDA managed memory on the GPU, sum", total, type(a).__name__)
# The project's own example kernel (cuvec/src/example_cpython): dst = src + 1 on the GPU.
from cuvec import example_cpython
src = cuvec.zeros((256, 256), "float32")
src[:] = 1.5
dst = example_cpython.increment2d_f(src)
out = np.asarray(dst)
assert out.shape == (256, 256) and (out == 2.5).all(), out[:2, :4]
print("cuvec example kernel increment2d_f OK on", out.size, "elements")
PYEOF
}

# GPU part `zig`: portable wheels built with `manylinux = "2_N"` (zig as host
# compiler and linker, nvcc 13 from PyPI) run their kernels on the GPU.
#
# prepare_zig (here): the C-API saxpy example with manylinux 2_28 (cp39-abi3) and the pybind11
# example with manylinux 2_17 for CPython 3.12 (the device's python3; PYTHON312 or pyenv's 3.12
# builds it), sm_90 only, and saxpy with manylinux 2_17 from a venv of a Debian system Python
# (/usr/bin/python3, whose pyconfig.h includes a multiarch one), plus the CUDA runtime wheel they
# require and their check scripts, into $GPU/zig/. Prints each wheel's tag and the newest GLIBC_ symbol version its module needs.
# device_zig (GPU machine): a fresh venv per wheel, installed from $GPU/zig only, the example's
# check_gpu.py compares the kernel with the CPU reference (non-zero exit on a mismatch); prints
# the tags and `objdump -T`'s newest GLIBC_ version of what was installed.

_zig_glibc() { # newest GLIBC_ version a shared object needs
  if command -v objdump >/dev/null; then
    objdump -T "$1" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n1
  else
    python3 - "$1" <<'PYEOF'
import re, sys
data = open(sys.argv[1], "rb").read()
found = {tuple(map(int, m.group(1).split(b"."))) for m in re.finditer(rb"GLIBC_([0-9]+\.[0-9]+(?:\.[0-9]+)?)\x00", data)}
print("GLIBC_" + ".".join(map(str, max(found))), "(from the string table: no objdump here)")
PYEOF
  fi
}

prepare_zig() {
  local out=$GPU/zig py312 V=$ROOT/.cache/gpu-zig-venv w
  mkdir -p "$out"
  local c
  py312=${PYTHON312:-}
  if [[ -z $py312 ]]; then
    for c in "$HOME"/.pyenv/versions/3.12*/bin/python3.12 "$(command -v python3.12 || true)"; do
      if [[ -x $c ]] && "$c" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then py312=$c; break; fi
    done
  fi
  [[ -x $py312 ]] || { echo "prepare_zig: no CPython 3.12 here (set PYTHON312) to build the cp312 pybind11 wheel" >&2; return 1; }
  [[ -x $V/bin/python ]] || "$py312" -m venv "$V"
  "$V/bin/pip" install -q --force-reinstall --no-deps "$ROOT"/wheelhouse/cudawheel-*.whl
  "$V/bin/pip" install -q "nvidia-cuda-nvcc>=13,<14" "nvidia-cuda-cccl>=13,<14" "nvidia-cuda-runtime>=13,<14" \
    "ziglang>=0.17,<0.18" "pybind11>=2.12"
  local src=$ROOT/.cache/gpu-zig-src
  rm -rf "$src"; mkdir -p "$src"
  cp -r "$ROOT/examples/saxpy" "$ROOT/examples/pybind_saxpy" "$src/"
  rm -rf "$src"/*/build
  export ZIG_GLOBAL_CACHE_DIR=${ZIG_GLOBAL_CACHE_DIR:-${CUDAWHEEL_TEST_CACHE:-$ROOT/.cache}/zig}
  "$V/bin/python" -m cudawheel wheel "$src/saxpy" -o "$out" -C manylinux=2_28 -C archs=90 2>&1 | tail -n2 >&2
  "$V/bin/python" -m cudawheel wheel "$src/pybind_saxpy" -o "$out" -C manylinux=2_17 -C archs=90 2>&1 | tail -n2 >&2
  # A Debian/Ubuntu system Python (python3-dev) splits pyconfig.h into a multiarch header that
  # zig's clang does not find by itself: saxpy again, manylinux 2_17, built from a venv of it.
  local S=$ROOT/.cache/gpu-zig-sysvenv inc
  inc=$(/usr/bin/python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])" 2>/dev/null || true)
  if [[ -n $inc ]] && grep -q '^# *include <x86_64-linux-gnu/python3' "$inc/pyconfig.h" 2>/dev/null; then
    [[ -x $S/bin/python ]] || /usr/bin/python3 -m venv "$S"
    "$S/bin/pip" install -q --force-reinstall --no-deps "$ROOT"/wheelhouse/cudawheel-*.whl
    "$S/bin/pip" install -q "nvidia-cuda-nvcc>=13,<14" "nvidia-cuda-cccl>=13,<14" "nvidia-cuda-runtime>=13,<14" \
      "ziglang>=0.17,<0.18"
    rm -rf "$src/saxpy/build"
    "$S/bin/python" -m cudawheel wheel "$src/saxpy" -o "$out" -C manylinux=2_17 -C archs=90 2>&1 | tail -n2 >&2
  else
    echo "prepare_zig: /usr/bin/python3 has no split pyconfig.h here: no system-Python wheel" >&2
  fi
  local reqs=()
  for w in "$out"/*.whl; do
    mapfile -t -O "${#reqs[@]}" reqs < <(unzip -p "$w" '*.dist-info/METADATA' | sed -n 's/^Requires-Dist: //p')
    local tmp; tmp=$(mktemp -d)
    unzip -q -d "$tmp" "$w" '*/_core*.so'
    echo "prepare_zig: $(basename "$w"): module needs $(_zig_glibc "$tmp"/*/_core*.so)" >&2
    rm -rf "$tmp"
  done
  "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$out" "${reqs[@]}"
  cp "$ROOT/examples/saxpy/check_gpu.py" "$out/check_saxpy.py"
  cp "$ROOT/examples/pybind_saxpy/check_gpu.py" "$out/check_pybind_saxpy.py"
  du -sh "$out" >&2
}

device_zig() {
  local out=$GPU/zig w V so name
  for w in "$out"/saxpy_cu13-*.whl "$out"/pybind_saxpy_cu13-*.whl; do
    name=$(basename "$w" | cut -d- -f1 | sed 's/_cu13$//')
    V=/tmp/cudawheel-gpu-zig-$name
    rm -rf "$V"; python3 -m venv "$V"
    "$V/bin/pip" install -q --no-index --find-links "$out" "$w"
    so=$("$V/bin/python" -c "import $name._core as m; print(m.__file__)")
    echo "zig wheel: $(basename "$w")"
    echo "  tag(s): $(whl_cat "$w" '*.dist-info/WHEEL' | sed -n 's/^Tag: //p' | tr '\n' ' ')"
    echo "  $(basename "$so") needs at most $(_zig_glibc "$so"); NEEDED: $(readelf -d "$so" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
    (cd /tmp && "$V/bin/python" "$out/check_$name.py")
  done
}

# GPU part `cross`: aarch64 (SBSA) wheels cross-built on x86_64. No aarch64 GPU is
# lent, so the GPU-side proof is indirect: the device code of the aarch64 wheel is byte for byte
# the x86_64 wheel's, and that x86_64 wheel runs on the H100 with the CPU reference's results.
#
# prepare_cross (here): the C-API saxpy example (cp39-abi3) built twice with zig from one venv:
# for aarch64 (`-C target=aarch64`: manylinux_2_28_aarch64, SBSA archs 90 100 120) and for
# x86_64 (`-C manylinux=2_28 -C archs=90;100;120`); cuobjdump extracts every cubin and PTX of
# both extension modules and they must be identical (else the part fails here). Into
# $GPU/cross/: the x86_64 wheel, the x86_64 runtime wheel it requires, the aarch64 module's
# sm_90 cubin, the aarch64 wheel (for the record) and check_gpu.py.
# device_cross (GPU machine): a fresh venv with the x86_64 wheel from $GPU/cross only; the
# example's check_gpu.py compares the kernel with the CPU reference; then cuobjdump (carried:
# the build's 13.x) extracts the sm_90 cubin the H100 ran and compares it with the
# aarch64 wheel's: they must be identical.

prepare_cross() {
  local cache=${CUDAWHEEL_TEST_CACHE:-$ROOT/.cache}
  local out=$GPU/cross V=$cache/gpu-cross-venv src=$cache/gpu-cross-src
  rm -rf "$out"; mkdir -p "$out"
  [[ -x $V/bin/python ]] || "$PY" -m venv "$V"
  "$V/bin/pip" install -q --force-reinstall --no-deps "$ROOT"/wheelhouse/cudawheel-*.whl
  "$V/bin/pip" install -q "nvidia-cuda-nvcc>=13,<14" "nvidia-cuda-cccl>=13,<14" "nvidia-cuda-runtime>=13,<14" \
    "nvidia-cuda-cuobjdump>=13,<14" "ziglang>=0.17,<0.18"
  rm -rf "$src"; mkdir -p "$src"; cp -r "$ROOT/examples/saxpy" "$src/"; rm -rf "$src/saxpy/build"
  export ZIG_GLOBAL_CACHE_DIR=${ZIG_GLOBAL_CACHE_DIR:-$cache/zig}
  "$V/bin/python" -m cudawheel wheel "$src/saxpy" -o "$out/arm" -C target=aarch64 2>&1 | tail -n1 >&2
  "$V/bin/python" -m cudawheel wheel "$src/saxpy" -o "$out" -C manylinux=2_28 -C "archs=90;100;120" 2>&1 | tail -n1 >&2
  local cuobjdump arch
  cuobjdump=$("$V/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/nvidia/cu13/bin/cuobjdump
  for arch in arm x86; do
    local w; w=$(ls "$out"/$([[ $arch == arm ]] && echo arm/)saxpy_cu13-*.whl)
    mkdir -p "$out/tmp-$arch/code"
    unzip -q -d "$out/tmp-$arch" "$w" 'saxpy/_core*.so'
    (cd "$out/tmp-$arch/code" && "$cuobjdump" -xelf all -xptx all ../saxpy/_core*.so >/dev/null)
    # Named by arch and kind only (`sm_90.cubin`), so that both lists compare.
    for f in "$out/tmp-$arch/code"/*; do mv "$f" "$out/tmp-$arch/code/$(echo "$f" | grep -o 'sm_[0-9a-z]*\.\(cubin\|ptx\)$')"; done
  done
  echo "prepare_cross: aarch64 device code: $(ls "$out/tmp-arm/code" | tr '\n' ' ')" >&2
  if ! diff -r "$out/tmp-arm/code" "$out/tmp-x86/code" >&2; then
    echo "prepare_cross: FAILED: the aarch64 and x86_64 wheels carry different device code" >&2
    return 1
  fi
  echo "prepare_cross: cubins and PTX identical in the aarch64 and x86_64 wheels" >&2
  cp "$out/tmp-arm/code/sm_90.cubin" "$out/aarch64.sm_90.cubin"
  rm -rf "$out/tmp-arm" "$out/tmp-x86"
  local reqs
  mapfile -t reqs < <(unzip -p "$out"/saxpy_cu13-*.whl '*.dist-info/METADATA' | sed -n 's/^Requires-Dist: //p')
  "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$out" "${reqs[@]}"
  # This cuobjdump (13.x, 0.6 MB) reads the fatbins whatever the device's toolkit is.
  cp "$cuobjdump" "$out/cuobjdump"
  cp "$ROOT/examples/saxpy/check_gpu.py" "$out/check_saxpy.py"
  du -sh "$out" >&2
}

device_cross() {
  local out=$GPU/cross V=/tmp/cudawheel-gpu-cross w so
  w=$(ls "$out"/saxpy_cu13-*-manylinux_2_28_x86_64.whl)
  rm -rf "$V"; python3 -m venv "$V"
  "$V/bin/pip" install -q --no-index --find-links "$out" "$w"
  echo "cross: x86_64 twin of the aarch64 wheel $(basename "$out"/arm/*.whl)"
  (cd /tmp && "$V/bin/python" "$out/check_saxpy.py")
  so=$("$V/bin/python" -c 'import saxpy._core as m; print(m.__file__)')
  local tmp; tmp=$(mktemp -d)
  (cd "$tmp" && "$out/cuobjdump" -xelf sm_90 "$so" >/dev/null)
  if cmp "$tmp"/*sm_90.cubin "$out/aarch64.sm_90.cubin"; then
    echo "cross: the sm_90 cubin that ran here is the aarch64 wheel's, byte for byte"
  else
    echo "cross: FAILED: the sm_90 cubin that ran differs from the aarch64 wheel's" >&2
    rm -rf "$tmp"; return 1
  fi
  rm -rf "$tmp"
}

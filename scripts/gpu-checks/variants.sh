# GPU part "variants": wheel variants chosen by uv on the real driver and GPU.
#
# prepare: the saxpy example built as variants for CUDA 12 (12.4, CUDA_HOME) and 13 (PyPI, CUDA_PATH)
#   by `python -m cudawheel wheel --cuda 12 --cuda 13 -C variant=cuda` (archs 80 and 90: SASS
#   80/90, PTX 90), with saxpy-0.1.0-variants.json, into $GPU/variants/; uv's wheel (the pinned
#   requirements-dev.txt version) into $GPU/variants/uv/; the two runtime wheels the variants
#   require into $GPU (shared with the examples).
# device: uv, with no override variable, installs `saxpy` from those folders (offline, no
#   index); it must pick the label that the machine's driver calls for (cu13 on a CUDA 13 driver,
#   cu12 on a 12.x one), with that variant's runtime wheel; then the kernel runs against the CPU
#   reference. The cu12 variant (forced driver 12.8) runs there too.
#   nvidia-variant-provider is not needed: uv detects NVIDIA drivers itself (NVML).

prepare_variants() {
  local dir=$GPU/variants V=$ROOT/.cache/gpu-variants-venv home12 home13 uvpin
  mkdir -p "$dir/uv"
  [[ -x $V/bin/python ]] || "$PY" -m venv "$V"
  "$V/bin/pip" install -q --force-reinstall --no-deps "$ROOT"/wheelhouse/cudawheel-*.whl
  home12=$(bash scripts/env/install-cuda.sh 12 "$ROOT/.cache/toolchains/cu12" | tail -n1)
  home13=$(bash scripts/env/install-cuda.sh 13 "$ROOT/.cache/toolchains/cu13" | tail -n1)
  local src=$ROOT/.cache/gpu-variants-src
  rm -rf "$src"; mkdir -p "$src"; cp -r examples/saxpy "$src/saxpy"; rm -rf "$src/saxpy/build"
  CUDA_HOME=$home12 CUDA_PATH=$home13 "$V/bin/python" -m cudawheel wheel "$src/saxpy" -o "$dir" \
    --cuda 12 --cuda 13 -C variant=cuda -C 'archs=80;90' >&2
  cp examples/saxpy/check_gpu.py "$dir/check_saxpy.py"
  uvpin=$(sed -n 's/^uv==//p' requirements-dev.txt)
  "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$dir/uv" "uv==$uvpin"
  local reqs=()
  mapfile -t reqs < <(wheel_requires "$dir"/saxpy-*.whl)
  "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$GPU" "${reqs[@]}"
  # What the device must see: one wheel per label, the index listing both.
  ls "$dir"/saxpy-0.1.0-*-cu12.whl "$dir"/saxpy-0.1.0-*-cu13.whl >&2
  "$PY" -c 'import json, sys; v = json.load(open(sys.argv[1]))["variants"]; print(json.dumps(v)); assert sorted(v) == ["cu12", "cu13"]' \
    "$dir/saxpy-0.1.0-variants.json" >&2
  du -sh "$dir" >&2
}

device_variants() {
  local dir=$GPU/variants T=/tmp/cudawheel-variants
  rm -rf "$T"; mkdir -p "$T"
  python3 -m venv "$T/tool"
  "$T/tool/bin/pip" install -q --no-index "$dir"/uv/uv-*.whl
  local UV=$T/tool/bin/uv
  "$UV" --version
  local driver want
  driver=$(nvidia-smi | sed -n 's/.*CUDA Version: *\([0-9][0-9]*\.[0-9]*\).*/\1/p' | head -n1)
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
  want=cu${driver%%.*}
  echo "driver CUDA version $driver: uv should pick $want"
  # label venv [VAR=VALUE...]: install saxpy with uv into a fresh venv; prints the chosen label.
  pick() {
    local venv=$1; shift
    "$UV" venv -q --offline --python python3 "$venv"
    env -u NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION -u NV_VARIANT_PROVIDER_FORCE_SM_ARCH \
      UV_CACHE_DIR=$T/uv-cache "$@" "$UV" pip install --offline --no-index --python "$venv/bin/python" \
      --preview-features wheel-variants --find-links "$dir" --find-links "$GPU" saxpy >&2
    "$venv/bin/python" -c 'import json, importlib.metadata as md; print(*json.loads(md.distribution("saxpy").read_text("variant.json"))["variants"])'
  }
  local got
  got=$(pick "$T/real")
  "$UV" pip list --offline --python "$T/real/bin/python"
  echo "uv picked (real driver and GPU, no overrides): $got"
  [[ $got == "$want" ]] || { echo "FAIL: uv picked $got, expected $want"; return 1; }
  (cd /tmp && "$T/real/bin/python" "$dir/check_saxpy.py")
  # The other variant, forced: CUDA 12 code on this driver (newer drivers run older code).
  got=$(pick "$T/forced12" NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION=12.8)
  echo "uv picked (forced driver 12.8): $got"
  [[ $got == cu12 ]] || { echo "FAIL: forced 12.8 gave $got"; return 1; }
  (cd /tmp && "$T/forced12/bin/python" "$dir/check_saxpy.py")
}

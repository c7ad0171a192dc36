# GPU check part "compress" (issue 25): each `compress` mode's saxpy wheel runs on the GPU, with
# its first-call time (the fatbin is decompressed when CUDA loads the module).
#
# prepare_compress (here) builds examples/saxpy once per mode (none, speed, balance, size; nvcc
# 13.x from PyPI, default archs) with scripts/bench_compress.py into $GPU/compress/<mode>/, keeps
# the size table it prints in $GPU/compress/sizes.md, and downloads the runtime wheels they need.
# device_compress installs each in a fresh venv from there only, runs examples/saxpy/check_gpu.py
# (kernel checked against a CPU reference), then times the first saxpy call (CUDA context +
# module load + decompression) and a second one in 5 fresh processes per mode, and prints the
# medians next to the sizes.

prepare_compress() {
  local cache=${CUDAWHEEL_TEST_CACHE:-$ROOT/.cache}
  local out=$GPU/compress cu13 V=$cache/gpu-compress-venv
  cu13=$(bash scripts/install-cuda.sh 13 "$cache/toolchains/cu13" | tail -n1)
  [[ -x $V/bin/python ]] || "$PY" -m venv "$V"
  "$V/bin/pip" install -q --force-reinstall --no-deps "$ROOT"/wheelhouse/cudawheel-*.whl
  rm -rf "$out"; mkdir -p "$out"
  "$PY" scripts/bench_compress.py --python "$V/bin/python" --cuda-home "$cu13" --examples saxpy \
    --keep "$out/built" | tee "$out/sizes.md" >&2
  local mode reqs=()
  for mode in none speed balance size; do
    mkdir -p "$out/$mode"; mv "$out/built/saxpy/$mode"/*.whl "$out/$mode/"
    "$V/bin/python" -m cudawheel audit "$out/$mode"/*.whl >&2
    mapfile -t -O "${#reqs[@]}" reqs < <(whl_cat "$(echo "$out/$mode"/*.whl)" '*.dist-info/METADATA' | sed -n 's/^Requires-Dist: //p')
  done
  rm -rf "$out/built"
  "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$out/wheels" "${reqs[@]}"
  du -sh "$out" >&2
}

device_compress() {
  local out=$GPU/compress V mode times
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader || true
  cat "$out/sizes.md"
  local timer=$'import statistics, subprocess, sys\nrows = []\nfor _ in range(5):\n    p = subprocess.run([sys.executable, "-c", "import time, saxpy\\nt = time.perf_counter(); r = saxpy.saxpy(2.0, [1.0, 2.0], [1.0, 1.0]); t1 = time.perf_counter(); saxpy.saxpy(2.0, [1.0, 2.0], [1.0, 1.0]); t2 = time.perf_counter()\\nassert r == [3.0, 5.0], r\\nprint((t1 - t) * 1e3, (t2 - t1) * 1e3)"], capture_output=True, text=True, check=True)\n    rows.append([float(x) for x in p.stdout.split()])\nprint(f"first call {statistics.median(r[0] for r in rows):.1f} ms, second call {statistics.median(r[1] for r in rows):.3f} ms (median of 5 processes)")'
  echo "| compress | first call (context + module load) | second call |"
  for mode in none speed balance size; do
    V=/tmp/cudawheel-compress-$mode
    rm -rf "$V"; python3 -m venv "$V"
    "$V/bin/pip" install -q --no-index --find-links "$out/wheels" "$out/$mode"/*.whl
    echo "--- compress=$mode: $(basename "$out/$mode"/*.whl)"
    (cd /tmp && "$V/bin/python" "$ROOT/examples/saxpy/check_gpu.py") \
      || { echo "FAIL: compress=$mode: the kernel did not match the CPU reference"; return 1; }
    times=$(cd /tmp && "$V/bin/python" -c "$timer") \
      || { echo "FAIL: compress=$mode: the timed calls failed"; return 1; }
    echo "compress=$mode: $times"
  done
}

# GPU check part "compress": each `compress` mode's wheels run on the GPU, with their
# first-call times (CUDA loads a module, and decompresses its fatbin, at its first launch).
#
# prepare_compress (here) builds, once per mode (none, speed, balance, size; nvcc 13.x from PyPI),
# examples/saxpy (default archs) and `kernels` (scripts/bench/bench.py's generated extension at a tenth
# of its size: 8 files of templated kernels, sm_80 + sm_90 + compute_90, ~1.8 MB of GPU code
# uncompressed) with scripts/bench/bench_compress.py into $GPU/compress/<example>/<mode>/, keeps the
# size table it prints in $GPU/compress/sizes.md and downloads the runtime wheels they need.
# device_compress installs each in a fresh venv from there only; saxpy runs
# examples/saxpy/check_gpu.py (kernel against a CPU reference) and kernels checks that every
# kernel ran (run_all returns cudaSuccess); then, in 5 fresh processes per wheel, it times the
# first call (context creation + module load + decompression) and the second, and prints medians.

prepare_compress() {
  local cache=${CUDAWHEEL_TEST_CACHE:-$ROOT/.cache}
  local out=$GPU/compress cu13 V=$cache/gpu-compress-venv w reqs=()
  cu13=$(bash scripts/env/install-cuda.sh 13 "$cache/toolchains/cu13" | tail -n1)
  [[ -x $V/bin/python ]] || "$PY" -m venv "$V"
  "$V/bin/pip" install -q --force-reinstall --no-deps "$ROOT"/wheelhouse/cudawheel-*.whl
  rm -rf "$out"; mkdir -p "$out"
  "$PY" scripts/bench/bench_compress.py --python "$V/bin/python" --cuda-home "$cu13" --examples saxpy kernels \
    --keep "$out" | tee "$out/sizes.md" >&2
  for w in "$out"/*/*/*.whl; do
    "$V/bin/python" -m cudawheel audit "$w" >&2
    mapfile -t -O "${#reqs[@]}" reqs < <(whl_cat "$w" '*.dist-info/METADATA' | sed -n 's/^Requires-Dist: //p')
  done
  "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$out/wheels" "${reqs[@]}"
  du -sh "$out" >&2
}

# _compress_time VENV MODULE CALL: medians over 5 fresh processes of the first and second CALL.
_compress_time() {
  (cd /tmp && "$1/bin/python" - "$2" "$3" <<'PYEOF'
import statistics, subprocess, sys
module, call = sys.argv[1], sys.argv[2]
code = (f"import time, {module}\nt0 = time.perf_counter(); r = {call}; t1 = time.perf_counter(); {call}; "
        f"t2 = time.perf_counter()\nprint((t1 - t0) * 1e3, (t2 - t1) * 1e3, repr(r))")
rows = []
for _ in range(5):
    # The result's repr may hold spaces (`[3.0, 5.0]`): it comes last.
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split(maxsplit=2)
    rows.append((out[2].strip(), float(out[0]), float(out[1])))
print(f"result {rows[0][0]}: first call {statistics.median(r[1] for r in rows):.1f} ms, "
      f"second call {statistics.median(r[2] for r in rows):.2f} ms (medians of 5 processes)")
PYEOF
  )
}

device_compress() {
  local out=$GPU/compress V mode example msg
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader || true
  cat "$out/sizes.md"
  for example in saxpy kernels; do
    for mode in none speed balance size; do
      V=/tmp/cudawheel-compress-$example-$mode
      rm -rf "$V"; python3 -m venv "$V"
      "$V/bin/pip" install -q --no-index --find-links "$out/wheels" "$out/$example/$mode"/*.whl
      echo "--- $example compress=$mode: $(basename "$out/$example/$mode"/*.whl)"
      if [[ $example == saxpy ]]; then
        (cd /tmp && "$V/bin/python" "$ROOT/examples/saxpy/check_gpu.py") \
          || { echo "FAIL: saxpy compress=$mode: the kernel did not match the CPU reference"; return 1; }
        msg=$(_compress_time "$V" saxpy 'saxpy.saxpy(2.0, [1.0, 2.0], [1.0, 1.0])') || { echo "FAIL: timing"; return 1; }
        [[ $msg == "result [3.0, 5.0]:"* ]] || { echo "FAIL: saxpy compress=$mode: $msg"; return 1; }
      else
        msg=$(_compress_time "$V" cwbench 'cwbench.run_all(4096)') || { echo "FAIL: timing"; return 1; }
        [[ $msg == "result 0:"* ]] || { echo "FAIL: kernels compress=$mode: run_all returned an error: $msg"; return 1; }
      fi
      echo "$example compress=$mode: $msg"
    done
  done
}

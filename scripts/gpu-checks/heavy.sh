# GPU check part "heavy": one file that holds the build, on the GPU machine's CPU.
#
# prepare_heavy (here): the backend wheel into .gpu/heavy/ (the one `prepare` put in .gpu/, else
#   built).
# device_heavy (GPU machine, no GPU needed): scripts/bench/bench_heavy.py with the machine's
#   /usr/local/cuda, pinned to 2 cores (taskset -c 0-1: a quiet 2-core machine) and on all its
#   cores: the causal-conv1d shape (one CUB file beside three small ones, archs 80 + 90), one CUB
#   file alone (one arch) and a project where no file dominates, each built cold with the
#   schedule from before time shares (`today`, CUDAWHEEL_EVEN_SHARE=1) and as it is now (`new`),
#   plus nvcc by hand on the causal-conv1d shape's CUB file (plain, `--threads 0`,
#   `--split-compile 0`).
#   Interleaved rounds while they fit in HEAVY_BUDGET seconds (default 500: one call of the
#   device tool runs at most 10 minutes, with the venv and the install around it); the tables
#   are printed after every round. Fails when the two schedules' wheels differ.
#   HEAVY_CPUS (default "0-1,all"), HEAVY_CASES (default conv,heavy1,even), HEAVY_RUNS (at most,
#   default 3), HEAVY_SCALE (multiplies the heavy files, default 1), HEAVY_HAND=0 (no nvcc-by-hand
#   rows) change the defaults.

prepare_heavy() {
  local out=$GPU/heavy
  rm -rf "$out"; mkdir -p "$out"
  if compgen -G "$GPU/cudawheel-*.whl" >/dev/null; then
    cp "$GPU"/cudawheel-*.whl "$out/"
  else
    bash scripts/build-backend.sh "$out" >&2
  fi
  ls "$out"/cudawheel-*.whl >&2
}

device_heavy() {
  local table hand=()
  table=$(mktemp /tmp/cudawheel-heavy.XXXX)
  [[ ${HEAVY_HAND:-1} == 0 ]] && hand=(--no-hand)
  echo "device_heavy: $(nproc) cores, $(/usr/local/cuda/bin/nvcc --version | tail -n1)" >&2
  CUDAWHEEL_WHEELHOUSE=$GPU/heavy python3 scripts/bench/bench_heavy.py --cuda-home /usr/local/cuda \
    --cpus "${HEAVY_CPUS:-0-1,all}" --budget "${HEAVY_BUDGET:-500}" --runs "${HEAVY_RUNS:-3}" \
    --scale "${HEAVY_SCALE:-1}" --cases "${HEAVY_CASES:-conv,heavy1,even}" "${hand[@]}" | tee "$table" || return 1
  if grep -E '^(heavy1|conv|even) +(today|new) ' "$table" | grep -q ' NO$'; then
    echo "device_heavy: the two schedules built different wheels" >&2; return 1
  fi
}

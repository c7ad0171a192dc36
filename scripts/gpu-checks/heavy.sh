# GPU check part "heavy": one file that holds the build, on the GPU machine's 16 cores.
#
# prepare_heavy (here): the backend wheel of the scheduler before time shares (HEAVY_BASE, a
#   commit; default 5422f4e) built from a temporary worktree into .gpu/heavy/base/ (the wheel of
#   this checkout is already in .gpu/ from the examples' prepare).
# device_heavy (GPU machine, no GPU needed): scripts/bench/bench_heavy.py with the machine's
#   /usr/local/cuda: the one-CUB-file project (one arch), the causal-conv1d shape (one heavy
#   templated file beside three small ones, archs 80 + 90) and a project where no file
#   dominates, each built cold by both backends, and nvcc by hand on the dominating file
#   (plain, `--threads 0`, `--split-compile 0`). Prints the table; fails when the two backends'
#   wheels differ. HEAVY_CPUS (a taskset list, e.g. 0-1: a quiet 2-core machine; default all
#   cores), HEAVY_CASES (default conv,even,heavy1), HEAVY_RUNS (interleaved runs, default 3),
#   HEAVY_SCALE (multiplies the heavy files, default 1), HEAVY_HAND=0 (no nvcc-by-hand rows)
#   change the defaults; one call of the
#   device tool runs at most 10 minutes, so run the cases in separate calls.

prepare_heavy() {
  local out=$GPU/heavy base=${HEAVY_BASE:-5422f4e} tree
  rm -rf "$out"; mkdir -p "$out/base"
  tree=$(mktemp -d /tmp/cudawheel-heavy-base.XXXX)
  git -C "$ROOT" worktree add --detach "$tree" "$base" >&2
  (cd "$tree" && CARGO_TARGET_DIR="$ROOT/target" bash scripts/build-backend.sh "$out/base" >&2)
  git -C "$ROOT" worktree remove --force "$tree"
  ls "$out/base"/cudawheel-*.whl >&2
}

device_heavy() {
  local table pin=() hand=()
  table=$(mktemp /tmp/cudawheel-heavy.XXXX)
  [[ -n ${HEAVY_CPUS:-} ]] && pin=(taskset -c "$HEAVY_CPUS")
  [[ ${HEAVY_HAND:-1} == 0 ]] && hand=(--no-hand)
  echo "device_heavy: $(nproc) cores, pinned to ${HEAVY_CPUS:-all}, $(/usr/local/cuda/bin/nvcc --version | tail -n1)" >&2
  CUDAWHEEL_WHEELHOUSE=$GPU "${pin[@]}" python3 scripts/bench/bench_heavy.py --base-wheel "$GPU/heavy/base" \
    --cuda-home /usr/local/cuda --runs "${HEAVY_RUNS:-3}" --scale "${HEAVY_SCALE:-1}" \
    --cases "${HEAVY_CASES:-conv,even,heavy1}" "${hand[@]}" | tee "$table" || return 1
  if grep -E '^(heavy1|conv|even) +(today|new) ' "$table" | grep -q ' NO$'; then
    echo "device_heavy: the two backends built different wheels" >&2; return 1
  fi
}

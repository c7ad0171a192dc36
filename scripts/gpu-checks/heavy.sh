# GPU check part "heavy": one file that holds the build, on the GPU machine's 16 cores.
#
# prepare_heavy (here): the backend wheel of the scheduler before time shares (HEAVY_BASE, a
#   commit; default 5422f4e) built from a temporary worktree into .gpu/heavy/base/ (the wheel of
#   this checkout is already in .gpu/ from the examples' prepare).
# device_heavy (GPU machine, no GPU needed): scripts/bench/bench_heavy.py with the machine's
#   /usr/local/cuda: the one-CUB-file project (one arch), the causal-conv1d shape (one heavy
#   templated file beside three small ones, archs 80 + 90) and a project where no file
#   dominates, each built cold by both backends (HEAVY_RUNS interleaved runs, default 3; HEAVY_SCALE
#   multiplies the heavy files, default 2), and nvcc by hand on the dominating file (plain,
#   `--threads 0`, `--split-compile 0`). Prints the table; fails when the two backends' wheels
#   differ.

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
  local table
  table=$(mktemp /tmp/cudawheel-heavy.XXXX)
  echo "device_heavy: $(nproc) cores, $(/usr/local/cuda/bin/nvcc --version | tail -n1)" >&2
  CUDAWHEEL_WHEELHOUSE=$GPU python3 scripts/bench/bench_heavy.py --base-wheel "$GPU/heavy/base" \
    --cuda-home /usr/local/cuda --runs "${HEAVY_RUNS:-3}" --scale "${HEAVY_SCALE:-2}" | tee "$table" || return 1
  if grep -E '^(heavy1|conv|even) +(today|new) ' "$table" | grep -q ' NO$'; then
    echo "device_heavy: the two backends built different wheels" >&2; return 1
  fi
}

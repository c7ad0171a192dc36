#!/usr/bin/env bash
# The test suite, as CI runs it: Rust checks and unit tests, the backend wheel built once,
# then the pytest suite that builds real CUDA projects with it (toolkits from PyPI, cached in
# .cache/). CUDAWHEEL_SLOW_TESTS=1 adds the slowest modules (release, cross builds, build
# cluster). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# In CI (CI=true), .cache is a link to a folder kept between runs on one machine
# (CUDAWHEEL_CI_CACHE, default ~/.cache/cudawheel-ci), as CI services keep a cache: downloads
# (pip, uv: torch, jax and NVIDIA's wheels are GBs), the toolkits, roots and tools built from
# source (sccache-dist, CPython 3.13t) are made once per machine, each checked by its own
# version stamp. A fresh machine fills it on its first run (the cold time in CONTRIBUTING.md).
if [[ ${CI:-} == true && ! -e .cache && ! -L .cache ]]; then
  ci_cache=${CUDAWHEEL_CI_CACHE:-$HOME/.cache/cudawheel-ci}
  mkdir -p "$ci_cache"
  ln -s "$ci_cache" .cache
  # Its real path for what records where it was made (CPython's prefix, the toolkits' links):
  # the same in every clone.
  export CUDAWHEEL_TEST_CACHE=${CUDAWHEEL_TEST_CACHE:-$(cd "$ci_cache" && pwd -P)}
  # Cargo's build folder too: the crates.io dependencies compile once per machine.
  export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$CUDAWHEEL_TEST_CACHE/target}
fi
export PIP_CACHE_DIR=${PIP_CACHE_DIR:-$PWD/.cache/pip}
export PIP_DISABLE_PIP_VERSION_CHECK=1
step() { printf '\n=== %s (%ss)\n' "$*" "$SECONDS" >&2; }

step "python test requirements"
"$PY" -m pip install -q -r requirements-dev.txt
step "redis-server (Debian) for the sccache test"
bash scripts/env/install-redis.sh >/dev/null
# The build cluster, cross-build and release tests run with CUDAWHEEL_SLOW_TESTS=1 (tests/conftest.py,
# SLOW_ONLY): what only they need is made then.
if [[ ${CUDAWHEEL_SLOW_TESTS:-} == 1 ]]; then
  step "sccache with dist-server (crates.io, built once into .cache/tools) and bubblewrap for the sccache-dist test"
  bash scripts/env/install-sccache-dist.sh >/dev/null
  step "Debian arm64 root and qemu-user-static for the cross-build test"
  bash scripts/env/make-arm64-root.sh >/dev/null
fi
step "free-threaded CPython 3.13.5t (Debian's source, built once into .cache/python) for the free-threaded tests and the backend's cp313t wheel"
CUDAWHEEL_FT_PYTHON=$(bash scripts/env/python-ft.sh | tail -n1)
export CUDAWHEEL_FT_PYTHON
step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy"
cargo clippy --all-targets --locked -- -D warnings
step "cargo clippy --features python (the Python layer on: dead code shows)"
cargo clippy --features python --lib --locked -- -D warnings
step "cargo test"
cargo test --locked
step "backend wheel"
export CUDAWHEEL_WHEELHOUSE=$PWD/wheelhouse
bash scripts/build-backend.sh "$CUDAWHEEL_WHEELHOUSE"
step "pytest"
"$PY" -m pytest tests -v -rs --durations=15 "$@"
step "done"

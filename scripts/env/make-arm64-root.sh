#!/usr/bin/env bash
# A Debian arm64 root for running cross-built aarch64 wheels on this x86_64 machine without an
# ARM CPU, docker, chroot or binfmt: Debian's `qemu-user-static` (installed here with apt-get
# when missing) runs the root's own python3 in user mode, the root given with -L:
#
#   bash scripts/env/make-arm64-root.sh [DEST]        # prints DEST
#   qemu-aarch64-static -L DEST DEST/usr/bin/python3.11 -c 'import platform; print(platform.machine())'
#
# The root is Debian bookworm (glibc 2.36, python3.11) for arm64, made by `debootstrap
# --foreign` (the first stage downloads and unpacks the essential packages; the second stage
# would need to run arm64 code, so instead the downloaded .debs, python3 among them, are
# unpacked with `dpkg-deb -x`: nothing needs configuring to run python). Needs root (apt-get,
# debootstrap). Idempotent and locked: made once in DEST (default .cache/arm64-root/bookworm),
# reused afterwards.
set -euo pipefail
cd "$(dirname "$0")/../.."
DEST=${1:-$PWD/.cache/arm64-root/bookworm}
SUITE=bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  # A private archive folder (the image's apt.conf.d/docker-clean empties the shared one).
  local arch
  arch=$(mktemp -d); chmod 755 "$arch"; mkdir -p "$arch/partial"
  local opts=(-y -q --no-install-recommends -o Dir::Cache::Archives="$arch" -o DPkg::Lock::Timeout=300)
  if ! apt-get install "${opts[@]}" "$@" >&2; then
    apt-get update -q >&2
    apt-get install "${opts[@]}" "$@" >&2
  fi
  rm -rf "$arch"
}

mkdir -p "$(dirname "$DEST")"
exec 9>"$DEST.lock"
flock 9
need=()
command -v qemu-aarch64-static >/dev/null 2>&1 || need+=(qemu-user-static)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
if ((${#need[@]})); then
  echo "make-arm64-root: apt-get install ${need[*]}" >&2
  apt_install "${need[@]}"
fi
if [[ ! -f $DEST/.cudawheel-ready ]]; then
  rm -rf "$DEST"
  echo "make-arm64-root: debootstrap --foreign --arch=arm64 $SUITE into $DEST (once)" >&2
  debootstrap --foreign --arch=arm64 --variant=minbase \
    --include=python3-minimal,libpython3.11-stdlib "$SUITE" "$DEST" "$MIRROR" >&2
  for deb in "$DEST"/var/cache/apt/archives/*.deb; do
    dpkg-deb -x "$deb" "$DEST"
  done
  rm -rf "$DEST/var/cache/apt/archives/"*.deb "$DEST/debootstrap"
  qemu-aarch64-static -L "$DEST" "$DEST/usr/bin/python3.11" -c \
    'import platform, sys; assert platform.machine() == "aarch64" and sys.version_info[:2] == (3, 11)'
  touch "$DEST/.cudawheel-ready"
fi
echo "$DEST"

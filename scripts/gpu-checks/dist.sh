# GPU check part "dist": scale-out through an sccache-dist build cluster on one host.
#
# prepare_dist (here): the sccache 0.19 client and sccache-dist (scheduler + build server)
#   binaries built by scripts/env/install-sccache-dist.sh, and bubblewrap with the libraries it
#   links, into .gpu/dist/ (xz-compressed; about 12 MB).
# device_dist (GPU machine, 16 cores): a scheduler and a build server on 127.0.0.1
#   (scripts/env/sccache-cluster.sh), the server pinned to cores 2-15 (14 cores), the client
#   (cudawheel and its sccache) pinned to cores 0-1 with `jobs = 2`. The benchmark's project
#   (scripts/bench/bench.py, archs 80 and 90 + PTX, the machine's CUDA 13.0) built cold through the
#   cluster and locally (no launcher, 2 jobs): medians of 3 interleaved runs and the ratio
#   (target >= 4x). Then the bound nvcc itself sets: the longest file's dependency chain (its
#   front end, its slowest device pass, fatbinary, its host compile: each waits for the one
#   before, on any number of cores), timed with `nvcc -time`, against the local median. Then
#   the cluster-built benchmark wheel and a cluster-built saxpy run their kernels on the GPU
#   (saxpy against a CPU reference).
#   DIST_PROJECT=wide: the same work spread over 16 files of half the weight (no GPU run): the
#   scale-out when no single file's chain bounds it.
#   DIST_CLIENT_CPUS, DIST_SERVER_CPUS, DIST_CUDA_HOME, DIST_RUNS change the defaults (0-1, 2-15,
#   /usr/local/cuda, 3) to try the half on another machine; DIST_SCCACHE_LOG=DIR keeps each
#   cluster build's sccache debug log (millisecond timestamps) there.

prepare_dist() {
  local out=$GPU/dist
  rm -rf "$out"; mkdir -p "$out/bin" "$out/lib"
  local sccache_bin
  sccache_bin=$(bash "$ROOT/scripts/env/install-sccache-dist.sh" | tail -n1)
  local b
  for b in sccache sccache-dist; do
    xz -T2 -6 -c "$(dirname "$sccache_bin")/$b" > "$out/bin/$b.xz"
  done
  # bubblewrap for a device without one, with the shared libraries Debian's build links.
  local bwrap; bwrap=$(command -v bwrap)
  cp "$bwrap" "$out/bin/bwrap"
  local lib
  for lib in libselinux.so.1 libcap.so.2 libpcre2-8.so.0; do
    cp -L "$(ldd "$bwrap" | awk -v l="$lib" '$1 == l {print $3}')" "$out/lib/$lib"
  done
  # sccache-dist links OpenSSL 3 (glibc 2.34 is the newest symbol version it needs).
  for lib in libssl.so.3 libcrypto.so.3; do
    xz -T2 -6 -c "$(ldd "$(dirname "$sccache_bin")/sccache-dist" | awk -v l="$lib" '$1 == l {print $3}')" > "$out/lib/$lib.xz"
  done
  du -sh "$out" >&2
}

# dist_tools WORK: the carried sccache, sccache-dist (and bwrap where the machine has none) unpacked
# into WORK/bin, first on PATH.
dist_tools() {
  local out=$GPU/dist work=$1 b
  mkdir -p "$work/bin"
  for b in sccache sccache-dist; do
    xz -dc "$out/bin/$b.xz" > "$work/bin/$b"; chmod +x "$work/bin/$b"
  done
  # OpenSSL 3 from here only where the machine lacks it.
  if ldd "$work/bin/sccache-dist" | grep -q "not found"; then
    mkdir -p "$work/lib"
    local lib
    for lib in libssl.so.3 libcrypto.so.3; do xz -dc "$out/lib/$lib.xz" > "$work/lib/$lib"; done
    mv "$work/bin/sccache-dist" "$work/bin/sccache-dist.real"
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$work/lib" "$work/bin/sccache-dist.real" > "$work/bin/sccache-dist"
    chmod +x "$work/bin/sccache-dist"
  fi
  if ! command -v bwrap >/dev/null; then
    # Debian's bwrap with the libraries it links, behind a wrapper that finds them.
    cp "$out/bin/bwrap" "$work/bin/bwrap.real"
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$out/lib" "$work/bin/bwrap.real" > "$work/bin/bwrap"
    chmod +x "$work/bin/bwrap"
  fi
  export PATH=$work/bin:$PATH
}

# dist_free_port: a free TCP port on 127.0.0.1 (for an sccache client server of its own).
dist_free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# dist_host_cxx: the machine's g++ as an ELF binary (sccache-dist ships the compiler itself, not a
# wrapper script; where `g++` on PATH is a script, cudawheel would warn and compile the host
# steps here).
dist_host_cxx() {
  local cxx
  cxx=$(readlink -f "$(command -v g++)")
  if ! head -c4 "$cxx" | grep -q ELF; then cxx=$(readlink -f /usr/bin/g++); fi
  echo "$cxx"
}

device_dist() {
  local out=$GPU/dist work
  work=$(mktemp -d /tmp/cudawheel-dist.XXXX)
  dist_tools "$work"
  echo "device_dist: $(sccache --version), $(bwrap --version), $(nproc) cores" >&2
  local V=/tmp/cudawheel-gpu-dist
  rm -rf "$V"; python3 -m venv "$V"
  "$V/bin/pip" install -q --no-index "$GPU"/cudawheel-*.whl
  local cluster=$work/cluster conf
  if ! conf=$(SCCACHE_DIST_BIN=$work/bin/sccache-dist bash scripts/env/sccache-cluster.sh start "$cluster" --server-cpus "${DIST_SERVER_CPUS:-2-15}" | tail -n1); then
    echo "device_dist: the cluster did not start (see above)" >&2; return 1
  fi
  bash scripts/env/sccache-cluster.sh status "$cluster" >&2
  local project=${DIST_PROJECT:-bench}
  # bench: the benchmark's 8 files; wide: the same kernels over 16 files of half the weight.
  python3 - "$work/proj" "$project" <<'PYEOF'
import sys; sys.path.insert(0, "scripts/bench")
import bench
from pathlib import Path
if sys.argv[2] == "wide":
    bench.WEIGHTS = [w // 2 for w in bench.WEIGHTS for _ in range(2)]
bench.make_project(Path(sys.argv[1]), "cudawheel")
print(f"device_dist: project {sys.argv[2]}: weights {bench.WEIGHTS}", file=sys.stderr)
PYEOF
  local cxx
  cxx=$(dist_host_cxx)
  echo "device_dist: host compiler $cxx" >&2
  local common=(CUDA_HOME="${DIST_CUDA_HOME:-/usr/local/cuda}" CUDAHOSTCXX="$cxx" CUDAWHEEL_JOBS=2 CUDAWHEEL_TOOLKIT=system SOURCE_DATE_EPOCH=1700000000)
  one_build() {  # one_build TAG MODE: a cold build, pinned to cores 0-1; prints its seconds
    local tag=$1 mode=$2 start end port
    rm -rf "$work/proj/build" "$work/out-$tag"
    port=$(dist_free_port)
    start=$(date +%s.%N)
    if [[ $mode == cluster ]]; then
      local logs=()
      [[ -n ${DIST_SCCACHE_LOG:-} ]] && logs=(SCCACHE_LOG=debug SCCACHE_LOG_MILLIS=1 SCCACHE_ERROR_LOG="$DIST_SCCACHE_LOG/sccache-$tag.log")
      env "${common[@]}" "${logs[@]}" SCCACHE_CONF="$conf" SCCACHE_DIR="$work/cache-$tag" SCCACHE_SERVER_PORT=$port \
        SCCACHE_IDLE_TIMEOUT=0 CUDAWHEEL_COMPILER_LAUNCHER="$work/bin/sccache" \
        taskset -c "${DIST_CLIENT_CPUS:-0-1}" "$V/bin/python" -m cudawheel wheel "$work/proj" -o "$work/out-$tag" >/dev/null 2>"$work/log-$tag" \
        || { tail -n 30 "$work/log-$tag" >&2; return 1; }
      end=$(date +%s.%N)
      SCCACHE_SERVER_PORT=$port "$work/bin/sccache" --stop-server >/dev/null 2>&1 || true
      grep -E 'build cluster|sccache:' "$work/log-$tag" | tail -n 2 >&2
    else
      env "${common[@]}" taskset -c "${DIST_CLIENT_CPUS:-0-1}" "$V/bin/python" -m cudawheel wheel "$work/proj" -o "$work/out-$tag" >/dev/null \
        2>"$work/log-$tag" || { tail -n 30 "$work/log-$tag" >&2; return 1; }
      end=$(date +%s.%N)
    fi
    python3 -c "print(f'{$end - $start:.1f}')"
  }
  # A first cluster build ships the toolchain to the build server (once per toolchain).
  echo "warm-up (toolchain shipped): $(one_build warm cluster) s" >&2
  local r c l cl=() lo=()
  for r in $(seq "${DIST_RUNS:-3}"); do
    c=$(one_build "c$r" cluster) || return 1
    l=$(one_build "l$r" local) || return 1
    echo "run $r: cluster $c s, local $l s" >&2
    cl+=("$c"); lo+=("$l")
  done
  # Each file's step as the cluster build saw it (progress lines: "[k/N] nvcc csrc/kI.cu ... S s").
  grep -E '\] nvcc csrc/k[0-9]+\.cu .* [0-9.]+ s$' "$work/log-c1" | sed 's/^cudawheel: //' >&2 || true
  # The bound nvcc sets: the heaviest file's chain, its phases timed by `nvcc -time` on one of
  # the server's (now idle) cores, with the flags cudawheel gave it.
  local heavy=k0  # the heaviest file of either project (weight 150, or 75 in `wide`)
  (cd "$work/proj" && taskset -c "${DIST_SERVER_CPUS:-2-15}" "${DIST_CUDA_HOME:-/usr/local/cuda}/bin/nvcc" -c "csrc/$heavy.cu" -o "$work/$heavy.o" \
     -ccbin "$cxx" -Xcompiler -fPIC -O3 -DNDEBUG -Icsrc -gencode arch=compute_80,code=sm_80 \
     -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 -time "$work/phases.csv") || return 1
  python3 - "${cl[*]}" "${lo[*]}" "${DIST_SERVER_CPUS:-2-15}" "$work/phases.csv" "$heavy" "$project" <<'PYEOF'
import csv, statistics, sys
c = statistics.median(map(float, sys.argv[1].split())); l = statistics.median(map(float, sys.argv[2].split()))
front = dev = 0.0; chains = {}; tail = 0.0
for row in csv.reader(open(sys.argv[4])):
    if len(row) < 7 or row[0].strip() in ("", "source file name"):
        continue
    phase, arch, ms = row[1].strip(), row[4].strip(), float(row[6])
    # The host compiler's phases are named after it: "g++ (preprocessing 4)", "(compiling)".
    if phase.endswith("(preprocessing 4)") or phase == "cudafe++":
        front += ms
    elif phase.endswith("(preprocessing 1)") or phase in ("cicc", "ptxas"):
        key = arch.replace("sm_", "compute_")
        chains[key] = chains.get(key, 0.0) + ms
    elif phase == "fatbinary" or phase.endswith("(compiling)"):
        tail += ms
chain = (front + max(chains.values()) + tail) / 1000
print(f"| build (client on 2 cores, jobs=2), project {sys.argv[6]} | median s |\n|---|---|\n| local | {l:.1f} |\n| cluster (server on cores {sys.argv[3]}) | {c:.1f} |")
print(f"speed-up: {l / c:.2f}x (target >= 4x)")
print(f"nvcc's chain for {sys.argv[5]}.cu (front end {front / 1000:.1f} s, slowest device pass "
      f"{max(chains.values()) / 1000:.1f} s of {len(chains)}, fatbinary + host compile {tail / 1000:.1f} s): {chain:.1f} s")
cores = sum(len(range(int(a), int(b or a) + 1)) for a, _, b in (p.partition("-") for p in sys.argv[3].split(",")))
bound = min(l / chain, cores / 2)
print(f"bound: local / chain = {l / chain:.2f}x, and at most {cores} server cores / 2 client cores = {cores / 2:.1f}x: "
      f"{bound:.2f}x; the cluster reached {l / c / bound:.0%} of it")
PYEOF
  if [[ $project == bench ]]; then
    # The cluster-built wheels run on the GPU.
    cp -r examples/saxpy "$work/saxpy"; rm -rf "$work/saxpy/build"
    local port
    port=$(dist_free_port)
    env "${common[@]}" SCCACHE_CONF="$conf" SCCACHE_DIR="$work/cache-saxpy" SCCACHE_SERVER_PORT=$port \
      SCCACHE_IDLE_TIMEOUT=0 CUDAWHEEL_COMPILER_LAUNCHER="$work/bin/sccache" \
      "$V/bin/python" -m cudawheel wheel "$work/saxpy" -o "$work/out-saxpy" 2>"$work/log-saxpy" \
      || { tail -n 30 "$work/log-saxpy" >&2; return 1; }
    grep -E 'build cluster' "$work/log-saxpy" >&2
    SCCACHE_SERVER_PORT=$port "$work/bin/sccache" --stop-server >/dev/null 2>&1 || true
  fi
  bash scripts/env/sccache-cluster.sh stop "$cluster"
  if [[ $project == bench ]]; then
    local W=/tmp/cudawheel-gpu-dist-run
    rm -rf "$W"; python3 -m venv "$W"
    "$W/bin/pip" install -q --no-index --find-links "$GPU" "$work"/out-c1/cwbench*.whl "$work"/out-saxpy/saxpy*.whl
    echo "cluster-built saxpy:" >&2
    (cd /tmp && "$W/bin/python" "$GPU/check_saxpy.py")
    echo "cluster-built benchmark wheel: run_all ->" >&2
    (cd /tmp && "$W/bin/python" -c 'import cwbench, sys; err = cwbench.run_all(4096); print("cudaError", err); sys.exit(err != 0)')
  fi
  rm -rf "$work"
}

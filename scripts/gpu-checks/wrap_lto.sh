# GPU part `wrap_lto`: a wrapped CMake project shaped like the ones that failed in the wild
# (tests/data/wrap-lto): a CUDA module built with separable compilation and device LTO (nvlink
# loads libnvvm from the toolkit folder), and a CPU-only module beside it; NVIDIA's runtime only
# under the `cuda_pip` extra (written `cuda-pip`).
#
#   prepare_wrap_lto (here): `pip wheel` of the project in wrap mode for CPython 3.12 (the GPU
#       machine's), archs=90, with build isolation; the nvidia-cuda-runtime wheel beside it.
#   device_wrap_lto: venv A, the wheel and the runtime wheel: `_gpu.saxpy` runs on the GPU and
#       matches the CPU; venv B, the wheel alone (no NVIDIA wheel): `_cpu.dot` imports and works,
#       and `import wrap_lto._gpu` fails with the one sentence naming `wrap-lto-cu13[cuda-pip]`
#       (or, where the machine's own CUDA 13 runtime is on the loader path, loads that one);
#       venv A again with the machine's CUDA 13.0 runtime loaded first: one CudaLibraryWarning
#       naming that copy (the wheel needs the 13.5 runtime it was built with).

prepare_wrap_lto() {
  local out=$GPU/wrap_lto py312
  py312=${PY312:-$(ls -d "$HOME"/.pyenv/versions/3.12.*/bin/python3 2>/dev/null | tail -n1)}
  [[ -x $py312 ]] || { echo "wrap_lto: needs a CPython 3.12 to build for the GPU machine's (set PY312)" >&2; return 1; }
  rm -rf "$out" "$ROOT/.cache/gpu-wrap-lto"; mkdir -p "$out" "$ROOT/.cache"
  cp -r tests/data/wrap-lto "$ROOT/.cache/gpu-wrap-lto"   # built outside the repository's tree
  PIP_FIND_LINKS="$ROOT/wheelhouse" "$py312" -m pip wheel -q --no-deps -w "$out" \
    --config-settings archs=90 "$ROOT/.cache/gpu-wrap-lto" >&2
  "$py312" -m pip download -q --no-deps --only-binary=:all: -d "$out/wheels" "nvidia-cuda-runtime>=13.0,<14"
  ls -l "$out"/*.whl "$out"/wheels >&2
}

device_wrap_lto() {
  local out=$GPU/wrap_lto A=/tmp/cudawheel-wrap-lto-a B=/tmp/cudawheel-wrap-lto-b
  rm -rf "$A" "$B"; python3 -m venv "$A"; python3 -m venv "$B"
  "$A/bin/pip" install -q --no-index --no-deps "$out"/wrap_lto_cu13-*.whl "$out"/wheels/nvidia_cuda_runtime-*.whl
  "$B/bin/pip" install -q --no-index --no-deps "$out"/wrap_lto_cu13-*.whl
  "$A/bin/python" - <<'PYEOF'
import wrap_lto._gpu as g
x = [float(i) for i in range(1000)]
y = [1.0] * 1000
got = g.saxpy(2.0, x, y)
want = [2.0 * a + b for a, b in zip(x, y)]
assert got == want, (got[:4], want[:4])
maps = [l.split()[-1] for l in open("/proc/self/maps") if "libcudart" in l]
print("wrap_lto kernel OK (device LTO), runtime", g.runtime_version(), "libcudart from", sorted(set(maps)))
PYEOF
  # The machine's own CUDA 13.0 runtime loaded first, as a stale system copy would be: the
  # import names it (the wheel needs the runtime it was built with, 13.5), and still runs.
  "$A/bin/python" - <<'PYEOF'
import ctypes, glob, os, warnings
stale = sorted(glob.glob("/usr/local/cuda/lib64/libcudart.so.13.*") + glob.glob("/usr/local/cuda/targets/*/lib/libcudart.so.13.*"))
assert stale, "no system libcudart.so.13.* on this machine"
ctypes.CDLL(stale[0], mode=ctypes.RTLD_GLOBAL)
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    import wrap_lto._gpu as g
said = [str(w.message) for w in seen if w.category.__name__ == "CudaLibraryWarning"]
print("wrap_lto with a stale runtime loaded first:", said)
assert said and os.path.realpath(stale[0]) in said[0], said
print("wrap_lto stale-copy kernel:", g.saxpy(2.0, [1.0], [1.0]))
PYEOF
  "$B/bin/python" - <<'PYEOF'
import wrap_lto._cpu as c
assert c.dot([1.0, 2.0], [3.0, 4.0]) == 11.0
print("wrap_lto CPU-only module OK without NVIDIA's wheels")
try:
    import wrap_lto._gpu  # noqa: F401
except ImportError as e:
    msg = str(e)
    assert "[cuda-pip]" in msg, msg
    print("wrap_lto GPU module without the extra:", msg)
else:
    # The machine's own CUDA 13 on the loader path serves it (the extra's "local" scheme).
    maps = sorted({l.split()[-1] for l in open("/proc/self/maps") if "libcudart" in l})
    assert maps and "site-packages/nvidia" not in maps[0], maps
    print("wrap_lto GPU module without the extra: the system's runtime", maps)
PYEOF
}

# GPU check part "free_threaded": wheels for free-threaded CPython 3.13t run their kernels.
#
# prepare_free_threaded (here) builds CPython 3.13.5t with scripts/env/python-ft.sh (cached) and,
# with `python -m cudawheel wheel --python <a 3.13t venv>` (nvcc 13.x from PyPI, default archs),
# into $GPU/free_threaded/<case>/:
#   capi      examples/saxpy, its init declaring the module GIL-free (PyUnstable_Module_SetGIL),
#             `py-limited-api = "cp39"` kept          -> saxpy_cu13-...-cp313-cp313t-...
#   pybind11  examples/pybind_saxpy with py::mod_gil_not_used()
#   nanobind  examples/nanobind_saxpy with `free-threaded = true`
#   control   examples/saxpy as it is (declares nothing: the GIL comes back on at import)
# It carries the interpreter itself, trimmed (no test suite, no static library, no headers,
# no Tk, stripped): $GPU/free_threaded/python-3.13.5t.tar.xz, about 13 MB. The GPU machine has
# no internet and no free-threaded Python; building one there from the same Debian source would
# need its -dev packages (libffi for ctypes, zlib for pip), which that image is not known to
# have, and would spend device minutes on every run. The interpreter needs only what any Python
# 3 on Ubuntu 24.04 already has (glibc >= 2.36, libffi8, libssl3, zlib, libbz2, liblzma).
# Also the NVIDIA runtime wheels the four require, in $GPU/free_threaded/wheels.
# device_free_threaded unpacks the interpreter into /tmp, makes a 3.13t venv per case, installs
# its wheel from $GPU only, and checks: the kernel matches the CPU reference (the example's own
# check_gpu.py), eight threads run the kernel at once and each result matches the CPU, and
# sys._is_gil_enabled() stays False after the import and the threads (capi, pybind11,
# nanobind) or turns True with the RuntimeWarning (control).

_ft_patch() {  # $1: case, $2: project folder. Makes the example GIL-free as its bindings say it.
  python3 - "$1" "$2" <<'PYEOF'
import pathlib, sys
case, project = sys.argv[1], pathlib.Path(sys.argv[2])
def edit(path, old, new):
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new))
if case == "capi":
    edit(project / "csrc/module.c", "{\n    return PyModule_Create(&core_module);\n}\n",
         "{\n    PyObject *m = PyModule_Create(&core_module);\n#ifdef Py_GIL_DISABLED\n"
         "    if (m != NULL && PyUnstable_Module_SetGIL(m, Py_MOD_GIL_NOT_USED) < 0) {\n"
         "        Py_DECREF(m);\n        return NULL;\n    }\n#endif\n    return m;\n}\n")
elif case == "pybind11":
    edit(project / "csrc/module.cpp", "PYBIND11_MODULE(_core, m)\n",
         "PYBIND11_MODULE(_core, m, py::mod_gil_not_used())\n")
elif case == "nanobind":
    edit(project / "pyproject.toml", 'name = "nanobind_saxpy._core"\n',
         'name = "nanobind_saxpy._core"\nfree-threaded = true\n')
PYEOF
}

prepare_free_threaded() {
  local cache=${CUDAWHEEL_TEST_CACHE:-$ROOT/.cache}
  local out=$GPU/free_threaded cu13 ft V=$cache/gpu-ft-venv B=$cache/gpu-ft-build-venv
  cu13=$(bash scripts/env/install-cuda.sh 13 "$cache/toolchains/cu13" | tail -n1)
  ft=$(CUDAWHEEL_TEST_CACHE=$cache bash scripts/env/python-ft.sh | tail -n1)
  [[ -x $V/bin/python ]] || "$ft" -m venv "$V"
  "$V/bin/pip" install -q "pybind11>=2.13" "nanobind>=2.0"
  [[ -x $B/bin/python ]] || "$PY" -m venv "$B"
  "$B/bin/pip" install -q --force-reinstall --no-deps "$ROOT"/wheelhouse/cudawheel-*.whl
  rm -rf "$out"; mkdir -p "$out"
  local case example src
  for case in capi:saxpy pybind11:pybind_saxpy nanobind:nanobind_saxpy control:saxpy; do
    IFS=: read -r case example <<<"$case"
    src=$cache/gpu-ft-src/$case
    rm -rf "$src"; mkdir -p "$src"; cp -r "examples/$example" "$src/"; rm -rf "$src/$example/build"
    _ft_patch "$case" "$src/$example"
    CUDA_HOME=$cu13 "$B/bin/python" -m cudawheel wheel "$src/$example" -o "$out/$case" --python "$V/bin/python" \
      2>"$src/log" >/dev/null || { cat "$src/log" >&2; return 1; }
    grep -E 'py-limited-api|^cudawheel: built' "$src/log" >&2
    ls "$out/$case"/*-cp313-cp313t-manylinux_*_x86_64.whl >/dev/null
    cp "examples/$example/check_gpu.py" "$out/$case/check_gpu.py"
  done
  local reqs=()
  mapfile -t reqs < <(wheel_requires "$out"/*/*.whl)
  "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$out/wheels" "${reqs[@]}"
  # The interpreter, trimmed to what installing and running wheels needs.
  local prefix tmp
  prefix=$(cd "$(dirname "$ft")/.." && pwd)
  tmp=$(mktemp -d)
  cp -a "$prefix" "$tmp/py313t"
  (cd "$tmp/py313t" && rm -rf include share lib/pkgconfig \
    lib/python3.13t/test lib/python3.13t/idlelib lib/python3.13t/tkinter lib/python3.13t/turtledemo \
    lib/python3.13t/config-3.13t-* lib/python3.13t/site-packages/pip* \
    && find . -name __pycache__ -type d -prune -exec rm -rf {} + \
    && find . -name '*test*' -path '*lib-dynload*' -delete \
    && strip --strip-unneeded bin/python3.13t lib/libpython3.13t.so.1.0 lib/python3.13t/lib-dynload/*.so)
  tar -C "$tmp" -cJf "$out/python-3.13.5t.tar.xz" py313t
  rm -rf "$tmp"
  du -sh "$out" "$out/python-3.13.5t.tar.xz" >&2
}

# The kernel from eight threads at once, each on its own data, against the CPU.
_FT_THREADS='
import random, sys, threading, importlib
pkg = importlib.import_module(sys.argv[1])
print("GIL after import:", sys._is_gil_enabled())
errors = []
def work(seed):
    rng = random.Random(seed)
    try:
        for _ in range(20):
            n = rng.randrange(1, 200_000)
            x = [rng.uniform(-1, 1) for _ in range(n)]
            y = [rng.uniform(-1, 1) for _ in range(n)]
            out = pkg.saxpy(1.5, x, y)
            bad = sum(abs(o - (1.5 * a + b)) > 1e-5 for o, a, b in zip(out, x, y))
            if bad or len(out) != n:
                errors.append((seed, n, bad))
    except Exception as err:
        errors.append((seed, repr(err)))
threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
print("8 threads x 20 kernels:", "all match the CPU" if not errors else errors)
print("GIL after threads:", sys._is_gil_enabled())
sys.exit(1 if errors else 0)
'

device_free_threaded() {
  local out=$GPU/free_threaded py=/tmp/py313t/bin/python3.13t V case pkg log
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader || true
  rm -rf /tmp/py313t; tar -C /tmp -xJf "$out/python-3.13.5t.tar.xz"
  # The interpreter's RUNPATH names the folder it was built in: its libpython is here now.
  local saved_ld=${LD_LIBRARY_PATH-}
  export LD_LIBRARY_PATH=/tmp/py313t/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  "$py" -c 'import sys, sysconfig; print(sys.version); assert sysconfig.get_config_var("Py_GIL_DISABLED") == 1 and not sys._is_gil_enabled()'
  for case in capi pybind11 nanobind control; do
    V=/tmp/cudawheel-ft-$case
    rm -rf "$V"; "$py" -m venv "$V"
    "$V/bin/python" -m pip install -q --no-index --find-links "$out/wheels" "$out/$case"/*.whl
    pkg=$(basename "$out/$case"/*.whl | cut -d- -f1 | sed 's/_cu13$//')
    echo "--- $case: $(basename "$out/$case"/*.whl)"
    (cd /tmp && "$V/bin/python" "$out/$case/check_gpu.py") || { echo "FAIL: $case: check_gpu.py"; return 1; }
    log=$(cd /tmp && "$V/bin/python" -W default -c "$_FT_THREADS" "$pkg" 2>&1) || { echo "$log"; echo "FAIL: $case: threads"; return 1; }
    echo "$log"
    if [[ $case == control ]]; then
      grep -q "GIL after import: True" <<<"$log" && grep -q "RuntimeWarning: The global interpreter lock (GIL) has been enabled to load module 'saxpy._core'" <<<"$log" \
        || { echo "FAIL: control: the GIL should be back on, with the RuntimeWarning"; return 1; }
    else
      grep -q "GIL after import: False" <<<"$log" && grep -q "GIL after threads: False" <<<"$log" \
        && ! grep -q RuntimeWarning <<<"$log" || { echo "FAIL: $case: the GIL must stay off"; return 1; }
    fi
  done
  if [[ -n $saved_ld ]]; then export LD_LIBRARY_PATH=$saved_ld; else unset LD_LIBRARY_PATH; fi
  echo "free_threaded: 3 GIL-free wheels ran their kernel from 8 threads with the GIL off; the control turned it on"
}

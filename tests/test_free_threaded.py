"""Free-threaded CPython (3.13t, `--disable-gil`): wheels built for it, imports that keep the GIL off.

The interpreter comes from the project's own recipe (scripts/env/python-ft.sh: Debian's CPython
3.13.5 source, pyenv's python-build, cached in CUDAWHEEL_TEST_CACHE). Four projects, each built
for archs 80-real by `python -m cudawheel wheel --python <the 3.13t venv>` (the toolkit from the
running environment, pybind11/nanobind from the 3.13t venv):

  capi      the saxpy example, its single-phase init declaring the module GIL-free
            (`PyUnstable_Module_SetGIL`), `py-limited-api = "cp39"` kept: a cp313t wheel
  pybind11  the pybind11 example with `py::mod_gil_not_used()` (pybind11's multi-phase init)
  nanobind  the nanobind example with `free-threaded = true` (nanobind's FREE_THREADED form)
  control   the saxpy example as it is: no declaration, so CPython turns the GIL back on
  noinit    an extension with no init of its own (a kernel only, as a torch `TORCH_LIBRARY`-only
            module): the generated init makes its module, declared GIL-free

Each package's `__init__.py` imports its extension directly (no `_cuda_libs` call), so the GPU
check at import is the generated init's. Each is installed with `pip install --target` (its
NVIDIA runtime wheel beside it) and imported against the stand-in
driver of test_archs.py. One more project is built by pip itself, with build isolation, from the
backend's free-threaded wheel in the wheelhouse.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from test_archs import build_driver

from conftest import CACHE, REPO, Wheel, clean_env, copy_example, run

GIL_FREE_C_INIT = """PyMODINIT_FUNC PyInit__core(void)
{
    PyObject *m = PyModule_Create(&core_module);
#ifdef Py_GIL_DISABLED
    if (m != NULL && PyUnstable_Module_SetGIL(m, Py_MOD_GIL_NOT_USED) < 0) {
        Py_DECREF(m);
        return NULL;
    }
#endif
    return m;
}
"""

PACKAGE = {"capi": "saxpy", "pybind11": "pybind_saxpy", "nanobind": "nanobind_saxpy", "control": "saxpy",
           "noinit": "noinit"}

NOINIT_PYPROJECT = """\
[build-system]
requires = ["cudawheel"]
build-backend = "cudawheel"

[project]
name = "noinit"
version = "0.1.0"

[[tool.cudawheel.extension]]
name = "noinit._core"
sources = ["csrc/*.cu"]
"""
EXAMPLE = {"capi": "saxpy", "pybind11": "pybind_saxpy", "nanobind": "nanobind_saxpy", "control": "saxpy"}


INIT = '"""{name}: imports its extension directly."""\n\nfrom ._core import saxpy, runtime_version, driver_version\n'


def make_project(kind: str, work: Path) -> Path:
    """The example for `kind`, made GIL-free as that binding library spells it."""
    if kind == "noinit":
        project = work / kind / "noinit"
        (project / "noinit").mkdir(parents=True)
        (project / "csrc").mkdir()
        (project / "pyproject.toml").write_text(NOINIT_PYPROJECT)
        (project / "noinit" / "__init__.py").write_text("from . import _core\n")
        (project / "csrc" / "ops.cu").write_text("__global__ void twice(float *x) { x[threadIdx.x] *= 2; }\n")
        return project
    project = copy_example(EXAMPLE[kind], work / kind)
    (project / PACKAGE[kind] / "__init__.py").write_text(INIT.format(name=PACKAGE[kind]))
    if kind == "capi":
        module = project / "csrc/module.c"
        text = module.read_text()
        old = "PyMODINIT_FUNC PyInit__core(void)\n{\n    return PyModule_Create(&core_module);\n}\n"
        assert old in text
        module.write_text(text.replace(old, GIL_FREE_C_INIT))
    elif kind == "pybind11":
        module = project / "csrc/module.cpp"
        text = module.read_text()
        assert "PYBIND11_MODULE(_core, m)\n" in text
        module.write_text(text.replace("PYBIND11_MODULE(_core, m)\n", "PYBIND11_MODULE(_core, m, py::mod_gil_not_used())\n"))
    elif kind == "nanobind":
        pyproject = project / "pyproject.toml"
        text = pyproject.read_text()
        assert 'name = "nanobind_saxpy._core"\n' in text
        pyproject.write_text(text.replace('name = "nanobind_saxpy._core"\n',
                                          'name = "nanobind_saxpy._core"\nfree-threaded = true\n'))
    return project


@pytest.fixture(scope="module")
def ft_python() -> Path:
    """CPython 3.13.5t, built once by the project's recipe and cached."""
    proc = run(["bash", REPO / "scripts/env/python-ft.sh"], env=clean_env(CUDAWHEEL_TEST_CACHE=CACHE), timeout=3600)
    py = Path(proc.stdout.strip().splitlines()[-1])
    facts = run([py, "-c", "import sys, sysconfig; print(sysconfig.get_config_var('Py_GIL_DISABLED'), "
                 "sysconfig.get_config_var('EXT_SUFFIX'), sys._is_gil_enabled())"]).stdout.split()
    assert facts == ["1", ".cpython-313t-x86_64-linux-gnu.so", "False"], facts
    return py


@pytest.fixture(scope="module")
def ft_venv(ft_python, scratch) -> Path:
    """A 3.13t venv with pybind11 and nanobind (the builds take them from its sys.path)."""
    v = scratch("ft-venv") / "v"
    run([ft_python, "-m", "venv", v], env=clean_env())
    py = v / "bin" / "python"
    run([py, "-m", "pip", "install", "-q", "pybind11>=2.13", "nanobind>=2.0"], env=clean_env())
    return py


@pytest.fixture(scope="module")
def built(scratch, toolkit_python, ft_venv):
    """{kind: (wheel, --target folder, build log)} and the stand-in driver folder."""
    work = scratch("free-threaded")
    out = {}
    for kind in PACKAGE:
        project = make_project(kind, work / "src")
        proc = run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", work / "out" / kind,
                    "--python", ft_venv, "-C", "archs=80-real"], env=clean_env())
        [wheel] = [Path(line) for line in proc.stdout.split() if line.endswith(".whl")]
        target = work / "t" / kind
        # With its NVIDIA runtime wheel next to it: the extension's RPATH finds libcudart there.
        run([ft_venv, "-m", "pip", "install", "-q", "--target", target, wheel], env=clean_env())
        out[kind] = (wheel, target, proc.stderr)
    return out, build_driver(work / "driver")


def ft_run(ft_venv, built, kind, code, *, ccs=None, **extra):
    """Runs `code` in the 3.13t venv with `kind` installed (`ccs`: the stand-in driver's GPUs)."""
    wheels, drv = built
    env = clean_env(PYTHONPATH=wheels[kind][1], **extra)
    if ccs:
        env.update(LD_LIBRARY_PATH=str(drv), FAKE_CUDA_CCS=ccs, FAKE_CUDA_DRIVER="13000",
                   FAKE_CUDA_NAME="NVIDIA H100 80GB HBM3")
    return run([ft_venv, "-W", "default", "-c", code], env=env, cwd=wheels[kind][1].parent, check=False)


def test_the_wheels_are_free_threaded_and_version_specific(built):
    wheels, _ = built
    for kind, (wheel, _, _log) in wheels.items():
        name = wheel.name
        assert re.fullmatch(rf"{PACKAGE[kind]}_cu13-0\.1\.0-cp313-cp313t-manylinux_2_\d+_x86_64\.whl", name), name
        w = Wheel(wheel)
        w.check_record()
        [so] = [n for n in w.names if n.endswith(".so")]
        assert so == f"{PACKAGE[kind]}/_core.cpython-313t-x86_64-linux-gnu.so", so
        assert "Tag: cp313-cp313t-manylinux_" in w.read(f"{w.dist_info}/WHEEL").decode()
    # The saxpy example asks for the limited API: one status line says why this wheel is not abi3.
    for kind in ("capi", "control"):
        log = wheels[kind][2]
        said = [line for line in log.splitlines() if "py-limited-api" in line]
        assert said == ['cudawheel: py-limited-api = "cp39": Python 3.13t is free-threaded, where the limited API '
                        "does not exist (before 3.15's abi3t), so this is a version-specific cp313-cp313t wheel"], log
    assert not [line for line in wheels["pybind11"][2].splitlines() if "py-limited-api" in line]


GIL_STATE = """
import sys, threading
import {package} as pkg
from {package} import _cuda_libs
print("gil", sys._is_gil_enabled())
print("preloaded", bool(_cuda_libs._loaded))
errors, results = [], []
def work():
    try:
        for _ in range(200):
            results.append((pkg.runtime_version(), pkg.driver_version()))
            try:
                pkg.saxpy(2.0, [1.0, 2.0], [1.0])
            except ValueError:
                pass
    except BaseException as err:
        errors.append(repr(err))
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("calls", len(results), "errors", errors, "versions", sorted(set(results)))
print("gil after threads", sys._is_gil_enabled())
"""


@pytest.mark.parametrize("kind", ["capi", "pybind11", "nanobind"])
def test_gil_free_modules_keep_the_gil_off(built, ft_venv, kind):
    # The import keeps the GIL off, and eight threads call into the extension at once (argument
    # conversion, errors, the CUDA runtime; no driver here, so no kernel runs).
    proc = ft_run(ft_venv, built, kind, GIL_STATE.format(package=PACKAGE[kind]))
    assert proc.returncode == 0, proc.stderr
    assert "RuntimeWarning" not in proc.stderr and "GIL" not in proc.stderr, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "gil False" and lines[1] == "preloaded True", proc.stdout
    assert lines[2].startswith("calls 1600 errors [] versions [(13"), proc.stdout
    assert lines[3] == "gil after threads False", proc.stdout


@pytest.mark.parametrize("kind", ["capi", "pybind11", "nanobind"])
def test_the_gpu_check_still_runs_at_import(built, ft_venv, kind, tmp_path):
    package = PACKAGE[kind]
    # An sm_90 GPU and a wheel with sm_80 SASS only: the import fails, as on a GIL Python.
    log = tmp_path / "calls.log"
    proc = ft_run(ft_venv, built, kind, f"import {package}", ccs="90", FAKE_CUDA_CALL_LOG=log)
    assert proc.returncode == 1, proc.stderr
    assert (f"ImportError: {package}: GPU 0 (NVIDIA H100 80GB HBM3, sm_90) cannot run this package, which "
            "carries GPU code for sm_80 only") in proc.stderr, proc.stderr
    assert log.read_text().splitlines() == ["cuDriverGetVersion"], log.read_text()
    # An sm_86 GPU runs the sm_80 SASS: the check passes and the GIL stays off.
    log.unlink()
    code = f"import sys, {package}\nfrom {package} import _cuda_libs as c\nprint(sys._is_gil_enabled(), c.gpu_verdicts()[0].verdict)"
    proc = ft_run(ft_venv, built, kind, code, ccs="86", FAKE_CUDA_CALL_LOG=log)
    assert proc.returncode == 0 and proc.stdout.split() == ["False", "sass"], proc.stdout + proc.stderr
    assert "cuDriverGetVersion" in log.read_text()
    # No driver on the machine (as here): nothing to check, the import goes on, GIL off.
    proc = ft_run(ft_venv, built, kind, f"import sys, {package}; print(sys._is_gil_enabled(), {package}.driver_version())")
    assert proc.returncode == 0 and proc.stdout.split() == ["False", "0"], proc.stderr


def test_the_control_turns_the_gil_back_on(built, ft_venv):
    """The saxpy example as it is declares nothing, so CPython enables the GIL when it loads."""
    proc = ft_run(ft_venv, built, "control", "import sys, saxpy; print(sys._is_gil_enabled())")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True"], proc.stdout
    assert ("RuntimeWarning: The global interpreter lock (GIL) has been enabled to load module 'saxpy._core', "
            "which has not declared that it can run safely without the GIL.") in proc.stderr, proc.stderr
    # The documentation explains that warning and how each binding library avoids it.
    doc = (REPO / "docs/explanations/free-threaded.md").read_text()
    for text in ("has been enabled to load module", "PyUnstable_Module_SetGIL", "py::mod_gil_not_used()",
                 "free-threaded = true"):
        assert text in doc, text


def test_an_extension_without_an_init_stays_gil_free(built, ft_venv):
    """The module cudawheel's generated init makes for an extension with no init of its own."""
    proc = ft_run(ft_venv, built, "noinit", "import sys, noinit; print(noinit._core.__name__, sys._is_gil_enabled())")
    assert proc.returncode == 0 and proc.stdout.split() == ["noinit._core", "False"], proc.stdout + proc.stderr
    assert "RuntimeWarning" not in proc.stderr, proc.stderr


PRELOAD_RACE = """
import contextlib, sys, threading, time
from saxpy import _cuda_libs as c
{unlock}
probes = []
def slow_probe(fresh=False):
    probes.append(threading.get_ident())
    time.sleep(0.3)
    return None, None
c._probe = slow_probe
barrier = threading.Barrier(4)
errors = []
def go():
    barrier.wait()
    try:
        c.preload()
    except BaseException as err:
        errors.append(repr(err))
threads = [threading.Thread(target=go) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(probes), len(c._loaded), errors, sys._is_gil_enabled())
"""


def test_preload_is_done_once_when_threads_race(built, ft_venv):
    """Four threads call preload() at once (as extensions of one package imported from several
    threads do): one probes and loads, the others wait and find it done."""
    # The helper alone (saxpy's package __init__ imports the extension: load the helper by path).
    code = PRELOAD_RACE.replace("from saxpy import _cuda_libs as c",
                                "import importlib.util as u, pathlib\n"
                                "s = u.spec_from_file_location('saxpy._cuda_libs', pathlib.Path('saxpy/_cuda_libs.py'))\n"
                                "c = u.module_from_spec(s); s.loader.exec_module(c)")
    wheels, _ = built
    env = clean_env()
    cwd = wheels["capi"][1]
    proc = run([ft_venv, "-c", code.format(unlock="")], env=env, cwd=cwd)
    assert proc.stdout.split(" ", 2)[:2] == ["1", "1"], proc.stdout  # one probe, libcudart loaded once
    assert proc.stdout.strip().endswith("[] False"), proc.stdout
    # Control: without the helper's lock every thread probes and loads (the race is real here).
    proc = run([ft_venv, "-c", code.format(unlock="c._lock = contextlib.nullcontext()")], env=env, cwd=cwd)
    assert proc.stdout.split(" ", 2)[:2] == ["4", "4"], proc.stdout


def test_pip_with_build_isolation_uses_the_free_threaded_backend(ft_python, ft_wheelhouse, tmp_path):
    """pip on 3.13t installs the backend's cp313t wheel into the isolated build environment
    (nvcc and pybind11 from PyPI) and builds the pybind11 example."""
    v = tmp_path / "v"
    run([ft_python, "-m", "venv", v], env=clean_env())
    project = make_project("pybind11", tmp_path / "src")
    proc = run([v / "bin/python", "-m", "pip", "wheel", "-v", "--no-deps", "-w", tmp_path / "out",
                "-C", "archs=80-real", project], env=clean_env(PIP_FIND_LINKS=ft_wheelhouse))
    [wheel] = (tmp_path / "out").glob("*.whl")
    assert re.fullmatch(r"pybind_saxpy_cu13-0\.1\.0-cp313-cp313t-manylinux_2_\d+_x86_64\.whl", wheel.name), wheel.name
    backend = re.findall(r"cudawheel-[^ ]*?-cp313-cp313t-[^ ]*?\.whl", proc.stdout + proc.stderr)
    assert backend, proc.stdout[-4000:]


@pytest.fixture(scope="module")
def ft_wheelhouse(wheelhouse, ft_python, scratch) -> Path:
    """The folder of the backend's cp313t wheel: the wheelhouse's `free-threaded/` (scripts/test.sh
    builds it there), else built now by scripts/build-backend.sh with CUDAWHEEL_FT_PYTHON."""
    if list((wheelhouse / "free-threaded").glob("cudawheel-*-cp313-cp313t-*.whl")):
        return wheelhouse / "free-threaded"
    out = scratch("ft-wheelhouse")
    run(["bash", REPO / "scripts/build-backend.sh", out], env=dict(os.environ, CUDAWHEEL_FT_PYTHON=str(ft_python)),
        timeout=3600)
    assert list((out / "free-threaded").glob("cudawheel-*-cp313-cp313t-*.whl")), list(out.iterdir())
    return out / "free-threaded"

"""Scale and awkward paths. A generated project with 500 sources (mostly C++ for the
host compiler, a few .cu for nvcc) that all include the top of a 20-level include chain builds
and its module sums every source's value; a project in a folder with spaces and non-ASCII
characters builds with pip, installs in a venv under such a folder too, and imports."""

from __future__ import annotations

import os
import shutil
import time
import zipfile
from pathlib import Path

from conftest import Wheel, clean_env, copy_example, make_venv, run

N_CPP, N_CU, DEPTH = 490, 10, 20

MODULE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "level0.h"
%(decls)s
static PyObject *total(PyObject *self, PyObject *args) {
    (void)self; (void)args;
    long long t = 0;
%(calls)s
    return Py_BuildValue("(Li)", t, DEEPEST);
}
static PyMethodDef methods[] = {{"total", total, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_big", NULL, -1, methods};
extern "C" PyMODINIT_FUNC PyInit__big(void) { return PyModule_Create(&mod); }
"""


def generate(root: Path) -> int:
    """Writes the project; returns the total the module must compute."""
    inc = root / "include"
    for level in range(DEPTH):
        d = inc.joinpath(*[f"d{i}" for i in range(level)])
        d.mkdir(parents=True, exist_ok=True)
        nxt = "/".join([f"d{i}" for i in range(level + 1)] + [f"level{level + 1}.h"])
        body = f'#include "{nxt}"\n' if level + 1 < DEPTH else f"#define DEEPEST {DEPTH}\n"
        (d / f"level{level}.h").write_text(f"#pragma once\n{body}#define LEVEL{level} {level}\n")
    # Each header's include is relative to include/, so -Iinclude resolves the whole chain.
    expected = 0
    names = []
    for i in range(N_CPP + N_CU):
        cu = i < N_CU
        sub = root / "src" / f"group{i % 10}"
        sub.mkdir(parents=True, exist_ok=True)
        ext = "cu" if cu else "cpp"
        # Every value depends on the deepest header, so a broken include chain cannot compile.
        (sub / f"s{i:03d}.{ext}").write_text(
            f'#include "level0.h"\nextern "C" int value_{i}(void) {{ return {i} + DEEPEST + LEVEL{DEPTH - 1}; }}\n')
        names.append(f"value_{i}")
        expected += i + DEPTH + DEPTH - 1
    decls = "\n".join(f'extern "C" int {n}(void);' for n in names)
    calls = "\n".join(f"    t += {n}();" for n in names)
    (root / "src" / "module.cpp").write_text(MODULE % {"decls": decls, "calls": calls})
    (root / "big").mkdir()
    (root / "big" / "__init__.py").write_text("from . import _cuda_libs\n_cuda_libs.preload()\nfrom ._big import total\n")
    (root / "pyproject.toml").write_text("""
[project]
name = "big"
version = "1.0"

[tool.cudawheel]
archs = ["80"]

[[tool.cudawheel.extension]]
name = "big._big"
sources = ["src/**/*.cu", "src/**/*.cpp"]
include-dirs = ["include"]
""")
    return expected


def test_500_sources_with_a_deep_include_tree(toolkit_python, tmp_path):
    proj = tmp_path / "big"
    expected = generate(proj)
    n_sources = len(list((proj / "src").rglob("*.c*")))
    assert n_sources == N_CPP + N_CU + 1
    start = time.monotonic()
    proc = run([toolkit_python, "-m", "cudawheel", "wheel", proj, "-o", tmp_path / "out"],
               env=clean_env(CUDAWHEEL_JOBS=str(os.cpu_count() or 2)))
    took = time.monotonic() - start
    wheel = Wheel(Path(proc.stdout.strip()))
    target = tmp_path / "site"
    wheel.zip.extractall(target)
    # The CUDA runtime comes from toolkit_python's own site-packages (preload finds it on sys.path).
    out = run([toolkit_python, "-c", "import big; print(*big.total())"], cwd=tmp_path,
              env=clean_env(PYTHONPATH=target)).stdout.split()
    assert out == [str(expected), str(DEPTH)], out
    print(f"built {n_sources} sources in {took:.1f}s")


def test_path_with_spaces_and_non_ascii(toolkit_python, tmp_path):
    base = tmp_path / "my proj" / "ünïcödé 项目"
    base.mkdir(parents=True)
    proj = copy_example("saxpy", base)
    spaced = base / "with space 'q'"
    proj = proj.rename(spaced)
    out = base / "wheels out"
    run([toolkit_python, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w", out, proj,
         "-C", "archs=90"], env=clean_env())
    wheels = list(out.glob("saxpy_cu13-*.whl"))
    assert len(wheels) == 1, wheels
    names = zipfile.ZipFile(wheels[0]).namelist()
    assert "saxpy/_core.abi3.so" in names
    # The project path must not leak into the binary (the prefix map takes it off).
    so = zipfile.ZipFile(wheels[0]).read("saxpy/_core.abi3.so")
    assert str(proj).encode() not in so
    py = make_venv(base / "venv ü")
    run([py, "-m", "pip", "install", "-q", wheels[0]], env=clean_env())
    got = run([py, "-c", "import saxpy; print('runtime', saxpy.runtime_version())"], cwd=base, env=clean_env()).stdout
    assert got.startswith("runtime 13"), got
    shutil.rmtree(base / "venv ü")

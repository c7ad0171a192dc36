"""Extension features on a generated project: .cu + .cpp + .c sources from globs,
include dirs, defines, per-step flags, entry points, a non-abi3 extension suffix, default archs
and PTX, SOURCE_DATE_EPOCH timestamps. Built without isolation by the CUDA 13 wheels in a venv."""

from __future__ import annotations

import textwrap
import zipfile
from pathlib import Path

import pytest

from conftest import Wheel, clean_env, copy_example, readelf_dynamic, run

PYPROJECT = """
[build-system]
requires = ["cudawheel"]
build-backend = "cudawheel"

[project]
name = "Feat"
version = "2.0"
dependencies = ["packaging>=20"]
scripts = { feat-cli = "feat:main" }
entry-points = { "feat.plugins" = { one = "feat:main" } }

[tool.cudawheel]
archs = ["90"]

[[tool.cudawheel.extension]]
name = "feat._feat"
sources = ["src/**/*.cu", "src/*.cpp", "src/module.c"]
include-dirs = ["include"]
defines = ["SCALE=7"]
nvcc-flags = ["-DNV_FLAG=3"]
cxx-flags = ["-DCX_FLAG=5"]
link-flags = ["-Wl,-z,now"]
"""

FILES = {
    "include/feat.h": """
        #ifdef __cplusplus
        extern "C" {
        #endif
        int feat_nvcc_value(void);
        int feat_cxx_value(void);
        int feat_runtime(void);
        #ifdef __cplusplus
        }
        #endif
    """,
    "src/cuda/kernel.cu": """
        #include <cuda_runtime.h>
        #include "feat.h"
        __global__ void k(int *o) { *o = NV_FLAG + SCALE; }
        int feat_nvcc_value(void) { return NV_FLAG * 100 + SCALE; }
        int feat_runtime(void) { int v = 0; cudaRuntimeGetVersion(&v); return v; }
    """,
    "src/helper.cpp": """
        #include "feat.h"
        #ifdef NV_FLAG
        #error "nvcc-flags must not reach the host compiler"
        #endif
        int feat_cxx_value(void) { return CX_FLAG * 10 + SCALE; }
    """,
    "src/module.c": """
        #define PY_SSIZE_T_CLEAN
        #include <Python.h>
        #include "feat.h"
        #ifdef CX_FLAG_UNSET
        #endif
        static PyObject *values(PyObject *self, PyObject *args) {
            (void)self; (void)args;
            return Py_BuildValue("(iii)", feat_nvcc_value(), feat_cxx_value(), feat_runtime());
        }
        static PyMethodDef methods[] = {{"values", values, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
        static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_feat", NULL, -1, methods};
        PyMODINIT_FUNC PyInit__feat(void) { return PyModule_Create(&mod); }
    """,
    "src/notes.h": "/* a header matched by no glob: fine */\n",
    "feat/__init__.py": "from ._feat import values\n\ndef main():\n    print('feat', values())\n",
}


@pytest.fixture(scope="module")
def feat(scratch, toolkit_python):
    root = scratch("feat")
    proj = root / "feat-src"
    for rel, text in FILES.items():
        (proj / rel).parent.mkdir(parents=True, exist_ok=True)
        (proj / rel).write_text(textwrap.dedent(text))
    (proj / "pyproject.toml").write_text(PYPROJECT)
    out = root / "out"
    proc = run([toolkit_python, "-m", "cudawheel", "wheel", proj, "-o", out],
               env=clean_env(SOURCE_DATE_EPOCH="1700000000", CUDAWHEEL_JOBS="2"))
    return Wheel(Path(proc.stdout.strip())), proc.stderr


def test_name_tag_and_suffix(feat):
    wheel, log = feat
    assert wheel.path.name.startswith("feat_cu13-2.0-cp311-cp311-manylinux_2_")
    assert "feat/_feat.cpython-311-x86_64-linux-gnu.so" in wheel.names
    # One graph: three compiles and the import check's generated source, then the link, each
    # reported as it finishes; then a summary.
    assert "[5/5] link feat/_feat.cpython-311-x86_64-linux-gnu.so" in log, log
    assert "(5 steps ran, 0 up to date)" in log, log


def test_entry_points_and_dependencies(feat):
    wheel, _ = feat
    assert wheel.read(f"{wheel.dist_info}/entry_points.txt").decode() == (
        "[console_scripts]\nfeat-cli = feat:main\n\n[feat.plugins]\none = feat:main\n\n")
    reqs = wheel.field("Requires-Dist")
    assert reqs[0] == "packaging>=20" and reqs[1].startswith("nvidia-cuda-runtime>=13.")
    assert wheel.field("Name") == ["Feat-cu13"]


def test_source_date_epoch_sets_every_timestamp(feat):
    wheel, _ = feat
    stamps = {i.date_time for i in zipfile.ZipFile(wheel.path).infolist()}
    assert stamps == {(2023, 11, 14, 22, 13, 20)}
    wheel.check_record()


def test_flags_reach_the_right_compiler_and_module_runs(feat, toolkit_python, tmp_path):
    wheel, _ = feat
    so = wheel.extract("feat/_feat.cpython-311-x86_64-linux-gnu.so", tmp_path)
    dyn = readelf_dynamic(so)
    assert dyn["RPATH"] == ["$ORIGIN/../nvidia/cu13/lib"] and "libcudart.so.13" in dyn["NEEDED"]
    assert "BIND_NOW" in run(["readelf", "-d", so]).stdout  # link-flags reached the linker
    run([toolkit_python, "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", wheel.path], env=clean_env())
    proc = run([toolkit_python, "-c", "import feat; print(feat.values())"], cwd=tmp_path, env=clean_env())
    nv, cx, rt = eval(proc.stdout.strip())
    assert (nv, cx) == (307, 57) and rt >= 13000
    cli = Path(toolkit_python).parent / "feat-cli"
    assert run([cli], cwd=tmp_path, env=clean_env()).stdout.startswith("feat (307, 57, ")


def test_default_archs_and_ptx(toolkit_python, tmp_path, cu13_home):
    """No `archs`: CUDA 13's defaults as SASS, PTX of the highest only; fatbins compressed."""
    project = copy_example("saxpy", tmp_path)
    proc = run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "out"], env=clean_env())
    wheel = Wheel(Path(proc.stdout.strip()))
    so = wheel.extract("saxpy/_core.abi3.so", tmp_path / "x")
    elf = run([f"{cu13_home}/bin/cuobjdump", "--list-elf", so]).stdout
    ptx = run([f"{cu13_home}/bin/cuobjdump", "--list-ptx", so]).stdout
    for arch in (75, 80, 86, 89, 90, 100, 120):
        assert f"sm_{arch}" in elf, elf
    assert "sm_120" in ptx and "sm_90" not in ptx and ptx.count(".ptx") == 1, ptx
    # Seven SASS images plus PTX in well under 100 kB: the fatbin is compressed.
    assert so.stat().st_size < 100_000, so.stat().st_size

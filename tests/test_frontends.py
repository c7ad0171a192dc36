"""Every frontend (pip, build, uv) on one project (examples/saxpy, one arch to keep nvcc quick):
`pip wheel`, `pip install`, `pip install -e`, `python -m build` (sdist, then the wheel from that
sdist), `uv build`, `uv pip install`, with and without build isolation. The wheels pass
`twine check` and `check-wheel-contents`.

Isolated builds take cudawheel from the wheelhouse and NVIDIA's wheels from PyPI through the
shared caches (.cache/pip, .cache/uv); non-isolated ones run in one venv that holds cudawheel and
the CUDA 13 wheels."""

from __future__ import annotations

import re
import shutil
import sys
import tarfile
from pathlib import Path

import pytest

from conftest import CACHE, Wheel, clean_env, copy_example, make_venv, run

NAME = re.compile(r"^saxpy_cu13-0\.1\.0-cp39-abi3-manylinux_2_5_x86_64\.whl$")
IMPORT = (
    "import saxpy\n"
    "assert saxpy.runtime_version() >= 13000\n"
    "print(saxpy._core.__file__)\n"
)


def uv():
    exe = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    assert Path(exe).exists(), "uv is missing: pip install -r requirements-dev.txt"
    return exe


def env_for(wheelhouse, **extra):
    """Isolated builds find cudawheel in the wheelhouse; one arch keeps nvcc fast."""
    return clean_env(
        PIP_FIND_LINKS=wheelhouse,
        UV_FIND_LINKS=wheelhouse,
        UV_CACHE_DIR=CACHE / "uv",
        UV_PYTHON=sys.executable,
        UV_PYTHON_DOWNLOADS="never",
        CUDAWHEEL_ARCHS="80",
        **extra,
    )


def one_wheel(folder: Path) -> Wheel:
    wheels = list(folder.glob("*.whl"))
    assert len(wheels) == 1, wheels
    assert NAME.match(wheels[0].name), wheels[0].name
    wheel = Wheel(wheels[0])
    wheel.check_record()
    return wheel


def check_distributions(*paths):
    run([sys.executable, "-m", "twine", "check", "--strict", *paths])
    wheels = [p for p in paths if str(p).endswith(".whl")]
    if wheels:
        proc = run([sys.executable, "-m", "check_wheel_contents", *wheels])
        assert "OK" in proc.stdout, proc.stdout


@pytest.fixture(scope="module")
def project(scratch):
    return copy_example("saxpy", scratch("frontends"))


@pytest.fixture(scope="module")
def frontend_python(toolkit_python, wheelhouse):
    """The session's venv with cudawheel and NVIDIA's CUDA 13 wheels, plus `build` and the
    `cuda-toolkit` meta package (the requirement `get_requires_for_build_wheel` names, which
    `python -m build --no-isolation` checks against the installed distributions; cudawheel's
    hint installs the toolkit that way). Reused rather than made anew: a venv with nvcc costs
    half a minute on CI."""
    run([toolkit_python, "-m", "pip", "install", "-q", "--find-links", wheelhouse, "build==1.6.1",
         "cuda-toolkit[nvcc,cccl,cudart]>=13,<14"], env=clean_env())
    return toolkit_python


def test_python_m_build_isolated_sdist_then_wheel_from_it(project, wheelhouse, tmp_path):
    out = tmp_path / "dist"
    proc = run([sys.executable, "-m", "build", "-o", out, project], env=env_for(wheelhouse))
    assert "Building wheel from sdist" in proc.stdout + proc.stderr
    (sdist,) = out.glob("*.tar.gz")
    assert sdist.name == "saxpy_cu13-0.1.0.tar.gz"
    with tarfile.open(sdist) as tar:
        assert "saxpy_cu13-0.1.0/PKG-INFO" in tar.getnames()
    wheel = one_wheel(out)
    check_distributions(sdist, wheel.path)


def test_uv_build_isolated(project, wheelhouse, tmp_path):
    out = tmp_path / "dist"
    run([uv(), "build", "-o", out, project], env=env_for(wheelhouse))
    (sdist,) = out.glob("*.tar.gz")
    assert sdist.name == "saxpy_cu13-0.1.0.tar.gz"
    check_distributions(sdist, one_wheel(out).path)


def test_pip_wheel_without_isolation(project, frontend_python, wheelhouse, tmp_path):
    run([frontend_python, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w", tmp_path, project],
        env=env_for(wheelhouse))
    check_distributions(one_wheel(tmp_path).path)


def test_python_m_build_without_isolation(project, frontend_python, wheelhouse, tmp_path):
    run([frontend_python, "-m", "build", "--no-isolation", "--wheel", "-o", tmp_path, project],
        env=env_for(wheelhouse))
    check_distributions(one_wheel(tmp_path).path)


def test_uv_build_without_isolation(project, frontend_python, wheelhouse, tmp_path):
    run([uv(), "build", "--no-build-isolation", "--wheel", "--python", frontend_python, "-o", tmp_path, project],
        env=env_for(wheelhouse))
    check_distributions(one_wheel(tmp_path).path)


def test_pip_isolated_beside_a_toolkit_pinned_in_build_system_requires(project, wheelhouse, tmp_path):
    """A framework's toolkit pin in `[build-system].requires` (torch 2.15's
    `cuda-toolkit[cudart,...]==13.2.2`, and a newer CCCL through nvshmem) lands in one prefix of
    pip's build environment; the nvcc cudawheel asks for afterwards lands in another. Two
    defects of that split: CCCL (installed, newer than the pin) is not in nvcc's prefix, and
    nvcc's unpinned runtime dependency comes at the newest release there (13.5 headers beside
    nvcc 13.2: CCCL's `CUDA compiler and CUDA toolkit headers are incompatible`, and the
    header set's "not nvcc's" warning): the runtime headers of nvcc's release, in the first
    prefix, are searched first."""
    src = shutil.copytree(project, tmp_path / "p", ignore=shutil.ignore_patterns("build"))
    pp = src / "pyproject.toml"
    pins = '"cudawheel", "cuda-toolkit[cudart]==13.2.2", "nvidia-cuda-cccl>=13.3"'
    pp.write_text(pp.read_text().replace('requires = ["cudawheel"]', f"requires = [{pins}]", 1))
    out = tmp_path / "w"
    proc = run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w", out, src], env=env_for(wheelhouse),
               check=False)
    log = proc.stdout + proc.stderr
    # The split this is about: CCCL came with `[build-system].requires`, nvcc with the backend's
    # requirements (without CCCL, with the newest runtime: pip installs only what the first
    # prefix lacks, and resolves nvcc's own dependencies afresh).
    first, backend = re.findall(r"Successfully installed (.*)", log)
    assert "nvidia-cuda-cccl-13.3" in first and "nvidia-cuda-runtime-13.2.86" in first, first
    assert "nvidia-cuda-nvcc-13.2" in backend and "nvidia-cuda-cccl" not in backend, backend
    assert re.search(r"nvidia-cuda-runtime-13\.[3-9]", backend), backend
    assert proc.returncode == 0, log[-3000:]
    assert "not nvcc's" not in log, log  # no header of another release beside nvcc
    wheel = one_wheel(out)
    check_distributions(wheel.path)


def test_pip_install_isolated(project, wheelhouse, tmp_path):
    py = make_venv(tmp_path / "v")
    run([py, "-m", "pip", "install", "-q", project], env=env_for(wheelhouse))
    freeze = run([py, "-m", "pip", "list", "--format=freeze"], env=clean_env()).stdout
    assert re.search(r"^saxpy-cu13==0\.1\.0$", freeze, re.M), freeze
    assert re.search(r"^nvidia-cuda-runtime==13\.", freeze, re.M), freeze
    out = run([py, "-c", IMPORT], env=clean_env(), cwd=tmp_path).stdout
    assert "/site-packages/saxpy/_core.abi3.so" in out


def test_uv_pip_install_isolated(project, wheelhouse, tmp_path):
    venv = tmp_path / "uvv"
    env = env_for(wheelhouse)
    run([uv(), "venv", "-q", venv], env=env)
    py = venv / "bin" / "python"
    # uv checks the static `project.name` (saxpy) against the built metadata's Name
    # (saxpy-cu13, `name-suffix`) and refuses a bare path; naming the distribution
    # works. Documented in README ("uv pip install").
    proc = run([uv(), "pip", "install", "-q", "--python", py, project], env=env, check=False)
    assert proc.returncode != 0 and "does not match given name `saxpy`" in proc.stderr, proc.stderr
    run([uv(), "pip", "install", "-q", "--python", py, f"saxpy-cu13 @ {project.as_uri()}"], env=env)
    out = run([py, "-c", IMPORT], env=clean_env(), cwd=tmp_path).stdout
    assert "/site-packages/saxpy/_core.abi3.so" in out


def test_pip_install_editable_without_isolation(project, frontend_python, wheelhouse, tmp_path):
    run([frontend_python, "-m", "pip", "install", "-q", "--no-build-isolation", "-e", project],
        env=env_for(wheelhouse))
    try:
        out = run([frontend_python, "-c", IMPORT], env=clean_env(), cwd=tmp_path).stdout
        # The extension sits next to the sources.
        assert out.strip() == str(project / "saxpy" / "_core.abi3.so")
    finally:  # the venv is shared with other test files
        run([frontend_python, "-m", "pip", "uninstall", "-y", "-q", "saxpy-cu13"], env=clean_env())

"""`python -m cudawheel wheel PROJECT --python PY ...` with interpreters that hold only the binding
library (pybind11), no CUDA toolkit: the toolkit (nvcc, its headers, libcudart) comes from the
environment running the command, the binding library from each interpreter."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import Wheel, clean_env, copy_example, run
from test_size_budget import pyenv_python


def bare_venvs(tmp_path, minors):
    """A venv per CPython minor holding pybind11 and nothing of CUDA."""
    out = {}
    for minor in minors:
        venv_dir = tmp_path / f"venv{minor}"
        run([pyenv_python(minor), "-m", "venv", venv_dir])
        py = venv_dir / "bin/python"
        run([py, "-m", "pip", "install", "-q", "pybind11>=2.12"], env=clean_env())
        # Control on the setup itself: nothing of NVIDIA's toolkit in that interpreter.
        assert not list(venv_dir.glob("lib/python3.*/site-packages/nvidia")), venv_dir
        out[minor] = py
    return out


def build(launcher, project, out, pythons):
    args = [launcher, "-m", "cudawheel", "wheel", project, "-o", out]
    for py in pythons:
        args += ["--python", py]
    # No CUDA_HOME, no nvcc on PATH: the only toolkit is NVIDIA's wheels in the launcher's venv.
    return run(args, env=clean_env(CUDAWHEEL_ARCHS="80"), check=False)


def test_toolkit_from_the_running_environment(toolkit_python, backend_python, tmp_path):
    venvs = bare_venvs(tmp_path, (11, 12))
    project = copy_example("pybind_saxpy", tmp_path)
    proc = build(toolkit_python, project, tmp_path / "out", venvs.values())
    assert proc.returncode == 0, proc.stderr
    printed = [Path(line) for line in proc.stdout.split()]
    assert [p.name.split("-")[2] for p in printed] == ["cp311", "cp312"], printed
    for minor, wheel in zip(venvs, printed):
        assert re.fullmatch(rf"pybind_saxpy_cu13-0\.1\.0-cp3{minor}-cp3{minor}-manylinux_2_\d+_x86_64\.whl",
                            wheel.name), wheel.name
        w = Wheel(wheel)
        (so,) = [n for n in w.names if n.startswith("pybind_saxpy/_core")]
        assert so.endswith(f".cpython-3{minor}-x86_64-linux-gnu.so"), so
        # libcudart came from NVIDIA's runtime wheel of the running environment: required as such.
        assert any(r.startswith("nvidia-cuda-runtime") for r in w.field("Requires-Dist")), w.metadata()

    # Control: run from an environment with no toolkit anywhere, the same build fails as before.
    proc = build(backend_python, project, tmp_path / "out2", [venvs[11]])
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "nvcc for CUDA 13 not found" in proc.stderr, proc.stderr
    assert not (tmp_path / "out2").exists() or list((tmp_path / "out2").iterdir()) == []

"""`python -m cudawheel doctor`: what discovery finds, in a project and outside one,
with nothing installed, with NVIDIA's CUDA 13 wheels, and with a system CUDA 12 next to them."""

from __future__ import annotations

import re
import shutil

from conftest import REPO, clean_env, copy_example, run, toolkit_home


def doctor(py, *args, env=None, cwd=None):
    proc = run([py, "-m", "cudawheel", "doctor", *args], env=env or clean_env(), cwd=cwd)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout


def test_outside_a_project_with_nothing_installed(backend_python, tmp_path):
    out = doctor(backend_python, cwd=tmp_path)
    assert f"Project: none ({tmp_path} has no pyproject.toml)" in out
    # Every system candidate is listed, in discovery order, each saying what is there.
    labels = re.findall(r"^  (CUDACXX|CUDA_HOME|CUDA_PATH|PATH|/usr/local/cuda) ", out, re.M)
    assert labels == ["CUDACXX", "CUDA_HOME", "CUDA_PATH", "PATH", "/usr/local/cuda"], out
    assert re.search(r"^  CUDA_HOME\s+\(not set\) : not found$", out, re.M), out
    assert "A build would use: CUDA 13 from PyPI" in out
    assert "  cuda-toolkit[cccl,cudart,nvcc]>=13,<14" in out
    assert re.search(r"^Host compiler: /\S+/c\+\+ \(.*\d+\.\d+.*; from the default `c\+\+`\)$", out, re.M), out
    # Every catalogue library gets a line; none is here.
    for lib in ["cudart", "cccl", "cublas", "cufft", "nccl", "cudnn", "nvshmem"]:
        assert re.search(rf"^  {lib}\s+not found \(set [A-Z]+_DIR", out, re.M), (lib, out)
    assert "nvidia-cuda-runtime" in re.search(r"^  cudart .*$", out, re.M).group(0)
    assert "Wheel: no project here" in out


def test_a_venv_without_nvcc_tells_isolated_from_here(backend_python, tmp_path):
    """No nvcc here, but an isolated build installs it: doctor must not say that a build fails,
    only that one without isolation in this environment would, and how to fix that."""
    project = copy_example("saxpy", tmp_path)
    out = doctor(backend_python, project)
    assert "a build now would fail" not in out, out
    assert ("Wheel: an isolated build (`pip wheel .`, `pip install .`) installs its build requirements "
            "first (cuda-toolkit[cccl,cudart,nvcc]>=13,<14)") in out, out
    assert "  A `--no-build-isolation` build in this environment would fail:\n    cudawheel: error: nvcc for CUDA 13 not found" in out, out
    assert '  To build here without isolation, first: pip install "cuda-toolkit[cccl,cudart,nvcc]>=13,<14"' in out, out
    assert "  (no CUDA toolkit in this environment: searched the variables" in out, out


def test_in_a_project_with_cuda13_wheels(toolkit_python, tmp_path):
    project = copy_example("saxpy", tmp_path)
    out = doctor(toolkit_python, project)
    assert "Project: saxpy 0.1.0" in out
    m = re.search(r"^  NVIDIA wheel\s+(\S+/nvidia/cu13/bin/nvcc) : CUDA (13\.\d+\.\d+)$", out, re.M)
    assert m, out
    assert f"A build would use: CUDA 13 — nvcc {m.group(2)} (NVIDIA wheel nvidia-cuda-nvcc in " in out
    cudart = re.search(r"^  cudart\s+(\S+) \[libcudart\.so\.13\] provided by nvidia-cuda-runtime (13\.\d+) ", out, re.M)
    assert cudart, out
    assert cudart.group(1).endswith("/nvidia/cu13/lib")
    assert re.search(r"^  cccl\s+\S+/nvidia/cu13/include/cccl \[-\] headers only", out, re.M), out
    assert re.search(r"^  cublas\s+not found", out, re.M), out
    assert "Wheel: saxpy_cu13-0.1.0-cp39-abi3-<platform>.whl" in out
    assert f"  Requires-Dist: nvidia-cuda-runtime>={cudart.group(2)},<14" in out
    # CUDA 13 code loads on any 13.x driver in every mode, so the default is the smallest.
    assert ('  fatbin compression: compress = "size" (--compress-mode=size); its GPU code loads on a driver '
            'for CUDA 13.0+ (the wheel promises 13.0)') in out, out
    # What this environment builds is said apart from what an isolated build would find.
    assert "an isolated build (`pip wheel .`, `pip install .`) discovers again among the build requirements" in out, out


def test_system_cuda12_wins_and_both_are_listed(toolkit_python, tmp_path):
    home = toolkit_home(12)
    project = copy_example("saxpy", tmp_path)
    out = doctor(toolkit_python, project, env=clean_env(CUDA_HOME=home))
    assert re.search(rf"^  CUDA_HOME\s+{re.escape(str(home))}/bin/nvcc : CUDA 12\.4\.\d+$", out, re.M), out
    assert re.search(r"^  NVIDIA wheel\s+\S+ : CUDA 13\.", out, re.M), out
    assert "A build would use: CUDA 12 — nvcc 12.4." in out
    assert "(CUDA_HOME: " in out
    assert "CUDA 12 libraries (catalogue):" in out
    assert "Wheel: saxpy_cu12-0.1.0-cp39-abi3-<platform>.whl" in out
    assert re.search(r"^  Requires-Dist: nvidia-cuda-runtime-cu12>=12\.\d+,<13$", out, re.M), out
    # nvcc 12.4 has no --compress-mode; LZ4 loads on every CUDA 12 driver.
    assert ('  fatbin compression: compress = "speed" (-Xfatbin=-compress-all); its GPU code loads on a driver '
            'for CUDA 12.0+ (the wheel promises 12.0)') in out, out
    # Asking for CUDA 13 from the system toolkit only is reported, not raised.
    out = doctor(toolkit_python, project, "-C", "cuda=13", "-C", "toolkit=system", env=clean_env(CUDA_HOME=home))
    assert "A build would use: nothing that fits:" in out
    assert "cudawheel: error:" in out and "hint:" in out


def test_bad_pyproject_is_reported_not_raised(backend_python, tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\nversion = "1"\n[tool.cudawheel]\ncudaa = 12\n')
    out = doctor(backend_python, tmp_path)
    assert "cannot be read:" in out
    assert "Unknown key `tool.cudawheel.cudaa`" in out and "did you mean `tool.cudawheel.cuda`?" in out
    assert "Wheel: cannot tell until pyproject.toml is fixed" in out


def test_a_wrapped_project_is_described_as_one(backend_python, toolkit_python, tmp_path):
    """Wrap mode: doctor describes the wrapped build (the backend, the environment it gets, the
    repair) instead of a native build that would fail for want of `[[tool.cudawheel.extension]]`
    tables. With nvcc here, the variables are the ones the build would set; without, the folder
    the build will make."""
    project = tmp_path / "wrap-lto"
    shutil.copytree(REPO / "tests/data/wrap-lto", project, ignore=shutil.ignore_patterns("build"))
    out = doctor(toolkit_python, project, "-C", "archs=80;90")
    assert "Wheel: wrap mode: scikit_build_core.build builds the project from its own build files" in out, out
    folder = project / "build/cudawheel/toolkit"
    assert f"  CUDACXX={folder}/bin/nvcc\n  CUDA_HOME={folder}\n" in out, out
    assert "  CUDAARCHS=80-real;90\n" in out and "  TORCH_CUDA_ARCH_LIST=8.0;9.0+PTX\n" in out, out
    assert 'then its wheel is repaired: gets the name suffix "-cu{major}" when it links CUDA' in out, out
    assert "cuda-deps = \"extra\"" in out, out
    assert "tool.cudawheel.extension` is empty" not in out, out
    assert not folder.exists(), "doctor makes no toolkit folder"
    # No nvcc in this environment: the folder the build will make, and why the rest waits.
    bare = doctor(backend_python, project)
    assert "Wheel: wrap mode: scikit_build_core.build" in bare, bare
    assert "the toolkit folder build/cudawheel/toolkit, made when nvcc is installed" in bare, bare

"""The parts of the docs that can be checked against a build: the cibuildwheel configuration of
docs/how-to/cibuildwheel.md resolves as the page says for CUDA 13 and CUDA 12, and the README's
quick start names files that exist. (docs/reference/configuration.md is checked against the code
by cargo test; the site's links, the README's size and the environment reference by
tests/test_docs_site.py.)"""

from __future__ import annotations

import re
import shlex

import tomllib

from conftest import REPO, clean_env, copy_example, run, toolkit_home

CIBW = (REPO / "docs/how-to/cibuildwheel.md").read_text()


def blocks(text, lang):
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.M | re.S)


def cudawheel(py, *args, env):
    return run([py, "-m", "cudawheel", *args], env=env).stdout


def test_cibuildwheel_cuda13_settings(backend_python, tmp_path):
    config = tomllib.loads(blocks(CIBW, "toml")[0])["tool"]["cibuildwheel"]
    assert config["repair-wheel-command"] == ""
    project = copy_example("saxpy", tmp_path)
    # build = cp39 only because the example is abi3 from cp39.
    assert tomllib.loads((project / "pyproject.toml").read_text())["tool"]["cudawheel"]["py-limited-api"] == "cp39"
    assert config["build"] == "cp39-manylinux_x86_64"
    env = clean_env(**config["linux"]["environment"])
    assert cudawheel(backend_python, "requires", project, env=env).split() == ["cuda-toolkit[cccl,cudart,nvcc]>=13,<14"]
    report = cudawheel(backend_python, "doctor", project, env=env)
    assert "A build would use: CUDA 13 from PyPI" in report


def test_cibuildwheel_cuda12_settings(backend_python, tmp_path):
    (sh,) = [b for b in blocks(CIBW, "sh") if "CIBW_ENVIRONMENT_LINUX" in b]
    line = next(ln for ln in sh.splitlines() if ln.startswith("CIBW_ENVIRONMENT_LINUX="))
    settings = dict(item.split("=", 1) for item in shlex.split(shlex.split(line)[0].split("=", 1)[1]))
    assert settings["CUDA_HOME"] == "/usr/local/cuda-12.8"
    assert "cuda-nvcc-12-8" in sh  # the RPMs install to the CUDA_HOME above
    # Here the CUDA 12.4 toolkit of scripts/env/install-cuda.sh stands in for NVIDIA's RPMs.
    settings["CUDA_HOME"] = str(toolkit_home(12))
    project = copy_example("saxpy", tmp_path)
    env = clean_env(**settings)
    assert cudawheel(backend_python, "requires", project, env=env).split() == []
    report = cudawheel(backend_python, "doctor", project, env=env)
    assert "A build would use: CUDA 12 — nvcc 12.4." in report
    assert "Wheel: saxpy_cu12-0.1.0-cp39-abi3-<platform>.whl" in report
    assert re.search(r"^  Requires-Dist: nvidia-cuda-runtime-cu12>=12\.\d+,<13$", report, re.M), report


def test_readme_quick_start_is_three_commands_on_real_files():
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    (block,) = blocks(section, "bash")
    commands = [ln for ln in block.splitlines() if ln.strip()]
    assert len(commands) == 3, commands
    assert (REPO / "scripts/build-backend.sh").exists() and (REPO / "examples/saxpy/pyproject.toml").exists()
    assert "pip wheel --no-deps -w dist examples/saxpy" in commands[1]
    # What step 3 imports is what the example provides.
    assert "runtime_version" in (REPO / "examples/saxpy/saxpy/__init__.py").read_text()

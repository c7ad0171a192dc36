"""Toolkit choice and overrides: a system toolkit found through CUDA_HOME is used
instead of PyPI's; `get_requires_for_build_wheel` asks for NVIDIA's wheels only when needed;
`-C` beats the environment, which beats pyproject.toml; prepared metadata matches the wheel."""

from __future__ import annotations

import json
import re
import sys

from conftest import Wheel, clean_env, copy_example, readelf_dynamic, run

HOOK = (
    "import json, os, sys, cudawheel\n"
    "os.chdir(sys.argv[1])\n"
    "print(json.dumps(getattr(cudawheel, sys.argv[2])(*json.loads(sys.argv[3]))))\n"
)


def hook(py, project, name, *args, env=None):
    proc = run([py, "-c", HOOK, project, name, json.dumps(list(args))], env=env or clean_env())
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_requires_pip_toolkit_when_no_system_cuda(backend_python, tmp_path):
    project = copy_example("saxpy", tmp_path)
    reqs = hook(backend_python, project, "get_requires_for_build_wheel", {})
    assert reqs == ["cuda-toolkit[cccl,cudart,nvcc]>=13,<14"]
    assert hook(backend_python, project, "get_requires_for_build_sdist", {}) == []


def test_requires_nothing_with_a_system_toolkit(backend_python, tmp_path, cu13_home):
    project = copy_example("saxpy", tmp_path)
    env = clean_env(CUDA_HOME=cu13_home)
    assert hook(backend_python, project, "get_requires_for_build_wheel", {}, env=env) == []
    # toolkit = "pip" from a config setting still asks for the wheels.
    assert hook(backend_python, project, "get_requires_for_build_wheel", {"toolkit": "pip"}, env=env)[0].startswith(
        "cuda-toolkit[cccl,cudart,nvcc]")


def test_system_toolkit_through_cuda_home_with_isolation(tmp_path, wheelhouse, cu13_home):
    project = copy_example("saxpy", tmp_path)
    out = tmp_path / "out"
    proc = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", out, project,
                "-C", "archs=80;90", "-C", "ptx=none"],
               env=clean_env(PIP_FIND_LINKS=wheelhouse, CUDA_HOME=cu13_home))
    log = proc.stdout + proc.stderr
    assert f"from CUDA_HOME: {cu13_home}/bin/nvcc" in log
    # No NVIDIA wheel was installed into the build environment.
    assert "nvidia-cuda-nvcc" not in log.split("Getting requirements to build wheel", 1)[1].split("Preparing metadata")[0]
    wheel = Wheel(next(out.glob("*.whl")))
    reqs = wheel.field("Requires-Dist")
    assert len(reqs) == 1 and re.fullmatch(r"nvidia-cuda-runtime>=13\.\d+,<14", reqs[0]), reqs
    so = wheel.extract("saxpy/_core.abi3.so", tmp_path / "x")
    dyn = readelf_dynamic(so)
    assert dyn["RPATH"] == ["$ORIGIN/../nvidia/cu13/lib"] and "libcudart.so.13" in dyn["NEEDED"]
    assert str(cu13_home).encode() not in so.read_bytes()
    # -C archs=80;90 -C ptx=none: SASS for exactly those two, no PTX.
    listing = run([f"{cu13_home}/bin/cuobjdump", "--list-elf", "--list-ptx", so], check=False).stdout
    assert "sm_80" in listing and "sm_90" in listing and "sm_75" not in listing
    assert ".ptx" not in listing


def test_precedence_setting_over_env_over_pyproject(toolkit_python, tmp_path):
    project = copy_example("saxpy", tmp_path)
    text = (project / "pyproject.toml").read_text().replace(
        '[tool.cudawheel]\n', '[tool.cudawheel]\nname-suffix = "-pyproject{major}"\n')
    (project / "pyproject.toml").write_text(text)
    md = tmp_path / "md"
    md.mkdir()
    env = clean_env(CUDAWHEEL_NAME_SUFFIX="-env{major}")
    assert hook(toolkit_python, project, "prepare_metadata_for_build_wheel", str(md), {}, env=env) == \
        "saxpy_env13-0.1.0.dist-info"
    assert hook(toolkit_python, project, "prepare_metadata_for_build_wheel", str(md),
                {"cudawheel.name-suffix": "-cli{major}"}, env=env) == "saxpy_cli13-0.1.0.dist-info"
    assert hook(toolkit_python, project, "prepare_metadata_for_build_wheel", str(md), {}) == \
        "saxpy_pyproject13-0.1.0.dist-info"
    # CUDAWHEEL_CUDA=13 and -C cuda=13 pick the same toolkit as auto here.
    assert hook(toolkit_python, project, "prepare_metadata_for_build_wheel", str(md), {"cuda": "13"},
                env=clean_env(CUDAWHEEL_CUDA="13")) == "saxpy_pyproject13-0.1.0.dist-info"


def test_prepared_metadata_equals_the_wheels(toolkit_python, tmp_path):
    project = copy_example("saxpy", tmp_path)
    md = tmp_path / "md"
    md.mkdir()
    settings = {"archs": "90", "cuda-deps": "extra"}
    name = hook(toolkit_python, project, "prepare_metadata_for_build_wheel", str(md), settings)
    out = tmp_path / "out"
    wheel_name = hook(toolkit_python, project, "build_wheel", str(out), settings, str(md / name))
    wheel = Wheel(out / wheel_name)
    assert wheel.read(f"{name}/METADATA") == (md / name / "METADATA").read_bytes()
    # cuda-deps = "extra": the runtime is only under the `cuda` extra.
    reqs = wheel.field("Requires-Dist")
    assert len(reqs) == 1 and reqs[0].endswith('; extra == "cuda"'), reqs
    assert wheel.field("Provides-Extra") == ["cuda"]

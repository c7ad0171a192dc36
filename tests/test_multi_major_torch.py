"""`cuda = ["12", "13"]` with `torch-stable-abi`: examples/torch_stable (a CPU and a CUDA kernel on
torch's stable ABI) built once, in one environment (the session's torch venv: PyPI's newest torch,
built for CUDA 13, and NVIDIA's CUDA 13 nvcc), its CUDA 12 build from the CUDA 12.4 reference
toolkit (`[tool.cudawheel.toolkits]`) against the same torch headers. One wheel under the project's
own name, requiring one torch range, `torch>=2.10`: PyPI's torch 2.10 is built for CUDA 12.8, 2.11
and later for CUDA 13. Installed beside torch 2.10 and beside the build torch, each process loads
the build of its torch's CUDA (read back from /proc/self/maps), runs the CPU op against eager
torch, and finds the CUDA kernel registered. Controls: a pinned torch extension of two majors is
refused (its builds need two torch minors), and without the stable ABI the CUDA 12 build is
refused against a CUDA 13 torch."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_torch_stable import CHECK

from conftest import Wheel, build_wheel, clean_env, copy_example, new_venv, readelf_dynamic, run, toolkit_home

# The PyPI torch built for CUDA 12 that the stable ABI's floor (2.10) admits.
CU12_TORCH = "2.10.0"

MAPS = """
import torch, torch_axpy
maps = open("/proc/self/maps").read()
print("torch-cuda", torch.version.cuda)
print("loaded", *sorted({m for m in ("cudawheel-cu12", "cudawheel-cu13") if "_C." + m in maps}))
print("cudart", *sorted({m for m in ("libcudart.so.12", "libcudart.so.13") if m in maps}))
"""


def several_majors(work: Path, *, stable: bool = True) -> Path:
    project = copy_example("torch_stable", work)
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text().replace("[tool.cudawheel]\n", '[tool.cudawheel]\ncuda = ["12", "13"]\n', 1)
    if not stable:
        text = text.replace('torch-stable-abi = "2.10"\n', "")
    text += f'\n[tool.cudawheel.toolkits]\n"12" = "{toolkit_home(12)}"\n'
    pyproject.write_text(text)
    return project


@pytest.fixture(scope="module")
def built(scratch, torch_python) -> tuple[Wheel, str]:
    work = scratch("multi-major-torch")
    whl, proc = build_wheel(torch_python, several_majors(work), work / "out", "archs=90-real", timeout=2400)
    return Wheel(whl), proc.stderr


def test_one_wheel_one_torch_range_both_builds(built, torch_python, tmp_path):
    wheel, log = built
    wheel.check_record()
    assert re.fullmatch(r"torch_axpy-0\.1\.0-cp310-abi3-manylinux_2_\d+_x86_64\.whl", wheel.path.name), wheel.path
    # The CUDA 12 build against the CUDA 13 torch is said, not refused.
    assert "the CUDA 12 build of the stable-ABI extension uses its headers only" in log, log[-3000:]
    requires = wheel.field("Requires-Dist")
    assert [r for r in requires if r.startswith("torch")] == ["torch>=2.10"], requires
    assert not [r for r in requires if r.startswith("nvidia-")], requires  # torch brings its CUDA
    for major in (12, 13):
        dyn = readelf_dynamic(wheel.extract(f"torch_axpy/_C.cudawheel-cu{major}.abi3.so", tmp_path / str(major)))
        assert {"libtorch_cpu.so", "libtorch_cuda.so", f"libcudart.so.{major}"} <= set(dyn["NEEDED"]), dyn
        assert "libtorch_python.so" not in dyn["NEEDED"] and "libc10.so" not in dyn["NEEDED"], dyn
    select = wheel.read("torch_axpy/_cuda_select.py").decode()
    assert select.index("\nimport torch") < select.index("\ndef _from_torch"), select
    out = run([torch_python, "-m", "cudawheel", "audit", wheel.path]).stdout
    for major in (12, 13):
        assert f"torch ABI torch_axpy/_C.cudawheel-cu{major}.abi3.so: stable ABI: all" in out, out


@pytest.mark.parametrize("torch_version", [CU12_TORCH, "build"])
def test_each_torch_loads_the_build_of_its_cuda(built, torch_facts, wheelhouse, tmp_path, torch_version):
    wheel, _ = built
    pin = torch_facts["version"].split("+")[0] if torch_version == "build" else torch_version
    py = new_venv(tmp_path / "v", wheelhouse, str(wheel.path), f"torch=={pin}", "numpy", "cudawheel")
    out = run([py, "-c", CHECK], cwd=tmp_path, env=clean_env()).stdout
    assert re.search(rf"torch {re.escape(pin)}\+cu1[23]", out) and "CPU True CUDA True XLA False" in out, out
    assert "kernel check: axpy_cpu" in out, out
    maps = dict(line.split(" ", 1) for line in run([py, "-c", MAPS], cwd=tmp_path, env=clean_env()).stdout.splitlines())
    major = maps["torch-cuda"].split(".")[0]
    assert major == ("12" if torch_version == CU12_TORCH else "13"), maps
    # Only the build of torch's CUDA is loaded, with torch's own runtime: one libcudart.
    assert maps["loaded"] == f"cudawheel-cu{major}" and maps["cudart"] == f"libcudart.so.{major}", maps
    check = run([py, "-m", "cudawheel", "check", "torch_axpy"], cwd=tmp_path, env=clean_env()).stdout
    assert f"this interpreter loads the CUDA {major} build: torch {pin}" in check, check


def test_pinned_extensions_of_two_majors_are_refused(scratch, torch_python):
    """Controls: without `torch-stable-abi` the CUDA 12 build needs a CUDA 12 torch, which the
    build's torch is not (refused before anything compiles, naming both)."""
    work = scratch("multi-major-torch-pinned")
    _, proc = build_wheel(torch_python, several_majors(work, stable=False), work / "out", "archs=90-real",
                          check=False, timeout=1200)
    assert proc.returncode != 0, proc.stderr[-2000:]
    assert re.search(r"nvcc 12\.4\.\d+ \(CUDA 12\) does not match torch \S+, which was built for CUDA 13",
                     proc.stderr), proc.stderr[-2000:]

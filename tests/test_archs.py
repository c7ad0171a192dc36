"""Issue 13: GPU architectures as a model. Spellings, precedence and per-target lists reach
nvcc's exact `-gencode` flags; what a wheel carries is read back from its fatbins and equals
what cuobjdump reports."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import Wheel, clean_env, copy_example, run


def cuobjdump(home: Path, elf: Path) -> tuple[set[str], set[str]]:
    """(SASS, PTX) archs as `cuobjdump --list-elf --list-ptx` names them."""
    out = run([home / "bin/cuobjdump", "--list-elf", "--list-ptx", elf], check=False).stdout
    sass = set(re.findall(r"^ELF file .*\.(sm_\w+)\.cubin$", out, re.M))
    ptx = set(re.findall(r"^PTX file .*\.(sm_\w+)\.ptx$", out, re.M))
    return sass, {p.replace("sm_", "compute_") for p in ptx}


@pytest.fixture(scope="module")
def calc(tmp_path_factory, toolkit_python, cu13_home):
    """shared_calc with the shared library's own `archs` (family 100f, arch-specific 90a) and
    the top level from PyTorch's TORCH_CUDA_ARCH_LIST (for the extension, which has no .cu:
    its archs only show in the plan)."""
    work = tmp_path_factory.mktemp("archs")
    project = copy_example("shared_calc", work)
    text = (project / "pyproject.toml").read_text()
    text = text.replace('destination = "shared_calc/lib"',
                        'destination = "shared_calc/lib"\narchs = "100f-real;9.0a;12.0+PTX"')
    (project / "pyproject.toml").write_text(text)
    proc = run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", work / "out", "-C", "verbose=true"],
               env=clean_env(TORCH_CUDA_ARCH_LIST="8.0 8.6+PTX"))
    return Wheel(Path(proc.stdout.strip())), proc.stderr, work


def test_target_archs_reach_nvcc_exactly(calc):
    _, log, _ = calc
    cmd = next(line for line in log.splitlines() if "-gencode" in line and "calc.cu" in line)
    assert re.findall(r"-gencode (\S+)", cmd) == [
        "arch=compute_100f,code=sm_100f",
        "arch=compute_90a,code=sm_90a",
        "arch=compute_120,code=sm_120",
        "arch=compute_120,code=compute_120",
    ], cmd


def test_pytorch_list_from_the_environment(toolkit_python, tmp_path):
    project = copy_example("saxpy", tmp_path)
    proc = run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "out", "-C", "verbose=true"],
               env=clean_env(TORCH_CUDA_ARCH_LIST="8.0;8.6+PTX"))
    cmd = next(line for line in proc.stderr.splitlines() if "-gencode" in line and "saxpy.cu" in line)
    assert re.findall(r"-gencode (\S+)", cmd) == [
        "arch=compute_80,code=sm_80",
        "arch=compute_86,code=sm_86",
        "arch=compute_86,code=compute_86",
    ], cmd

"""`bindings = "torch"`. examples/torch_muladd built with and without build
isolation against PyPI's torch (CUDA 13), checked by what the wheel holds (NEEDED, RPATH,
Requires-Dist, tag, GPU code from TORCH_CUDA_ARCH_LIST) and by running it in a fresh venv
(results, `torch.library.opcheck`, the CUDA kernel in torch's dispatcher). Plus the CUDA
major mismatch (a CUDA 12.4 toolkit against CUDA 13 torch).

torch with its CUDA wheels is several GB: every venv here comes from uv's cache (CACHE/uv,
hard links), so only the first run on a machine downloads them."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from conftest import Wheel, clean_env, copy_example, new_venv, readelf_dynamic, run, toolkit_home, uv, uv_env


@pytest.fixture(scope="module")
def isolated(scratch, wheelhouse) -> tuple[Wheel, str]:
    """`uv build` with build isolation: torch, nvcc and cudawheel come into a fresh build
    environment; archs from PyTorch's TORCH_CUDA_ARCH_LIST."""
    work = scratch("torch-isolated")
    project = copy_example("torch_muladd", work)
    proc = run([uv(), "build", "--wheel", "-o", work / "out", project],
               env=uv_env(wheelhouse, TORCH_CUDA_ARCH_LIST="9.0+PTX"), timeout=2400)
    (whl,) = (work / "out").glob("*.whl")
    return Wheel(whl), proc.stderr


@pytest.fixture(scope="module")
def not_isolated(scratch, torch_python, cu13_home) -> tuple[Wheel, str]:
    """`python -m cudawheel wheel` in the venv that has torch (as `--no-build-isolation`), with
    a system CUDA 13 toolkit (the project's installer: newer than torch's 13.2) whose cudart
    is chosen through CUDART_DIR: nvcc's minor differs from torch's and the runtime found is
    newer than torch's pin."""
    work = scratch("torch-env")
    project = copy_example("torch_muladd", work)
    proc = run([torch_python, "-m", "cudawheel", "wheel", project, "-o", work / "out", "-C", "archs=80-real"],
               env=clean_env(CUDA_HOME=cu13_home, CUDART_DIR=cu13_home), timeout=2400)
    return Wheel(Path(proc.stdout.strip())), proc.stderr


def check_wheel(wheel: Wheel, facts: dict, work: Path) -> dict:
    """What every torch_muladd wheel must be; returns the extension's dynamic section."""
    wheel.check_record()
    assert re.fullmatch(r"torch_muladd_cu13-0\.1\.0-cp310-abi3-manylinux_2_\d+_x86_64\.whl", wheel.path.name)
    x, y = facts["minor"]
    requires = wheel.field("Requires-Dist")
    assert f"torch>={x}.{y},<{x}.{y + 1}" in requires, requires
    cuda_major, cuda_minor = facts["cuda"].split(".")
    # The CUDA runtime torch pins (13.2.x for torch 2.15) satisfies the wheel's requirement.
    runtime = [r for r in requires if r.startswith("nvidia-cuda-runtime")]
    assert runtime == [f"nvidia-cuda-runtime>={cuda_major}.{cuda_minor},<{int(cuda_major) + 1}"], requires
    so = wheel.extract("torch_muladd/_C.abi3.so", work)
    dyn = readelf_dynamic(so)
    for lib in ("libc10.so", "libtorch.so", "libtorch_cpu.so", "libc10_cuda.so", "libtorch_cuda.so",
                "libcudart.so.13"):
        assert lib in dyn["NEEDED"], dyn
    # py-limited-api: libtorch_python uses more than the limited API.
    assert "libtorch_python.so" not in dyn["NEEDED"], dyn
    assert dyn["RPATH"] == ["$ORIGIN/../nvidia/cu13/lib:$ORIGIN/../torch/lib"], dyn
    assert dyn["RUNPATH"] == []
    helper = wheel.read("torch_muladd/_cuda_libs.py").decode()
    assert helper.index("\nimport torch") < helper.index("\nimport ctypes"), helper
    assert "libc10" not in helper and "libcudart.so.13" in helper
    return dyn


def test_isolated_build(isolated, torch_facts, tmp_path):
    wheel, log = isolated
    check_wheel(wheel, torch_facts, tmp_path)
    # TORCH_CUDA_ARCH_LIST="9.0+PTX": SASS and PTX of sm_90 only (the default would be 7 archs).
    from test_archs import cuobjdump
    sass, ptx = cuobjdump(toolkit_home(13), wheel.extract("torch_muladd/_C.abi3.so", tmp_path / "x"))
    assert sass == {"sm_90"} and ptx == {"compute_90"}, (sass, ptx)


def test_build_without_isolation(not_isolated, isolated, torch_facts, cu13_home, tmp_path):
    wheel, log = not_isolated
    # Built with the toolkit's nvcc and cudart, yet the wheel asks only for the runtime torch pins.
    dyn = check_wheel(wheel, torch_facts, tmp_path)
    nvcc = re.search(r"release (\d+\.\d+)", run([cu13_home / "bin/nvcc", "--version"]).stdout).group(1)
    if nvcc != torch_facts["cuda"]:
        assert f"warning: nvcc is CUDA {nvcc}, torch {torch_facts['version']} was built with CUDA " \
               f"{torch_facts['cuda']}" in log, log
        assert f"cudart was found in CUDART_DIR ({nvcc})" in log, log
        assert "installed with torch: the wheel requires nvidia-cuda-runtime>=" in log, log
    iso = readelf_dynamic(isolated[0].extract("torch_muladd/_C.abi3.so", tmp_path / "iso"))
    assert dyn["NEEDED"] == iso["NEEDED"]
    assert wheel.field("Requires-Dist") == isolated[0].field("Requires-Dist")


CHECK = """
import torch, torch_muladd
from torch_muladd import muladd
torch.manual_seed(0)
a = torch.randn(1001, requires_grad=True)
b = torch.randn(1001, requires_grad=True)
out = muladd(a, b, 0.5)
torch.testing.assert_close(out, a * b + 0.5, rtol=0, atol=1e-6)
out.sum().backward()
torch.testing.assert_close(a.grad, b.detach())
torch.testing.assert_close(b.grad, a.detach())
op = torch.ops.torch_muladd.muladd.default
for args in [(torch.randn(8), torch.randn(8), 2.0),
             (torch.randn(3, 4, requires_grad=True), torch.randn(3, 4, requires_grad=True), -1.5),
             (torch.randn(2, 5), torch.randn(2, 5, requires_grad=True), 0.0)]:
    torch.library.opcheck(op, args)
has = torch._C._dispatch_has_kernel_for_dispatch_key
print("CPU", has("torch_muladd::muladd", "CPU"), "CUDA", has("torch_muladd::muladd", "CUDA"),
      "CUDA-backward", has("torch_muladd::muladd_backward", "CUDA"), "XLA", has("torch_muladd::muladd", "XLA"))
print(torch_muladd._C.__file__)
"""


def test_wheel_runs_in_a_fresh_venv(isolated, wheelhouse, tmp_path):
    """A fresh `uv pip install` of the wheel resolves torch and the NVIDIA wheels from the
    index (the wheel's pins and torch's `==` pins agree) and the operators work on the CPU."""
    wheel, _ = isolated
    py = new_venv(tmp_path / "v", wheelhouse, str(wheel.path), "numpy")
    out = run([py, "-c", CHECK], cwd=tmp_path).stdout
    # The CUDA kernels are registered for the CUDA dispatch key; XLA is the control (none).
    assert "CPU True CUDA True CUDA-backward True XLA False" in out, out
    assert str(tmp_path / "v") in out


def test_cuda_major_mismatch(torch_python, torch_facts, tmp_path):
    """A CUDA 12.4 toolkit against PyPI's CUDA 13 torch: one clear error naming both."""
    home = toolkit_home(12)
    project = copy_example("torch_muladd", tmp_path)
    proc = subprocess.run([str(torch_python), "-m", "cudawheel", "wheel", str(project), "-o", str(tmp_path / "out"),
                           "-C", "archs=80", "-C", "toolkit=system", "-C", "cuda=12"],
                          env=clean_env(CUDA_HOME=home), capture_output=True, text=True, timeout=600)
    err = proc.stderr
    assert proc.returncode == 1, err
    assert "Traceback" not in err and "panicked" not in err and err.count("cudawheel: error:") == 1, err
    assert re.search(r"nvcc 12\.4\.\d+ \(CUDA 12\) does not match torch \S+, which was built for CUDA "
                     + re.escape(torch_facts["cuda"]), err), err
    assert "hint: use a CUDA 13 toolkit" in err, err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())

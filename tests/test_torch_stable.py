"""`torch-stable-abi`: examples/torch_stable (written against torch/csrc/stable and
torch/headeronly, a CPU and a CUDA kernel) built once against PyPI's newest torch, then
installed in fresh venvs next to the oldest torch of its CUDA major and the build torch, its
CPU op checked against eager torch, its CUDA kernel found under the CUDA dispatch key. Controls:
the same project without `torch-stable-abi` (plus one planted `c10::` call) is pinned to one
torch minor, refuses an older torch and is named pinned by `audit`; with `torch-stable-abi` the
planted call fails the build naming the symbol and its object; a floor above the build torch is
refused; `manylinux = "2_28"` (zig) builds it.

torch releases are several GB each: every venv comes from uv's cache (CACHE/uv), and only one
release besides the build torch is installed here (2.11, the first PyPI torch built for CUDA
13, with CUDA 13.0). The wider matrix is scripts/bench/torch-stable-matrix.sh."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import (
    TORCH_REQS,
    ZIG_REQUIREMENT,
    Wheel,
    build_wheel,
    copy_example,
    new_venv,
    readelf_dynamic,
    run,
    toolkit_home,
    uv,
    uv_env,
    zig_env,
)

OLDEST_CU13_TORCH = "2.11.0"

CHECK = """
import torch, torch_axpy
torch.manual_seed(0)
x, y = torch.randn(1001), torch.randn(1001)
torch.testing.assert_close(torch_axpy.axpy(x, y, 0.5), 0.5 * x + y, rtol=0, atol=1e-6)
torch.testing.assert_close(torch_axpy.axpy(x[::2], y[::2], -2.0), -2.0 * x[::2] + y[::2], rtol=0, atol=1e-5)
try:
    torch.ops.torch_axpy.axpy.default(x, torch.randn(3), 1.0)
except RuntimeError as e:
    print("kernel check:", str(e).splitlines()[0])
has = torch._C._dispatch_has_kernel_for_dispatch_key
print("torch", torch.__version__, "CPU", has("torch_axpy::axpy", "CPU"), "CUDA", has("torch_axpy::axpy", "CUDA"),
      "XLA", has("torch_axpy::axpy", "XLA"))
"""

PLANTED = """
// Planted: a call into torch's C++ API, outside the stable ABI.
namespace c10::detail {
[[noreturn]] void torchCheckFail(const char* func, const char* file, uint32_t line, const char* msg);
}
extern "C" void planted_check(int ok) {
  if (!ok) c10::detail::torchCheckFail("planted", __FILE__, __LINE__, "planted");
}
"""


def variant(work: Path, *, stable: bool, planted: bool, cpu_only: bool) -> Path:
    """examples/torch_stable, edited: without `torch-stable-abi`, with the planted call, or
    with the C++ sources only (a quicker build where the CUDA kernel is not the point)."""
    project = copy_example("torch_stable", work)
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text()
    if not stable:
        text = text.replace('torch-stable-abi = "2.10"\n', "")
    if cpu_only:
        text = text.replace('sources = ["csrc/*.cpp", "csrc/*.cu"]', 'sources = ["csrc/*.cpp"]')
    pyproject.write_text(text)
    if planted:
        with open(project / "csrc/axpy.cpp", "a") as f:
            f.write(PLANTED)
    return project


def build(python, project: Path, out: Path, *args, check=True, env=None):
    return build_wheel(python, project, out, "archs=90-real", args=args, env=env, timeout=2400, check=check)[1]


@pytest.fixture(scope="module")
def stable(scratch, torch_python) -> tuple[Wheel, str]:
    """The stable-ABI wheel, built once with the newest torch (the session's torch venv)."""
    work = scratch("torch-stable")
    proc = build(torch_python, copy_example("torch_stable", work), work / "out")
    return Wheel(Path(proc.stdout.strip())), proc.stderr


def test_metadata_tag_and_libraries(stable, torch_python, tmp_path):
    wheel, _ = stable
    wheel.check_record()
    # abi3 with the oldest Python of torch 2.10; one wheel for every torch from its floor on.
    assert re.fullmatch(r"torch_axpy_cu13-0\.1\.0-cp310-abi3-manylinux_2_\d+_x86_64\.whl", wheel.path.name)
    requires = wheel.field("Requires-Dist")
    # The project's `torch>=2.0` and the derived floor in one specifier; CUDA 13: from 2.11 on
    # (PyPI's first torch built for CUDA 13), no upper bound.
    assert [r for r in requires if r.startswith("torch")] == ["torch>=2.11"], requires
    # The NVIDIA floor fits torch 2.11's pins (CUDA 13.0), not the build torch's 13.2.
    assert "nvidia-cuda-runtime>=13.0,<14" in requires, requires
    dyn = readelf_dynamic(wheel.extract("torch_axpy/_C.abi3.so", tmp_path))
    assert {"libtorch_cpu.so", "libtorch_cuda.so", "libcudart.so.13"} <= set(dyn["NEEDED"]), dyn
    for pinned_only in ("libtorch_python.so", "libc10.so", "libc10_cuda.so", "libtorch.so"):
        assert pinned_only not in dyn["NEEDED"], dyn
    out = run([torch_python, "-m", "cudawheel", "audit", wheel.path]).stdout
    assert "torch ABI torch_axpy/_C.abi3.so: stable ABI: all" in out, out


@pytest.mark.parametrize("torch_version", [OLDEST_CU13_TORCH, "build"])
def test_runs_beside_several_torch_releases(stable, torch_facts, wheelhouse, tmp_path, torch_version):
    """A fresh venv resolves the wheel together with that torch (its NVIDIA pins and the
    wheel's floors agree), the CPU op matches eager torch, the CUDA kernel is registered."""
    wheel, _ = stable
    pin = torch_facts["version"].split("+")[0] if torch_version == "build" else torch_version
    py = new_venv(tmp_path / "v", wheelhouse, str(wheel.path), f"torch=={pin}", "numpy")
    out = run([py, "-c", CHECK], cwd=tmp_path).stdout
    assert f"torch {pin}+cu13" in out, out
    assert "CPU True CUDA True XLA False" in out, out
    # The kernel's own check comes back as a Python error through torch's stable ABI.
    assert "kernel check: axpy_cpu" in out and "x and y must have the same shape" in out, out


def test_pinned_control_and_the_audit(torch_python, torch_facts, wheelhouse, tmp_path):
    """Without `torch-stable-abi`: pinned to the build torch's minor, refused beside 2.11, and
    `audit` names the symbol that pins it; with it, the same call fails the build."""
    project = variant(tmp_path / "pinned", stable=False, planted=True, cpu_only=True)
    wheel = Wheel(Path(build(torch_python, project, tmp_path / "out-pinned").stdout.strip()))
    x, y = torch_facts["minor"]
    assert f"torch>={x}.{y},<{x}.{y + 1}" in wheel.field("Requires-Dist")
    assert re.search(r"-cp\d+-cp\d+-", wheel.path.name), wheel.path.name
    out = run([torch_python, "-m", "cudawheel", "audit", wheel.path]).stdout
    assert re.search(r"pinned to one torch minor: 1 of its imports are torch's C\+\+ API .*"
                     r"c10::detail::torchCheckFail\(char const\*, char const\*, unsigned int, char const\*\)", out), out
    refused = run([uv(), "pip", "install", "--dry-run", "-p", torch_python, wheel.path, f"torch=={OLDEST_CU13_TORCH}"],
                  env=uv_env(wheelhouse), check=False)
    assert refused.returncode != 0 and f"torch=={OLDEST_CU13_TORCH}" in refused.stderr, refused.stderr

    project = variant(tmp_path / "planted", stable=True, planted=True, cpu_only=True)
    proc = build(torch_python, project, tmp_path / "out-planted", check=False)
    err = proc.stderr
    assert proc.returncode == 1 and "Traceback" not in err and err.count("cudawheel: error:") == 1, err
    assert "torch_axpy/_C.abi3.so (`tool.cudawheel.extension[0]`) is built for torch's stable ABI" in err, err
    assert ("c10::detail::torchCheckFail(char const*, char const*, unsigned int, char const*) "
            "(_ZN3c106detail14torchCheckFailEPKcS2_jS2_), used by build/cudawheel/obj/torch_axpy._C/csrc__axpy.cpp.o") in err, err
    assert "hint: write it against the stable API" in err, err
    assert not list((tmp_path / "out-planted").glob("*.whl"))


def test_a_floor_above_the_build_torch_is_refused(torch_python, torch_facts, tmp_path):
    x, y = torch_facts["minor"]
    project = variant(tmp_path, stable=True, planted=False, cpu_only=True)
    proc = build(torch_python, project, tmp_path / "out", "-C", f"torch-stable-abi={x}.{y + 1}", check=False)
    err = proc.stderr
    assert proc.returncode == 1 and err.count("cudawheel: error:") == 1 and "Traceback" not in err, err
    assert (f"`tool.cudawheel.extension[0].torch-stable-abi` = \"{x}.{y + 1}\" is newer than the torch that builds "
            f"it, {torch_facts['version']}") in err, err
    assert f"hint: build with torch {x}.{y + 1} or later" in err, err
    assert "[1/" not in err, "nothing may be compiled"


def test_portable_with_zig(wheelhouse, tmp_path):
    """`manylinux = "2_28"`: zig builds the stable-ABI extension (a pinned one is refused);
    the tag is torch's own, manylinux_2_28. The toolkit is the project installer's CUDA 13
    (an nvcc that accepts libc++)."""
    py = new_venv(tmp_path / "zv", wheelhouse, "cudawheel", *TORCH_REQS, ZIG_REQUIREMENT)
    project = variant(tmp_path, stable=True, planted=False, cpu_only=False)
    env = zig_env(CUDA_HOME=toolkit_home(13))
    proc = build(py, project, tmp_path / "out", "-C", "manylinux=2_28", "-C", "toolkit=system", env=env)
    wheel = Wheel(Path(proc.stdout.strip()))
    assert wheel.path.name.endswith("-cp310-abi3-manylinux_2_28_x86_64.whl"), wheel.path.name
    assert "torch>=2.11" in wheel.field("Requires-Dist")
    assert "a C++ exception leaving a kernel (a failed STD_TORCH_CHECK) aborts the process" in proc.stderr
    dyn = readelf_dynamic(wheel.extract("torch_axpy/_C.abi3.so", tmp_path / "x"))
    assert "libstdc++.so.6" not in dyn["NEEDED"], dyn
    # Control: the same project without `torch-stable-abi` is refused in zig mode.
    pinned = variant(tmp_path / "pinned", stable=False, planted=False, cpu_only=True)
    proc = build(py, pinned, tmp_path / "out2", "-C", "manylinux=2_28", "-C", "toolkit=system", env=env, check=False)
    assert proc.returncode == 1 and "exclude each other" in proc.stderr, proc.stderr

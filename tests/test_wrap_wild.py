"""Wrap mode on a project shaped like the CMake projects that failed in the wild
(tests/data/wrap-lto): a CUDA module built with separable compilation and device LTO (nvlink
loads libnvvm from the toolkit folder), a CPU-only module beside it, NVIDIA's runtime only under
an extra. Built once by `pip wheel` (the newest pip, build isolation), as a new user would:

- the build runs once under pip (pip calls `prepare_metadata_for_build_wheel`, then hands
  `build_wheel` the `.dist-info` folder itself);
- the device-LTO link works through the toolkit folder made from NVIDIA's wheels;
- the CPU-only module gets no loader and imports with no NVIDIA wheel installed, while the CUDA
  module's import names the extra as every pip installs it (`[cuda-pip]`).

The GPU part `wrap_lto` (scripts/gpu-checks/wrap_lto.sh) runs the kernel on the GPU.
"""

from __future__ import annotations

import re
import shutil

import pytest
from test_wrap import DATA, gpu_code

from conftest import Wheel, clean_env, make_venv, readelf_dynamic, run, toolkit_home, uv, uv_env


@pytest.fixture(scope="module")
def wrap_lto(scratch, wheelhouse):
    """tests/data/wrap-lto built by `pip wheel -v` with the newest pip: (wheel, pip's output)."""
    work = scratch("wrap-lto")
    py = make_venv(work / "v")
    run([py, "-m", "pip", "install", "-q", "-U", "pip"], env=clean_env())
    project = shutil.copytree(DATA / "wrap-lto", work / "p")
    # `build.verbose` is scikit-build-core's own setting, passed on to it: the compile lines show.
    proc = run([py, "-m", "pip", "wheel", "-v", "--no-deps", "-w", work / "out", project,
                "--config-settings", "archs=90", "--config-settings", "build.verbose=true"],
               env=clean_env(PIP_FIND_LINKS=wheelhouse), timeout=2400)
    (whl,) = (work / "out").glob("*.whl")
    return Wheel(whl), proc.stdout + proc.stderr


def test_pip_runs_the_wrapped_build_once(wrap_lto):
    _, log = wrap_lto
    # cudawheel's status line as each wrapped build starts, and CMake's configure.
    assert len(re.findall(r"wrapping scikit_build_core\.build: CUDA", log)) == 1, log[-4000:]
    assert len(re.findall(r"The CUDA compiler identification is NVIDIA", log)) == 1, log[-4000:]


def test_device_lto_links_through_the_toolkit_folder(wrap_lto, backend_python, tmp_path):
    wheel, log = wrap_lto
    assert re.fullmatch(r"wrap_lto_cu13-0\.1\.0-cp311-cp311-manylinux_2_\d+_x86_64\.whl", wheel.path.name)
    # CMake's interprocedural optimisation made it a device-LTO build (nvcc -dlto).
    assert "-dlto" in log, log[-4000:]
    (gpu,) = [n for n in wheel.names if re.fullmatch(r"wrap_lto/_gpu\.cudawheel-ext.*\.so", n)]
    dyn = readelf_dynamic(wheel.extract(gpu, tmp_path))
    assert "libcudart.so.13" in dyn["NEEDED"] and dyn["RPATH"] == ["$ORIGIN/../nvidia/cu13/lib"], dyn
    code = gpu_code(backend_python, wheel.path)["gpu_code"]
    assert [c["sass"] for p, c in code.items() if "_gpu" in p] == [["sm_90"]], code
    # The device link kept SASS alone, and the build says so against `archs=90` (SASS and PTX).
    assert "the wheel carries SASS sm_90: the build made no PTX for compute_90" in log, log[-3000:]


def test_the_cpu_module_needs_no_nvidia_wheel(wrap_lto, tmp_path):
    wheel, _ = wrap_lto
    # The CPU-only module is left as it was built: no loader in front of it.
    assert not [n for n in wheel.names if n.startswith("wrap_lto/_cpu") and n.endswith(".py")], wheel.names
    assert [n for n in wheel.names if n == "wrap_lto/_gpu.py"], wheel.names
    requires = wheel.field("Requires-Dist")
    assert requires and all(r.endswith('; extra == "cuda-pip"') for r in requires), requires
    py = make_venv(tmp_path / "v")
    run([py, "-m", "pip", "install", "-q", "--no-deps", wheel.path], env=clean_env())
    out = run([py, "-c", "import wrap_lto._cpu as c; print(c.dot([1.0, 2.0], [3.0, 4.0]))"], cwd=tmp_path,
              env=clean_env())
    assert out.stdout.strip() == "11.0"
    # Control: the CUDA module, without its extra and with no system CUDA here, names the extra
    # as METADATA spells it (pip 23.2.1 matches extras literally).
    proc = run([py, "-c", "import wrap_lto._gpu"], cwd=tmp_path, env=clean_env(), check=False)
    assert proc.returncode == 1 and "pip install 'wrap-lto-cu13[cuda-pip]'" in proc.stderr, proc.stderr[-2000:]


def own_archs_build(wheelhouse, tmp_path, *settings):
    project = shutil.copytree(DATA / "wrap-own-archs", tmp_path / "p")
    return run([uv(), "build", "--wheel", "-o", tmp_path / "out", "-C", "archs=90", *settings, project],
               env=uv_env(wheelhouse), timeout=1800, check=False)


def test_archs_the_project_chose_itself_are_said(wheelhouse, tmp_path):
    """The project's CMAKE_CUDA_ARCHITECTURES (75) wins over `-C archs=90`: the wheel is built, and
    one status line says what was asked, what the wheel carries and where that came from."""
    proc = own_archs_build(wheelhouse, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next((ln for ln in proc.stderr.splitlines() if "cudawheel: archs: asked for" in ln), None)
    assert line is not None, proc.stderr[-3000:]
    assert "asked for SASS sm_90 and PTX compute_90, but the wheel carries SASS sm_75 and PTX compute_75" in line, line
    assert "CMAKE_CUDA_ARCHITECTURES" in line, line


def test_archs_reach_a_project_that_picks_a_default_before_enabling_cuda(wheelhouse, tmp_path):
    """ggml's pattern: `if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)` a list of its own, before CUDA
    is enabled, where CUDAARCHS does not reach yet. `-C archs=90` reaches it through CMAKE_ARGS:
    the wheel carries exactly sm_90 and compute_90, so no archs line. Control: the user's own
    `cmake.define.CMAKE_CUDA_ARCHITECTURES` is left to win, and the line says what it gave."""
    proc = own_archs_build(wheelhouse, tmp_path / "a", "-C", "cmake.define.OWN_ARCHS_DEFAULT=ON")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "cudawheel: archs: asked for" not in proc.stderr, proc.stderr[-3000:]
    proc = own_archs_build(wheelhouse, tmp_path / "b", "-C", "cmake.define.OWN_ARCHS_DEFAULT=ON",
                           "-C", "cmake.define.CMAKE_CUDA_ARCHITECTURES=80-real")
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next((ln for ln in proc.stderr.splitlines() if "cudawheel: archs: asked for" in ln), None)
    assert line is not None and "the wheel carries SASS sm_80" in line, proc.stderr[-3000:]


def test_native_archs_without_a_gpu_is_an_error_with_the_fix(wheelhouse, tmp_path):
    proc = own_archs_build(wheelhouse, tmp_path, "-C", "cmake.define.OWN_ARCHS_NATIVE=ON")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "cudawheel: error: The wrapped build (scikit_build_core.build) asked nvcc for `native` archs on a machine with no GPU" \
        in proc.stderr, proc.stderr[-3000:]
    assert "CMAKE_CUDA_ARCHITECTURES" in proc.stderr.split("cudawheel: error:")[-1], proc.stderr[-2000:]
    assert not list((tmp_path / "out").glob("*.whl"))


def test_gpu_code_with_the_static_runtime_takes_the_builds_major(wheelhouse, tmp_path):
    """A module with GPU code that links the static runtime (cuvec's `CUDA::cudart_static`;
    here `cudart = "static"`) links no libcudart by SONAME: the repair takes the wrapped build's
    CUDA major (before: "Cannot tell the CUDA major"), and the wheel requires no runtime wheel."""
    proc = own_archs_build(wheelhouse, tmp_path, "-C", "cudart=static")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (whl,) = (tmp_path / "out").glob("*.whl")
    assert whl.name.startswith("own_archs_cu13-0.1.0-"), whl.name
    wheel = Wheel(whl)
    assert not [r for r in wheel.field("Requires-Dist") if r.startswith("nvidia-")], wheel.field("Requires-Dist")
    assert "own_archs/_k.py" in wheel.names, wheel.names


def test_a_project_written_for_cuda_12_builds_with_a_system_cuda_12(wheelhouse, backend_python, tmp_path):
    """tests/data/wrap-cuda12, shaped like isoext (a CMake project for CUDA 12 whose build loads
    the module it just built, as nanobind's stubgen does), built by `pip wheel` with a system
    CUDA 12.4 toolkit in the layout NVIDIA installs (`CUDA_HOME`, the project's installer): the
    toolkit folder takes that nvcc, CMake identifies it (its static runtime, nvvm/libdevice),
    the build-tree module loads `libcudart.so.12` (the shared runtime cudawheel chose comes with
    `CMAKE_BUILD_RPATH`; before, `ImportError: libcudart.so.12`), and the wheel is a CUDA 12
    one: `-cu12`, NEEDED `libcudart.so.12` through `$ORIGIN` into `nvidia-cuda-runtime-cu12`,
    which it requires from the release its nvcc compiled against (12.4; no runtime wheel is
    installed where the build runs), and it imports in a fresh venv from that wheel."""
    cu12 = toolkit_home(12)
    py = make_venv(tmp_path / "v")
    project = shutil.copytree(DATA / "wrap-cuda12", tmp_path / "p")
    proc = run([py, "-m", "pip", "wheel", "-v", "--no-deps", "-w", tmp_path / "out", project,
                "--config-settings", "archs=80"],
               env=clean_env(PIP_FIND_LINKS=wheelhouse, CUDA_HOME=cu12), timeout=1800, check=False)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    assert re.search(r"wrapping scikit_build_core\.build: CUDA 12\.4\.\d+ toolkit folder", log), log[-4000:]
    assert "The CUDA compiler identification is NVIDIA 12.4" in log, log[-4000:]
    assert "imported in the build tree: " in log, log[-4000:]
    (whl,) = (tmp_path / "out").glob("*.whl")
    assert re.fullmatch(r"wrap_cuda12_cu12-0\.1\.0-cp311-cp311-manylinux_2_\d+_x86_64\.whl", whl.name), whl.name
    wheel = Wheel(whl)
    (ext,) = [n for n in wheel.names if re.fullmatch(r"wrap_cuda12/_k\.cudawheel-ext.*\.so", n)]
    dyn = readelf_dynamic(wheel.extract(ext, tmp_path / "x"))
    assert "libcudart.so.12" in dyn["NEEDED"], dyn
    assert dyn["RPATH"] == ["$ORIGIN/../nvidia/cuda_runtime/lib"], dyn
    assert [r for r in wheel.field("Requires-Dist") if r.startswith("nvidia-")] == \
        ["nvidia-cuda-runtime-cu12>=12.4,<13"], wheel.field("Requires-Dist")
    code = gpu_code(backend_python, whl)["gpu_code"]
    assert [c["sass"] for f, c in code.items() if "_k" in f] == [["sm_80"]], code
    venv = tmp_path / "iv"
    run([uv(), "venv", "-q", "-p", py, venv], env=uv_env(wheelhouse))
    run([uv(), "pip", "install", "-q", "-p", venv / "bin/python", whl], env=uv_env(wheelhouse))
    out = run([venv / "bin/python", "-c", "import wrap_cuda12._k as k; print(k.runtime_version() // 1000); "
               "print(*[l.split()[-1] for l in open('/proc/self/maps') if 'libcudart' in l][:1])"],
              cwd=tmp_path, env=clean_env()).stdout.split()
    assert out[0] == "12" and out[1].endswith("/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12"), out

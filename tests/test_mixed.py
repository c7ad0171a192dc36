"""A system CUDA toolkit next to NVIDIA's runtime wheels of another release (the
PyTorch / NGC-container case). One header set per build, the toolkit's: the host compiler's
.cpp and nvcc's .cu see the same CUDA headers (CUDART_VERSION of both is read back from the
built module), the runtime wheel's partial headers never come first, and Requires-Dist is
satisfiable by the environment the wheel was built in (installed there with --no-index).

Control: with cudawheel 0.1.0 before this change, the first case fails in the host compile of
module.cpp (`crt/host_defines.h: No such file or directory`, the runtime wheel's include folder
came first), and the case with nvidia-cuda-crt/-cccl of 13.0 installed compiles module.cpp and
haxpy.cu against the wheels' 13.0 headers while nvcc is 13.5 (CUDART_VERSION 13000, not 13050).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import EXAMPLES, Wheel, clean_env, copy_example, make_venv, readelf_dynamic, run, toolkit_home

CASES = [
    # toolkit major, runtime wheels in the build venv, CUDART_VERSION of the toolkit's headers,
    # the Requires-Dist expected
    pytest.param(13, ["nvidia-cuda-runtime==13.0.*"], 13050, "nvidia-cuda-runtime>=13.0,<14",
                 id="cu13.5-toolkit+runtime13.0"),
    pytest.param(13, ["nvidia-cuda-runtime==13.0.*", "nvidia-cuda-crt==13.0.*", "nvidia-cuda-cccl==13.0.*"],
                 13050, "nvidia-cuda-runtime>=13.0,<14", id="cu13.5-toolkit+complete-wheel-headers13.0"),
    pytest.param(12, ["nvidia-cuda-runtime-cu12==12.9.*"], 12040, "nvidia-cuda-runtime-cu12>=12.4,<13",
                 id="cu12.4-toolkit+runtime12.9"),
]


def _venv(tmp_path, wheelhouse, wheels):
    py = make_venv(tmp_path / "venv")
    run([py, "-m", "pip", "install", "-q", "--find-links", wheelhouse, "cudawheel", *wheels], env=clean_env())
    return py


def _check_module(py, tmp_path, headers: int):
    """Imports the built module in `py`'s venv and returns (cpp, cu, runtime) versions."""
    out = run([py, "-c", "import mixed_headers as m; print(m.cpp_cudart_version(), m.cu_cudart_version())"],
              cwd=tmp_path, env=clean_env()).stdout.split()
    assert [int(v) for v in out] == [headers, headers], f".cpp and .cu saw other headers: {out}"


@pytest.mark.parametrize("major, wheels, headers, requires", CASES)
def test_system_toolkit_with_runtime_wheel_of_another_release(wheelhouse, tmp_path, major, wheels, headers, requires):
    home = toolkit_home(major)
    py = _venv(tmp_path, wheelhouse, wheels)
    proj = copy_example("mixed_headers", tmp_path)
    env = clean_env(CUDA_HOME=home, CUDAHOSTCXX="g++")
    doctor = run([py, "-m", "cudawheel", "doctor", proj], env=env).stdout
    site = run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    assert f"headers: CUDA {headers // 1000}.{headers % 1000 // 10} (the include folders nvcc" in doctor, doctor
    libdir = "nvidia/cu13/lib" if major == 13 else "nvidia/cuda_runtime/lib"
    assert f"libcudart: {site}/{libdir}/libcudart.so.{major}" in doctor, doctor
    assert f"Requires-Dist for it: {requires}" in doctor, doctor

    proc = run([py, "-m", "cudawheel", "wheel", proj, "-o", tmp_path / "out", "-C", "archs=90"], env=env)
    assert "headers: CUDA" in proc.stderr and "libcudart:" in proc.stderr, proc.stderr
    [whl] = (tmp_path / "out").glob("*.whl")
    w = Wheel(whl)
    assert w.field("Requires-Dist") == [requires]
    so = w.extract(next(n for n in w.names if n.endswith(".so")), tmp_path / "x")
    assert readelf_dynamic(so)["NEEDED"][:1] == [f"libcudart.so.{major}"]
    # Satisfiable by the environment it was built in: installs there without an index.
    run([py, "-m", "pip", "install", "-q", "--no-index", whl], env=clean_env())
    _check_module(py, tmp_path, headers)


def test_pip_toolkit_with_runtime_wheel_of_another_release_is_named(wheelhouse, tmp_path):
    """NVIDIA's nvcc wheel in the venv, the runtime wheel of another release installed over it
    (one shared folder): the build goes on, and says which distribution does not match."""
    py = _venv(tmp_path, wheelhouse, ["nvidia-cuda-nvcc==13.5.*", "nvidia-cuda-cccl>=13,<14",
                                      "nvidia-cuda-runtime==13.5.*"])
    run([py, "-m", "pip", "install", "-q", "nvidia-cuda-runtime==13.0.*"], env=clean_env())
    doctor = run([py, "-m", "cudawheel", "doctor", EXAMPLES / "mixed_headers"], env=clean_env()).stdout
    assert "warning: that folder mixes two CUDA releases: nvidia-cuda-runtime 13.0." in doctor, doctor
    assert "not nvcc's 13.5.37: `pip install \"nvidia-cuda-runtime==13.5.*\"`" in doctor, doctor


@pytest.mark.parametrize("major, outer, requires, headers", [
    pytest.param(12, "nvidia-cuda-runtime-cu12==12.9.*", "nvidia-cuda-runtime-cu12>=12.4,<13", 12040, id="cu12.4"),
    pytest.param(13, "nvidia-cuda-runtime==13.0.*", "nvidia-cuda-runtime>=13.5,<14", 13050, id="cu13.5"),
])
def test_isolated_build_next_to_a_runtime_wheel(wheelhouse, tmp_path, major, outer, requires, headers):
    """Through build isolation (pip wheel): the outer venv's runtime wheel is invisible, the
    toolkit's own libcudart is linked (each toolkit here holds it as NVIDIA's runtime wheel of
    its own release, which gives the floor). The 12.4 wheel installs into the outer venv (12.9)
    as it is; the 13.5 one asks pip to upgrade that venv's 13.0 runtime."""
    home = toolkit_home(major)
    py = _venv(tmp_path, wheelhouse, [outer])
    proj = copy_example("mixed_headers", tmp_path)
    run([py, "-m", "pip", "wheel", "-q", "--no-deps", "-w", tmp_path / "out", proj, "-C", "archs=90"],
        env=clean_env(CUDA_HOME=home, CUDAHOSTCXX="g++", PIP_FIND_LINKS=wheelhouse))
    [whl] = (tmp_path / "out").glob("*.whl")
    assert Wheel(whl).field("Requires-Dist") == [requires]
    index = [] if major == 12 else ["--upgrade-strategy", "only-if-needed"]
    run([py, "-m", "pip", "install", "-q", *(["--no-index"] if major == 12 else index), whl], env=clean_env())
    _check_module(py, tmp_path, headers)


def test_library_headers_come_from_where_the_library_was_found(wheelhouse, tmp_path):
    """CUDA 13's wheels share one include folder, so a library found there (nvtx) sits next to
    the runtime wheel's headers: the compile sees that library's own headers (links to the
    files its RECORD lists, under build-dir/cuda-headers/) before the toolkit's set, and the
    runtime headers of the toolkit, never the runtime wheel's. Read back from the depfile."""
    home = toolkit_home(13)
    py = _venv(tmp_path, wheelhouse, ["nvidia-cuda-runtime==13.0.*", "nvidia-nvtx>=13,<14"])
    proj = copy_example("mixed_headers", tmp_path)
    pyproject = proj / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('include-dirs = ["csrc"]',
                                                       'include-dirs = ["csrc"]\ncuda-libraries = ["nvtx"]'))
    module = proj / "csrc" / "module.cpp"
    module.write_text(module.read_text().replace("#include <vector>", "#include <vector>\n#include <nvtx3/nvToolsExt.h>"))
    run([py, "-m", "cudawheel", "wheel", proj, "-o", tmp_path / "out", "-C", "archs=90"],
        env=clean_env(CUDA_HOME=home, CUDAHOSTCXX="g++"))
    depfile = (proj / "build/cudawheel/obj/mixed_headers._core/csrc__module.cpp.d").read_text()
    deps = depfile.replace("\\\n", " ").split()
    runtime = [d for d in deps if d.endswith("/cuda_runtime_api.h")]
    # The toolkit's header: by its own path, or through the build's link to a sys.path folder
    # holding it (build/cudawheel/env/siteN/..., when the toolkit sits in a checkout's .cache/
    # and that checkout is sys.path[0]); the links are gone after the build, so compare the tail.
    expected = f"{home}/include/cuda_runtime_api.h"
    assert len(runtime) == 1, runtime
    linked = runtime[0].startswith("build/cudawheel/env/site") and expected.endswith("/" + runtime[0].split("/", 4)[4])
    assert runtime[0] == expected or linked, runtime
    nvtx = [d for d in deps if d.endswith("/nvtx3/nvToolsExt.h")]
    # Compiles run in the project root and name its files relatively (stable paths).
    assert nvtx == ["build/cudawheel/cuda-headers/nvtx/nvtx3/nvToolsExt.h"], nvtx
    site = run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    assert (proj / nvtx[0]).resolve() == Path(site, "nvidia/cu13/include/nvtx3/nvToolsExt.h").resolve()
    assert not any("/site-packages/nvidia/cu13/include/cuda" in d for d in deps), deps

"""Imports that work where the RPATH cannot reach NVIDIA's wheels, thanks to
the generated `_cuda_libs.preload()`; an ImportError that says what to install or that the
driver is too old; editable installs; sdists that refuse to escape the project or to build
another CUDA major."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import Wheel, clean_env, copy_example, make_venv, run, toolkit_home


@pytest.fixture(scope="module")
def saxpy(scratch, toolkit_python) -> Wheel:
    work = scratch("layouts")
    project = copy_example("saxpy", work)
    proc = run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", work / "out", "-C", "archs=90"],
               env=clean_env())
    return Wheel(Path(proc.stdout.strip()))


def test_wheel_carries_the_import_helper(saxpy):
    text = saxpy.read("saxpy/_cuda_libs.py").decode()
    assert 'CUDA_VERSION = (13, ' in text
    assert '("libcudart.so.13", "nvidia/cu13/lib", "nvidia-cuda-runtime>=13.' in text
    compile(text, "_cuda_libs.py", "exec")


def test_target_install_imports_only_thanks_to_preload(saxpy, tmp_path):
    # The runtime wheel lives in the venv; the package in a --target folder elsewhere, so the
    # extension's $ORIGIN/../nvidia/cu13/lib points nowhere.
    py = make_venv(tmp_path / "v")
    run([py, "-m", "pip", "install", "-q", "nvidia-cuda-runtime>=13,<14"], env=clean_env())
    target = tmp_path / "target"
    run([py, "-m", "pip", "install", "-q", "--no-deps", "--target", target, saxpy.path], env=clean_env())
    assert not (target / "nvidia").exists()
    env = clean_env(PYTHONPATH=target)
    direct = run([py, "-c", f"import ctypes; ctypes.CDLL({str(target / 'saxpy/_core.abi3.so')!r})"],
                 cwd=tmp_path, env=env, check=False)
    assert direct.returncode != 0 and "libcudart.so.13" in direct.stderr
    out = run([py, "-c", "import saxpy; print('runtime', saxpy.runtime_version())"], cwd=tmp_path, env=env).stdout
    assert out.startswith("runtime 13")


def test_missing_runtime_wheel_says_what_to_install(saxpy, tmp_path):
    py = make_venv(tmp_path / "v")
    run([py, "-m", "pip", "install", "-q", "--no-deps", saxpy.path], env=clean_env())
    proc = run([py, "-c", "import saxpy"], cwd=tmp_path, env=clean_env(), check=False)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: saxpy: cannot load the CUDA library libcudart.so.13"), last
    assert "it comes from the wheel 'nvidia-cuda-runtime': pip install 'nvidia-cuda-runtime>=13." in last


def test_too_old_driver_is_named(saxpy, tmp_path):
    # A stand-in for the driver's libcuda.so.1 that reports CUDA 12.8 (no GPU here to have a real one).
    drv = tmp_path / "driver"
    drv.mkdir()
    (drv / "cuda.c").write_text("int cuDriverGetVersion(int *v) { *v = 12080; return 0; }\n")
    run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", drv / "cuda.c", "-o", drv / "libcuda.so.1"])
    py = make_venv(tmp_path / "v")
    run([py, "-m", "pip", "install", "-q", saxpy.path], env=clean_env())
    proc = run([py, "-c", "import saxpy"], cwd=tmp_path, env=clean_env(LD_LIBRARY_PATH=drv), check=False)
    assert proc.returncode != 0
    assert ("ImportError: saxpy: the installed NVIDIA driver supports CUDA 12.8, but this package needs one "
            "for CUDA 13.0 or newer: update the NVIDIA driver") in proc.stderr
    assert "Why: built with CUDA 13." in proc.stderr


def test_editable_install(tmp_path, wheelhouse):
    project = copy_example("saxpy", tmp_path)
    py = make_venv(tmp_path / "v")
    env = clean_env(PIP_FIND_LINKS=wheelhouse)
    run([py, "-m", "pip", "install", "-q", "-e", project, "-C", "archs=90"], env=env)
    assert (project / "saxpy/_core.abi3.so").is_file() and (project / "saxpy/_cuda_libs.py").is_file()
    code = "import saxpy; print(saxpy.__file__); print(saxpy.runtime_version())"
    out = run([py, "-c", code], cwd=tmp_path, env=clean_env()).stdout.split()
    assert out[0] == str(project / "saxpy/__init__.py") and out[1].startswith("13")
    # A Python edit shows without reinstalling.
    with open(project / "saxpy/__init__.py", "a") as f:
        f.write("\nEDITED = 'yes'\n")
    assert run([py, "-c", "import saxpy; print(saxpy.EDITED)"], cwd=tmp_path, env=clean_env()).stdout.strip() == "yes"


def test_sdist_refuses_symlinks_out_of_the_project(backend_python, tmp_path):
    from test_errors import fails
    project = copy_example("saxpy", tmp_path)
    outside = tmp_path / "outside.cu"
    outside.write_text("// not part of the project\n")
    (project / "csrc/extra.cu").symlink_to(outside)
    err = fails(backend_python, project, command="sdist")
    assert "outside the project folder" in err and "csrc/extra.cu" in err


def test_sdist_builds_only_its_cuda_major(backend_python, toolkit_python, tmp_path):
    from test_errors import fails
    project = copy_example("saxpy", tmp_path)
    proc = run([backend_python, "-m", "cudawheel", "sdist", project, "-o", tmp_path / "dist"], env=clean_env())
    import tarfile
    with tarfile.open(proc.stdout.strip()) as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    unpacked = tmp_path / "unpacked/saxpy_cu13-0.1.0"
    env = clean_env(CUDA_HOME=toolkit_home(12))
    err = fails(toolkit_python, unpacked, "cuda=12", env=env)
    assert "This sdist is saxpy-cu13, but this build would make saxpy-cu12" in err
    assert "hint: use the sdist made for that CUDA major" in err

"""`bindings = "pybind11" | "nanobind"`: the build requirement, and the two examples
built (nvcc 13 from NVIDIA's wheels, one arch, no isolation: pybind11/nanobind installed with
`pip install --target` and found on sys.path like in an isolated build environment), then
imported next to the CUDA runtime wheel. The kernels themselves run in scripts/gpu-check.sh."""

from __future__ import annotations

import re

import pytest

from conftest import Wheel, clean_env, copy_example, readelf_dynamic, run


@pytest.fixture(scope="module")
def bindings_path(scratch, toolkit_python):
    target = scratch("bindings-site")
    run([toolkit_python, "-m", "pip", "install", "-q", "--target", target, "pybind11>=2.12", "nanobind>=2.0"],
        env=clean_env())
    return target


def test_requirements(backend_python, tmp_path):
    for example, req in [("pybind_saxpy", "pybind11>=2.12"), ("nanobind_saxpy", "nanobind>=2.0")]:
        project = copy_example(example, tmp_path)
        out = run([backend_python, "-m", "cudawheel", "requires", project], env=clean_env()).stdout.split()
        # The binding library first (a framework's pins then choose the toolkit).
        assert out == [req, "cuda-toolkit[cccl,cudart,nvcc]>=13,<14"], out


def test_missing_binding_library_is_one_clear_error(toolkit_python, tmp_path):
    project = copy_example("pybind_saxpy", tmp_path)
    proc = run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "out"],
               env=clean_env(), check=False)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "The binding library pybind11 was not found in the build environment" in proc.stderr
    assert 'pip install "pybind11>=2.12"' in proc.stderr
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_limited_api_rules(backend_python, tmp_path):
    project = copy_example("pybind_saxpy", tmp_path)
    proc = run([backend_python, "-m", "cudawheel", "wheel", project, "-C", "py-limited-api=cp39",
                "-o", tmp_path / "out"], env=clean_env(), check=False)
    assert proc.returncode == 1, proc.stderr
    assert "pybind11 does not support Python's limited API" in proc.stderr
    project = copy_example("nanobind_saxpy", tmp_path)
    proc = run([backend_python, "-m", "cudawheel", "wheel", project, "-C", "py-limited-api=cp311",
                "-o", tmp_path / "out"], env=clean_env(), check=False)
    assert proc.returncode == 1, proc.stderr
    assert "nanobind builds for the stable ABI only from Python 3.12" in proc.stderr
    assert 'py-limited-api = "cp312"' in proc.stderr


@pytest.mark.parametrize("example", ["pybind_saxpy", "nanobind_saxpy"])
def test_example_builds_and_imports(example, toolkit_python, bindings_path, tmp_path):
    project = copy_example(example, tmp_path)
    env = clean_env(PYTHONPATH=bindings_path, CUDAWHEEL_ARCHS="80")
    out = tmp_path / "out"
    run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", out], env=env)
    (path,) = out.glob("*.whl")
    pyver = run([toolkit_python, "-c", "import sys; print(f'cp{sys.version_info[0]}{sys.version_info[1]}')"]).stdout.strip()
    assert re.fullmatch(rf"{example}_cu13-0\.1\.0-{pyver}-{pyver}-manylinux_2_\d+_x86_64\.whl", path.name), path.name
    wheel = Wheel(path)
    wheel.check_record()
    (so,) = [n for n in wheel.names if n.startswith(f"{example}/_core")]
    # Nothing of the binding library itself ships (headers and nb_combined.cpp are build inputs).
    assert sorted(n for n in wheel.names if not n.startswith(wheel.dist_info)) == [
        f"{example}/__init__.py", so, f"{example}/_cuda_libs.py"]
    extracted = wheel.extract(so, tmp_path / "x")
    dyn = readelf_dynamic(extracted)
    assert "libcudart.so.13" in dyn["NEEDED"] and dyn["RPATH"] == ["$ORIGIN/../nvidia/cu13/lib"]
    assert str(bindings_path).encode() not in extracted.read_bytes(), "a build-environment path leaked"
    # -fvisibility=hidden: only the module's init function is exported.
    syms = run(["nm", "-D", "--defined-only", extracted]).stdout
    exported = sorted(line.split()[-1] for line in syms.splitlines() if " T " in line)
    assert exported == ["PyInit__core"], exported
    assert wheel.field("Requires-Dist") and all(r.startswith("nvidia-cuda-runtime") for r in wheel.field("Requires-Dist"))
    # Installed beside the CUDA runtime wheel of the toolkit venv (split layout: _cuda_libs finds it).
    site = tmp_path / "site"
    run([toolkit_python, "-m", "pip", "install", "-q", "--no-deps", "--target", site, path], env=clean_env())
    code = (
        f"import {example} as m\n"
        "assert callable(m.saxpy) and m.saxpy.__doc__ and 'CUDA kernel' in m.saxpy.__doc__, m.saxpy.__doc__\n"
        "assert m.runtime_version() >= 13000, m.runtime_version()\n"
        "try:\n"
        "    m.saxpy(1.0, [1.0, 2.0], [1.0])\n"
        "except ValueError as e:\n"
        "    assert 'same length' in str(e), e\n"
        "else:\n"
        "    raise SystemExit('no ValueError')\n"
        "try:\n"
        "    print('devices', m.device_count())\n"
        "except RuntimeError as e:\n"
        "    assert 'CUDA error' in str(e), e\n"
        "    print('no device')\n"
        "print('ok', m._core.__file__)\n"
    )
    proc = run([toolkit_python, "-c", code], env=clean_env(PYTHONPATH=site), cwd=tmp_path)
    assert proc.stdout.splitlines()[-1] == f"ok {site}/{so}"


def test_doctor_reports_the_binding_library(backend_python, bindings_path, tmp_path):
    project = copy_example("nanobind_saxpy", tmp_path)
    out = run([backend_python, "-m", "cudawheel", "doctor", project], env=clean_env()).stdout
    assert "Bindings nanobind: not found" in out and "  nanobind>=2.0" in out
    out = run([backend_python, "-m", "cudawheel", "doctor", project], env=clean_env(PYTHONPATH=bindings_path)).stdout
    assert re.search(rf"^Bindings nanobind: nanobind \d+\.\d+\.\d+ in {re.escape(str(bindings_path))}/nanobind$", out, re.M), out

"""The main job end to end: `pip wheel` with build isolation on a machine with no CUDA at all
(nvcc comes from PyPI because `get_requires_for_build_wheel` asked for it), then the wheel
installed into a fresh venv with its runtime dependency from PyPI, imported and called."""

from __future__ import annotations

import re
import sys

import pytest

from conftest import Wheel, clean_env, copy_example, make_venv, readelf_dynamic, run

WHEEL_RE = re.compile(r"^saxpy_cu13-0\.1\.0-cp39-abi3-manylinux_2_(\d+)_x86_64\.whl$")


@pytest.fixture(scope="module")
def saxpy_wheel(scratch, wheelhouse):
    work = scratch("e2e")
    project = copy_example("saxpy", work)
    out = work / "out"
    proc = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", out, project],
               env=clean_env(PIP_FIND_LINKS=wheelhouse))
    wheels = list(out.glob("*.whl"))
    assert len(wheels) == 1, wheels
    return Wheel(wheels[0]), proc.stdout + proc.stderr


def test_wheel_name_and_tag(saxpy_wheel):
    wheel, log = saxpy_wheel
    m = WHEEL_RE.match(wheel.path.name)
    assert m, wheel.path.name
    # Built with gcc 12 on bookworm, the extension needs nothing newer than glibc 2.17 symbols.
    # The extension imports only GLIBC_2.2.5 / CXXABI_1.3 symbols: the oldest policy (auditwheel
    # agrees, see test_audit.py); libcudart counts as provided by the declared runtime wheel.
    assert int(m.group(1)) == 5
    # nvcc came from NVIDIA's wheels in pip's isolated build environment.
    assert "NVIDIA wheels in" in log and "pip-build-env" in log


def test_metadata(saxpy_wheel):
    wheel, _ = saxpy_wheel
    md = dict(wheel.metadata())
    assert md["Metadata-Version"] == "2.4"
    assert md["Name"] == "saxpy-cu13"
    assert md["Version"] == "0.1.0"
    assert md["Requires-Python"] == ">=3.9"
    assert md["License-Expression"] == "MIT"
    assert wheel.field("License-File") == ["LICENSE"]
    reqs = wheel.field("Requires-Dist")
    assert len(reqs) == 1
    assert re.fullmatch(r"nvidia-cuda-runtime>=13\.\d+,<14", reqs[0]), reqs
    assert f"{wheel.dist_info}/licenses/LICENSE" in wheel.names
    assert wheel.read(f"{wheel.dist_info}/WHEEL").decode().splitlines() == [
        "Wheel-Version: 1.0", "Generator: cudawheel 0.1.0", "Root-Is-Purelib: false",
        "Tag: cp39-abi3-manylinux_2_5_x86_64",
    ]


def test_record_hashes_and_contents(saxpy_wheel):
    wheel, _ = saxpy_wheel
    listed = wheel.check_record()
    assert listed[-1] == f"{wheel.dist_info}/RECORD"
    assert sorted(n for n in wheel.names if not n.startswith(wheel.dist_info)) == [
        "saxpy/__init__.py", "saxpy/_core.abi3.so", "saxpy/_cuda_libs.py"]


def test_elf_links_by_soname_with_origin_rpath(saxpy_wheel, tmp_path):
    wheel, _ = saxpy_wheel
    so = wheel.extract("saxpy/_core.abi3.so", tmp_path)
    dyn = readelf_dynamic(so)
    assert "libcudart.so.13" in dyn["NEEDED"]
    assert not any(n.startswith("libcuda.so") for n in dyn["NEEDED"])
    assert dyn["RPATH"] == ["$ORIGIN/../nvidia/cu13/lib"]
    assert dyn["RUNPATH"] == []
    assert b"pip-build-env" not in so.read_bytes(), "a path into the build environment leaked into the ELF"
    # Fatbins: SASS for each default arch of CUDA 13, PTX for the highest.
    sections = run(["readelf", "-S", so]).stdout
    assert ".nv_fatbin" in sections


def test_audit_command_passes(saxpy_wheel, backend_python):
    wheel, _ = saxpy_wheel
    out = run([backend_python, "-m", "cudawheel", "audit", wheel.path]).stdout
    # Then the GPU code its extension carries, read from the fatbin (the default archs of CUDA 13).
    assert out.startswith(f"OK   {wheel.path}\n  GPU code saxpy/_core.abi3.so: SASS sm_75 sm_80 sm_86 sm_89 sm_90 "
                          "sm_100 sm_120 | PTX compute_120 | PTX ISA 9."), out


def test_installs_in_fresh_venv_and_imports(saxpy_wheel, tmp_path):
    wheel, _ = saxpy_wheel
    py = make_venv(tmp_path / "v")
    # The runtime dependency comes from PyPI (through the shared pip cache).
    run([py, "-m", "pip", "install", "-q", wheel.path], env=clean_env())
    freeze = run([py, "-m", "pip", "freeze"], env=clean_env()).stdout
    assert re.search(r"^nvidia-cuda-runtime==13\.", freeze, re.M), freeze
    code = (
        "import saxpy\n"
        "v = saxpy.runtime_version(); assert v >= 13000, v\n"
        "try:\n"
        "    n = saxpy.device_count()\n"
        "    print('devices', n)\n"
        "except RuntimeError as e:\n"
        # No driver is said as such, not as CUDA's "driver version is insufficient".
        "    no_driver = saxpy.driver_version() == 0\n"
        "    assert ('no NVIDIA driver' in str(e)) if no_driver else ('CUDA error' in str(e)), e\n"
        "    assert 'insufficient' not in str(e), e\n"
        "    print('no device:', e)\n"
        "print('runtime', v)\n"
    )
    proc = run([py, "-c", code], cwd=tmp_path, env=clean_env())
    assert "runtime 13" in proc.stdout

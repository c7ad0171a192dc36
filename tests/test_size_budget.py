"""Wheels within PyPI's limits. `python -m cudawheel size DIR` reports a release
folder (per wheel, per project, what a library split would save); `compress` is a policy whose
default never raises the wheel's driver floor. (`max-wheel-size` failures: test_errors.py and
test_wheel_size.py.)"""

from __future__ import annotations

import json
import os
import re
import shutil
import zipfile
from pathlib import Path

from conftest import Wheel, build_wheel, clean_env, copy_example, run, toolkit_home


def fatbin_bytes(so: Path) -> int:
    """The size of the `.nv_fatbin` section as readelf (not cudawheel) reads it."""
    out = run(["readelf", "-S", "-W", so]).stdout
    for line in out.splitlines():
        if " .nv_fatbin " in line:
            # [Nr] Name Type Address Off Size ...
            fields = line.split("]", 1)[1].split()
            return int(fields[4], 16)
    raise AssertionError(f"no .nv_fatbin in {so}:\n{out}")


def build(py, project, out, *settings, env):
    wheel, proc = build_wheel(py, project, out, *settings, env=env)
    return wheel, proc.stderr


def test_size_command_totals_and_the_split_estimate(backend_python, cu13_home, tmp_path):
    env = clean_env(CUDA_HOME=cu13_home, CUDAWHEEL_ARCHS="80;90")
    project = copy_example("saxpy", tmp_path)
    release = tmp_path / "release"
    # The same GPU code in two wheels of one project and platform (the stable ABI of 3.9 and of
    # 3.10): what one wheel per CPython version looks like.
    w39, _ = build(backend_python, project, release, "py-limited-api=cp39", env=env)
    w310, _ = build(backend_python, project, release, "py-limited-api=cp310", env=env)
    assert "-cp39-abi3-" in w39.name and "-cp310-abi3-" in w310.name
    so = Wheel(w39).extract("saxpy/_core.abi3.so", tmp_path / "x39")
    fat = fatbin_bytes(so)
    assert fat == fatbin_bytes(Wheel(w310).extract("saxpy/_core.abi3.so", tmp_path / "x310"))
    # Another project in the same folder: counted apart, nothing duplicated.
    other = tmp_path / "other"
    shutil.copytree(project, other)
    text = (other / "pyproject.toml").read_text().replace('name = "saxpy"', 'name = "saxpy-other"')
    (other / "pyproject.toml").write_text(text)
    build(backend_python, other, release, env=env)

    files = sorted(release.glob("*.whl"))
    assert len(files) == 3
    rep = json.loads(run([backend_python, "-m", "cudawheel", "size", "--json", release], env=env).stdout)
    assert rep["total_bytes"] == sum(f.stat().st_size for f in files)
    assert {w["wheel"]: w["bytes"] for w in rep["wheels"]} == {f.name: f.stat().st_size for f in files}
    assert all(w["gpu_bytes"] == fat for w in rep["wheels"]), (rep, fat)
    projects = {p["project"]: p for p in rep["projects"]}
    assert projects["saxpy_cu13"]["bytes"] == w39.stat().st_size + w310.stat().st_size
    assert projects["saxpy_cu13"]["duplicated_gpu_bytes"] == fat
    # Control: one wheel per project duplicates nothing.
    assert projects["saxpy_other_cu13"]["duplicated_gpu_bytes"] == 0

    text = run([backend_python, "-m", "cudawheel", "size", release], env=env).stdout
    total = sum(f.stat().st_size for f in files)
    assert f"total: 3 wheel(s), {total:,} bytes" in text, text
    assert re.search(rf"project saxpy_cu13: 2 wheel\(s\), {projects['saxpy_cu13']['bytes']:,} bytes .*"
                     rf"library wheel, would save about {fat:,} bytes", text), text
    assert "project saxpy_other_cu13: 1 wheel(s)" in text and text.count("would save") == 1, text


def test_size_command_flags_a_file_above_pypis_limit(backend_python, tmp_path):
    release = tmp_path / "release"
    release.mkdir()
    # A stored (not deflated) member of random bytes: a file just above 100 MB.
    big = release / "huge-1-py3-none-any.whl"
    with zipfile.ZipFile(big, "w", zipfile.ZIP_STORED) as z:
        z.writestr("huge/blob.bin", os.urandom(100_000_100))
        z.writestr("huge-1.dist-info/WHEEL", "Wheel-Version: 1.0\nTag: py3-none-any\n")
    proc = run([backend_python, "-m", "cudawheel", "size", release], check=False)
    assert proc.returncode == 1, proc.stdout
    assert "above PyPI's 100 MB file limit" in proc.stdout
    big.unlink()
    proc = run([backend_python, "-m", "cudawheel", "size", release], check=False)
    assert proc.returncode == 0 and "total: 0 wheel(s), 0 bytes" in proc.stdout, proc.stdout


def test_compress_modes_reach_nvcc_and_change_the_size(backend_python, cu13_home, tmp_path):
    env = clean_env(CUDA_HOME=cu13_home, CUDAWHEEL_ARCHS="80;90")
    project = copy_example("saxpy", tmp_path)
    sizes = {}
    for mode in [None, "none", "size"]:  # each differs from the build before it: nothing reused
        settings = ["verbose=true"] + ([f"compress={mode}"] if mode else [])
        wheel, log = build(backend_python, project, tmp_path / f"out-{mode}", *settings, env=env)
        flags = set(re.findall(r"--compress-mode=\w+", log))
        # The CUDA 13 default: every mode loads on a 13.0 driver, so the smallest one.
        assert flags == {f"--compress-mode={mode or 'size'}"}, log
        sizes[mode] = fatbin_bytes(Wheel(wheel).extract("saxpy/_core.abi3.so", tmp_path / f"x-{mode}"))
        # The summary says what the GPU code costs with this mode and what it asks of the driver.
        kb = f"{sizes[mode] / 1e3:.1f} kB"
        assert f'GPU code {kb} as stored (compress = "{mode or "size"}": loads on a driver for CUDA 13.0 or newer)' in log, log
    assert sizes["size"] < sizes["none"], sizes
    assert sizes[None] == sizes["size"], sizes


def test_a_stable_abi_wheel_over_budget_is_not_told_to_use_the_stable_abi(backend_python, cu13_home, tmp_path):
    # Control for test_errors.py::test_wheel_above_max_wheel_size (a cpXY-cpXY wheel gets that hint).
    project = copy_example("saxpy", tmp_path)
    out = tmp_path / "out"
    proc = run([backend_python, "-m", "cudawheel", "wheel", project, "-o", out, "-C", "max-wheel-size=5kB",
                "-C", "archs=90"], env=clean_env(CUDA_HOME=cu13_home), check=False)
    assert proc.returncode == 1, proc.stderr
    assert re.search(r"saxpy_cu13-0\.1\.0-cp39-abi3-\S+\.whl is [0-9.]+ kB, above `max-wheel-size` \(5\.0 kB\)",
                     proc.stderr), proc.stderr
    assert "serves one CPython version" not in proc.stderr, proc.stderr
    assert not out.exists() or list(out.iterdir()) == []


def test_cuda12_default_keeps_the_12_0_driver_floor(backend_python, tmp_path):
    # nvcc 12.4 has no --compress-mode; zstd would need a 12.4 driver anyway: the default is LZ4.
    env = clean_env(CUDA_HOME=toolkit_home(12), CUDAWHEEL_ARCHS="80;90")
    project = copy_example("saxpy", tmp_path)
    sizes = {}
    for mode, flag in [(None, "-Xfatbin=-compress-all"), ("none", "--no-compress")]:
        settings = ["verbose=true"] + ([f"compress={mode}"] if mode else [])
        wheel, log = build(backend_python, project, tmp_path / f"out-{mode}", *settings, env=env)
        flags = set(re.findall(r"(-Xfatbin=-compress-all|--no-compress|--compress-mode=\w+)", log))
        assert flags == {flag}, log
        sizes[mode] = fatbin_bytes(Wheel(wheel).extract("saxpy/_core.abi3.so", tmp_path / f"x-{mode}"))
        assert f'(compress = "{mode or "speed"}": loads on a driver for CUDA 12.0 or newer)' in log, log
    assert sizes[None] < sizes["none"], sizes
    # The zstd modes need nvcc 12.8: one clear error, nothing left.
    out = tmp_path / "out-size"
    proc = run([backend_python, "-m", "cudawheel", "wheel", project, "-o", out, "-C", "compress=size"],
               env=env, check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert 'compress = "size" needs nvcc 12.8 or newer (`--compress-mode`); this nvcc is 12.4' in proc.stderr
    assert 'hint: use `compress = "speed"`' in proc.stderr
    assert not out.exists() or list(out.iterdir()) == []


PYENV = Path.home() / ".pyenv" / "versions"


def pyenv_python(minor: int) -> Path:
    found = sorted(PYENV.glob(f"3.{minor}.*/bin/python3"))
    if not found:
        import pytest

        pytest.skip(f"no CPython 3.{minor} under {PYENV}")
    return found[-1]


def test_wheel_for_several_pythons(backend_python, cu13_home, tmp_path):
    """`python -m cudawheel wheel PROJECT --python PY ...`: one per-CPython wheel for each
    interpreter (none of which has cudawheel), each installed into a fresh venv of its Python and
    imported; `size` sees the same GPU code in all three."""
    venvs = {}
    for minor in (9, 11, 12):
        venv_dir = tmp_path / f"venv{minor}"
        run([pyenv_python(minor), "-m", "venv", venv_dir])
        run([venv_dir / "bin/python", "-m", "pip", "install", "-q", "pybind11>=2.12"], env=clean_env())
        venvs[minor] = venv_dir / "bin/python"
    project = copy_example("pybind_saxpy", tmp_path)
    out = tmp_path / "release"
    args = [backend_python, "-m", "cudawheel", "wheel", project, "-o", out]
    for py in venvs.values():
        args += ["--python", py]
    proc = run(args, env=clean_env(CUDA_HOME=cu13_home, CUDAWHEEL_ARCHS="80"))
    printed = [Path(line) for line in proc.stdout.split()]
    assert [p.name.split("-")[2] for p in printed] == ["cp39", "cp311", "cp312"], printed
    assert sorted(out.iterdir()) == sorted(printed)
    fat = set()
    for minor, wheel in zip(venvs, printed):
        assert re.fullmatch(rf"pybind_saxpy_cu13-0\.1\.0-cp3{minor}-cp3{minor}-manylinux_2_\d+_x86_64\.whl", wheel.name)
        w = Wheel(wheel)
        (so,) = [n for n in w.names if n.startswith("pybind_saxpy/_core")]
        assert so.endswith(f".cpython-3{minor}-x86_64-linux-gnu.so"), so
        fat.add(fatbin_bytes(w.extract(so, tmp_path / f"x{minor}")))
        # A fresh venv of that Python: the wheel and its NVIDIA runtime wheel, then an import
        # (no GPU here: the kernel is not run).
        run([venvs[minor], "-m", "pip", "install", "-q", wheel], env=clean_env())
        code = ("import pybind_saxpy as m\nassert m.runtime_version() >= 13000\n"
                "import sys; print(sys.version_info[:2], m._core.__file__)")
        shown = run([venvs[minor], "-c", code], cwd=tmp_path, env=clean_env()).stdout
        assert f"(3, {minor})" in shown and "site-packages/pybind_saxpy/_core" in shown, shown
    assert len(fat) == 1, fat
    rep = json.loads(run([backend_python, "-m", "cudawheel", "size", "--json", out]).stdout)
    assert rep["total_bytes"] == sum(p.stat().st_size for p in printed)
    (project_rep,) = rep["projects"]
    assert project_rep["duplicated_gpu_bytes"] == 2 * fat.pop()


def test_python_option_errors(backend_python, tmp_path):
    project = copy_example("pybind_saxpy", tmp_path)
    proc = run([backend_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "out", "--python",
                tmp_path / "no-such-python"], check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"--python {tmp_path / 'no-such-python'}: cannot run it" in proc.stderr
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []
    proc = run([backend_python, "-m", "cudawheel", "sdist", project, "--python", "python3"], check=False)
    assert proc.returncode == 2 and "--python goes with the wheel command" in proc.stderr

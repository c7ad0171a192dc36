"""`target = "aarch64"`: aarch64 (SBSA) wheels cross-built on this x86_64 machine.

The C-API (saxpy), nanobind and cuBLAS examples are built for aarch64: ELF machine AArch64,
tag manylinux_2_28_aarch64, no glibc symbol above 2.28, auditwheel (`show`, which reads
aarch64 wheels on x86_64) agrees, the device code is byte for byte the x86_64 build's. They
then run on a Debian arm64 root (scripts/env/make-arm64-root.sh) through qemu-user: the root's own
python3.11 imports each wheel installed next to NVIDIA's aarch64 wheels, calls into libcudart
(cudaRuntimeGetVersion) and reports no device cleanly; the x86_64 wheel of the same example
fails to load there (the control). A second cross-build with pip unable to reach any index
downloads nothing (the same setting makes a fresh project fail: the control)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import (
    CACHE,
    REPO,
    ZIG_REQUIREMENT,
    Wheel,
    build_wheel,
    clean_env,
    copy_example,
    make_venv,
    readelf_dynamic,
    run,
    zig_env,
)

TAG = "manylinux_2_28_aarch64"
PLATFORMS = ["--platform", "manylinux_2_28_aarch64", "--platform", "manylinux2014_aarch64"]
# pip with no index at all: any download fails ("No matching distribution").
OFFLINE = dict(PIP_NO_INDEX="1", PIP_FIND_LINKS="", PIP_INDEX_URL="http://127.0.0.1:9/simple")


@pytest.fixture(scope="session")
def arm_root() -> Path:
    """A Debian arm64 root with python3.11, made once (cached under .cache/arm64-root)."""
    proc = run(["bash", REPO / "scripts/env/make-arm64-root.sh", CACHE / "arm64-root/bookworm"], timeout=1800)
    return Path(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def cross_python(scratch, wheelhouse) -> Path:
    """cudawheel, NVIDIA's CUDA 13 toolkit wheels (x86_64, cuobjdump among them), zig and
    nanobind: cross-builds without build isolation."""
    py = make_venv(scratch("cross-venv") / "v")
    run([py, "-m", "pip", "install", "-q", "--find-links", wheelhouse, "cudawheel",
         "nvidia-cuda-nvcc>=13,<14", "nvidia-cuda-cccl>=13,<14", "nvidia-cuda-runtime>=13,<14",
         "nvidia-cuda-cuobjdump>=13,<14", ZIG_REQUIREMENT, "nanobind>=2"], env=clean_env())
    return py


def build(py, project: Path, out: Path, *settings: str, env=None) -> tuple[Path, str]:
    _, proc = build_wheel(py, project, out, *settings, env=env or zig_env())
    (path,) = out.glob("*.whl")
    return path, proc.stderr


def cuobjdump(py) -> Path:
    site = run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    return Path(site) / "nvidia/cu13/bin/cuobjdump"


def device_code(py, so: Path, dest: Path) -> dict[str, bytes]:
    """Every cubin and PTX in `so`, by kind and arch (`sm_90.cubin`), from cuobjdump."""
    dest.mkdir(parents=True)
    run([cuobjdump(py), "-xelf", "all", "-xptx", "all", so], cwd=dest)
    out = {}
    for f in dest.iterdir():
        m = re.search(r"\.(sm_\w+)\.(cubin|ptx)$", f.name)
        assert m, f.name
        out[f"{m.group(1)}.{m.group(2)}"] = f.read_bytes()
    return out


def glibc_versions(so: Path) -> list[tuple[int, ...]]:
    text = run(["objdump", "-T", so]).stdout
    assert "GLIBCXX" not in text and "CXXABI" not in text, text
    return sorted({tuple(int(x) for x in v.split(".")) for v in re.findall(r"\bGLIBC_([0-9.]+)\b", text)})


def check_aarch64_module(wheel: Wheel, module: str, tmp: Path) -> Path:
    """The extension is AArch64 code for glibc <= 2.28, linked like the x86_64 one."""
    (name,) = [n for n in wheel.names if n.startswith(f"{module}/_core")]
    so = wheel.extract(name, tmp / "x")
    header = run(["readelf", "-h", so]).stdout
    assert re.search(r"Machine:\s+AArch64", header), header
    assert max(glibc_versions(so)) <= (2, 28), glibc_versions(so)
    dyn = readelf_dynamic(so)
    assert dyn["RPATH"] == ["$ORIGIN/../nvidia/cu13/lib"] and not dyn["RUNPATH"], dyn
    assert "libcudart.so.13" in dyn["NEEDED"], dyn
    assert not {"libstdc++.so.6", "libgcc_s.so.1", "ld-linux-x86-64.so.2"} & set(dyn["NEEDED"]), dyn
    return so


def auditwheel_show(wheel: Path) -> dict:
    """auditwheel's own reading of the wheel (it reads aarch64 ELF files on x86_64)."""
    proc = run([sys.executable, "-m", "auditwheel", "show", "--json", wheel], env=clean_env())
    return json.loads(proc.stdout)


def check_auditwheel(wheel: Path, nvidia: set[str]):
    facts = auditwheel_show(wheel)
    # Symbol versions alone allow manylinux_2_N_aarch64 with N <= 28; the only libraries keeping
    # the overall tag at linux_aarch64 are NVIDIA's, which the wheel declares in Requires-Dist
    # (auditwheel's own `repair --exclude` case).
    m = re.fullmatch(r"manylinux_2_(\d+)_aarch64", facts["sym_tag"])
    assert m and int(m.group(1)) <= 28, facts["sym_tag"]
    assert set(facts["external_libs"]) == nvidia, facts["external_libs"]


def install_for_arm(wheel: Path, dest: Path, *extra: str):
    """The wheel and the NVIDIA aarch64 wheels it requires, unpacked as pip installs them on an
    aarch64 machine (host pip, `--platform`: the root needs no pip and no network)."""
    reqs = Wheel(wheel).field("Requires-Dist")
    run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--only-binary=:all:", *PLATFORMS,
         "--target", dest, wheel, *reqs, *extra], env=clean_env())


def run_arm(root: Path, site: Path, code: str, check=True) -> subprocess.CompletedProcess:
    """The root's python3.11 under qemu-user, the wheel's folder on PYTHONPATH."""
    env = clean_env(PYTHONPATH=site)
    return run(["qemu-aarch64-static", "-L", root, root / "usr/bin/python3.11", "-c", code],
               env=env, cwd=site.parent, check=check)


PROBE = """
import platform, {m} as m
print("machine", platform.machine())
print("runtime", m.runtime_version())
print("driver", m.driver_version())
try:
    m.device_count()
except RuntimeError as e:
    print("no device:", e)
"""


@pytest.mark.parametrize("example", ["saxpy", "nanobind_saxpy"])
def test_cross_built_example_runs_on_arm64(example, cross_python, arm_root, tmp_path):
    project = copy_example(example, tmp_path)
    path, log = build(cross_python, project, tmp_path / "out", "target=aarch64")
    pyver = "cp39-abi3" if example == "saxpy" else "cp311-cp311"
    assert path.name == f"{example}_cu13-0.1.0-{pyver}-{TAG}.whl", path.name
    wheel = Wheel(path)
    wheel.check_record()
    tags = [line.split(": ", 1)[1] for line in wheel.read(f"{wheel.dist_info}/WHEEL").decode().splitlines()
            if line.startswith("Tag: ")]
    assert tags == [f"{pyver}-{TAG}"], tags
    reqs = wheel.field("Requires-Dist")
    assert len(reqs) == 1 and re.fullmatch(r"nvidia-cuda-runtime>=13\.\d+,<14", reqs[0]), reqs
    if example == "nanobind_saxpy":
        assert f"{example}/_core.cpython-311-aarch64-linux-gnu.so" in wheel.names, wheel.names
    so = check_aarch64_module(wheel, example, tmp_path)
    check_auditwheel(path, {"libcudart.so.13"})
    assert "cross-build: downloading nvidia-cuda-runtime 13." in log, log

    # SBSA archs by default; the device code is the x86_64 build's, byte for byte.
    arm_code = device_code(cross_python, so, tmp_path / "arm-code")
    assert sorted(arm_code) == ["sm_100.cubin", "sm_120.cubin", "sm_120.ptx", "sm_90.cubin"], sorted(arm_code)
    x86_path, _ = build(cross_python, project, tmp_path / "out86", "manylinux=2_28", "archs=90;100;120")
    assert x86_path.name.endswith("-manylinux_2_28_x86_64.whl"), x86_path.name
    (x86_name,) = [n for n in Wheel(x86_path).names if n.startswith(f"{example}/_core")]
    x86_so = Wheel(x86_path).extract(x86_name, tmp_path / "x86")
    assert "X86-64" in run(["readelf", "-h", x86_so]).stdout
    assert device_code(cross_python, x86_so, tmp_path / "x86-code") == arm_code
    # cudawheel's own audit accepts the aarch64 wheel, and refuses x86_64 code under an aarch64 tag.
    assert run([cross_python, "-m", "cudawheel", "audit", path]).stdout.startswith("OK")
    renamed = tmp_path / "renamed" / x86_path.name.replace("manylinux_2_28_x86_64", TAG)
    renamed.parent.mkdir()
    renamed.write_bytes(x86_path.read_bytes())
    proc = run([cross_python, "-m", "cudawheel", "audit", renamed], check=False)
    assert proc.returncode != 0 and f"{x86_name}: is x86_64 code, but the wheel is for aarch64" in proc.stdout + proc.stderr, proc

    # Runs on arm64: imports, calls into libcudart, says "no device" cleanly.
    site = tmp_path / "arm-site"
    install_for_arm(path, site)
    out = run_arm(arm_root, site, PROBE.format(m=example)).stdout
    assert "machine aarch64" in out, out
    assert re.search(r"^runtime 13\d{3}$", out, re.M), out
    assert "driver 0" in out and "no device:" in out, out

    # Control: the x86_64 wheel of the same example does not load there (the abi3 module is
    # not an aarch64 ELF file; the cp311 one is not even named for this interpreter).
    x86_site = tmp_path / "x86-site"
    run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", x86_site, x86_path],
        env=clean_env())
    (x86_site / "nvidia").symlink_to(site / "nvidia")
    proc = run_arm(arm_root, x86_site, PROBE.format(m=example), check=False)
    assert proc.returncode != 0 and re.search(r"(ImportError|ModuleNotFoundError)\b", proc.stderr), proc.stderr
    assert "_core" in proc.stderr, proc.stderr


def test_second_cross_build_downloads_nothing(cross_python, tmp_path):
    project = copy_example("saxpy", tmp_path)
    _, log = build(cross_python, project, tmp_path / "out", "target=aarch64", "archs=90")
    assert "cross-build: downloading nvidia-cuda-runtime" in log, log
    # Only the unpacked copy stays in build-dir; the wheel file is pip's cache's business.
    site = project / "build/cudawheel/aarch64/site"
    assert (site / "nvidia/cu13/lib/libcudart.so.13").is_file()
    assert not list((project / "build/cudawheel/aarch64/wheels").glob("*.whl"))
    # doctor: the target, the aarch64 wheels found, zig's target, the SBSA archs.
    doc = run([cross_python, "-m", "cudawheel", "doctor", project, "-C", "target=aarch64"], env=zig_env(**OFFLINE)).stdout
    assert "Target: aarch64 (cross-build from x86_64, from config setting `-C target`), glibc 2.28" in doc, doc
    assert re.search(r"aarch64 wheels in \S+/build/cudawheel/aarch64/site:\n    nvidia-cuda-runtime 13\.", doc), doc
    assert "target aarch64-linux-gnu.2.28" in doc and "Host compiler: zig" in doc, doc
    assert "GPU architectures: from the default for aarch64 (SBSA) systems" in doc, doc
    for g in ["compute_90,code=sm_90", "compute_100,code=sm_100", "compute_120,code=sm_120", "compute_120,code=compute_120"]:
        assert g in doc, doc
    # pip cannot reach an index now: the second build must not need it.
    (project / "csrc/saxpy.cu").write_text((project / "csrc/saxpy.cu").read_text() + "\n// changed\n")
    path, log = build(cross_python, project, tmp_path / "out2", "target=aarch64", "archs=90",
                      env=zig_env(**OFFLINE))
    assert "downloading" not in log, log
    assert "[1/" in log and "nvcc csrc/saxpy.cu" in log, log  # it did compile again
    assert path.name.endswith(f"-{TAG}.whl"), path.name
    # Control: the same setting in a fresh project (nothing downloaded yet) fails, naming pip.
    fresh = copy_example("saxpy", tmp_path / "fresh")
    proc = subprocess.run([str(cross_python), "-m", "cudawheel", "wheel", str(fresh), "-o", str(tmp_path / "out3"),
                           "-C", "target=aarch64"], env=zig_env(**OFFLINE), capture_output=True, text=True)
    assert proc.returncode != 0, proc.stderr
    assert "nvidia-cuda-runtime 13." in proc.stderr and "has no wheel for manylinux_2_28_aarch64" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_cublas_example_cross_built_with_isolation(wheelhouse, arm_root, tmp_path):
    """`pip wheel` with build isolation: the frontend installs the x86_64 toolkit, cuBLAS, zig
    and pip; cudawheel fetches the aarch64 cuBLAS and runtime wheels."""
    project = copy_example("cublas_scale", tmp_path)
    env = zig_env(PIP_FIND_LINKS=wheelhouse, CUDAWHEEL_TARGET="aarch64")
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", tmp_path / "out", project], env=env)
    (path,) = (tmp_path / "out").glob("*.whl")
    assert path.name == f"cublas_scale_cu13-0.1.0-cp39-abi3-{TAG}.whl", path.name
    wheel = Wheel(path)
    reqs = wheel.field("Requires-Dist")
    assert [r.split(">=")[0] for r in reqs] == ["nvidia-cublas", "nvidia-cuda-runtime"], reqs
    so = check_aarch64_module(wheel, "cublas_scale", tmp_path)
    needed = readelf_dynamic(so)["NEEDED"]
    assert [n for n in needed if n.startswith("libcu")] == ["libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13"], needed
    check_auditwheel(path, {"libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13"})
    # The aarch64 cuBLAS was linked: its copy in build-dir is AArch64.
    arm_lib = project / "build/cudawheel/aarch64/site/nvidia/cu13/lib/libcublas.so.13"
    assert "AArch64" in run(["readelf", "-h", arm_lib]).stdout

    site = tmp_path / "arm-site"
    install_for_arm(path, site)
    code = ("import cublas_scale as m\nprint('runtime', m.runtime_version())\n"
            "try:\n    m.cublas_version()\nexcept RuntimeError as e:\n    print('no device:', e)\n")
    out = run_arm(arm_root, site, code).stdout
    assert re.search(r"^runtime 13\d{3}$", out, re.M) and "no device:" in out, out

"""cudawheel's own release (scripts/release.sh): what PyPI gets, and where it installs and builds.

The release is built once per module (without optimisation, CUDAWHEEL_BACKEND_PROFILE=dev: the
same files, tags and glibc floor as the optimised build, minutes faster) and cached under
CUDAWHEEL_TEST_CACHE/release/<key>, the key a hash of every file git would put in a commit (the
sdist carries them all), the tool pins inside release.sh among them. It holds exactly: the abi3
wheels for x86_64 and aarch64, the free-threaded cp313t wheel and the sdist. Each wheel's tag is
manylinux_2_17 as its WHEEL file says, its extension is ELF code for its machine with no glibc
symbol above 2.17, and `auditwheel show` derives the same tag; release.sh's own check refuses a
wheel that claims a lower glibc than its symbols need (the control: the development wheel of
scripts/build-backend.sh renamed to manylinux_2_17).

Where each is installed and used:
- the x86_64 abi3 wheel, in a Debian bullseye root (glibc 2.31, Debian's python3.9:
  scripts/env/make-old-root.sh), builds the saxpy CUDA example with nvcc 13 from NVIDIA's wheels
  and that root's g++ 10, and the example imports there and calls into libcudart; the
  development wheel does not even import there (the control);
- the same wheel cross-builds saxpy for aarch64 here (zig), and the aarch64 abi3 wheel runs in
  the Debian arm64 root under qemu-user (scripts/env/make-arm64-root.sh): python3.11 imports it,
  its audit reads that aarch64 CUDA wheel, its sdist hook packs the project, and the example
  imports there; the x86_64 wheel's module does not load there (the control). A CUDA build on
  aarch64 itself cannot run here: qemu-user without binfmt_misc runs the interpreter, not the
  aarch64 nvcc and compiler it would start;
- the cp313t wheel is the one pip picks from the release folder for a free-threaded CPython
  3.13 (scripts/env/python-ft.sh), which refuses the abi3 wheels (the control); it imports and
  resolves a project there;
- the sdist builds (pip, build isolation) into a wheel that installs and runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import CACHE, REPO, ZIG_REQUIREMENT, Wheel, clean_env, copy_example, make_venv, run, zig_env

VERSION = re.search(r'^version = "([^"]+)"', (REPO / "Cargo.toml").read_text(), re.M).group(1)
TAG = "manylinux2014_{0}.manylinux_2_17_{0}"
EXPECTED = {
    "x86_64": f"cudawheel-{VERSION}-cp39-abi3-{TAG.format('x86_64')}.whl",
    "aarch64": f"cudawheel-{VERSION}-cp39-abi3-{TAG.format('aarch64')}.whl",
    "cp313t": f"cudawheel-{VERSION}-cp313-cp313t-{TAG.format('x86_64')}.whl",
    "sdist": f"cudawheel-{VERSION}.tar.gz",
}
NVIDIA = ["nvidia-cuda-nvcc>=13,<14", "nvidia-cuda-cccl>=13,<14", "nvidia-cuda-runtime>=13,<14"]


def input_key() -> str:
    """A hash of every file git would commit (tracked or not ignored), and of the profile."""
    names = run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO).stdout.split("\0")
    h = hashlib.sha256(b"dev\0")
    for name in sorted(n for n in names if n):
        path = REPO / name
        if path.is_file():
            h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:20]


@pytest.fixture(scope="module")
def release() -> dict[str, Path]:
    """scripts/release.sh's output, built once for this checkout's content."""
    base = CACHE / "release"
    out = base / input_key()
    if not (out / ".complete").is_file():
        shutil.rmtree(base, ignore_errors=True)  # older checkouts' releases
        out.mkdir(parents=True)
        env = clean_env(CUDAWHEEL_BACKEND_PROFILE="dev", CUDAWHEEL_TEST_CACHE=CACHE)
        proc = run(["bash", REPO / "scripts/release.sh", out], env=env, timeout=3600)
        print(proc.stderr)
        (out / ".complete").write_text(proc.stdout)
    found = sorted(p.name for p in out.glob("cudawheel-*"))
    assert found == sorted(EXPECTED.values()), found
    return {kind: out / name for kind, name in EXPECTED.items()}


def auditwheel_tag(wheel: Path) -> str:
    proc = run([sys.executable, "-m", "auditwheel", "show", "--json", wheel], env=clean_env())
    return json.loads(proc.stdout)["overall_tag"]


def glibc_max(so: Path) -> tuple[int, ...]:
    text = run(["objdump", "-T", so]).stdout
    return max(tuple(int(x) for x in v.split(".")) for v in re.findall(r"\bGLIBC_([0-9.]+)\b", text))


@pytest.mark.parametrize("kind", ["x86_64", "aarch64", "cp313t"])
def test_release_wheel_tags_agree_with_auditwheel(kind, release, tmp_path):
    wheel = Wheel(release[kind])
    wheel.check_record()
    arch = "aarch64" if kind == "aarch64" else "x86_64"
    pyver = "cp313-cp313t" if kind == "cp313t" else "cp39-abi3"
    tags = [line.split(": ", 1)[1] for line in wheel.read(f"{wheel.dist_info}/WHEEL").decode().splitlines()
            if line.startswith("Tag: ")]
    assert tags == [f"{pyver}-manylinux2014_{arch}", f"{pyver}-manylinux_2_17_{arch}"], tags
    suffix = "cpython-313t-x86_64-linux-gnu.so" if kind == "cp313t" else "abi3.so"
    so = wheel.extract(f"cudawheel/_core.{suffix}", tmp_path)
    machine = {"x86_64": "Advanced Micro Devices X86-64", "aarch64": "AArch64"}[arch]
    assert re.search(rf"Machine:\s+{machine}$", run(["readelf", "-h", so]).stdout, re.M)
    assert glibc_max(so) <= (2, 17), glibc_max(so)
    assert auditwheel_tag(release[kind]) == f"manylinux_2_17_{arch}"


def test_release_check_refuses_a_wrong_tag(release, wheelhouse, tmp_path):
    """The development wheel (this machine's glibc) renamed to the release's tag: release.sh's
    check says what auditwheel finds instead."""
    (dev,) = wheelhouse.glob("cudawheel-*-cp39-abi3-*.whl")
    plat = dev.name[: -len(".whl")].split("-")[-1]
    assert "2_17" not in plat, plat
    renamed = tmp_path / dev.name.replace(plat, TAG.format("x86_64"))
    shutil.copy(dev, renamed)
    check = [sys.executable, REPO / "scripts/dev/check-release-tag.py"]
    proc = run([*check, renamed, "28"], env=clean_env(), check=False)
    assert proc.returncode == 1, proc
    assert re.search(r"tagged manylinux_2_17_x86_64, but auditwheel show finds manylinux_2_(3\d)_x86_64", proc.stderr), proc.stderr
    ok = run([*check, release["x86_64"], "28"], env=clean_env())
    assert "auditwheel show agrees (manylinux_2_17_x86_64)" in ok.stdout


def test_sdist_builds(release, tmp_path):
    """The sdist has the whole crate (Cargo.lock included) and pip builds a wheel from it that
    installs and runs (cargo's target folder is the checkout's, for its compiled dependencies)."""
    with tarfile.open(release["sdist"]) as tar:
        names = set(tar.getnames())
    top = f"cudawheel-{VERSION}"
    assert {f"{top}/Cargo.lock", f"{top}/PKG-INFO", f"{top}/src/lib.rs", f"{top}/python/cudawheel/__init__.py"} <= names
    env = clean_env(CARGO_TARGET_DIR=os.environ.get("CARGO_TARGET_DIR", REPO / "target"), MATURIN_PEP517_ARGS="--profile dev")
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", tmp_path / "w", release["sdist"]], env=env, timeout=1800)
    (built,) = (tmp_path / "w").glob("cudawheel-*.whl")
    assert built.name.startswith(f"cudawheel-{VERSION}-cp39-abi3-"), built.name
    py = make_venv(tmp_path / "v")
    run([py, "-m", "pip", "install", "-q", "--no-index", built], env=clean_env())
    out = run([py, "-m", "cudawheel", "doctor", copy_example("saxpy", tmp_path)], env=clean_env(), check=False)
    assert "Project: saxpy 0.1.0" in out.stdout, out.stdout + out.stderr


# --- the x86_64 wheel on glibc 2.31 -------------------------------------------------------------

OLD_PLATFORMS = [a for n in range(17, 32) for a in ("--platform", f"manylinux_2_{n}_x86_64")] + [
    "--platform", "manylinux2014_x86_64"]


def pip_target(dest: Path, pyver: str, platforms: list[str], *reqs) -> None:
    """Unpacks wheels as pip installs them for another interpreter or machine (no pip there)."""
    run([sys.executable, "-m", "pip", "install", "-q", "--only-binary=:all:", "--python-version", pyver,
         *platforms, "--target", dest, *reqs], env=clean_env(), timeout=1800)


IMPORT_SAXPY = """
import platform, sys, saxpy
print("python", sys.version.split()[0], platform.machine())
print("runtime", saxpy.runtime_version())
try:
    saxpy.device_count()
except RuntimeError as e:
    print("no device:", e)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="debootstrap and chroot need root (CI runs as root)")
def test_x86_64_wheel_builds_an_example_on_glibc_2_31(release, wheelhouse):
    root = Path(run(["bash", REPO / "scripts/env/make-old-root.sh", CACHE / "old-root/bullseye", "dev"],
                    env=clean_env(), timeout=1800).stdout.strip().splitlines()[-1])
    work = root / "tmp" / f"cudawheel-release-{os.getpid()}"
    inside = "/" + str(work.relative_to(root))
    chroot = shutil.which("chroot") or "/usr/sbin/chroot"

    def in_root(*cmd, site: str, check=True):
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/root", "PYTHONPATH": f"{inside}/{site}"}
        return run([chroot, root, *cmd], env=env, check=check, timeout=900)

    try:
        pip_target(work / "site", "3.9", OLD_PLATFORMS, release["x86_64"], *NVIDIA)
        shutil.copytree(REPO / "examples/saxpy", work / "saxpy")
        build = in_root("python3.9", "-m", "cudawheel", "wheel", f"{inside}/saxpy", "-o", f"{inside}/out",
                        "-C", "archs=90", site="site")
        assert re.search(r"building saxpy-cu13 0\.1\.0 for CUDA 13 \(nvcc 13\.\d+\.\d+ from NVIDIA wheels", build.stderr), build.stderr
        (built,) = (work / "out").glob("*.whl")
        m = re.fullmatch(r"saxpy_cu13-0\.1\.0-cp39-abi3-manylinux_2_(\d+)_x86_64\.whl", built.name)
        assert m and int(m.group(1)) <= 31, built.name
        zipfile.ZipFile(built).extractall(work / "site")
        out = in_root("python3.9", "-c", IMPORT_SAXPY, site="site").stdout
        assert "python 3.9.2 x86_64" in out and re.search(r"^runtime 13\d{3}$", out, re.M), out
        assert "no device:" in out, out
        # Control: the development wheel needs this machine's newer glibc.
        (dev,) = wheelhouse.glob("cudawheel-*.whl")
        zipfile.ZipFile(dev).extractall(work / "dev-site")
        proc = in_root("python3.9", "-c", "import cudawheel._core", site="dev-site", check=False)
        assert proc.returncode != 0 and re.search(r"version `GLIBC_2\.3\d' not found", proc.stderr), proc.stderr
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --- the aarch64 wheel under qemu ---------------------------------------------------------------

ARM_PLATFORMS = [a for n in (17, 26, 27, 28) for a in ("--platform", f"manylinux_2_{n}_aarch64")] + [
    "--platform", "manylinux2014_aarch64"]

ARM_BACKEND = """
import json, os, platform, sys, tarfile
import cudawheel, cudawheel._core as core
print("machine", platform.machine(), "module", os.path.basename(core.__file__))
os.chdir(sys.argv[1])
name = cudawheel.build_sdist(sys.argv[2])
with tarfile.open(os.path.join(sys.argv[2], name)) as t:
    print("sdist", name, sorted(n for n in t.getnames() if n.endswith(".cu")))
"""


def test_aarch64_wheel_runs_in_the_arm64_root(release, tmp_path):
    root = Path(run(["bash", REPO / "scripts/env/make-arm64-root.sh", CACHE / "arm64-root/bookworm"],
                    timeout=1800).stdout.strip().splitlines()[-1])
    arm_python = root / "usr/bin/python3.11"

    def on_arm(site: Path, *args, check=True):
        return run(["qemu-aarch64-static", "-L", root, arm_python, *args],
                   env=clean_env(PYTHONPATH=site), cwd=tmp_path, check=check, timeout=900)

    # The x86_64 release wheel cross-builds the example for aarch64 (zig, NVIDIA's x86_64 nvcc).
    host = make_venv(tmp_path / "host")
    run([host, "-m", "pip", "install", "-q", release["x86_64"], *NVIDIA, ZIG_REQUIREMENT], env=clean_env())
    project = copy_example("saxpy", tmp_path)
    run([host, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "out", "-C", "target=aarch64"], env=zig_env())
    (example,) = (tmp_path / "out").glob("*.whl")
    assert example.name == "saxpy_cu13-0.1.0-cp39-abi3-manylinux_2_28_aarch64.whl", example.name

    site = tmp_path / "arm-site"
    pip_target(site, "3.11", ARM_PLATFORMS, release["aarch64"], *Wheel(example).field("Requires-Dist"))
    (tmp_path / "sdist").mkdir()
    out = on_arm(site, "-c", ARM_BACKEND, project, tmp_path / "sdist").stdout
    assert "machine aarch64 module _core.abi3.so" in out, out
    assert "sdist saxpy_cu13-0.1.0.tar.gz ['saxpy_cu13-0.1.0/csrc/saxpy.cu']" in out, out
    audit = on_arm(site, "-m", "cudawheel", "audit", example).stdout
    assert audit.startswith("OK"), audit
    zipfile.ZipFile(example).extractall(site)
    out = on_arm(site, "-c", IMPORT_SAXPY).stdout
    assert "aarch64" in out and re.search(r"^runtime 13\d{3}$", out, re.M) and "no device:" in out, out

    # Control: the x86_64 wheel's module is not code for this machine.
    x86_site = tmp_path / "x86-site"
    zipfile.ZipFile(release["x86_64"]).extractall(x86_site)
    proc = on_arm(x86_site, "-c", "import cudawheel._core", check=False)
    assert proc.returncode != 0 and "ImportError" in proc.stderr, proc.stderr


# --- the free-threaded wheel --------------------------------------------------------------------


def test_free_threaded_wheel_installs_in_its_interpreter(release, tmp_path):
    ft = run(["bash", REPO / "scripts/env/python-ft.sh"], env=clean_env(CUDAWHEEL_TEST_CACHE=CACHE),
             timeout=3600).stdout.strip().splitlines()[-1]
    venv = tmp_path / "ft"
    run([ft, "-m", "venv", venv])
    py = venv / "bin/python"
    assert run([py, "-c", "import sysconfig; print(sysconfig.get_config_var('Py_GIL_DISABLED'))"]).stdout.strip() == "1"
    # pip picks the cp313t wheel out of the whole release folder.
    run([py, "-m", "pip", "install", "-q", "--no-index", "--find-links", release["cp313t"].parent, "cudawheel"],
        env=clean_env())
    files = run([py, "-m", "pip", "show", "-f", "cudawheel"], env=clean_env()).stdout
    assert "cudawheel/_core.cpython-313t-x86_64-linux-gnu.so" in files, files
    out = run([py, "-m", "cudawheel", "doctor", copy_example("saxpy", tmp_path)], env=clean_env(), check=False)
    assert "Project: saxpy 0.1.0" in out.stdout, out.stdout + out.stderr
    # Control: the abi3 wheel is not for this interpreter.
    proc = run([py, "-m", "pip", "install", "--no-index", "--dry-run", release["x86_64"]], env=clean_env(), check=False)
    assert proc.returncode != 0 and "is not a supported wheel on this platform" in proc.stderr, proc.stderr

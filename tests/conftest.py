"""Shared fixtures: the backend wheel (built once), toolchains (installed once), venvs.

Everything here is real: real nvcc from NVIDIA's wheels, real pip, real venvs. Slow pieces are
session-scoped and cached under .cache/ (pip cache, toolchains) so one CI run pays once.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import shutil
import socket
import subprocess
import sys
import time
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("CUDAWHEEL_TEST_CACHE", REPO / ".cache"))
EXAMPLES = REPO / "examples"


# Test tiers. A test's markers come from what it needs: the fixtures it uses (pytest's closure,
# so a fixture built on `torch_python` marks its tests `torch` too) and, for needs no fixture
# shows, its module. Nobody writes them on a test. `slow` is everything outside the fast tier
# (`python -m pytest -m "not slow"`, run before every commit): any need but `cuda`, and the
# tests measured over about 10 s each with warm caches (SLOW_MODULES, SLOW_TESTS below).
TIERS = {
    "cuda": "compiles CUDA code with nvcc (the toolkits are installed once and cached)",
    "torch": "installs torch and its CUDA wheels (GBs)",
    "jax": "installs jax and jaxlib",
    "root": "runs in a Debian root (bullseye, or arm64 under qemu-user)",
    "interpreter": "needs another CPython: the free-threaded 3.13t built from source, or pyenv's",
    "service": "starts a server (redis, sccache's scheduler and build server)",
    "slow": "outside the fast tier: any need but cuda, or over about 10 s with warm caches",
}
NEEDS_BY_FIXTURE = {
    "cu13_home": "cuda", "toolkit_python": "cuda", "zig_python": "cuda",
    "torch_python": "torch", "torch_facts": "torch",
    "jax_python": "jax", "jax_wrapped": "jax",
    "redis": "service", "cross_python": "root",
    "ft_python": "interpreter", "py312": "interpreter",
}
NEEDS_BY_MODULE = {
    "test_cross": {"root", "cuda"}, "test_release": {"root", "interpreter", "cuda"},
    "test_dist": {"service", "cuda"}, "test_sccache": {"service", "cuda"},
    "test_free_threaded": {"interpreter", "cuda"}, "test_jax": {"jax", "cuda"},
    "test_torch": {"torch", "cuda"}, "test_torch_stable": {"torch", "cuda"},
    "test_multi_major_torch": {"torch", "cuda"},
}
# Measured with `bash scripts/test.sh --durations=0` on a cold 2-core machine: modules whose
# fixtures build for over a minute, then single tests over 8 s in the other modules (those
# NEEDS_BY_MODULE already makes slow are not repeated).
SLOW_MODULES = {
    "test_ccache", "test_dominating", "test_frontends", "test_import_check", "test_incremental",
    "test_layouts", "test_libraries", "test_manylinux", "test_memory_pressure", "test_mixed", "test_multi_major", "test_porting",
    "test_python_toolkit", "test_repair", "test_scale", "test_sdist", "test_size_budget", "test_split",
    "test_variants", "test_wheel_size", "test_wrap", "test_wrap_wild",
}
SLOW_TESTS = {
    "test_import_check::test_the_verdict_fires_at_import",
    "test_errors::test_manylinux_refuses_a_libstdcxx_library",
    "test_errors::test_manylinux_names_a_too_new_symbol",
    "test_errors::test_api_newer_than_the_runtime_wheel_linked",
    "test_archs::test_target_archs_reach_nvcc_exactly",
    "test_archs::test_thread_budget_and_memory_admission",
    "test_archs::test_sass_for_another_arch_is_an_import_error_naming_the_device",
    "test_archs::test_doctor_shows_the_archs_and_where_they_come_from",
    "test_bindings::test_example_builds_and_imports",
}
# The heaviest modules run only with CUDAWHEEL_SLOW_TESTS=1 (before a release, and when a change
# touches what they prove): about 20 minutes of a cold 2-core run together, beyond what CI's
# 90 minutes hold beside the rest of the suite.
SLOW_ONLY = {
    "test_release": "the release artifacts (three wheels and the sdist built again, the arm64 root under qemu)",
    "test_cross": "aarch64 cross builds run in the arm64 root under qemu",
    "test_dist": "the sccache-dist build cluster (sccache built from source)",
}


def pytest_configure(config):
    for name, doc in TIERS.items():
        config.addinivalue_line("markers", f"{name}: {doc}")


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.path.stem
        needs = {NEEDS_BY_FIXTURE[f] for f in item.fixturenames if f in NEEDS_BY_FIXTURE}
        needs |= NEEDS_BY_MODULE.get(module, set())
        base = item.nodeid.split("[")[0].rsplit("::", 1)[-1]
        if needs - {"cuda"} or module in SLOW_MODULES or f"{module}::{base}" in SLOW_TESTS:
            needs.add("slow")
        for name in sorted(needs):
            item.add_marker(getattr(pytest.mark, name))
        if module in SLOW_ONLY and os.environ.get("CUDAWHEEL_SLOW_TESTS") != "1":
            item.add_marker(pytest.mark.skip(reason=f"CUDAWHEEL_SLOW_TESTS=1: {SLOW_ONLY[module]}"))


def run(cmd, *, env=None, cwd=None, check=True, timeout=900):
    """Runs a command (never through a shell) and returns the CompletedProcess, text mode."""
    proc = subprocess.run(
        [str(c) for c in cmd], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"command failed ({proc.returncode}): {' '.join(map(str, cmd))}\n"
            f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
        )
    return proc


def clean_env(**extra):
    """The environment without anything that would point cudawheel at a toolkit."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CUDAWHEEL_", "CUDA_", "PIP_FIND_LINKS", "PYTHONPATH"))
           and k not in ("CUDACXX", "CUDAARCHS", "TORCH_CUDA_ARCH_LIST", "CUDAHOSTCXX", "SOURCE_DATE_EPOCH")}
    env["PIP_CACHE_DIR"] = str(CACHE / "pip")
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.update({k: str(v) for k, v in extra.items()})
    return env


def build_wheel(py, project, out, *settings, args=(), env=None, check=True, timeout=900):
    """The suite's one build: `py -m cudawheel wheel PROJECT -o OUT -C SETTING... ARGS...` in
    `env` (default `clean_env()`); `ARGS` come last, so a `-C` there wins over `settings`.
    Returns (the wheel cudawheel printed last on stdout, or None when the build failed, the
    CompletedProcess)."""
    cmd = [py, "-m", "cudawheel", "wheel", project, "-o", out]
    for setting in settings:
        cmd += ["-C", setting]
    proc = run([*cmd, *args], env=env or clean_env(), check=check, timeout=timeout)
    lines = proc.stdout.strip().splitlines()
    return (Path(lines[-1]) if proc.returncode == 0 and lines else None), proc


def pyproject(name: str, *, version: str = "0.1.0", tool: str = "", project_extra: str = "",
              requires: tuple[str, ...] = ("cudawheel",), after: str = "") -> str:
    """The suite's one pyproject.toml builder: cudawheel as the backend, `[project]` with `name`,
    `version` and `project_extra` lines, `[tool.cudawheel]` with `tool` lines, then `after`
    (extension tables, other tables)."""
    reqs = ", ".join(f'"{r}"' for r in requires)
    return (f'[build-system]\nrequires = [{reqs}]\nbuild-backend = "cudawheel"\n\n'
            f'[project]\nname = "{name}"\nversion = "{version}"\n{project_extra}\n'
            f'[tool.cudawheel]\n{tool}\n{after}')


def jax_floor_release(jaxlib: str) -> str:
    """The release in the jax floor a wheel built with jaxlib `jaxlib` gets: its first three
    parts, a local part dropped (0.12.0.1 -> 0.12.0)."""
    return ".".join(jaxlib.split("+")[0].split(".")[:3])


@pytest.fixture(scope="module")
def scratch(request, tmp_path_factory):
    """`scratch(name)`: a folder for one test module's fixtures, removed when the module is done
    unless one of its tests failed. The suite builds GBs of venvs and wheels; pytest would keep
    every module's folders until the session ends (function-scoped `tmp_path` folders go as soon
    as their test passes: `tmp_path_retention_policy = "failed"`)."""
    made: list[Path] = []
    failed_before = request.session.testsfailed

    def mk(name: str) -> Path:
        made.append(tmp_path_factory.mktemp(name))
        return made[-1]

    yield mk
    if request.session.testsfailed == failed_before:
        for folder in made:
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory) -> Path:
    """A folder holding only the cudawheel wheel (built once per session, or given by CI)."""
    given = os.environ.get("CUDAWHEEL_WHEELHOUSE")
    if given:
        assert list(Path(given).glob("cudawheel-*.whl")), f"no cudawheel wheel in {given}"
        return content_addressed(Path(given), tmp_path_factory.getbasetemp())
    out = tmp_path_factory.mktemp("wheelhouse")
    run(["bash", REPO / "scripts/build-backend.sh", out])
    return content_addressed(out, tmp_path_factory.getbasetemp())


def content_addressed(given: Path, base: Path) -> Path:
    """The wheels under `given` copied into a folder named by their content. uv takes a
    find-links wheel for immutable (its file name is its identity) and installs the copy it
    cached from the same folder on an earlier run: CI's checkout path never changes, so a
    backend built from a newer commit under the same name was installed as an older one."""
    wheels = sorted(given.rglob("cudawheel-*.whl"))
    digest = hashlib.sha256()
    for wheel in wheels:
        digest.update(str(wheel.relative_to(given)).encode() + b"\0" + wheel.read_bytes())
    out = base / f"wheelhouse-{digest.hexdigest()[:16]}"
    for wheel in wheels:
        target = out / wheel.relative_to(given)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(wheel, target)
    return out


_TOOLKITS: dict[int, Path] = {}


def toolkit_home(major: int) -> Path:
    """A CUDA toolkit root for `major` (installed once by the project's installer, cached in
    .cache/toolchains), usable as CUDA_HOME."""
    if major not in _TOOLKITS:
        proc = run(["bash", REPO / "scripts/env/install-cuda.sh", str(major), CACHE / f"toolchains/cu{major}"],
                   env=clean_env())
        _TOOLKITS[major] = Path(proc.stdout.strip().splitlines()[-1])
    return _TOOLKITS[major]


# nvcc 11.8 refuses gcc 12; the installer puts g++-11 on the machine.
HOST_CXX = {11: "g++-11", 12: "g++", 13: "g++"}


@pytest.fixture(scope="session")
def cu13_home() -> Path:
    """A CUDA 13 toolkit root (from PyPI, via the project's installer), usable as CUDA_HOME."""
    return toolkit_home(13)


def make_venv(path: Path) -> Path:
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    return path / "bin" / "python"


@pytest.fixture(scope="session")
def backend_python(tmp_path_factory, wheelhouse) -> Path:
    """A venv with only cudawheel in it (no CUDA): for direct hook calls and error cases."""
    py = make_venv(tmp_path_factory.mktemp("backend-venv") / "v")
    run([py, "-m", "pip", "install", "-q", "--no-index", "--find-links", wheelhouse, "cudawheel"], env=clean_env())
    return py


@pytest.fixture(scope="session")
def toolkit_python(tmp_path_factory, wheelhouse) -> Path:
    """cudawheel plus NVIDIA's CUDA 13 toolkit wheels: for builds without build isolation."""
    py = make_venv(tmp_path_factory.mktemp("toolkit-venv") / "v")
    run([py, "-m", "pip", "install", "-q", "--find-links", wheelhouse, "cudawheel",
         "nvidia-cuda-nvcc>=13,<14", "nvidia-cuda-cccl>=13,<14", "nvidia-cuda-runtime>=13,<14"], env=clean_env())
    return py


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def redis(tmp_path):
    """A Redis server of its own on a free loopback port, no persistence (Debian's
    redis-server, scripts/env/install-redis.sh); stopped after the test. Yields its URL."""
    server = shutil.which("redis-server")
    assert server, "redis-server comes from Debian: bash scripts/env/install-redis.sh"
    port = free_port()
    (tmp_path / "redis").mkdir()
    proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(tmp_path / "redis")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    yield f"redis://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=20)


def copy_example(name: str, dest: Path) -> Path:
    target = dest / name
    shutil.copytree(EXAMPLES / name, target, ignore=shutil.ignore_patterns("build", "__pycache__", "*.so"))
    return target


class Wheel:
    """A built wheel, opened for assertions."""

    def __init__(self, path: Path):
        self.path = path
        self.zip = zipfile.ZipFile(path)
        self.names = self.zip.namelist()
        self.dist_info = next(n.split("/")[0] for n in self.names if n.split("/")[0].endswith(".dist-info"))

    def read(self, name: str) -> bytes:
        return self.zip.read(name)

    def metadata(self) -> list[tuple[str, str]]:
        text = self.read(f"{self.dist_info}/METADATA").decode()
        head = text.split("\n\n", 1)[0]
        return [tuple(line.split(": ", 1)) for line in head.splitlines()]

    def field(self, key: str) -> list[str]:
        return [v for k, v in self.metadata() if k == key]

    def check_record(self) -> list[str]:
        """Asserts every RECORD hash and size matches; returns the paths listed."""
        rows = list(csv.reader(io.StringIO(self.read(f"{self.dist_info}/RECORD").decode())))
        listed = []
        for path, digest, size in rows:
            listed.append(path)
            if path == f"{self.dist_info}/RECORD":
                assert digest == "" and size == ""
                continue
            data = self.read(path)
            algo, _, b64 = digest.partition("=")
            assert algo == "sha256"
            expect = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert b64 == expect, f"RECORD hash mismatch for {path}"
            assert int(size) == len(data), f"RECORD size mismatch for {path}"
        assert sorted(listed) == sorted(self.names), "RECORD must list exactly the wheel's files"
        return listed

    def extract(self, member: str, dest: Path) -> Path:
        return Path(self.zip.extract(member, dest))


def readelf_dynamic(path: Path) -> dict[str, list[str]]:
    """NEEDED / RPATH / RUNPATH as readelf -d shows them."""
    out = run(["readelf", "-d", path]).stdout
    result = {"NEEDED": [], "RPATH": [], "RUNPATH": []}
    for line in out.splitlines():
        for key in result:
            if f"({key})" in line:
                result[key].append(line.split("[", 1)[1].rsplit("]", 1)[0])
    return result


# `manylinux = "2_N"` builds with zig. zig builds libc++ once per target glibc and
# optimisation mode (2-3 minutes on 2 cores) and caches it: one cache under .cache/ for the run.
ZIG_REQUIREMENT = "ziglang>=0.17,<0.18"


def zig_env(**extra):
    """clean_env() with zig's cache in .cache/zig."""
    return clean_env(ZIG_GLOBAL_CACHE_DIR=CACHE / "zig", **extra)


@pytest.fixture(scope="session")
def zig_python(tmp_path_factory, wheelhouse) -> Path:
    """cudawheel, NVIDIA's CUDA 13 toolkit wheels, zig (ziglang) and pybind11: zig-mode builds
    without build isolation."""
    py = make_venv(tmp_path_factory.mktemp("zig-venv") / "v")
    run([py, "-m", "pip", "install", "-q", "--find-links", wheelhouse, "cudawheel",
         "nvidia-cuda-nvcc>=13,<14", "nvidia-cuda-cccl>=13,<14", "nvidia-cuda-runtime>=13,<14",
         ZIG_REQUIREMENT, "pybind11>=2.12"], env=clean_env())
    return py


# torch (shared with the porting example, tiny_conv). torch with its CUDA wheels is several
# GB: every venv comes from uv's cache (CACHE/uv, hard links), so only the first run on a machine
# downloads them.
# What the torch venvs hold: PyPI's CUDA 13 torch and the nvcc its cuda-toolkit pin chooses.
TORCH_REQS = ["torch>=2.11", "cuda-toolkit[cccl,cudart,nvcc]>=13,<14"]


def uv():
    exe = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    assert Path(exe).exists(), "uv is missing: pip install -r requirements-dev.txt"
    return exe


def uv_env(wheelhouse, **extra):
    return clean_env(UV_CACHE_DIR=CACHE / "uv", UV_FIND_LINKS=wheelhouse, PIP_FIND_LINKS=wheelhouse,
                     UV_PYTHON_DOWNLOADS="never", **extra)


def new_venv(path: Path, wheelhouse, *reqs) -> Path:
    run([uv(), "venv", "-q", "-p", sys.executable, path], env=uv_env(wheelhouse))
    py = path / "bin" / "python"
    if reqs:
        run([uv(), "pip", "install", "-q", "-p", py, *reqs], env=uv_env(wheelhouse), timeout=1800)
    return py


@pytest.fixture(scope="session")
def torch_python(tmp_path_factory, wheelhouse) -> Path:
    """cudawheel + PyPI's torch + the matching nvcc: builds without isolation."""
    return new_venv(tmp_path_factory.mktemp("torch-venv") / "v", wheelhouse, "cudawheel", *TORCH_REQS)


@pytest.fixture(scope="session")
def torch_facts(torch_python) -> dict:
    out = run([torch_python, "-c", "import torch; print(torch.__version__); print(torch.version.cuda)"]).stdout
    version, cuda = out.split()
    major, minor = (int(x) for x in version.split(".")[:2])
    return {"version": version, "minor": (major, minor), "cuda": cuda}


# tests/data holds projects the tests build, not tests: other projects' own test files in it
# (upstream/*/tests/*_test.py) run only where a test installs what they need.
collect_ignore = ["data"]

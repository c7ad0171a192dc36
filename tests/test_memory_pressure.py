"""Memory admission under real memory pressure.

A container or a CI job with a memory limit runs the build in a memory cgroup: the kernel kills
a compiler once the cgroup's limit is reached, whatever MemAvailable (the machine's) says. The
build here runs in a fresh memory cgroup of 1 GiB (scripts/bench/memcgroup.py: root and a writable
memory controller, as on CI) with `jobs = 2`; the project is the memory benchmark's
(scripts/bench/bench_memory.py: CUB radix sort, reduce and scan over several types), for sm_90 only:
each file's nvcc peaks at about 0.6 GiB, so one fits in the limit and two at once do not.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import REPO, clean_env

sys.path.insert(0, str(REPO / "scripts/bench"))
import bench_memory  # noqa: E402  (the memory benchmark's project generator)
from memcgroup import MemoryCgroup  # noqa: E402

pytestmark = pytest.mark.skipif(MemoryCgroup.unavailable() is not None,
                                reason=f"no memory cgroup here: {MemoryCgroup.unavailable()}")

LIMIT = 1 << 30


def in_cgroup(cmd: list) -> tuple[subprocess.CompletedProcess, int, int]:
    """Runs `cmd` in a fresh memory cgroup of LIMIT: (process, the cgroup's peak, OOM kills)."""
    with MemoryCgroup(LIMIT) as cg:
        proc = subprocess.run([str(c) for c in cmd], preexec_fn=cg.join, env=clean_env(),
                              capture_output=True, text=True, timeout=900)
        return proc, cg.peak(), cg.oom_kills()


def test_a_build_in_a_memory_limited_cgroup_stays_under_the_limit(toolkit_python, tmp_path):
    project = bench_memory.make_project(tmp_path / "p", 1, "90")
    doctor, _, _ = in_cgroup([toolkit_python, "-m", "cudawheel", "doctor", project])
    assert doctor.returncode == 0, doctor.stderr
    assert re.search(r"Memory for parallel steps: \d+ MiB \(from the memory cgroup /sys/fs/cgroup/\S+ "
                     r"\(limit 1\.0 GiB", doctor.stdout + doctor.stderr), doctor.stdout
    wheel = [toolkit_python, "-m", "cudawheel", "wheel", project, "-C", "jobs=2", "-C", "verbose=true"]
    proc, peak, kills = in_cgroup([*wheel, "-o", tmp_path / "out"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (kills, peak <= LIMIT) == (0, True), (kills, peak)
    assert len(list((tmp_path / "out").glob("cwmem*-1.0-*.whl"))) == 1
    log = proc.stderr
    assert "memory for parallel steps:" in log and "(the memory cgroup /sys/fs/cgroup/" in log, log
    # The three compiles ran one at a time: each expected 1 GiB (never measured here), which does
    # not fit beside another under the cgroup's room.
    admits = re.findall(r"^cudawheel: admit nvcc csrc/k\d\.cu: (\d+) running", log, re.M)
    assert admits == ["1", "1", "1"], log
    assert "waits for memory" in log

    # Control: the same build allowed 64 GiB (what MemAvailable alone would give on a big
    # machine) runs two compiles at once and the kernel kills one; the error says why.
    proc, peak, kills = in_cgroup([*wheel, "-o", tmp_path / "control", "-C", "max-memory=64G",
                                   "-C", "build-dir=build/control"])
    assert proc.returncode != 0 and kills >= 1, (proc.returncode, kills, proc.stderr[-2000:])
    assert re.search(r"admit nvcc csrc/k\d\.cu: 2 running", proc.stderr), proc.stderr
    assert "out-of-memory killer" in proc.stderr and "max-memory" in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert not list((tmp_path / "control").glob("*.whl"))

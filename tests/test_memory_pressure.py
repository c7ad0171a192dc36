"""Memory admission under real memory pressure.

A container or a CI job with a memory limit runs the build in a memory cgroup: the kernel kills
a compiler once the cgroup's limit is reached, whatever MemAvailable (the machine's) says. The
build here runs in a fresh memory cgroup of 1 GiB (scripts/bench/memcgroup.py: root and a writable
memory controller, as on CI) with `jobs = 2` (the control: three); the project is the memory benchmark's
(scripts/bench/bench_memory.py: CUB radix sort, reduce and scan over several types), for sm_90 only:
each file's nvcc peaks at about 0.6 GiB, so one fits in the limit and two at once do not.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import REPO, clean_env, make_venv, run

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
    # machine) and three slots runs the three kernels at once and the kernel kills one; the
    # error says why. (With two slots, one CI run's control was not killed: max RSS counts pages
    # the cgroup charges once, and two peaks need not coincide.)
    control = [toolkit_python, "-m", "cudawheel", "wheel", project, "-C", "jobs=3", "-C", "verbose=true",
               "-C", "max-memory=64G", "-C", "build-dir=build/control", "-o", tmp_path / "control"]
    proc, peak, kills = in_cgroup(control)
    assert proc.returncode != 0 and kills >= 1, (proc.returncode, kills, proc.stderr[-2000:])
    assert re.search(r"admit nvcc csrc/k\d\.cu: [23] running", proc.stderr), proc.stderr
    assert "out-of-memory killer" in proc.stderr and "max-memory" in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert not list((tmp_path / "control").glob("*.whl"))


WRAPPED_CMAKE = """cmake_minimum_required(VERSION 3.25)
project(${SKBUILD_PROJECT_NAME} LANGUAGES CXX CUDA)
find_package(Python REQUIRED COMPONENTS Interpreter Development.Module)
file(GLOB kernels csrc/*.cu)
python_add_library(_core MODULE csrc/module.cpp ${kernels} WITH_SOABI)
install(TARGETS _core LIBRARY DESTINATION cwmem)
"""


def wrapped_project(dest):
    """The memory benchmark's project as a CMake project wrapped as the wrap-a-build guide says:
    scikit-build-core's build files, cudawheel's `[build-system]` and `build-backend`."""
    project = bench_memory.make_project(dest, 1, "")
    (project / "CMakeLists.txt").write_text(WRAPPED_CMAKE)
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["cudawheel", "scikit-build-core>=0.10"]\nbuild-backend = "cudawheel"\n'
        '[project]\nname = "cwmem"\nversion = "1.0"\n'
        '[tool.scikit-build]\nwheel.packages = ["cwmem"]\n'
        '[tool.cudawheel]\nbuild-backend = "scikit_build_core.build"\narchs = ["90"]\n')
    return project


def gate_log(project) -> list[list[str]]:
    return [ln.split("\t") for ln in (project / "build/cudawheel/memory/log").read_text().splitlines()]


def test_a_wrapped_build_admits_its_compiles_by_memory_and_remembers_their_peaks(wheelhouse, tmp_path):
    """Wrap mode: CMake's compiles go through cudawheel's launcher, which admits them by memory
    under the cgroup's room though ninja has three slots, records each one's peak in the build
    folder, and expects those peaks on the next build."""
    py = make_venv(tmp_path / "v")
    run([py, "-m", "pip", "install", "-q", "--find-links", wheelhouse, "cudawheel", "nvidia-cuda-nvcc>=13,<14",
         "nvidia-cuda-cccl>=13,<14", "nvidia-cuda-runtime>=13,<14", "scikit-build-core>=0.10", "cmake", "ninja"],
        env=clean_env())
    project = wrapped_project(tmp_path / "p")
    # Three slots: the control below runs all three kernels at once. Two at once do not always
    # reach the limit together (each one's max RSS counts pages the cgroup charges once, and
    # their peaks need not coincide): one of two runs was not killed.
    wheel = [py, "-m", "cudawheel", "wheel", project, "-C", "jobs=3"]
    proc, peak, kills = in_cgroup([*wheel, "-o", tmp_path / "out"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (kills, peak <= LIMIT) == (0, True), (kills, peak)
    assert len(list((tmp_path / "out").glob("cwmem_cu13-1.0-*.whl"))) == 1, proc.stderr[-2000:]
    log = gate_log(project)
    admits = [f for f in log if f[0] == "admit"]
    # CMake's configure probes (try_compile) pass through unadmitted.
    assert all("/_core.dir/" in f[1] for f in log), log
    nvcc = [f for f in admits if f[1].endswith(".cu.o")]
    # Each kernel ran alone: expected 1 GiB (never measured), no room beside another; the C++
    # file queued behind them.
    assert len(nvcc) == 3 and {f[2] for f in nvcc} == {"0"} and {f[4] for f in nvcc} == {"estimate"}, log
    # The limit is the cgroup's (measured): a compile the sum of expected peaks held back may also
    # start on the memory free then, never here beside a kernel (each alone nearly fills it).
    assert {f[6] for f in admits} <= {"ledger", "room"}, log
    assert any(f[0] == "wait" for f in log), log
    peaks = (project / "build/cudawheel/memory/peaks").read_text().splitlines()
    assert len([p for p in peaks if p.startswith("nvcc ")]) == 3, peaks
    assert all(300_000 < int(p.split()[1]) < 1_000_000 for p in peaks if p.startswith("nvcc ")), peaks
    # Beside each peak, how the compile's memory went: its heavy processes (nvcc's cicc, ...) in
    # the order they ended, each `name:own KiB:most held up to its end KiB`.
    profiles = [p.split("\t")[0].split()[2] for p in peaks if p.startswith("nvcc ")]
    assert all("cicc:" in p for p in profiles), peaks
    assert re.search(r"memory admission: 4 compiles under \d+ MiB \(the memory cgroup /sys/fs/cgroup/\S+ "
                     r"\(limit 1\.0 GiB.*0 expecting the peak measured in an earlier build, [1-9]\d* waited "
                     r"for memory, \d+ started on the memory free then; largest peak \d+ MiB", proc.stderr), \
        proc.stderr[-2000:]

    # The next build in the same project expects each compile's own peak.
    proc, peak, kills = in_cgroup([*wheel, "-o", tmp_path / "out2"])
    assert proc.returncode == 0 and kills == 0, proc.stderr[-3000:]
    admits = [f for f in gate_log(project) if f[0] == "admit"]
    assert [f[4] for f in admits] == ["measured"] * 4, admits
    assert {int(f[3]) for f in admits if f[1].endswith(".cu.o")} <= {
        int(p.split()[1].split("\t")[0]) * 1024 for p in peaks}, (admits, peaks)
    assert "4 expecting the peak measured in an earlier build" in proc.stderr, proc.stderr[-2000:]
    # Each kernel held its whole peak reserved only until its recorded heavier phases had ended.
    holds = [f for f in gate_log(project) if f[0] == "hold" and f[1].endswith(".cu.o")]
    admitted = {f[1]: int(f[3]) for f in admits}
    assert {f[1] for f in holds if int(f[2]) < admitted[f[1]]} == {f[1] for f in admits if f[1].endswith(".cu.o")}, holds
    assert "3 gave back memory as their heaviest phases ended" in proc.stderr, proc.stderr[-2000:]

    # Control: the same build allowed 64 GiB runs the three kernels at once and the kernel kills one.
    proc, peak, kills = in_cgroup([*wheel, "-o", tmp_path / "control", "-C", "max-memory=64G",
                                   "-C", "build-dir=build/control"])
    # It admitted kernels beside other compiles (nothing waited for memory).
    control = [ln.split("\t") for ln in (project / "build/control/memory/log").read_text().splitlines()]
    assert any(f[0] == "admit" and f[1].endswith(".cu.o") and int(f[2]) >= 1 for f in control), control
    assert proc.returncode != 0 and kills >= 1, (proc.returncode, kills, proc.stderr[-2000:])
    assert not list((tmp_path / "control").glob("*.whl"))

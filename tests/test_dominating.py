"""A file that dominates the build starts with the free slots (nvcc `--threads`, one per arch)
instead of an even share, while holding only the even share of the slots: the small files run
beside it (during its one-thread front end) rather than after it. The wheel is byte-identical
to a build that gave it none; a project where no file dominates is scheduled as before. The first build has no timings, so the
file is recognised by its estimate: a CUDA file that includes a template library (CUB here).
Control: CUDAWHEEL_EVEN_SHARE=1 (the schedule from before) gives that file one thread."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from conftest import build_wheel, clean_env, pyproject

SMALL = """__global__ void k{i}(float *x) {{ x[threadIdx.x] += {i}.0f; }}
extern "C" void small{i}(float *x) {{ k{i}<<<1, 32>>>(x); }}
"""

HEAVY = """#include <cub/block/block_reduce.cuh>
__global__ void heavy_k(const float *in, float *out) {
  using R = cub::BlockReduce<float, 128>;
  __shared__ typename R::TempStorage tmp;
  float s = R(tmp).Sum(in[threadIdx.x]);
  if (threadIdx.x == 0) *out = s;
}
extern "C" void heavy(const float *in, float *out) { heavy_k<<<1, 128>>>(in, out); }
"""

MODULE = """#define PY_SSIZE_T_CLEAN
#include <Python.h>
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_k", NULL, -1, NULL};
PyMODINIT_FUNC PyInit__k(void) { return PyModule_Create(&mod); }
"""


def project(root: Path, dominating: bool) -> Path:
    (root / "csrc").mkdir(parents=True)
    (root / "dom").mkdir()
    (root / "dom/__init__.py").write_text("")
    if dominating:
        (root / "csrc/heavy.cu").write_text(HEAVY)
    for i in range(3 if dominating else 4):
        (root / f"csrc/small{i}.cu").write_text(SMALL.format(i=i))
    (root / "csrc/module.cpp").write_text(MODULE)
    (root / "pyproject.toml").write_text(pyproject(
        "dom", version="1.0", tool='archs = ["80", "90"]',
        after='[[tool.cudawheel.extension]]\nname = "dom._k"\nsources = ["csrc/*.cu", "csrc/module.cpp"]\n'))
    return root


def build(py: Path, proj: Path, out: Path, jobs: int, **env) -> tuple[str, dict[str, str], list[str]]:
    """A cold build: the wheel's sha256, each nvcc compile's command from build.log, and every
    step's label in the order the steps finished (build.log logs each as it finishes)."""
    shutil.rmtree(proj / "build", ignore_errors=True)
    env = clean_env(CUDAWHEEL_JOBS=str(jobs), SOURCE_DATE_EPOCH="1700000000", **env)
    wheel, _ = build_wheel(py, proj, out, env=env)
    log = next((proj / "build").rglob("build.log")).read_text()
    # Each step: `== nvcc csrc/heavy.cu (1.2 s)`, then `$ <command>`.
    commands, label, finished = {}, None, []
    for line in log.splitlines():
        if line.startswith("== "):
            words = line.split()
            finished.append(words[2])
            label = words[2] if words[1] == "nvcc" else None
        elif line.startswith("$ ") and label:
            commands[label] = line
            label = None
    return hashlib.sha256(wheel.read_bytes()).hexdigest(), commands, finished


def test_a_dominating_file_gets_the_free_slots_and_the_same_wheel(toolkit_python, tmp_path):
    proj = project(tmp_path / "dominating", dominating=True)
    two, commands, finished = build(toolkit_python, proj, tmp_path / "two", 2)
    assert "--threads 2" in commands["csrc/heavy.cu"], commands["csrc/heavy.cu"]
    # It held one slot of two: a small compile ran beside it and finished first (holding
    # both, it would have finished before any other step started).
    assert finished[0] != "csrc/heavy.cu", finished
    one, commands, _ = build(toolkit_python, proj, tmp_path / "one", 1)
    assert all("--threads" not in c for c in commands.values()), commands
    assert two == one, "the split build's wheel differs from the unsplit one"
    # Control: the schedule from before time shares gives it an even share, one thread.
    even, commands, finished = build(toolkit_python, proj, tmp_path / "even", 2, CUDAWHEEL_EVEN_SHARE="1")
    assert "--threads" not in commands["csrc/heavy.cu"], commands["csrc/heavy.cu"]
    assert finished[0] != "csrc/heavy.cu", finished
    assert even == one


def test_without_a_dominating_file_the_first_compiles_share_evenly(toolkit_python, tmp_path):
    proj = project(tmp_path / "even", dominating=False)
    two, commands, _ = build(toolkit_python, proj, tmp_path / "two", 2)
    # Four equal files on two slots: the first two start with a thread each, as before.
    for first in ("csrc/small0.cu", "csrc/small1.cu"):
        assert "--threads" not in commands[first], commands[first]
    one, _, _ = build(toolkit_python, proj, tmp_path / "one", 1)
    assert two == one

#!/usr/bin/env python3
"""Memory benchmark: does cudawheel's memory-aware admission hold on template-heavy
translation units, and what does it cost against a hand-picked `-j`?

    python3 scripts/bench/bench_memory.py [--scale 1] [--runs 3] [--jobs 1,2] [--archs "80;90"]
                                    [--cgroup-limit 2G]

A generated project of several CUDA files, each instantiating CUB's device-wide algorithms
(radix sort of key/value pairs, reduce, inclusive scan: the templates CCCL-based libraries
are made of) over many types; `--scale N` multiplies the number of files and of types per file
(1 runs in a few minutes on 2 cores; use 4 or more on a big machine for multi-GB peaks).

For each setting (the default: cudawheel picks jobs, nvcc `--threads` and admits steps by
memory; then each `-C jobs=N` of --jobs) it builds the wheel from scratch (a fresh build-dir)
--runs times, interleaved, sampling the resident memory of the whole build tree (cudawheel and
every compiler under it, summed) every 50 ms. Prints one table: medians of wall time and of
the tree's peak RSS, the ratio of time against the fastest hand-picked -j, and MemAvailable at
the start. `--cgroup-limit SIZE` runs every build in a fresh memory cgroup of that size (real
memory pressure, as in a container with a memory limit; needs root, scripts/bench/memcgroup.py): a
build the kernel's out-of-memory killer stops is counted as killed, and the cgroup's own peak is
shown. Needs the CUDA 13 toolkit (scripts/env/install-cuda.sh) and the backend wheel
(scripts/build-backend.sh wheelhouse). Not a test: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memcgroup import MemoryCgroup, parse_size  # noqa: E402  (--cgroup-limit)

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("CUDAWHEEL_TEST_CACHE", ROOT / ".cache"))
WORK = ROOT / ".cache/bench-memory"

TYPES = ["int", "unsigned", "long long", "unsigned long long", "float", "double", "short",
         "unsigned short", "char", "unsigned char", "long", "unsigned long"]

HEAVY = r"""
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>

template <typename K, typename V>
static int work(int n) {
  K *k = nullptr; V *v = nullptr;
  void *tmp = nullptr; size_t bytes = 0, more = 0;
  cudaMalloc(&k, 2 * n * sizeof(K)); cudaMalloc(&v, 2 * n * sizeof(V));
  cub::DeviceRadixSort::SortPairs(tmp, bytes, k, k + n, v, v + n, n);
  cub::DeviceReduce::Sum(tmp, more, v, v + n, n); bytes = bytes > more ? bytes : more;
  cub::DeviceScan::InclusiveSum(tmp, more, k, k + n, n); bytes = bytes > more ? bytes : more;
  cudaMalloc(&tmp, bytes);
  cub::DeviceRadixSort::SortPairs(tmp, bytes, k, k + n, v, v + n, n);
  cub::DeviceReduce::Sum(tmp, bytes, v, v + n, n);
  cub::DeviceScan::InclusiveSum(tmp, bytes, k, k + n, n);
  int err = (int)cudaDeviceSynchronize();
  cudaFree(tmp); cudaFree(k); cudaFree(v);
  return err;
}
"""


def log(msg: str) -> None:
    print(f"bench_memory: {msg}", file=sys.stderr, flush=True)


def make_project(dest: Path, scale: int, archs: str) -> Path:
    shutil.rmtree(dest, ignore_errors=True)
    (dest / "csrc").mkdir(parents=True)
    (dest / "cwmem").mkdir()
    (dest / "cwmem/__init__.py").write_text("from ._core import run_all\n")
    files = 3 * scale
    per_file = 2 * scale
    names = []
    for f in range(files):
        lines = [HEAVY, f'extern "C" int mem_k{f}(int n) {{', "  int err = 0;"]
        for p in range(per_file):
            key = TYPES[(f + p) % len(TYPES)]
            value = TYPES[(3 * f + 5 * p + 1) % len(TYPES)]
            lines.append(f"  err |= work<{key}, {value}>(n);")
        lines += ["  return err;", "}"]
        (dest / f"csrc/k{f}.cu").write_text("\n".join(lines) + "\n")
        names.append(f"mem_k{f}")
    decls = "".join(f'extern "C" int {n}(int);\n' for n in names)
    calls = "".join(f"  err |= {n}((int)PyLong_AsLong(arg));\n" for n in names)
    (dest / "csrc/module.cpp").write_text(
        "#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n" + decls +
        "static PyObject *run_all(PyObject *, PyObject *arg) {\n  int err = 0;\n" + calls +
        "  return PyLong_FromLong(err);\n}\n"
        'static PyMethodDef methods[] = {{"run_all", run_all, METH_O, "all"}, {NULL, NULL, 0, NULL}};\n'
        'static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_core", NULL, -1, methods};\n'
        "PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&module); }\n")
    arch_list = ", ".join(f'"{a}"' for a in archs.split(";")) if archs else ""
    (dest / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["cudawheel"]\nbuild-backend = "cudawheel"\n'
        '[project]\nname = "cwmem"\nversion = "1.0"\n[tool.cudawheel]\n'
        + (f"archs = [{arch_list}]\n" if archs else "")
        + '[[tool.cudawheel.extension]]\nname = "cwmem._core"\nsources = ["csrc/*.cu", "csrc/module.cpp"]\n')
    return dest


def tree_rss(root_pid: int) -> int:
    """The resident memory (bytes) of `root_pid` and all its descendants."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ppid, pages = int(fields[1]), int(fields[21])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
        rss[int(entry)] = pages * os.sysconf("SC_PAGE_SIZE")
    total, todo = 0, [root_pid]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total


def build(py: Path, project: Path, out: Path, env: dict, settings: list[str],
          cgroup=None) -> tuple[float, int, bool]:
    """One cold build: (seconds, peak RSS of the build tree, killed by the OOM killer)."""
    shutil.rmtree(project / "build", ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    cmd = [str(py), "-m", "cudawheel", "wheel", str(project), "-o", str(out)]
    for s in settings:
        cmd += ["-C", s]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=cgroup.join if cgroup else None)
    peak = 0
    done = threading.Event()

    def sample():
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss(proc.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    stdout, stderr = proc.communicate()
    secs = time.monotonic() - start
    done.set()
    sampler.join()
    if proc.returncode != 0:
        if cgroup and cgroup.oom_kills():
            return secs, peak, True
        sys.exit(f"bench_memory: build failed: {' '.join(cmd)}\n{stdout}\n{stderr}")
    return secs, peak, False


def mem_available() -> int:
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def setup(cuda_home: str | None) -> tuple[Path, dict]:
    WORK.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDAWHEEL_", "CUDA", "SCCACHE_", "CCACHE_"))}
    env["PIP_CACHE_DIR"] = str(CACHE / "pip")
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    # --cuda-home: a toolkit already on the machine (the GPU machine has no internet).
    home = cuda_home or subprocess.run(["bash", ROOT / "scripts/env/install-cuda.sh", "13", CACHE / "toolchains/cu13"],
                                       env=env, capture_output=True, text=True,
                                       check=True).stdout.strip().splitlines()[-1]
    wheelhouse = Path(os.environ.get("CUDAWHEEL_WHEELHOUSE", ROOT / "wheelhouse"))
    wheels = sorted(wheelhouse.glob("cudawheel-*.whl"))
    if not wheels:
        sys.exit("bench_memory: no backend wheel: bash scripts/build-backend.sh wheelhouse")
    py = WORK / "venv/bin/python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", WORK / "venv"], check=True)
    subprocess.run([py, "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps", wheels[-1]], env=env,
                   check=True)
    env.update(CUDA_HOME=home, SOURCE_DATE_EPOCH="1700000000")
    return py, env


def gib(n: float) -> str:
    return f"{n / (1 << 30):.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=int, default=1)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", default="1,2", help="hand-picked -j values, comma-separated")
    ap.add_argument("--archs", default="80;90", help='the project\'s archs ("" for the default list)')
    ap.add_argument("--max-memory", action="append", default=[],
                    help='also the default with `-C max-memory=X` (e.g. "4G"): the admission under a limit')
    ap.add_argument("--cuda-home", help="use this CUDA 13 toolkit instead of installing one from PyPI")
    ap.add_argument("--cgroup-limit", help='run each build in a memory cgroup of this size (e.g. "2G"; root)')
    args = ap.parse_args()
    limit = None
    if args.cgroup_limit:
        why = MemoryCgroup.unavailable()
        if why:
            sys.exit(f"bench_memory: --cgroup-limit: {why}")
        limit = parse_size(args.cgroup_limit)
    py, env = setup(args.cuda_home)
    project = make_project(WORK / "project", args.scale, args.archs)
    settings = {"default": []}
    for j in args.jobs.split(","):
        settings[f"-j {j}"] = [f"jobs={j}"]
    for m in args.max_memory:
        settings[f"default, max-memory={m}"] = [f"max-memory={m}"]
    avail = mem_available()
    log(f"{3 * args.scale} files, {2 * args.scale} type pairs each, archs {args.archs or 'default'}; "
        f"MemAvailable {gib(avail)} GiB, {os.cpu_count()} cores")
    if limit:
        log(f"every build in a memory cgroup of {gib(limit)} GiB")
        # What a tool that reads only the machine's MemAvailable would allow (cudawheel before
        # it read cgroup limits): the same -j with max-memory set to that figure.
        for j in args.jobs.split(","):
            settings[f"-j {j}, max-memory = MemAvailable"] = [f"jobs={j}", f"max-memory={avail >> 20}"]
        avail = min(avail, limit)
    times: dict[str, list[float]] = {k: [] for k in settings}
    peaks: dict[str, list[int]] = {k: [] for k in settings}
    kills: dict[str, int] = {k: 0 for k in settings}
    cg_peaks: dict[str, list[int]] = {k: [] for k in settings}
    for r in range(args.runs):
        for name, s in settings.items():
            if limit:
                with MemoryCgroup(limit) as cg:
                    secs, peak, killed = build(py, project, WORK / "out", env, s, cg)
                    cg_peaks[name].append(cg.peak())
            else:
                secs, peak, killed = build(py, project, WORK / "out", env, s)
            kills[name] += killed
            if not killed:
                times[name].append(secs)
            peaks[name].append(peak)
            log(f"run {r + 1}: {name}: {secs:.1f} s, peak {gib(peak)} GiB"
                + (", KILLED by the out-of-memory killer" if killed else ""))
    ok = [k for k in settings if times[k] and not kills[k]]
    hand = [k for k in ok if k.startswith("-j") and "MemAvailable" not in k]
    best = min(hand, key=lambda k: statistics.median(times[k])) if hand else "default"
    base = statistics.median(times[best]) if times[best] else float("nan")
    where = f"a memory cgroup of {gib(limit)} GiB" if limit else f"MemAvailable {gib(avail)} GiB"
    print(f"\nmemory benchmark: scale {args.scale}, {args.runs} runs (medians, interleaved), "
          f"{where}, {os.cpu_count()} cores")
    print(f"| setting | wall s | vs best hand-picked that finished ({best}) | peak RSS of the build tree GiB "
          f"| max peak GiB |{' cgroup peak GiB | killed by the OOM killer |' if limit else ''}")
    print("|---|---|---|---|---|" + ("---|---|" if limit else ""))
    for k in settings:
        t = statistics.median(times[k]) if times[k] else float("nan")
        row = f"| {k} | {t:.1f} | {t / base:.2f}x | {gib(statistics.median(peaks[k]))} | {gib(max(peaks[k]))} |"
        if limit:
            row += f" {gib(max(cg_peaks[k]))} | {kills[k]} of {args.runs} |"
        print(row)
    over = [k for k in settings if max(peaks[k]) > avail]
    print(f"peak above {'the limit' if limit else 'MemAvailable'}: {', '.join(over) if over else 'none'}")


if __name__ == "__main__":
    main()

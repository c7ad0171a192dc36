#!/usr/bin/env python3
"""One file that holds the build: does cudawheel spread it over the idle cores, and how close
does it get to nvcc run by hand with the best flags?

    python3 scripts/bench/bench_heavy.py [--cpus 0-1,all] [--budget 480] [--runs 3]
                                         [--cases conv,heavy1,even] [--scale 1] [--cuda-home DIR]

Three generated torch-free projects, each built cold (a fresh build-dir), the runs interleaved
(load from other jobs hits every variant alike):
- conv: the causal-conv1d shape: one heavy templated .cu (CUB radix sort, reduce, scan: the
  memory benchmark's kernels) beside three small ones and a C++ module, archs 80 + 90;
- heavy1: one CUB translation unit beside a C++ module, one arch (sm_90): what nvcc cannot
  split further (without `--split-compile`, whose objects differ run to run);
- even: four .cu files of equal weight, archs 80 + 90 (no file dominates: must not be slower).

Variants: `today` (the backend in CUDAWHEEL_WHEELHOUSE or wheelhouse/ with
CUDAWHEEL_EVEN_SHARE=1: the schedule from before time shares), `new` (the same backend as it
schedules now), and for conv nvcc by hand on its dominating file alone (the floor of any build
that compiles it: `plain`, `--threads 0`, and `--split-compile 0`, the last reported with
whether its runs gave the same object). Each `--cpus` entry (a taskset list, or `all`) is a separate
table. Rounds (one build of every variant of every case and CPU set, in rotating order) repeat
up to --runs while the next round fits in --budget seconds. Prints the tables: medians, the
spread (max-min over median) as the noise, the ratio against `today`, and whether `today` and
`new` built byte-identical wheels. Needs the CUDA 13 toolkit (scripts/env/install-cuda.sh, or
--cuda-home). Not a test: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_memory import HEAVY, TYPES  # noqa: E402  (the CUB kernels)

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("CUDAWHEEL_TEST_CACHE", ROOT / ".cache"))
WORK = ROOT / ".cache/bench-heavy"

SMALL = r"""
template <typename T> __global__ void k(T *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * (T)2 + (T)1;
}
extern "C" int NAME(float *x, int n) { k<<<(n + 255) / 256, 256>>>(x, n); return 0; }
"""


def log(msg: str) -> None:
    print(f"bench_heavy: {msg}", file=sys.stderr, flush=True)


def heavy_source(pairs: int, name: str) -> str:
    lines = [HEAVY, f'extern "C" int {name}(int n) {{', "  int err = 0;"]
    for p in range(pairs):
        lines.append(f"  err |= work<{TYPES[p % len(TYPES)]}, {TYPES[(5 * p + 1) % len(TYPES)]}>(n);")
    return "\n".join(lines + ["  return err;", "}"]) + "\n"


def make_project(dest: Path, case: str, scale: int) -> tuple[Path, str, list[str]]:
    """The project, its dominating file and the -gencode flags it compiles with."""
    shutil.rmtree(dest, ignore_errors=True)
    (dest / "csrc").mkdir(parents=True)
    (dest / "cwheavy").mkdir()
    (dest / "cwheavy/__init__.py").write_text("from ._core import run_all\n")
    names = []
    if case == "heavy1":
        archs = ["90"]
        (dest / "csrc/heavy.cu").write_text(heavy_source(scale, "heavy"))
        names.append("heavy")
    elif case == "conv":
        archs = ["80", "90"]
        (dest / "csrc/heavy.cu").write_text(heavy_source(2 * scale, "heavy"))
        names.append("heavy")
        for i in range(3):
            (dest / f"csrc/small{i}.cu").write_text(SMALL.replace("NAME", f"small{i}"))
    else:
        archs = ["80", "90"]
        for i in range(4):
            (dest / f"csrc/even{i}.cu").write_text(heavy_source(scale, f"even{i}"))
            names.append(f"even{i}")
    decls = "".join(f'extern "C" int {n}(int);\n' for n in names)
    calls = "".join(f"  err |= {n}((int)PyLong_AsLong(arg));\n" for n in names)
    (dest / "csrc/module.cpp").write_text(
        "#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n" + decls +
        "static PyObject *run_all(PyObject *, PyObject *arg) {\n  int err = 0;\n" + calls +
        "  return PyLong_FromLong(err);\n}\n"
        'static PyMethodDef methods[] = {{"run_all", run_all, METH_O, "all"}, {NULL, NULL, 0, NULL}};\n'
        'static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_core", NULL, -1, methods};\n'
        "PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&module); }\n")
    arch_list = ", ".join(f'"{a}"' for a in archs)
    (dest / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["cudawheel"]\nbuild-backend = "cudawheel"\n'
        '[project]\nname = "cwheavy"\nversion = "1.0"\n[tool.cudawheel]\n'
        f"archs = [{arch_list}]\n"
        '[[tool.cudawheel.extension]]\nname = "cwheavy._core"\nsources = ["csrc/*.cu", "csrc/module.cpp"]\n')
    dominating = "csrc/heavy.cu" if case != "even" else "csrc/even0.cu"
    gencodes = []
    for a in archs:
        gencodes += ["-gencode", f"arch=compute_{a},code=sm_{a}"]
    return dest, dominating, gencodes


def venv(name: str, wheel_dir: Path, env: dict) -> Path:
    wheels = sorted(wheel_dir.glob("cudawheel-*.whl"))
    if not wheels:
        sys.exit(f"bench_heavy: no backend wheel in {wheel_dir}")
    py = WORK / name / "bin/python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", WORK / name], check=True)
    subprocess.run([py, "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps", wheels[-1]],
                   env=env, check=True)
    return py


def build(py: Path, project: Path, out: Path, env: dict, pin: list[str]) -> tuple[float, str]:
    """One cold build: (seconds, sha256 of the wheel)."""
    shutil.rmtree(project / "build", ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    cmd = [*pin, str(py), "-m", "cudawheel", "wheel", str(project), "-o", str(out)]
    start = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    secs = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"bench_heavy: build failed: {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}")
    wheel = next(out.glob("*.whl"))
    return secs, hashlib.sha256(wheel.read_bytes()).hexdigest()[:12]


def by_hand(nvcc: str, project: Path, src: str, gencodes: list[str], extra: list[str], env: dict,
            tag: str, pin: list[str]) -> tuple[float, str]:
    """nvcc alone on the dominating file: (seconds, sha256 of the object)."""
    out = WORK / "hand" / tag
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    cmd = [*pin, nvcc, "-c", src, "-o", str(out / "k.o"), "-O3", "-DNDEBUG", "-Xcompiler", "-fPIC",
           "-objtemp", "-Xcudafe", f"--orig_src_path_name={src}", *gencodes, *extra]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True)
    secs = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"bench_heavy: nvcc failed: {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}")
    return secs, hashlib.sha256((out / "k.o").read_bytes()).hexdigest()[:12]


HAND = {"nvcc by hand": [], "nvcc --threads 0": ["--threads", "0"],
        "nvcc --split-compile 0": ["--split-compile", "0", "--threads", "0"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cpus", default="all", help="comma-separated taskset lists, or all (e.g. 0-1,all)")
    ap.add_argument("--budget", type=float, default=480, help="seconds: no round starts that would end later")
    ap.add_argument("--runs", type=int, default=3, help="at most this many rounds")
    ap.add_argument("--cases", default="conv,heavy1,even")
    ap.add_argument("--scale", type=int, default=1, help="multiplies the heavy files' instantiations")
    ap.add_argument("--cuda-home", help="a toolkit already on the machine (else install-cuda.sh 13)")
    ap.add_argument("--no-hand", action="store_true", help="skip the nvcc-by-hand rows")
    args = ap.parse_args()

    started = time.monotonic()
    WORK.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDAWHEEL_", "CUDA", "SCCACHE_", "CCACHE_"))}
    env["PIP_CACHE_DIR"] = str(CACHE / "pip")
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    home = args.cuda_home or subprocess.run(
        ["bash", ROOT / "scripts/env/install-cuda.sh", "13", CACHE / "toolchains/cu13"], env=env,
        capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    py = venv("venv-new", Path(os.environ.get("CUDAWHEEL_WHEELHOUSE", ROOT / "wheelhouse")), env)
    env.update(CUDA_HOME=home, SOURCE_DATE_EPOCH="1700000000")
    today_env = {**env, "CUDAWHEEL_EVEN_SHARE": "1"}
    nvcc = str(Path(home) / "bin/nvcc")

    # (cpus, case, variant) -> a callable giving (seconds, digest)
    variants: dict[tuple[str, str, str], object] = {}
    for cpus in args.cpus.split(","):
        pin = [] if cpus == "all" else ["taskset", "-c", cpus]
        for case in args.cases.split(","):
            project, dominating, gencodes = make_project(WORK / case, case, args.scale)
            out = WORK / "out"
            variants[cpus, case, "today"] = lambda p=project, o=out, pin=pin: build(py, p, o, today_env, pin)
            variants[cpus, case, "new"] = lambda p=project, o=out, pin=pin: build(py, p, o, env, pin)
            # By hand on conv's dominating file only: two archs, so `--threads` has work; heavy1's
            # one arch is the same chain, and its today/new rows show that nothing splits it.
            if args.no_hand or case != "conv":
                continue
            for name, extra in HAND.items():
                tag = f"{case}_{name.replace(' ', '_')}"
                variants[cpus, case, name] = (lambda p=project, d=dominating, g=gencodes, x=extra, pin=pin,
                                              t=tag: by_hand(nvcc, p, d, g, x, env, t, pin))
    times: dict[tuple, list[float]] = {v: [] for v in variants}
    hashes: dict[tuple, set[str]] = {v: set() for v in variants}
    last_round = 0.0
    for r in range(args.runs):
        if r and time.monotonic() - started + last_round > args.budget:
            log(f"stopping after {r} rounds: another would pass the {args.budget:.0f} s budget")
            break
        round_start = time.monotonic()
        # Interleaved, and the order rotates so no variant always runs after the same one.
        keys = list(variants)
        keys = keys[r % len(keys):] + keys[:r % len(keys)]
        for key in keys:
            secs, digest = variants[key]()
            times[key].append(secs)
            hashes[key].add(digest)
            log(f"run {r + 1}: {' / '.join(key)} {secs:.1f} s ({digest})")
        last_round = time.monotonic() - round_start
        tables(args, variants, times, hashes, home, r + 1)
        sys.stdout.flush()

def tables(args, variants, times, hashes, home, rounds) -> None:
    """The tables of the rounds so far (printed after each, so a run stopped early keeps them)."""
    print(f"\n=== after {rounds} round(s)")
    for cpus in args.cpus.split(","):
        n = (os.cpu_count() or 1) if cpus == "all" else len(os.sched_getaffinity(0) & parse_cpus(cpus))
        print(f"\n{n} cores ({'taskset -c ' + cpus if cpus != 'all' else 'all'}), interleaved cold builds, "
              f"nvcc from {home}")
        print(f"{'case':<7} {'variant':<24} {'runs':>4} {'median s':>9} {'noise':>6} {'vs today':>9}  bytes")
        for case in args.cases.split(","):
            base = statistics.median(times[cpus, case, "today"])
            same = hashes[cpus, case, "today"] == hashes[cpus, case, "new"] and len(hashes[cpus, case, "new"]) == 1
            for key in [k for k in variants if k[:2] == (cpus, case)]:
                ts = times[key]
                med = statistics.median(ts)
                noise = (max(ts) - min(ts)) / med
                if key[2] in ("today", "new"):
                    identical = "yes" if same else "NO"
                else:
                    identical = "same object each run" if len(hashes[key]) == 1 else "DIFFERS run to run"
                    if len(ts) == 1:
                        identical = "one run"
                print(f"{case:<7} {key[2]:<24} {len(ts):>4} {med:>9.1f} {noise:>5.0%} {base / med:>8.2f}x  {identical}")


def parse_cpus(spec: str) -> set[int]:
    out: set[int] = set()
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Core-use benchmark: does a cold cudawheel build use every core? Against the best hand-run
floor with the same flags.

    python3 scripts/bench/bench_cores.py --python VENV/bin/python [--cuda-home /usr/local/cuda] [--rounds 3]

The project is scripts/bench/bench.py's 8-file extension (sm_80 + sm_90 + compute_90). First one
verbose cudawheel build records the exact commands cudawheel runs; then, interleaved, `--rounds`
times each:
  - floor: those nvcc commands by hand, all at once in a pool of one job per core, each with
    `--threads 0` (nvcc's own per-arch parallelism on every core), then the host compile and
    the link;
  - cudawheel: a cold `python -m cudawheel wheel` (build-dir removed first).
Prints one table of medians with the ratio cudawheel / floor (target <= 1.1). `--python` must
have cudawheel installed. Not a test: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (the project generator)


def run(cmd, env, cwd=None) -> tuple[float, str]:
    start = time.monotonic()
    proc = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"bench_cores: failed: {' '.join(map(str, cmd))}\n{proc.stdout}\n{proc.stderr}")
    return time.monotonic() - start, proc.stderr


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("--cuda-home", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    work = Path(tempfile.mkdtemp(prefix="bench-cores-"))
    project = bench.make_project(work / "proj", "cudawheel")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDAWHEEL_", "CUDAARCHS", "TORCH_CUDA"))}
    env.update(CUDA_HOME=args.cuda_home, SOURCE_DATE_EPOCH="1700000000")
    build = [args.python, "-m", "cudawheel", "wheel", project, "-o", work / "out", "-C", "toolkit=system"]

    def cold() -> tuple[float, str]:
        shutil.rmtree(project / "build", ignore_errors=True)
        return run(build, env)

    # Warm-up (page cache, nvcc's first start) and the exact commands, from verbose output.
    shutil.rmtree(project / "build", ignore_errors=True)
    _, log = run([*build, "-C", "verbose=true"], env)
    commands = [line[len("cudawheel: $ "):] for line in log.splitlines() if line.startswith("cudawheel: $ ")]
    nvcc = [shlex.split(c) for c in commands if "-gencode" in c]
    other = [shlex.split(c) for c in commands if "-gencode" not in c]
    for c in nvcc:
        if "--threads" in c:
            i = c.index("--threads")
            del c[i:i + 2]
        c += ["--threads", "0"]
    threads = sorted({m for m in re.findall(r"--threads (\d+)", log)})
    print(f"bench_cores: {cores} cores, {len(nvcc)} nvcc compiles, cudawheel gave --threads {threads or ['(none)']}",
          file=sys.stderr)
    links = [c for c in other if "-shared" in c]
    hosts = [c for c in other if "-shared" not in c]

    # cudawheel runs its commands in the project root and names the Python headers through a
    # link under build-dir/env/ that exists while it builds: the floor makes the same link.
    include = subprocess.run([args.python, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"],
                             capture_output=True, text=True, check=True).stdout.strip()

    # Sources cudawheel generates into build-dir (the import check's PyInit) are inputs of the
    # commands like the project's own: kept from the warm-up and put back before each floor.
    generated = {p.relative_to(project): p.read_bytes()
                 for p in (project / "build/cudawheel/import-check").glob("*") if p.is_file()}

    def floor() -> float:
        shutil.rmtree(project / "build", ignore_errors=True)
        for rel, data in generated.items():
            (project / rel).parent.mkdir(parents=True, exist_ok=True)
            (project / rel).write_bytes(data)
        for c in nvcc + hosts + links:
            out = project / c[c.index("-o") + 1]
            out.parent.mkdir(parents=True, exist_ok=True)
        (project / "build/cudawheel/env").mkdir(parents=True, exist_ok=True)
        os.symlink(include, project / "build/cudawheel/env/python")
        start = time.monotonic()
        with ThreadPoolExecutor(cores) as pool:
            list(pool.map(lambda c: run(c, env, cwd=project), nvcc + hosts))
        for c in links:
            run(c, env, cwd=project)
        return time.monotonic() - start

    times: dict[str, list[float]] = {"floor": [], "cudawheel": []}
    for r in range(args.rounds):
        times["floor"].append(floor())
        times["cudawheel"].append(cold()[0])
        print(f"bench_cores: round {r + 1}: floor {times['floor'][-1]:.1f} s, cudawheel {times['cudawheel'][-1]:.1f} s",
              file=sys.stderr)
    f, c = statistics.median(times["floor"]), statistics.median(times["cudawheel"])
    print(f"| measure ({cores} cores, {args.rounds} interleaved rounds, median) | seconds | ratio |")
    print("| --- | --- | --- |")
    print(f"| hand-run floor: {len(nvcc)} nvcc at once, --threads 0, cudawheel's flags, + host compile + link "
          f"| {f:.2f} | 1.00 |")
    print(f"| cudawheel cold build | {c:.2f} | {c / f:.2f} |")
    shutil.rmtree(work, ignore_errors=True)
    if c / f > 1.1:
        print(f"bench_cores: cudawheel is {c / f:.2f}x the floor (target <= 1.1)", file=sys.stderr)


if __name__ == "__main__":
    main()

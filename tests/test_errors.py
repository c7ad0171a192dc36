"""Contract §7: each user mistake ends with a non-zero exit, one clear message naming the
file / key / path, `hint:` lines, no Python traceback, no Rust panic, and no wheel left behind."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from conftest import clean_env, run

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
                 kernel=KERNEL, pyproject=None) -> Path:
    proj = tmp / "proj"
    (proj / "csrc").mkdir(parents=True)
    (proj / "demo").mkdir()
    (proj / "demo" / "__init__.py").write_text("")
    (proj / "csrc" / "k.cu").write_text(kernel)
    text = pyproject if pyproject is not None else BASE.format(
        project_extra=project_extra, tool_extra=tool_extra, ext_extra=ext_extra, sources=sources)
    (proj / "pyproject.toml").write_text(textwrap.dedent(text))
    return proj


def fails(py, proj: Path, *settings: str, env=None, command="wheel") -> str:
    out = proj.parent / "out"
    args = [py, "-m", "cudawheel", command, proj, "-o", out]
    for s in settings:
        args += ["-C", s]
    proc = run(args, env=env or clean_env(), check=False)
    err = proc.stderr
    assert proc.returncode != 0, f"expected a failure\n{proc.stdout}\n{err}"
    assert "Traceback" not in err, err
    assert "panicked" not in err and "PanicException" not in err, err
    assert err.count("cudawheel: error:") == 1, err
    left = list(out.glob("*")) if out.exists() else []
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


def test_unwritable_output_folder(toolkit_python, tmp_path):
    proj = make_project(tmp_path)
    out = tmp_path / "out"
    out.write_text("a file where the output folder should be")
    proc = run([toolkit_python, "-m", "cudawheel", "wheel", proj, "-o", out / "sub"], env=clean_env(), check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr


def test_error_through_pip_has_no_traceback(backend_python, tmp_path, wheelhouse):
    import sys
    proj = make_project(tmp_path, tool_extra="ptxx = 1")
    proc = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", tmp_path / "out", proj],
               env=clean_env(PIP_FIND_LINKS=wheelhouse), check=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "Unknown key `tool.cudawheel.ptxx`" in out and "Traceback" not in out
    assert not list((tmp_path / "out").glob("*.whl")) if (tmp_path / "out").exists() else True

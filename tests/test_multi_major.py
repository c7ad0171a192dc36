"""`cuda = ["12", "13"]`: one wheel holding a build per CUDA major. saxpy built once (one arch,
80) from the CUDA 12.4 reference toolkit (named in `[tool.cudawheel.toolkits]`) and NVIDIA's CUDA
13 wheels (the `toolkit_python` venv, no build isolation): one wheel under the project's own name,
each extension file named for its major, each major's runtime wheel under its extra. Installed into
fresh venvs: the build matching the runtime installed is the one loaded (read back from
/proc/self/maps), and each selection rule of `_cuda_select` is exercised with a control (an
override, torch and JAX already imported, a libcudart already loaded, the runtime wheels, the
stand-in driver, the default)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_archs import build_driver

from conftest import Wheel, clean_env, copy_example, new_venv, readelf_dynamic, run, toolkit_home

EXT = {12: "saxpy/_core.cudawheel-cu12.abi3.so", 13: "saxpy/_core.cudawheel-cu13.abi3.so"}

# What a fresh interpreter reports after `setup` and `import saxpy`: the choice, the extension
# file loaded, the libcudart mapped.
PROBE = """
import json, sys, types
{setup}
import saxpy
maps = open("/proc/self/maps").read()
print(json.dumps({{
    "choice": list(saxpy._cuda_select.choice()),
    "runtime": saxpy.runtime_version(),
    "core": saxpy._core.__file__,
    "cu12_file": "_core.cudawheel-cu12" in maps, "cu13_file": "_core.cudawheel-cu13" in maps,
    "cudart12": "libcudart.so.12" in maps, "cudart13": "libcudart.so.13" in maps,
}}))
"""


@pytest.fixture(scope="module")
def built(toolkit_python, wheelhouse, scratch):
    """(the wheel, the build's stderr, the work folder)."""
    work = scratch("multi-major")
    project = copy_example("saxpy", work)
    text = (project / "pyproject.toml").read_text()
    text = text.replace("[tool.cudawheel]\n", '[tool.cudawheel]\ncuda = ["12", "13"]\n', 1)
    text += f'\n[tool.cudawheel.toolkits]\n"12" = "{toolkit_home(12)}"\n'
    (project / "pyproject.toml").write_text(text)
    proc = run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", work / "out", "-C", "archs=80"],
               env=clean_env())
    return Path(proc.stdout.strip().splitlines()[-1]), proc.stderr, work


@pytest.fixture(scope="module")
def venvs(built, wheelhouse):
    """{name: python}: the wheel with its `cu12` extra (pinned to 12.4), with its `cu13` extra, with
    both runtimes (and cudawheel, for `check`), and alone (no runtime wheel)."""
    wheel, _, work = built
    spec = f"saxpy @ {wheel.as_uri()}"
    return {
        "cu12": new_venv(work / "v12", wheelhouse, spec.replace("saxpy", "saxpy[cu12]", 1),
                         "nvidia-cuda-runtime-cu12==12.4.*", "cudawheel"),
        "cu13": new_venv(work / "v13", wheelhouse, spec.replace("saxpy", "saxpy[cu13]", 1)),
        "both": new_venv(work / "vboth", wheelhouse, spec, "nvidia-cuda-runtime-cu12==12.4.*",
                         "nvidia-cuda-runtime>=13,<14"),
        "bare": new_venv(work / "vbare", wheelhouse, spec),
    }


def probe(py, setup="", check=True, **env):
    proc = run([py, "-c", PROBE.format(setup=setup)], env=clean_env(**env), check=check)
    return json.loads(proc.stdout) if proc.returncode == 0 else proc


def test_one_wheel_holds_both_builds_and_each_major_s_runtime_under_its_extra(built, toolkit_python):
    wheel, stderr, work = built
    assert wheel.name.startswith("saxpy-0.1.0-cp39-abi3-manylinux_") and wheel.name.endswith("_x86_64.whl"), wheel
    w = Wheel(wheel)
    names = set(w.check_record())
    for member in [*EXT.values(), "saxpy/_core.py", "saxpy/_cuda_select.py", "saxpy/_cuda_libs.py",
                   "saxpy/_cuda_libs_cu12.py", "saxpy/_cuda_libs_cu13.py", "saxpy/__init__.py"]:
        assert member in names, (member, sorted(names))
    assert not [n for n in names if n.startswith("saxpy/_core.") and n.endswith(".so") and n not in EXT.values()]
    assert w.field("Name") == ["saxpy"]
    reqs = w.field("Requires-Dist")
    assert len(reqs) == 2, reqs
    assert reqs[0].startswith("nvidia-cuda-runtime-cu12>=12.4,<13") and reqs[0].endswith('; extra == "cu12"'), reqs
    assert reqs[1].startswith("nvidia-cuda-runtime>=13.") and reqs[1].endswith('; extra == "cu13"'), reqs
    assert w.field("Provides-Extra") == ["cu12", "cu13"]
    # Each build links its own major's runtime through an $ORIGIN RPATH into that wheel's folder.
    for major, rpath in [(12, "$ORIGIN/../nvidia/cuda_runtime/lib"), (13, "$ORIGIN/../nvidia/cu13/lib")]:
        so = w.extract(EXT[major], work / "x")
        dyn = readelf_dynamic(so)
        assert [n for n in dyn["NEEDED"] if n.startswith("libcudart")] == [f"libcudart.so.{major}"], dyn
        assert dyn["RPATH"] == [rpath], dyn
    helper12 = w.read("saxpy/_cuda_libs_cu12.py").decode()
    assert "CUDA_VERSION = (12, 4)" in helper12 and 'CUDA_EXTRA = ("saxpy", "cu12")' in helper12
    assert "CUDA_VERSION = (13," in w.read("saxpy/_cuda_libs_cu13.py").decode()
    # The wheel passes the audit as a whole.
    proc = run([toolkit_python, "-m", "cudawheel", "audit", wheel], env=clean_env())
    assert f"OK   {wheel}" in proc.stdout, proc.stdout


def test_the_build_of_the_installed_runtime_is_the_one_loaded(venvs):
    got = probe(venvs["cu12"])
    assert got["choice"][0] == 12 and "nvidia-cuda-runtime-cu12 is installed" in got["choice"][1], got
    assert got["runtime"] // 1000 == 12 and got["core"].endswith("_core.cudawheel-cu12.abi3.so"), got
    assert (got["cu12_file"], got["cudart12"], got["cu13_file"], got["cudart13"]) == (True, True, False, False), got
    got = probe(venvs["cu13"])
    assert got["choice"][0] == 13 and "nvidia-cuda-runtime is installed" in got["choice"][1], got
    assert got["runtime"] // 1000 == 13
    assert (got["cu12_file"], got["cudart12"], got["cu13_file"], got["cudart13"]) == (False, False, True, True), got


def test_an_override_for_a_runtime_not_installed_is_an_import_error(venvs):
    proc = probe(venvs["cu13"], check=False, CUDAWHEEL_CUDA_MAJOR="12")
    assert proc.returncode == 1, proc.stdout
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: saxpy: ") and "libcudart.so.12" in last and "saxpy[cu12]" in last, proc.stderr
    # A major the wheel holds no build of: said at once.
    proc = probe(venvs["cu13"], check=False, CUDAWHEEL_CUDA_MAJOR="11")
    assert "ImportError: saxpy holds builds for CUDA 12, 13 only, but CUDAWHEEL_CUDA_MAJOR=11 asks for CUDA 11" \
        in proc.stderr, proc.stderr


def test_the_rules_in_order(venvs):
    """Both runtimes installed: the highest by default; a libcudart already loaded, a JAX plugin,
    torch and the override each win over the rules after them."""
    py = venvs["both"]
    got = probe(py)
    assert got["choice"][0] == 13 and "runtime wheel nvidia-cuda-runtime is installed" in got["choice"][1], got
    load12 = ("import ctypes, glob; ctypes.CDLL(glob.glob(sys.prefix + "
              "'/lib/python*/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12')[0])")
    got = probe(py, load12)
    assert got["choice"][0] == 12 and "libcudart.so.12 is already loaded" in got["choice"][1], got
    assert (got["cu12_file"], got["cu13_file"]) == (True, False), got
    jax12 = "sys.modules['jax_cuda12_plugin'] = types.ModuleType('jax_cuda12_plugin')"
    got = probe(py, jax12)
    assert got["choice"][0] == 12 and "jax_cuda12_plugin" in got["choice"][1], got
    torch12 = ("sys.modules['torch'] = types.SimpleNamespace(__version__='2.8.0', "
               "version=types.SimpleNamespace(cuda='12.6'))")
    load13 = ("import ctypes, glob; ctypes.CDLL(glob.glob(sys.prefix + "
              "'/lib/python*/site-packages/nvidia/cu13/lib/libcudart.so.13')[0])")
    got = probe(py, f"{load13}\n{torch12}")
    assert got["choice"] == [12, "torch 2.8.0, already imported, uses CUDA 12.6"], got
    got = probe(py, torch12, CUDAWHEEL_CUDA_MAJOR="13")
    assert got["choice"] == [13, "CUDAWHEEL_CUDA_MAJOR=13 asks for CUDA 13"], got
    # torch of a major the wheel holds no build of: an ImportError, not a second runtime.
    proc = probe(py, torch12.replace("12.6", "11.8"), check=False)
    assert "ImportError: saxpy holds builds for CUDA 12, 13 only, but torch 2.8.0, already imported, uses CUDA 11.8" \
        in proc.stderr, proc.stderr


def test_the_driver_then_the_newest_build(venvs, scratch):
    """No runtime wheel installed: the stand-in driver's CUDA version decides; without a driver,
    the newest build. `_cuda_select` is loaded by itself (the package's import would need a
    runtime)."""
    py = venvs["bare"]
    driver = build_driver(scratch("multi-driver"), nvml=False)
    code = ("import importlib.util, glob, sys; p = glob.glob(sys.prefix + '/lib/python*/site-packages/saxpy/"
            "_cuda_select.py')[0]; s = importlib.util.spec_from_file_location('saxpy._cuda_select', p); "
            "m = importlib.util.module_from_spec(s); s.loader.exec_module(m); import json; print(json.dumps(m.choice()))")
    out = {}
    for name, env in [("12.8", {"LD_LIBRARY_PATH": driver, "FAKE_CUDA_DRIVER": "12080"}),
                      ("13.0", {"LD_LIBRARY_PATH": driver, "FAKE_CUDA_DRIVER": "13000"}),
                      ("11.8", {"LD_LIBRARY_PATH": driver, "FAKE_CUDA_DRIVER": "11080"}), ("none", {})]:
        out[name] = json.loads(run([py, "-c", code], env=clean_env(**env)).stdout)
    assert out["12.8"] == [12, "the driver supports CUDA 12.8"], out
    assert out["13.0"] == [13, "the driver supports CUDA 13.0"], out
    newest = [13, "nothing in this process or environment names a CUDA major: the newest build"]
    assert out["11.8"] == newest and out["none"] == newest, out


def test_check_says_which_build_and_why(built, venvs, toolkit_python):
    proc = run([venvs["cu12"], "-m", "cudawheel", "check", "saxpy"], env=clean_env(), check=False)
    assert proc.stdout.startswith(
        "saxpy: holds builds for CUDA 12, 13; this interpreter loads the CUDA 12 build: the CUDA 12 runtime "
        "wheel nvidia-cuda-runtime-cu12 is installed ("), proc.stdout + proc.stderr
    assert "saxpy: built with CUDA 12.4\n" in proc.stdout, proc.stdout
    # The wheel itself, in the build venv (CUDA 13's runtime wheel installed there).
    proc = run([toolkit_python, "-m", "cudawheel", "check", built[0]], env=clean_env(), check=False)
    assert "this interpreter loads the CUDA 13 build: the CUDA 13 runtime wheel nvidia-cuda-runtime is installed" \
        in proc.stdout, proc.stdout + proc.stderr
    assert "saxpy: built with CUDA 13." in proc.stdout and "built with CUDA 12.4" not in proc.stdout, proc.stdout


def test_a_single_major_list_and_the_hooks(built, toolkit_python, tmp_path):
    """pip's route (PEP 517 hooks, no isolation): the same wheel name and METADATA as prepared.
    `-C cuda=13` (one major) is today's `-cu13` wheel."""
    wheel, _, work = built
    project = work / "saxpy"
    out = tmp_path / "pip"
    run([toolkit_python, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "-w", out,
         "--config-settings=archs=80", project], env=clean_env(), timeout=1800)
    (got,) = out.glob("*.whl")
    assert got.name == wheel.name and Wheel(got).field("Provides-Extra") == ["cu12", "cu13"]
    one = run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "one", "-C", "cuda=13",
               "-C", "archs=80"], env=clean_env())
    w = Wheel(Path(one.stdout.strip().splitlines()[-1]))
    assert w.field("Name") == ["saxpy-cu13"] and "saxpy/_core.abi3.so" in w.names and not w.field("Provides-Extra")

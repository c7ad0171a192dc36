"""The GPU check runs at `import` with no line of packaging code.

Fresh projects whose `__init__.py` imports the extension directly (no `_cuda_libs` call): the
C API with `py-limited-api` (the saxpy example), pybind11, nanobind, and an extension whose
sources define no `PyInit` at all (as a torch `TORCH_LIBRARY`-only module). Each is built by
nvcc 13 from NVIDIA's wheels for one arch (`80-real`), installed with `pip install --target`
and imported against the stand-in driver of test_archs.py (libcuda.so.1 answering
cuDriverGetVersion, libnvidia-ml.so.1 reporting chosen GPUs): the verdict fires at import, no
driver imports, CUDAWHEEL_SKIP_GPU_CHECK=1 and `check-gpu = false` skip, an explicit
`preload()` then the import checks once. `python -m cudawheel check` reads the same verdicts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_archs import build_driver, cuobjdump

from conftest import Wheel, clean_env, copy_example, run

INIT = '"""{name}: imports its extension directly, as most packages do."""\n\nfrom ._core import saxpy\n'

# An extension with no init of its own: its only source is a kernel (as a torch module whose
# C++ only registers operators with TORCH_LIBRARY and leaves the module to the build).
NOINIT_PYPROJECT = """\
[build-system]
requires = ["cudawheel"]
build-backend = "cudawheel"

[project]
name = "noinit"
version = "0.1.0"

[tool.cudawheel]
py-limited-api = "cp39"

[[tool.cudawheel.extension]]
name = "noinit._ops"
sources = ["csrc/*.cu"]
"""


def make_projects(work: Path) -> dict[str, tuple[Path, list[str]]]:
    """{kind: (project folder, extra -C settings)}."""
    out = {}
    for kind, example, package in [("capi", "saxpy", "saxpy"), ("pybind11", "pybind_saxpy", "pybind_saxpy"),
                                   ("nanobind", "nanobind_saxpy", "nanobind_saxpy")]:
        project = copy_example(example, work / kind)
        (project / package / "__init__.py").write_text(INIT.format(name=package))
        out[kind] = (project, [])
    off = copy_example("saxpy", work / "off")
    (off / "saxpy" / "__init__.py").write_text(INIT.format(name="saxpy"))
    out["off"] = (off, ["-C", "check-gpu=false"])
    noinit = work / "noinit" / "noinit"
    (noinit / "noinit").mkdir(parents=True)
    (noinit / "csrc").mkdir()
    (noinit / "pyproject.toml").write_text(NOINIT_PYPROJECT)
    (noinit / "noinit" / "__init__.py").write_text("from . import _ops\n")
    (noinit / "csrc" / "ops.cu").write_text("__global__ void twice(float *x) { x[threadIdx.x] *= 2; }\n")
    out["noinit"] = (noinit, [])
    # A top-level extension module (no package): its helper is `_topmod_cuda_libs` beside it.
    top = work / "top" / "topmod"
    (top / "csrc").mkdir(parents=True)
    (top / "pyproject.toml").write_text(NOINIT_PYPROJECT.replace('name = "noinit"', 'name = "topmod"')
                                        .replace('name = "noinit._ops"', 'name = "topmod"'))
    (top / "csrc" / "ops.cu").write_text("__global__ void twice(float *x) { x[threadIdx.x] *= 2; }\n")
    out["top"] = (top, [])
    return out


PACKAGE = {"capi": "saxpy", "pybind11": "pybind_saxpy", "nanobind": "nanobind_saxpy", "off": "saxpy",
           "noinit": "noinit", "top": "topmod"}


@pytest.fixture(scope="module")
def built(scratch, toolkit_python):
    """Each project built for archs 80-real and installed into its own --target folder:
    {kind: (wheel, folder)}; the stand-in driver folder."""
    work = scratch("import-check")
    site = work / "bindings-site"
    run([toolkit_python, "-m", "pip", "install", "-q", "--target", site, "pybind11>=2.12", "nanobind>=2.0"],
        env=clean_env())
    out = {}
    for kind, (project, settings) in make_projects(work / "src").items():
        proc = run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", work / "out" / kind,
                    "-C", "archs=80-real", *settings], env=clean_env(PYTHONPATH=site))
        wheel = Path(proc.stdout.strip())
        # With its NVIDIA runtime wheel next to it, so the extension's RPATH finds libcudart
        # (where it cannot, only a preload() before the import helps: the ELF does not load).
        target = work / "t" / kind
        run([toolkit_python, "-m", "pip", "install", "-q", "--target", target, wheel], env=clean_env())
        out[kind] = (wheel, target)
    return out, build_driver(work / "driver")


def py_import(toolkit_python, built, kind, code=None, *, driver=True, ccs="90", version=13000, **extra):
    """Runs `code` (default: import the package) against the stand-in driver; returns
    (returncode, the ImportError's text or stdout)."""
    wheels, drv = built
    env = clean_env(PYTHONPATH=wheels[kind][1], **extra)
    if driver:
        env.update(LD_LIBRARY_PATH=str(drv), FAKE_CUDA_CCS=ccs, FAKE_CUDA_DRIVER=str(version),
                   FAKE_CUDA_NAME="NVIDIA H100 80GB HBM3")
    proc = run([toolkit_python, "-c", code or f"import {PACKAGE[kind]}; print('imported')"], env=env,
               cwd=wheels[kind][1].parent, check=False)
    if proc.returncode:
        lines = proc.stderr.splitlines()
        start = next((i for i, line in enumerate(lines) if line.startswith("ImportError: ")), len(lines) - 1)
        return proc.returncode, "\n".join(lines[start:])
    return 0, proc.stdout


@pytest.mark.parametrize("kind", ["capi", "pybind11", "nanobind", "noinit", "top"])
def test_the_verdict_fires_at_import(built, toolkit_python, kind):
    package = PACKAGE[kind]
    rc, err = py_import(toolkit_python, built, kind)
    assert rc == 1, err
    first = err.splitlines()[0]
    # One sentence: the package, the GPU, what is missing, the fix.
    assert first == (f"ImportError: {package}: GPU 0 (NVIDIA H100 80GB HBM3, sm_90) cannot run this package, "
                     "which carries GPU code for sm_80 only: install a release built for sm_90, or rebuild "
                     "it from source with -C archs=90."), err
    assert "CUDAWHEEL_SKIP_GPU_CHECK=1" in err
    # Control: the same wheel on an sm_86 GPU runs its sm_80 SASS, and the extension is whole.
    code = {"noinit": "import noinit; print(noinit._ops.__name__)", "top": "import topmod; print(topmod.__name__)"}
    rc, out = py_import(toolkit_python, built, kind, code.get(kind, f"import {package}; print(callable({package}.saxpy))"),
                        ccs="86")
    assert rc == 0, out
    assert out.strip() in ("True", "noinit._ops", "topmod"), out


def test_no_driver_imports(built, toolkit_python):
    for kind in ("capi", "pybind11", "nanobind", "noinit", "top"):
        rc, out = py_import(toolkit_python, built, kind, driver=False)
        assert rc == 0 and out.strip() == "imported", (kind, out)


def test_a_driver_older_than_the_cuda_major_is_said_as_such(built, toolkit_python):
    rc, err = py_import(toolkit_python, built, "capi", version=12080, ccs="80")
    assert rc == 1
    assert err.splitlines()[0].startswith(
        "ImportError: saxpy: the installed NVIDIA driver supports CUDA 12.8, but this package needs one for "
        "CUDA 13.0 or newer: update the NVIDIA driver"), err
    assert "built with CUDA 13." in err
    # A driver on the machine but none usable is not "too old"; no driver at all imports.
    rc, out = py_import(toolkit_python, built, "capi",
                        "from saxpy import _cuda_libs as c; print(c.driver_status())", driver=False)
    assert rc == 0 and out.startswith("no NVIDIA driver"), out
    # (the package's import would fail on that driver: the check is skipped to ask the helper)
    rc, out = py_import(toolkit_python, built, "capi", "from saxpy import _cuda_libs as c; print(c.driver_status())",
                        version=12080, ccs="80", CUDAWHEEL_SKIP_GPU_CHECK="1")
    assert rc == 0 and out.startswith("NVIDIA driver for CUDA 12.8: too old"), out


def test_skip_at_run_time_and_at_build_time(built, toolkit_python):
    rc, out = py_import(toolkit_python, built, "capi", CUDAWHEEL_SKIP_GPU_CHECK="1")
    assert rc == 0 and out.strip() == "imported", out
    rc, out = py_import(toolkit_python, built, "off")
    assert rc == 0 and out.strip() == "imported", out
    # Control: the same wheel built without `check-gpu = false` fails on that GPU.
    assert py_import(toolkit_python, built, "capi")[0] == 1
    # check-gpu = false leaves the project's own init alone: no generated PyInit in the ELF.
    def symbols(kind, *flags):
        wheel = Wheel(built[0][kind][0])
        so = next(n for n in wheel.names if n.endswith(".so"))
        return run(["nm", *flags, wheel.extract(so, built[0][kind][1].parent / f"x-{kind}")]).stdout
    assert "cudawheel_project_PyInit" not in symbols("off") and " T PyInit__core" in symbols("off", "-D")
    # With the check the project's init is renamed and hidden: PyInit__core is still the only
    # init exported (the generated one), for the C API and pybind11 (PYBIND11_EXPORT) alike.
    for kind in ("capi", "pybind11"):
        assert " t cudawheel_project_PyInit__core" in symbols(kind), kind
        exported = symbols(kind, "-D", "--defined-only")
        assert " T PyInit__core" in exported and "cudawheel_project" not in exported, exported


def test_explicit_preload_then_import_checks_once(built, toolkit_python, tmp_path):
    log = tmp_path / "calls.log"
    code = "from saxpy import _cuda_libs\n_cuda_libs.preload()\nimport saxpy._core\nprint('imported')\n"
    # saxpy/__init__.py imports the extension: the package import itself is the import check.
    rc, out = py_import(toolkit_python, built, "capi", code, ccs="80", FAKE_CUDA_CALL_LOG=log)
    assert rc == 0, out
    assert log.read_text().splitlines() == ["cuDriverGetVersion"], log.read_text()
    # Control: the count moves when the check runs (a second process, a second check).
    py_import(toolkit_python, built, "capi", ccs="80", FAKE_CUDA_CALL_LOG=log)
    assert log.read_text().splitlines() == ["cuDriverGetVersion"] * 2


def test_the_wheel_records_its_driver_floors(built, toolkit_python):
    wheel = Wheel(built[0]["capi"][0])
    scope: dict = {}
    exec(compile(wheel.read("saxpy/_cuda_libs.py").decode(), "_cuda_libs.py", "exec"), scope)
    [(reason, floor)] = scope["DRIVER_FLOORS"]
    assert floor == (13, 0) and "minor-version compatibility" in reason, scope["DRIVER_FLOORS"]
    # audit prints them with the GPU code.
    out = run([toolkit_python, "-m", "cudawheel", "audit", wheel.path]).stdout
    assert f"  driver floor CUDA 13.0+ (saxpy): {reason}\n" in out, out


def test_check_command_for_a_package_and_a_wheel(built, toolkit_python):
    wheels, drv = built
    env = clean_env(PYTHONPATH=wheels["capi"][1], LD_LIBRARY_PATH=drv, FAKE_CUDA_DRIVER="13000",
                    FAKE_CUDA_NAME="NVIDIA H100 80GB HBM3")
    for what in ("saxpy", wheels["capi"][0]):
        bad = run([toolkit_python, "-m", "cudawheel", "check", what], env={**env, "FAKE_CUDA_CCS": "90,80"},
                  check=False, cwd=drv)
        assert bad.returncode == 1, bad.stdout + bad.stderr
        assert "GPU 0 (NVIDIA H100 80GB HBM3, sm_90): no-code" in bad.stdout, bad.stdout
        assert "GPU 1 (NVIDIA H100 80GB HBM3, sm_80): sass" in bad.stdout, bad.stdout
        good = run([toolkit_python, "-m", "cudawheel", "check", what], env={**env, "FAKE_CUDA_CCS": "80"},
                   check=False, cwd=drv)
        assert good.returncode == 0 and "sm_80): sass" in good.stdout, good.stdout + good.stderr
    # A top-level module's own helper.
    top = run([toolkit_python, "-m", "cudawheel", "check", "topmod"],
              env={**env, "PYTHONPATH": str(wheels["top"][1]), "FAKE_CUDA_CCS": "90"}, check=False, cwd=drv)
    assert top.returncode == 1 and "topmod: built with CUDA 13." in top.stdout, top.stdout + top.stderr
    nodrv = run([toolkit_python, "-m", "cudawheel", "check", "saxpy"], env=clean_env(PYTHONPATH=wheels["capi"][1]),
                check=False, cwd=drv)
    assert nodrv.returncode == 0 and "no NVIDIA driver" in nodrv.stdout, nodrv.stdout + nodrv.stderr


def test_an_editable_install_says_what_an_installed_wheel_says(toolkit_python, tmp_path):
    """`pip install -e`: the extension sits in the source tree, where its `$ORIGIN` RPATH
    reaches no NVIDIA wheel, so the loader would refuse it (`libcudart.so.13: cannot open shared
    object file`) before its init ran the check. The editable install's start-up finder runs
    the helper's `preload()` first: the same sentence as the installed wheel (the first test
    above), and with the check skipped the libraries preload() loaded let it import."""
    project = copy_example("saxpy", tmp_path / "src")
    (project / "saxpy" / "__init__.py").write_text(INIT.format(name="saxpy"))
    drv = build_driver(tmp_path / "driver")
    run([toolkit_python, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
         "--config-settings=archs=80-real", "-e", project], env=clean_env())
    try:
        def imports(ccs, **extra):
            env = clean_env(LD_LIBRARY_PATH=drv, FAKE_CUDA_CCS=ccs, FAKE_CUDA_DRIVER="13000",
                            FAKE_CUDA_NAME="NVIDIA H100 80GB HBM3", **extra)
            return run([toolkit_python, "-c", "import saxpy; print(saxpy._core.__file__)"], env=env,
                       cwd=tmp_path, check=False)

        bad = imports("90")
        assert bad.returncode == 1, bad.stdout
        first = next(line for line in bad.stderr.splitlines() if line.startswith("ImportError: "))
        assert first == ("ImportError: saxpy: GPU 0 (NVIDIA H100 80GB HBM3, sm_90) cannot run this package, "
                         "which carries GPU code for sm_80 only: install a release built for sm_90, or rebuild "
                         "it from source with -C archs=90."), bad.stderr
        for good in (imports("86"), imports("90", CUDAWHEEL_SKIP_GPU_CHECK="1")):
            assert good.returncode == 0, good.stderr
            assert good.stdout.strip() == str(project / "saxpy" / "_core.abi3.so")
    finally:  # the venv is shared with other test files
        run([toolkit_python, "-m", "pip", "uninstall", "-y", "-q", "saxpy-cu13"], env=clean_env())


# ---------------------------------------------------------------------------------------------
# TORCH_CUDA_ARCH_LIST is PyTorch's: a plain project keeps its own archs.

def test_torch_arch_list_leaves_a_plain_project_alone(toolkit_python, cu13_home, tmp_path):
    project = copy_example("saxpy", tmp_path)
    text = (project / "pyproject.toml").read_text()
    (project / "pyproject.toml").write_text(text.replace("[tool.cudawheel]", '[tool.cudawheel]\narchs = ["80-real"]'))
    proc = run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "out"],
               env=clean_env(TORCH_CUDA_ARCH_LIST="9.0a"))
    wheel = Wheel(Path(proc.stdout.strip()))
    so = wheel.extract("saxpy/_core.abi3.so", tmp_path / "x")
    assert cuobjdump(cu13_home, so) == ({"sm_80"}, set())
    # doctor says the variable is ignored here.
    out = run([toolkit_python, "-m", "cudawheel", "doctor", project],
              env=clean_env(TORCH_CUDA_ARCH_LIST="9.0a", CUDA_HOME=cu13_home)).stdout
    assert 'TORCH_CUDA_ARCH_LIST="9.0a" is ignored for saxpy._core' in out, out
    # ...and what the wheel would record and run at import.
    assert "  needs a driver for CUDA 13.0+: built with CUDA 13." in out, out
    assert "  GPU check at import: saxpy._core (CUDAWHEEL_SKIP_GPU_CHECK=1 skips it at run time)" in out, out


# ---------------------------------------------------------------------------------------------
# What the driver and NVML answered is cached, keyed by what the kernel shows of the machine.

# The helper loaded first with its /proc pointed at a stand-in folder, then the package imported
# (its extension's init finds the helper already in sys.modules); `fresh` then asks afresh, as
# `python -m cudawheel check` does.
CACHED = """
import importlib.util, os, sys
folder = importlib.util.find_spec("saxpy").submodule_search_locations[0]
spec = importlib.util.spec_from_file_location("saxpy._cuda_libs", os.path.join(folder, "_cuda_libs.py"))
helper = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = helper
spec.loader.exec_module(helper)
helper._PROC = {proc!r}
import saxpy
if {fresh!r}:
    helper._verdicts = None
print("imported", ["%s %s %s" % (v.name, v.sm, v.verdict) for v in helper.gpu_verdicts()])
"""

INFORMATION = "Model: \t\t {model}\nIRQ: \t\t 42\nGPU UUID: \t {uuid}\nBus Location: \t 0000:1b:00.0\n"


def fake_proc(root: Path, *, nvidia: bool = True) -> Path:
    """A stand-in /proc: the boot id, the NVIDIA kernel module's version and one GPU's
    information, the process's cgroups (nvidia=False: no NVIDIA driver shown)."""
    (root / "sys/kernel/random").mkdir(parents=True)
    (root / "sys/kernel/random/boot_id").write_text("6f1c0d2e-0000-4000-8000-000000000001\n")
    (root / "self").mkdir()
    (root / "self/cgroup").write_text("0::/user.slice/user-1000.slice/session-1.scope\n")
    if nvidia:
        (root / "driver/nvidia/gpus/0000:1b:00.0").mkdir(parents=True)
        (root / "driver/nvidia/version").write_text(
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 06:54:38 UTC 2025\n"
            "GCC version:  gcc version 12.2.0\n")
        (root / "driver/nvidia/gpus/0000:1b:00.0/information").write_text(
            INFORMATION.format(model="NVIDIA H100 80GB HBM3", uuid="GPU-0a0b0000-1111-2222-3333-444444444444"))
    return root


class Machine:
    """Imports saxpy (archs 80-real) against the stand-in driver and a stand-in /proc, counting
    what libcuda is asked (each check that is not answered from the cache asks it once)."""

    def __init__(self, built, toolkit_python, tmp_path, proc):
        self.built, self.python, self.proc = built, toolkit_python, proc
        self.cache, self.log, self.init_log = tmp_path / "cache", tmp_path / "calls.log", tmp_path / "cuinit.log"
        self.ld_path = str(built[1])

    def run(self, ccs, version=13000, fresh=False, **extra):
        env = dict(LD_LIBRARY_PATH=self.ld_path, FAKE_CUDA_CCS=ccs, FAKE_CUDA_DRIVER=str(version),
                   FAKE_CUDA_NAME="NVIDIA H100 80GB HBM3", XDG_CACHE_HOME=self.cache,
                   FAKE_CUDA_CALL_LOG=self.log, FAKE_CUDA_INIT_LOG=self.init_log)
        env.update(extra)
        rc, out = py_import(self.python, self.built, "capi", CACHED.format(proc=str(self.proc), fresh=fresh),
                            driver=False, **env)
        return out.strip() if rc == 0 else out.splitlines()[0]

    def asked(self):
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0


SASS_86 = "imported ['NVIDIA H100 80GB HBM3 sm_86 sass']"
NO_CODE_90 = "ImportError: saxpy: GPU 0 (NVIDIA H100 80GB HBM3, sm_90) cannot run this package"


def test_the_answers_are_cached_until_the_machine_changes(built, toolkit_python, tmp_path):
    proc = fake_proc(tmp_path / "proc")
    m = Machine(built, toolkit_python, tmp_path, proc)
    # First import: libcuda and NVML are asked (sm_86 runs the sm_80 SASS) and the answers kept.
    assert m.run("86") == SASS_86 and m.asked() == 1
    assert (m.cache / "cudawheel/gpu-check-1").is_file()
    # The same machine: nothing is asked (the stand-in NVML would now say sm_90; the stand-in
    # driver CUDA 12.8): the verdict is the cached one.
    assert m.run("90") == SASS_86 and m.run("86", version=12080) == SASS_86 and m.asked() == 1
    # Another GPU in that slot (its model and UUID in /proc): asked again, and the sm_90 verdict
    # fires, from the cache too on the next import.
    info = proc / "driver/nvidia/gpus/0000:1b:00.0/information"
    info.write_text(INFORMATION.format(model="NVIDIA H100 PCIe", uuid="GPU-9f000000-1111-2222-3333-444444444444"))
    assert m.run("90").startswith(NO_CODE_90) and m.asked() == 2
    assert m.run("90").startswith(NO_CODE_90) and m.asked() == 2
    # What the key leaves out: a line that may change while a GPU is in use (IRQ) asks nothing;
    # a UUID the driver shows as not read yet (`GPU-????...`) is one more state, asked once.
    info.write_text(info.read_text().replace("42", "77"))
    assert m.run("90").startswith(NO_CODE_90) and m.asked() == 2
    unread = info.read_text()
    info.write_text(INFORMATION.format(model="NVIDIA H100 PCIe", uuid="GPU-????????-????-????-????-????????????"))
    assert m.run("90").startswith(NO_CODE_90) and m.run("90").startswith(NO_CODE_90) and m.asked() == 3
    info.write_text(unread)
    assert m.run("90").startswith(NO_CODE_90) and m.asked() == 3
    # Each thing the answers depend on asks again when it changes: the kernel module (a driver
    # upgrade: the floor check reads the new driver's CUDA version) ...
    version = proc / "driver/nvidia/version"
    version.write_text(version.read_text().replace("580.65.06", "570.10.01"))
    assert m.run("86", version=12080).startswith("ImportError: saxpy: the installed NVIDIA driver supports CUDA 12.8")
    assert m.asked() == 4
    # ... the boot, the cgroups (another job's share of the GPUs), the loader's path.
    (proc / "sys/kernel/random/boot_id").write_text("6f1c0d2e-0000-4000-8000-000000000002\n")
    assert m.run("86") == SASS_86 and m.asked() == 5
    (proc / "self/cgroup").write_text("0::/slurm/uid_1000/job_42/step_0\n")
    assert m.run("86") == SASS_86 and m.asked() == 6
    m.ld_path += ":" + str(tmp_path)
    assert m.run("86") == SASS_86 and m.asked() == 7
    # Every state seen is kept: going back to an earlier one asks nothing.
    m.ld_path = str(built[1])
    assert m.run("90") == SASS_86 and m.asked() == 7
    # CUDA_VISIBLE_DEVICES is applied to the cached list at each import.
    assert m.run("90", CUDA_VISIBLE_DEVICES="-1") == "imported []" and m.asked() == 7
    # No import initialised CUDA.
    assert not m.init_log.exists()


def test_check_asks_afresh_and_updates_the_cache(built, toolkit_python, tmp_path):
    m = Machine(built, toolkit_python, tmp_path, fake_proc(tmp_path / "proc"))
    assert m.run("86") == SASS_86 and m.run("90") == SASS_86 and m.asked() == 1
    # gpu_verdicts() before any import's answer (as `python -m cudawheel check`) asks the driver
    # and NVML, and keeps what they say: the next import has the sm_90 verdict.
    # (the import itself is answered from the cache: one question, gpu_verdicts()'s)
    assert m.run("90", fresh=True) == "imported ['NVIDIA H100 80GB HBM3 sm_90 no-code']" and m.asked() == 2
    assert m.run("90").startswith(NO_CODE_90) and m.asked() == 2


def test_without_the_kernel_s_view_or_a_writable_cache_every_import_asks(built, toolkit_python, tmp_path):
    # No /proc/driver/nvidia (another OS, a driver the kernel does not show): nothing cached.
    m = Machine(built, toolkit_python, tmp_path, fake_proc(tmp_path / "proc", nvidia=False))
    assert m.run("86") == SASS_86 and m.run("90").startswith(NO_CODE_90) and m.asked() == 2
    assert not m.cache.exists()
    # A cache folder that cannot be written: the same, with no error.
    m = Machine(built, toolkit_python, tmp_path / "b", fake_proc(tmp_path / "b/proc"))
    m.cache.write_text("a file, not a folder")
    assert m.run("86") == SASS_86 and m.run("90").startswith(NO_CODE_90) and m.asked() == 2
    # A cache file of another format, or damaged, is ignored and rewritten.
    m = Machine(built, toolkit_python, tmp_path / "c", fake_proc(tmp_path / "c/proc"))
    (m.cache / "cudawheel").mkdir(parents=True)
    (m.cache / "cudawheel/gpu-check-1").write_bytes(b"\xff\xfe garbage\n\nkey x\ndriver y\n")
    assert m.run("86") == SASS_86 and m.run("90") == SASS_86 and m.asked() == 1

"""GPU architectures as a model. Spellings, precedence and per-target lists reach
nvcc's exact `-gencode` flags; what a wheel carries is read back from its fatbins and equals
what cuobjdump reports."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import Wheel, clean_env, copy_example, run


def cuobjdump(home: Path, elf: Path) -> tuple[set[str], set[str]]:
    """(SASS, PTX) archs as `cuobjdump --list-elf --list-ptx` names them."""
    out = run([home / "bin/cuobjdump", "--list-elf", "--list-ptx", elf], check=False).stdout
    sass = set(re.findall(r"^ELF file .*\.(sm_\w+)\.cubin$", out, re.M))
    ptx = set(re.findall(r"^PTX file .*\.(sm_\w+)\.ptx$", out, re.M))
    return sass, {p.replace("sm_", "compute_") for p in ptx}


@pytest.fixture(scope="module")
def calc(scratch, toolkit_python, cu13_home):
    """shared_calc with the shared library's own `archs` (family 100f, arch-specific 90a) and
    the top level in PyTorch's spelling from CUDAARCHS (for the extension, which has no .cu:
    its archs only show in the plan)."""
    work = scratch("archs")
    project = copy_example("shared_calc", work)
    text = (project / "pyproject.toml").read_text()
    text = text.replace('destination = "shared_calc/lib"',
                        'destination = "shared_calc/lib"\narchs = "100f-real;9.0a;12.0+PTX"')
    (project / "pyproject.toml").write_text(text)
    proc = run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", work / "out", "-C", "verbose=true"],
               env=clean_env(CUDAARCHS="8.0 8.6+PTX"))
    return Wheel(Path(proc.stdout.strip())), proc.stderr, work


def test_target_archs_reach_nvcc_exactly(calc):
    _, log, _ = calc
    cmd = next(line for line in log.splitlines() if "-gencode" in line and "calc.cu" in line)
    assert re.findall(r"-gencode (\S+)", cmd) == [
        "arch=compute_100f,code=sm_100f",
        "arch=compute_90a,code=sm_90a",
        "arch=compute_120,code=sm_120",
        "arch=compute_120,code=compute_120",
    ], cmd


def test_pytorch_spelling_from_the_environment(toolkit_python, tmp_path):
    # PyTorch's spelling in CMake's variable (TORCH_CUDA_ARCH_LIST itself is for torch targets
    # only: test_import_check.py).
    project = copy_example("saxpy", tmp_path)
    proc = run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "out", "-C", "verbose=true"],
               env=clean_env(CUDAARCHS="8.0;8.6+PTX", TORCH_CUDA_ARCH_LIST="9.0a"))
    cmd = next(line for line in proc.stderr.splitlines() if "-gencode" in line and "saxpy.cu" in line)
    assert re.findall(r"-gencode (\S+)", cmd) == [
        "arch=compute_80,code=sm_80",
        "arch=compute_86,code=sm_86",
        "arch=compute_86,code=compute_86",
    ], cmd


def test_recorded_gpu_code_equals_cuobjdump(calc, toolkit_python, cu13_home):
    wheel, _, work = calc
    lib = wheel.extract("shared_calc/lib/libcalc.so", work / "x")
    sass, ptx = cuobjdump(cu13_home, lib)
    assert sass == {"sm_90a", "sm_100", "sm_120"} and ptx == {"compute_120"}, (sass, ptx)
    # What the wheel records: in _cuda_libs.py, and what `audit --json` reads from any wheel.
    helper = wheel.read("shared_calc/_cuda_libs.py").decode()
    scope: dict = {}
    exec(compile(helper, "_cuda_libs.py", "exec"), scope)
    recorded = scope["GPU_CODE"]
    assert list(recorded) == ["shared_calc/lib/libcalc.so"]  # the extension has no GPU code
    code = recorded["shared_calc/lib/libcalc.so"]
    # cuobjdump names family SASS by its plain arch (the fatbin flags it `f`; see inspect/fatbin.rs).
    assert {s.replace("100f", "100") for s in code["sass"]} == sass and set(code["ptx"]) == ptx
    assert code["sass"] == ("sm_90a", "sm_100f", "sm_120")
    assert code["ptx_isa"].startswith("9.") and code["ptx_toolkit"][0] == 13
    out = run([toolkit_python, "-m", "cudawheel", "audit", "--json", wheel.path]).stdout
    import json
    audit = json.loads(out)[0]
    assert audit["ok"] and audit["gpu_code"]["shared_calc/lib/libcalc.so"]["sass"] == list(code["sass"])
    text = run([toolkit_python, "-m", "cudawheel", "audit", wheel.path]).stdout
    assert "GPU code shared_calc/lib/libcalc.so: SASS sm_90a sm_100f sm_120 | PTX compute_120 | PTX ISA 9." in text


# ---------------------------------------------------------------------------------------------
# _cuda_libs.preload() against a stand-in libcuda.so.1 reporting chosen GPUs and driver versions.

# The stand-in driver: libcuda.so.1 answers cuDriverGetVersion only (each call noted in
# FAKE_CUDA_CALL_LOG), and its cuInit leaves a mark (FAKE_CUDA_INIT_LOG): the check must find
# the GPUs without initialising CUDA.
FAKE_DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
int cuDriverGetVersion(int *v) {
    const char *s = getenv("FAKE_CUDA_DRIVER"), *log = getenv("FAKE_CUDA_CALL_LOG");
    if (log) { FILE *f = fopen(log, "a"); if (f) { fputs("cuDriverGetVersion\n", f); fclose(f); } }
    *v = s ? atoi(s) : 13000; return 0;
}
int cuInit(unsigned flags) {
    const char *log = getenv("FAKE_CUDA_INIT_LOG");
    if (log) { FILE *f = fopen(log, "a"); if (f) { fputs("cuInit\n", f); fclose(f); } }
    return 100;
}
"""

# The stand-in NVML (libnvidia-ml.so.1): the GPUs of FAKE_CUDA_CCS ("90,86": compute
# capabilities in NVML's PCI order), named FAKE_CUDA_NAME or "Fake GPU <i>", with UUIDs
# GPU-<i>a<i>b0000-...; FAKE_NVML_FAIL makes nvmlInit_v2 fail as on a broken install.
FAKE_NVML = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int ccs[16], n = -1, inits;
static void load(void) {
    if (n >= 0) return;
    n = 0;
    const char *s = getenv("FAKE_CUDA_CCS");
    if (!s) return;
    char buf[256]; strncpy(buf, s, 255); buf[255] = 0;
    for (char *t = strtok(buf, ","); t && n < 16; t = strtok(NULL, ",")) ccs[n++] = atoi(t);
}
int nvmlInit_v2(void) { if (getenv("FAKE_NVML_FAIL")) return 9; load(); inits++; return 0; }
int nvmlShutdown(void) { return inits-- > 0 ? 0 : 1; }
int nvmlDeviceGetCount_v2(unsigned *c) { if (inits <= 0) return 1; *c = n; return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **h) {
    if (inits <= 0 || (int)i >= n) return 2;
    *h = (void *)&ccs[i]; return 0;
}
static int index_of(void *h) { return (int)((int *)h - ccs); }
int nvmlDeviceGetCudaComputeCapability(void *h, int *major, int *minor) {
    int i = index_of(h); *major = ccs[i] / 10; *minor = ccs[i] % 10; return 0;
}
int nvmlDeviceGetName(void *h, char *name, unsigned len) {
    const char *s = getenv("FAKE_CUDA_NAME");
    if (s) snprintf(name, len, "%s", s); else snprintf(name, len, "Fake GPU %d", index_of(h));
    return 0;
}
int nvmlDeviceGetUUID(void *h, char *uuid, unsigned len) {
    int i = index_of(h);
    snprintf(uuid, len, "GPU-%da%db0000-1111-2222-3333-444444444444", i, i);
    return 0;
}
"""


def build_driver(folder: Path, nvml: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cuda.c").write_text(FAKE_DRIVER)
    run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", folder / "cuda.c", "-o", folder / "libcuda.so.1"])
    if nvml:
        (folder / "nvml.c").write_text(FAKE_NVML)
        run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libnvidia-ml.so.1", folder / "nvml.c",
             "-o", folder / "libnvidia-ml.so.1"])
    return folder


@pytest.fixture(scope="module")
def driver(scratch) -> Path:
    """A folder holding the stand-in libcuda.so.1 and libnvidia-ml.so.1 (no context API at all:
    the check needs none)."""
    return build_driver(scratch("driver"))


@pytest.fixture(scope="module")
def saxpys(scratch, toolkit_python):
    """saxpy built by nvcc 13.x with archs 80-real (SASS only) and 80 (SASS + PTX), each
    installed into its own folder; a venv holding the runtime wheel both use."""
    work = scratch("preload")
    py = work / "v/bin/python"
    from conftest import make_venv
    make_venv(work / "v")
    run([py, "-m", "pip", "install", "-q", "nvidia-cuda-runtime>=13,<14"], env=clean_env())
    out = {}
    for archs in ("80-real", "80"):
        project = copy_example("saxpy", work / archs)
        proc = run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", work / "out" / archs,
                    "-C", f"archs={archs}"], env=clean_env())
        target = work / f"t-{archs}"
        run([py, "-m", "pip", "install", "-q", "--no-deps", "--target", target, proc.stdout.strip()], env=clean_env())
        out[archs] = target
    return py, out


CHECK = """
import warnings, json
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as w:
    import saxpy
from saxpy import _cuda_libs
print(json.dumps({"verdicts": [list(v) for v in _cuda_libs.gpu_verdicts()], "warnings": [str(x.message) for x in w]}))
"""


def import_saxpy(saxpys, archs, driver, tmp_path, ccs=None, version=None, name=None, **extra):
    py, targets = saxpys
    env = clean_env(PYTHONPATH=targets[archs], **extra)
    if driver is not None:
        env["LD_LIBRARY_PATH"] = str(driver)
        env["FAKE_CUDA_CCS"] = ccs
        env["FAKE_CUDA_DRIVER"] = str(version)
    if name:
        env["FAKE_CUDA_NAME"] = name
    proc = run([py, "-c", CHECK], cwd=tmp_path, env=env, check=False)
    if proc.returncode != 0:
        # The ImportError: its first line, then the lines that explain it.
        lines = proc.stderr.strip().splitlines()
        start = next((i for i, line in enumerate(lines) if line.startswith("ImportError: ")), len(lines) - 1)
        return None, "\n".join(lines[start:])
    import json
    return json.loads(proc.stdout), None


def test_sass_for_another_arch_is_an_import_error_naming_the_device(saxpys, driver, tmp_path):
    res, err = import_saxpy(saxpys, "80-real", driver, tmp_path, "90", 13000)
    assert res is None
    assert err.startswith("ImportError: saxpy: GPU 0 (Fake GPU 0, sm_90) cannot run this package, which "
                          "carries GPU code for sm_80 only: install a release built for sm_90, or rebuild "
                          "it from source with -C archs=90.\n"
                          "  saxpy/_core.abi3.so: SASS sm_80, no PTX at or below sm_90"), err
    # Control: the same wheel on an sm_86 GPU runs its sm_80 SASS (same major, higher minor).
    res, err = import_saxpy(saxpys, "80-real", driver, tmp_path, "86", 13000)
    assert err is None and res["verdicts"] == [[0, "Fake GPU 0", "sm_86", "sass", ""]] and not res["warnings"]


def test_ptx_newer_than_the_driver_is_an_import_error(saxpys, driver, tmp_path):
    res, err = import_saxpy(saxpys, "80", driver, tmp_path, "90", 13000)
    assert res is None
    assert err.startswith("ImportError: saxpy: GPU 0 (Fake GPU 0, sm_90) cannot run this package: its only "
                          "code for sm_90 is PTX made by CUDA 13."), err
    assert "the installed NVIDIA driver supports CUDA 13.0; update the driver to one for CUDA 13." in err
    assert "saxpy/_core.abi3.so: PTX compute_80 (PTX ISA 9." in err


def test_ptx_the_driver_can_jit_imports_with_one_warning(saxpys, driver, tmp_path):
    res, err = import_saxpy(saxpys, "80", driver, tmp_path, "90", 13090)
    assert err is None, err
    [(index, name, sm, verdict, _)] = res["verdicts"]
    assert (index, sm, verdict) == (0, "sm_90", "ptx-jit")
    [warning] = res["warnings"]
    assert "GPU 0 (Fake GPU 0, sm_90) runs this package through PTX JIT of compute_80" in warning


def test_one_unusable_gpu_among_usable_ones_warns(saxpys, driver, tmp_path):
    res, err = import_saxpy(saxpys, "80-real", driver, tmp_path, "90,80", 13000)
    assert err is None, err
    assert [v[3] for v in res["verdicts"]] == ["no-code", "sass"]
    [warning] = res["warnings"]
    assert "GPU 0 (Fake GPU 0, sm_90) cannot run" in warning and "CUDA_VISIBLE_DEVICES" in warning
    assert "\n" not in warning


def test_no_check_without_a_driver_or_when_disabled(saxpys, driver, tmp_path):
    res, err = import_saxpy(saxpys, "80-real", None, tmp_path)
    assert err is None and res == {"verdicts": [], "warnings": []}
    py, targets = saxpys
    env = clean_env(PYTHONPATH=targets["80-real"], LD_LIBRARY_PATH=driver, FAKE_CUDA_CCS="90",
                    CUDAWHEEL_GPU_CHECK="0")
    run([py, "-c", "import saxpy"], cwd=tmp_path, env=env)


def test_preload_is_thread_safe(saxpys, driver, tmp_path):
    py, targets = saxpys
    code = ("import threading, saxpy._cuda_libs as c\n"
            "errs = []\n"
            "def go():\n"
            "    try: c.preload()\n"
            "    except Exception as e: errs.append(e)\n"
            "ts = [threading.Thread(target=go) for _ in range(16)]\n"
            "[t.start() for t in ts]; [t.join() for t in ts]\n"
            "print(len(errs), len(c._loaded), len(c.gpu_verdicts()))\n")
    env = clean_env(PYTHONPATH=targets["80"], LD_LIBRARY_PATH=driver, FAKE_CUDA_CCS="90,86",
                    FAKE_CUDA_DRIVER="13090")
    assert run([py, "-W", "ignore", "-c", code], cwd=tmp_path, env=env).stdout.split() == ["0", "1", "2"]


def verdicts(saxpys, archs, driver, tmp_path, ccs, **env):
    res, err = import_saxpy(saxpys, archs, driver, tmp_path, ccs, 13000, **env)
    return err if res is None else [tuple(v[:4]) for v in res["verdicts"]]


def test_cuda_visible_devices_picks_and_orders_the_gpus_checked(saxpys, driver, tmp_path):
    # NVML sees sm_80, sm_90, sm_86 (PCI order); the wheel has SASS for sm_80 only.
    def v(value, **env):
        return verdicts(saxpys, "80-real", driver, tmp_path, "80,90,86", CUDA_VISIBLE_DEVICES=value, **env)
    pci = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    assert verdicts(saxpys, "80-real", driver, tmp_path, "80,90,86") == [
        (0, "Fake GPU 0", "sm_80", "sass"), (1, "Fake GPU 1", "sm_90", "no-code"), (2, "Fake GPU 2", "sm_86", "sass")]
    # Integer indices select and reorder; the index reported is CUDA's (the position in the list).
    assert v("2,0", **pci) == [(0, "Fake GPU 2", "sm_86", "sass"), (1, "Fake GPU 0", "sm_80", "sass")]
    assert v(" 1", **pci).startswith("ImportError: saxpy: GPU 0 (Fake GPU 1, sm_90) cannot run")
    # UUID prefixes as CUDA takes them; they need no CUDA_DEVICE_ORDER.
    assert v("GPU-2a2b,GPU-0a0b0000-1111") == [(0, "Fake GPU 2", "sm_86", "sass"), (1, "Fake GPU 0", "sm_80", "sass")]
    assert v("GPU-1a").startswith("ImportError: saxpy: GPU 0 (Fake GPU 1, sm_90) cannot run")
    # An invalid entry (out of range, unknown or ambiguous UUID) ends the list; a repeated one,
    # an empty value or -1 leave no GPU.
    assert v("0,7,1", **pci) == v("0,-1,1", **pci) == v("GPU-0a,GPU-,GPU-1a") == [(0, "Fake GPU 0", "sm_80", "sass")]
    assert v("", **pci) == v("-1", **pci) == v("0,0", **pci) == v("1,GPU-1a") == v("GPU-9") == []
    # Integer indices over GPUs of different archs, ordered fastest-first (CUDA's default): which
    # one CUDA means is unknown, so nothing is checked rather than the wrong GPU.
    assert v("1") == []
    # MIG instances are not mapped: no check.
    assert v("MIG-4b7c6f3a-0000-0000-0000-000000000000") == []


def test_no_nvml_no_gpu_check(saxpys, driver, tmp_path):
    # Some containers have libcuda but no NVML: the import skips the GPU check (no error, no cuInit).
    bare = build_driver(tmp_path / "bare", nvml=False)
    log = tmp_path / "cuinit.log"
    res, err = import_saxpy(saxpys, "80-real", bare, tmp_path, "90", 13000, FAKE_CUDA_INIT_LOG=log)
    assert err is None and res == {"verdicts": [], "warnings": []} and not log.exists()
    # NVML present but failing (nvmlInit_v2 error): the same.
    res, err = import_saxpy(saxpys, "80-real", driver, tmp_path, "90", 13000, FAKE_NVML_FAIL="1")
    assert err is None and res == {"verdicts": [], "warnings": []}
    # Control: with a working NVML the same wheel and GPU are an ImportError.
    assert import_saxpy(saxpys, "80-real", driver, tmp_path, "90", 13000)[1].startswith("ImportError")


def test_the_import_never_initialises_cuda(saxpys, driver, tmp_path):
    # cuInit before fork() breaks CUDA in the children: the check reads NVML only.
    log = tmp_path / "cuinit.log"
    res, err = import_saxpy(saxpys, "80", driver, tmp_path, "90,86", 13090, FAKE_CUDA_INIT_LOG=log)
    assert err is None and [v[3] for v in res["verdicts"]] == ["ptx-jit", "sass"]
    assert not log.exists(), log.read_text()
    # Control: the enumeration this replaced (cuInit, then cuDeviceGetCount...) leaves the mark.
    py, _ = saxpys
    run([py, "-c", "import ctypes; ctypes.CDLL('libcuda.so.1').cuInit(0)"], cwd=tmp_path,
        env=clean_env(LD_LIBRARY_PATH=driver, FAKE_CUDA_INIT_LOG=log))
    assert log.read_text() == "cuInit\n"


# ---------------------------------------------------------------------------------------------
# Thread budget and memory-aware admission, seen in `-C verbose=true`.

def nvcc_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if line.startswith("cudawheel: $ ") and "-gencode" in line]


def test_thread_budget_and_memory_admission(toolkit_python, tmp_path):
    project = copy_example("saxpy", tmp_path)
    (project / "csrc/extra.cu").write_text("__global__ void twice(float *x) { x[threadIdx.x] *= 2; }\n")
    wheel = ["-m", "cudawheel", "wheel", project, "-o", tmp_path / "out", "-C", "verbose=true", "-C", "archs=80-real;90-real"]
    # More slots than compiles: each nvcc gets --threads > 1 (4 slots, 2 .cu files of 2 device
    # passes: 2 each; never more threads than passes).
    log = run([toolkit_python, *wheel, "-C", "jobs=4"], env=clean_env()).stderr
    lines = nvcc_lines(log)
    assert len(lines) == 2 and all(re.search(r" --threads 2$", ln) for ln in lines), lines
    assert "scheduler: 4 slots, memory for parallel steps:" in log
    assert "(MemAvailable)" in log or "(the memory cgroup " in log, log
    # The records now hold each step's peak memory; with a limit below two of them, the
    # compiles run one at a time (and the build still succeeds).
    for f in ("saxpy.cu", "extra.cu", "module.c"):
        with open(project / "csrc" / f, "a") as fh:
            fh.write("\n// edit\n")
    log = run([toolkit_python, *wheel, "-C", "jobs=4", "-C", "max-memory=1M"], env=clean_env()).stderr
    admits = re.findall(r"^cudawheel: admit (.*?): (\d+) running, .*\(measured\)", log, re.M)
    assert len(admits) >= 3 and {n for _, n in admits} == {"1"}, log
    assert "waits for memory" in log
    # Control: without the limit (and after another edit) they overlap again.
    for f in ("saxpy.cu", "extra.cu"):
        with open(project / "csrc" / f, "a") as fh:
            fh.write("\n// edit 2\n")
    log = run([toolkit_python, *wheel, "-C", "jobs=4"], env=clean_env()).stderr
    assert max(int(n) for _, n in re.findall(r"^cudawheel: admit (.*?): (\d+) running", log, re.M)) >= 2, log
    # More compiles than slots: nvcc gets no --threads (nvcc's default of 1).
    log = run([toolkit_python, *wheel, "-C", "jobs=1", "-C", "build-dir=build/b1"], env=clean_env()).stderr
    lines = nvcc_lines(log)
    assert len(lines) == 2 and not any("--threads" in ln for ln in lines), lines


def test_doctor_shows_the_archs_and_where_they_come_from(backend_python, cu13_home, tmp_path):
    project = copy_example("shared_calc", tmp_path)
    text = (project / "pyproject.toml").read_text()
    (project / "pyproject.toml").write_text(
        text.replace('destination = "shared_calc/lib"', 'destination = "shared_calc/lib"\narchs = ["90a-real"]'))
    out = run([backend_python, "-m", "cudawheel", "doctor", project],
              env=clean_env(CUDA_HOME=cu13_home, CUDAARCHS="8.0 8.6+PTX")).stdout
    assert ('GPU architectures: "8.0 8.6+PTX" from environment variable `CUDAARCHS` '
            "(`tool.cudawheel.archs`)\n    -gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86 "
            "-gencode arch=compute_86,code=compute_86\n") in out, out
    assert ('  calc (tool.cudawheel.shared-library[0].archs) overrides them: "90a-real"\n'
            "    -gencode arch=compute_90a,code=sm_90a\n") in out, out
    assert re.search(r"  nvcc 13\.\S+ can build: 75 80 .* 90 90a 100 100a 100f", out), out
    # The default, when nothing sets archs.
    out = run([backend_python, "-m", "cudawheel", "doctor", project], env=clean_env(CUDA_HOME=cu13_home)).stdout
    assert "GPU architectures: from the default for CUDA 13\n    -gencode arch=compute_75,code=sm_75" in out, out


def test_the_messages_the_docs_show_are_the_real_ones(saxpys, driver, tmp_path):
    from conftest import REPO
    docs = (REPO / "docs/explanations/architectures.md").read_text() + (REPO / "README.md").read_text()
    h100 = "NVIDIA H100 80GB HBM3"
    _, no_code = import_saxpy(saxpys, "80-real", driver, tmp_path, "90", 13000, h100)
    _, too_old = import_saxpy(saxpys, "80", driver, tmp_path, "90", 13000, h100)
    assert no_code in docs, no_code
    # The PTX's CUDA version is the nvcc 13.x of the day; the docs show 13.5's.
    for pattern, fixed in [(r"made by CUDA 13\.\d+ ", "made by CUDA 13.5 "), (r"PTX ISA 9\.\d+\)", "PTX ISA 9.5)"),
                           (r"for CUDA 13\.\d+ or newer", "for CUDA 13.5 or newer")]:
        too_old = re.sub(pattern, fixed, too_old)
    assert too_old in docs, too_old

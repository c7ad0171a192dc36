"""`split = "library"`. The GPU code goes into one Python-independent wheel
`<name>-lib-cu<major>` (py3-none); per-Python binding wheels link it by SONAME through an
`$ORIGIN` RPATH and require it `==`. Built for three CPythons with and without the split,
installed into fresh venvs and imported (no GPU here: the import check skips without a driver),
audited by cudawheel and auditwheel; the PEP 517 hook builds one ordinary wheel; the stable ABI,
`--cuda` and an sdist split too. (The error cases: test_errors.py, `split-*`.)"""

from __future__ import annotations

import json
import os
import re
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import Wheel, clean_env, copy_example, readelf_dynamic, run, toolkit_home
from test_size_budget import fatbin_bytes, pyenv_python

MINORS = (9, 11, 12)
LIB = "pybind_saxpy_lib_cu13"
SONAME = "libpybind_saxpy__core_gpu.so"


def has_fatbin(so: Path) -> bool:
    return " .nv_fatbin " in run(["readelf", "-S", "-W", so]).stdout


def wheel_args(backend_python, project, out, pythons, *settings):
    args = [backend_python, "-m", "cudawheel", "wheel", project, "-o", out]
    for py in pythons:
        args += ["--python", py]
    for s in settings:
        args += ["-C", s]
    return args


@pytest.fixture(scope="module")
def release(backend_python, cu13_home, scratch):
    """pybind_saxpy for CPython 3.9, 3.11, 3.12 (the default archs of CUDA 13), once per-Python
    wheels only and once split. Returns (tmp, plain wheels, split wheels, split stderr)."""
    tmp = scratch("split")
    pythons = []
    for minor in MINORS:
        venv_dir = tmp / f"build{minor}"
        run([pyenv_python(minor), "-m", "venv", venv_dir])
        run([venv_dir / "bin/python", "-m", "pip", "install", "-q", "pybind11>=2.12"], env=clean_env())
        pythons.append(venv_dir / "bin/python")
    project = copy_example("pybind_saxpy", tmp)
    env = clean_env(CUDA_HOME=cu13_home)
    plain = run(wheel_args(backend_python, project, tmp / "plain", pythons), env=env)
    split = run(wheel_args(backend_python, project, tmp / "split", pythons, "split=library"), env=env)
    return (tmp, [Path(p) for p in plain.stdout.split()], [Path(p) for p in split.stdout.split()],
            split.stderr)


def test_split_layout_and_size(release, backend_python):
    tmp, plain, split, stderr = release
    lib, *bindings = split
    assert re.fullmatch(rf"{LIB}-0\.1\.0-py3-none-manylinux_2_\d+_x86_64\.whl", lib.name), lib.name
    assert [b.name.split("-")[2] for b in bindings] == ["cp39", "cp311", "cp312"], split
    assert sorted((tmp / "split").iterdir()) == sorted(split)
    # The library wheel: one ELF with the GPU code and its SONAME, NVIDIA runtime required,
    # not tagged per Python.
    w = Wheel(lib)
    w.check_record()
    assert w.field("Name") == ["pybind-saxpy-lib-cu13"]
    assert w.field("Requires-Dist") == ["nvidia-cuda-runtime>=13.5,<14"], w.field("Requires-Dist")
    wheel_tags = [line for line in w.read(f"{w.dist_info}/WHEEL").decode().splitlines() if line.startswith("Tag:")]
    assert len(wheel_tags) == 1 and wheel_tags[0].startswith("Tag: py3-none-manylinux_2_"), wheel_tags
    assert [n for n in w.names if not n.startswith(w.dist_info)] == [f"{LIB}/{SONAME}"], w.names
    so = w.extract(f"{LIB}/{SONAME}", tmp / "x-lib")
    dyn = readelf_dynamic(so)
    assert f"Library soname: [{SONAME}]" in run(["readelf", "-d", so]).stdout
    assert dyn["RPATH"] == ["$ORIGIN/../nvidia/cu13/lib"], dyn
    assert not [n for n in dyn["NEEDED"] if "python" in n], dyn
    lib_fat = fatbin_bytes(so)
    # Each binding wheel: host glue only, linking the library by SONAME through its folder,
    # requiring it at exactly this version.
    for minor, b in zip(MINORS, bindings):
        w = Wheel(b)
        w.check_record()
        assert "pybind-saxpy-lib-cu13==0.1.0" in w.field("Requires-Dist"), w.field("Requires-Dist")
        assert not [n for n in w.names if n.startswith(LIB)], w.names
        (name,) = [n for n in w.names if n.startswith("pybind_saxpy/_core")]
        assert name.endswith(f".cpython-3{minor}-x86_64-linux-gnu.so"), name
        ext = w.extract(name, tmp / f"x{minor}")
        dyn = readelf_dynamic(ext)
        assert SONAME in dyn["NEEDED"], dyn
        assert dyn["RPATH"] == [f"$ORIGIN/../nvidia/cu13/lib:$ORIGIN/../{LIB}"], dyn
        assert not has_fatbin(ext)
        # The import check reads the library's GPU code; preload() loads it after the runtime.
        helper = w.read("pybind_saxpy/_cuda_libs.py").decode()
        assert f'"{LIB}/{SONAME}": {{"sass": (' in helper, helper
        runtime = helper.index('("libcudart.so.13", "nvidia/cu13/lib"')
        assert helper.index(f'("{SONAME}", "{LIB}", "pybind-saxpy-lib-cu13==0.1.0")') > runtime, helper
    # Control: each per-Python wheel carries the same fatbin again.
    fat = {fatbin_bytes(Wheel(p).extract(n, tmp / f"p{i}")) for i, p in enumerate(plain)
           for n in Wheel(p).names if n.startswith("pybind_saxpy/_core")}
    assert fat == {lib_fat}, (fat, lib_fat)
    # The bytes: the split ships the GPU code (and its host wrappers) once.
    plain_total = sum(p.stat().st_size for p in plain)
    split_total = sum(p.stat().st_size for p in split)
    print(f"\nper-Python: {plain_total} bytes {[p.stat().st_size for p in plain]}, split: {split_total} bytes "
          f"(library {lib.stat().st_size}, bindings {[b.stat().st_size for b in bindings]}), fatbin {lib_fat}")
    rep = json.loads(run([backend_python, "-m", "cudawheel", "size", "--json", tmp / "plain"]).stdout)
    duplicated = rep["projects"][0]["duplicated_gpu_bytes"]
    assert duplicated == 2 * lib_fat, rep
    # It saves the duplicated fatbins, less what the extra wheel costs besides its ELF file
    # (its .dist-info, its `_cuda_libs.py`, the zip's directory).
    with zipfile.ZipFile(lib) as z:
        lib_overhead = lib.stat().st_size - z.getinfo(f"{LIB}/{SONAME}").compress_size
    assert plain_total - split_total >= duplicated - lib_overhead, (plain_total, split_total, duplicated, lib_overhead)
    assert split_total < plain_total
    rep = json.loads(run([backend_python, "-m", "cudawheel", "size", "--json", tmp / "split"]).stdout)
    assert rep["total_bytes"] == split_total and all(p["duplicated_gpu_bytes"] == 0 for p in rep["projects"]), rep
    assert "built pybind_saxpy_lib_cu13-0.1.0-py3-none" in stderr and stderr.count(f"built {LIB}") == 1, stderr
    # The GPU code is compiled once: the later interpreters reuse the library's steps.
    assert stderr.count("] nvcc csrc/saxpy.cu ") == 1 and stderr.count(f"] link {LIB}/") == 1, stderr
    assert stderr.count("] c++ csrc/module.cpp ") == 3, stderr


def test_split_wheels_install_and_import(release):
    """`pip install` of one binding wheel pulls the library wheel (and NVIDIA's runtime) from
    the folder; the import works in a fresh venv of each Python with no GPU driver."""
    tmp, _, split, _ = release
    lib, *bindings = split
    for minor, b in zip(MINORS, bindings):
        venv_dir = tmp / f"use{minor}"
        run([pyenv_python(minor), "-m", "venv", venv_dir])
        py = venv_dir / "bin/python"
        run([py, "-m", "pip", "install", "-q", "--find-links", lib.parent, b], env=clean_env())
        listed = run([py, "-m", "pip", "list", "--format=json"], env=clean_env()).stdout
        names = {d["name"].lower(): d["version"] for d in json.loads(listed)}
        assert names.get("pybind-saxpy-lib-cu13") == "0.1.0" and names.get("pybind-saxpy-cu13") == "0.1.0", names
        code = ("import pybind_saxpy as m\nassert m.runtime_version() >= 13000\nassert m.driver_version() == 0\n"
                "maps = open('/proc/self/maps').read()\n"
                f"print(sorted({{l.split()[-1] for l in maps.splitlines() if '{SONAME}' in l}}), m._core.__file__)")
        shown = run([py, "-c", code], cwd=tmp, env=clean_env()).stdout
        assert f"site-packages/{LIB}/{SONAME}" in shown and "site-packages/pybind_saxpy/_core" in shown, shown
    # The library installed apart (another folder on sys.path, out of the RPATH's reach):
    # preload() finds and loads it; control: without that folder, the import says what to install.
    py = tmp / "use12/bin/python"
    apart = tmp / "apart"
    run([py, "-m", "pip", "uninstall", "-q", "-y", "pybind-saxpy-lib-cu13"], env=clean_env())
    run([py, "-m", "pip", "install", "-q", "--no-deps", "--target", apart, lib], env=clean_env())
    shown = run([py, "-c", code], cwd=tmp, env=clean_env(PYTHONPATH=str(apart))).stdout
    assert f"{apart}/{LIB}/{SONAME}" in shown, shown
    proc = run([py, "-c", code], cwd=tmp, env=clean_env(), check=False)
    assert proc.returncode == 1 and "Traceback" in proc.stderr, proc.stderr
    assert f"cannot load the CUDA library {SONAME}" in proc.stderr, proc.stderr
    assert "pip install 'pybind-saxpy-lib-cu13==0.1.0'" in proc.stderr, proc.stderr
    # Control: without the library wheel at hand, pip refuses the binding wheel.
    venv_dir = tmp / "nolib"
    run([pyenv_python(12), "-m", "venv", venv_dir])
    empty = tmp / "empty"
    empty.mkdir()
    proc = run([venv_dir / "bin/python", "-m", "pip", "install", "--no-index", "--find-links", empty, bindings[2]],
               env=clean_env(), check=False)
    assert proc.returncode != 0 and "pybind-saxpy-lib-cu13==0.1.0" in proc.stdout + proc.stderr, proc.stderr


def rewrite_metadata(wheel: Path, dest: Path, old: str, new: str) -> Path:
    """A copy of `wheel` with one METADATA line changed (RECORD left as it was)."""
    out = dest / wheel.name
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename.endswith(".dist-info/METADATA"):
                assert old.encode() in data
                data = data.replace(old.encode(), new.encode())
            dst.writestr(item, data)
    return out


def test_split_wheels_pass_both_audits(release, backend_python):
    tmp, _, split, _ = release
    proc = run([backend_python, "-m", "cudawheel", "audit", *split])
    assert proc.stdout.count("OK  ") == 4, proc.stdout
    # Controls: the library's SONAME counts as provided only through an `==` requirement.
    bad = tmp / "bad"
    bad.mkdir()
    pin = "Requires-Dist: pybind-saxpy-lib-cu13==0.1.0"
    for new in ("Requires-Dist: pybind-saxpy-lib-cu13>=0.1.0", "Requires-Dist: pybind11"):
        changed = rewrite_metadata(split[1], bad, pin, new)
        proc = run([backend_python, "-m", "cudawheel", "audit", changed], check=False)
        assert proc.returncode == 1 and f"needs {SONAME}, which neither the system" in proc.stdout, proc.stdout
    # auditwheel agrees with each tag (NVIDIA's libraries and the library wheel's are declared
    # dependencies, excluded as auditwheel's docs say).
    bindir = str(Path(sys.executable).parent)
    env = clean_env(PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    for wheel in split:
        out = tmp / "repaired" / wheel.name
        run([sys.executable, "-m", "auditwheel", "repair", "--exclude", "libcu*", "--exclude", "libnv*",
             "--exclude", SONAME, "-w", out, wheel], env=env)
        (repaired,) = out.glob("*.whl")
        assert repaired.name.rsplit("-", 1)[0] == wheel.name.rsplit("-", 1)[0], repaired.name
        ours = wheel.name[:-4].rsplit("-", 1)[1]
        assert ours in repaired.name, (wheel.name, repaired.name)


def test_pep517_hook_builds_one_ordinary_wheel(release, wheelhouse, cu13_home):
    """A frontend takes one wheel: with `split = "library"` the hook builds the per-Python wheel
    (GPU code inside) and says how to get the split wheels."""
    tmp = release[0]
    py = tmp / "build12/bin/python"
    run([py, "-m", "pip", "install", "-q", "--no-index", "--find-links", wheelhouse, "cudawheel"], env=clean_env())
    project = tmp / "pybind_saxpy"
    out = tmp / "hook"
    code = f"import cudawheel; print(cudawheel.build_wheel({str(out)!r}, {{'split': 'library'}}))"
    proc = run([py, "-c", code], cwd=project, env=clean_env(CUDA_HOME=cu13_home, CUDAWHEEL_ARCHS="80"))
    (name,) = [p.name for p in out.iterdir()]
    assert name == proc.stdout.strip() and name.startswith("pybind_saxpy_cu13-0.1.0-cp312-cp312-"), name
    assert 'split = "library": a PEP 517 frontend takes one wheel' in proc.stderr, proc.stderr
    w = Wheel(out / name)
    assert not [n for n in w.names if n.startswith(LIB)]
    assert not [r for r in w.field("Requires-Dist") if "lib-cu13" in r], w.field("Requires-Dist")
    (so,) = [n for n in w.names if n.startswith("pybind_saxpy/_core")]
    assert has_fatbin(w.extract(so, tmp / "x-hook"))


def test_split_with_limited_api_cuda_majors_and_sdist(backend_python, cu13_home, tmp_path):
    """saxpy (C API, cp39-abi3) with `split = "library"` in pyproject.toml: built by the CLI for
    CUDA 12 and 13, a library wheel per major and an abi3 binding wheel per major; its sdist
    (made for CUDA 13), unpacked and built by the CLI, gives both wheels again, which install and
    import."""
    project = copy_example("saxpy", tmp_path)
    text = (project / "pyproject.toml").read_text()
    (project / "pyproject.toml").write_text(text.replace("[tool.cudawheel]\n", '[tool.cudawheel]\nsplit = "library"\n'))
    # As test_variants.py finds both toolkits: CUDA 12 in CUDA_HOME, CUDA 13 in CUDA_PATH.
    env = clean_env(CUDA_HOME=toolkit_home(12), CUDA_PATH=cu13_home, CUDAWHEEL_ARCHS="80")
    out = tmp_path / "out"
    proc = run([backend_python, "-m", "cudawheel", "wheel", project, "-o", out, "--cuda", "12", "--cuda", "13"], env=env)
    names = [Path(p).name for p in proc.stdout.split()]
    assert len(names) == 4, names
    for major, (lib, binding) in zip((12, 13), (names[:2], names[2:])):
        assert re.fullmatch(rf"saxpy_lib_cu{major}-0\.1\.0-py3-none-manylinux_2_\d+_x86_64\.whl", lib), names
        assert re.fullmatch(rf"saxpy_cu{major}-0\.1\.0-cp39-abi3-manylinux_2_\d+_x86_64\.whl", binding), names
        assert f"saxpy-lib-cu{major}==0.1.0" in Wheel(out / binding).field("Requires-Dist")
        assert re.fullmatch(rf"nvidia-cuda-runtime(-cu12)?>={major}\.\d+,<{major + 1}",
                            " ".join(Wheel(out / lib).field("Requires-Dist"))), Wheel(out / lib).field("Requires-Dist")
    assert run([backend_python, "-m", "cudawheel", "audit", *sorted(out.glob("*.whl"))]).returncode == 0
    # The sdist, made for CUDA 13, unpacked and built by the CLI.
    env13 = clean_env(CUDA_HOME=cu13_home, CUDAWHEEL_ARCHS="80")
    sdist = Path(run([backend_python, "-m", "cudawheel", "sdist", project, "-o", tmp_path / "sd"], env=env13).stdout.strip())
    assert sdist.name == "saxpy_cu13-0.1.0.tar.gz", sdist.name
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    (src,) = (tmp_path / "unpacked").iterdir()
    from_sdist = tmp_path / "from-sdist"
    proc = run([backend_python, "-m", "cudawheel", "wheel", src, "-o", from_sdist], env=env13)
    names = [Path(p).name for p in proc.stdout.split()]
    assert [n.split("-")[0] for n in names] == ["saxpy_lib_cu13", "saxpy_cu13"], names
    venv_dir = tmp_path / "use"
    run([pyenv_python(11), "-m", "venv", venv_dir])
    py = venv_dir / "bin/python"
    run([py, "-m", "pip", "install", "-q", "--find-links", from_sdist, from_sdist / names[1]], env=clean_env())
    shown = run([py, "-c", "import saxpy; print(saxpy.runtime_version())"], cwd=tmp_path, env=clean_env()).stdout
    assert int(shown.split()[0]) >= 13000, shown


def test_split_for_several_pythons_and_cuda_majors(release, backend_python, cu13_home):
    """`--python` twice and `--cuda 12 --cuda 13`: one library wheel per CUDA major (its GPU code
    compiled once per major) and a binding wheel per Python and major, each pinning its major's
    library; every wheel passes the audit."""
    tmp = release[0]
    project = copy_example("pybind_saxpy", tmp / "matrix")
    out = tmp / "matrix-out"
    env = clean_env(CUDA_HOME=toolkit_home(12), CUDA_PATH=cu13_home, CUDAWHEEL_ARCHS="80")
    args = wheel_args(backend_python, project, out, [tmp / "build9/bin/python", tmp / "build12/bin/python"],
                      "split=library") + ["--cuda", "12", "--cuda", "13"]
    proc = run(args, env=env)
    names = [Path(p).name.split("-manylinux")[0] for p in proc.stdout.split()]
    assert names == [
        "pybind_saxpy_lib_cu12-0.1.0-py3-none", "pybind_saxpy_cu12-0.1.0-cp39-cp39",
        "pybind_saxpy_lib_cu13-0.1.0-py3-none", "pybind_saxpy_cu13-0.1.0-cp39-cp39",
        "pybind_saxpy_cu12-0.1.0-cp312-cp312", "pybind_saxpy_cu13-0.1.0-cp312-cp312",
    ], names
    assert proc.stderr.count("] nvcc csrc/saxpy.cu ") == 2, proc.stderr
    for path in (Path(p) for p in proc.stdout.split()):
        if "_lib_" not in path.name:
            major = path.name.split("-")[0][-2:]
            assert f"pybind-saxpy-lib-cu{major}==0.1.0" in Wheel(path).field("Requires-Dist"), path.name
    audit = run([backend_python, "-m", "cudawheel", "audit", *proc.stdout.split()])
    assert audit.stdout.count("OK  ") == 6, audit.stdout


def variant_of(wheel: Path) -> dict:
    """The wheel's variant.json `variants`, after variantlib accepted it for the file name's label."""
    variantlib = pytest.importorskip("variantlib", reason="variantlib==0.2.2 comes from requirements-dev.txt")
    from variantlib.constants import VALIDATION_WHEEL_NAME_REGEX
    from variantlib.variant_dist_info import VariantDistInfo

    w = Wheel(wheel)
    text = w.read(f"{w.dist_info}/variant.json")
    m = VALIDATION_WHEEL_NAME_REGEX.fullmatch(wheel.name)
    assert m and m.group("variant_label"), wheel.name
    assert VariantDistInfo(text, m.group("variant_label")).variant_desc.label == m.group("variant_label")
    assert variantlib
    return json.loads(text)["variants"]


def uv_install(tmp: Path, python: Path, find_links, driver: str, sm: str):
    """uv (`--preview-features wheel-variants`, offline) installs `pybind-saxpy` by name into a
    fresh venv of `python`, with the NVIDIA provider's detection forced to `driver` and `sm`."""
    env = clean_env(UV_CACHE_DIR=tmp / "uv-cache", NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION=driver,
                    NV_VARIANT_PROVIDER_FORCE_SM_ARCH=sm)
    venv_dir = tmp / f"uv-{python.parent.parent.name}-{driver}-{sm}"
    run([sys.executable, "-m", "uv", "venv", "-q", "--offline", "--python", python, venv_dir], env=env)
    py = venv_dir / "bin/python"
    cmd = [sys.executable, "-m", "uv", "pip", "install", "--offline", "--no-index", "--python", py,
           "--preview-features", "wheel-variants"]
    for f in find_links:
        cmd += ["--find-links", f]
    return py, run(cmd + ["pybind-saxpy"], env=env, check=False)


def test_split_with_variants(release, backend_python, cu13_home):
    """`variant = "cuda"` with the split, `--cuda 12 --cuda 13`, two Pythons: the library wheel
    `pybind-saxpy-lib` is a variant per major (label cu<major>), the binding wheels are variants
    of the same label with the same properties (they link libcudart.so.<major> and carry that
    major's import check) requiring `pybind-saxpy-lib==0.1.0`; a -variants.json per distribution;
    both audits accept every wheel; uv installs the binding by name and picks the library of the
    same label by the (forced) driver, which imports on this CPU-only machine."""
    tmp = release[0]
    project = copy_example("pybind_saxpy", tmp / "variant")
    out = tmp / "variant-out"
    env = clean_env(CUDA_HOME=toolkit_home(12), CUDA_PATH=cu13_home, CUDAWHEEL_ARCHS="90-real")
    pythons = [tmp / "build9/bin/python", tmp / "build12/bin/python"]
    proc = run(wheel_args(backend_python, project, out, pythons, "split=library", "variant=cuda")
               + ["--cuda", "12", "--cuda", "13"], env=env)
    written = list(dict.fromkeys(Path(p) for p in proc.stdout.split()))
    names = [re.sub(r"manylinux_2_\d+_x86_64", "PLAT", p.name) for p in written]
    assert names == [
        "pybind_saxpy_lib-0.1.0-py3-none-PLAT-cu12.whl", "pybind_saxpy-0.1.0-cp39-cp39-PLAT-cu12.whl",
        "pybind_saxpy_lib-0.1.0-py3-none-PLAT-cu13.whl", "pybind_saxpy-0.1.0-cp39-cp39-PLAT-cu13.whl",
        "pybind_saxpy-0.1.0-variants.json", "pybind_saxpy_lib-0.1.0-variants.json",
        "pybind_saxpy-0.1.0-cp312-cp312-PLAT-cu12.whl", "pybind_saxpy-0.1.0-cp312-cp312-PLAT-cu13.whl",
    ], names
    assert sorted(out.iterdir()) == sorted(written)
    assert proc.stderr.count("] nvcc csrc/saxpy.cu ") == 2, proc.stderr  # once per major
    runtime = {12: "nvidia-cuda-runtime-cu12>=12.", 13: "nvidia-cuda-runtime>=13."}
    wheels = [p for p in written if p.suffix == ".whl"]
    for path in wheels:
        major = int(path.name[-6:-4])
        props = {f"cu{major}": {"nvidia": {"cuda_version_lower_bound": [f"{major}.0"], "sm_arch": ["90_real"]}}}
        assert variant_of(path) == props, path.name
        w = Wheel(path)
        assert f"{w.dist_info}/variant.json" in w.check_record()
        reqs = w.field("Requires-Dist")
        if path.name.startswith("pybind_saxpy_lib-"):
            assert w.field("Name") == ["pybind-saxpy-lib"]
            assert [n for n in w.names if not n.startswith(w.dist_info)] == [f"pybind_saxpy_lib/{SONAME}"]
            assert len(reqs) == 1 and reqs[0].startswith(runtime[major]), reqs
            continue
        assert w.field("Name") == ["pybind-saxpy"]
        assert reqs[0] == "pybind-saxpy-lib==0.1.0" and reqs[1].startswith(runtime[major]), reqs
        (name,) = [n for n in w.names if n.startswith("pybind_saxpy/_core")]
        dyn = readelf_dynamic(w.extract(name, tmp / "variant-x" / path.name))
        # Why the binding wheels are variants too: the host glue needs this major's runtime.
        assert SONAME in dyn["NEEDED"] and f"libcudart.so.{major}" in dyn["NEEDED"], dyn
        assert dyn["RPATH"][0].endswith(":$ORIGIN/../pybind_saxpy_lib"), dyn
        assert '("libpybind_saxpy__core_gpu.so", "pybind_saxpy_lib", "pybind-saxpy-lib==0.1.0")' in \
            w.read("pybind_saxpy/_cuda_libs.py").decode()
    for dist in ("pybind_saxpy", "pybind_saxpy_lib"):
        index = json.loads((out / f"{dist}-0.1.0-variants.json").read_text())
        assert index["variants"] == {
            f"cu{m}": {"nvidia": {"cuda_version_lower_bound": [f"{m}.0"], "sm_arch": ["90_real"]}} for m in (12, 13)
        }, index
    # cudawheel's audit (the variant audit included) accepts each; control: a library wheel
    # relabelled cu13 -> cu12 fails it.
    audit = run([backend_python, "-m", "cudawheel", "audit", *wheels])
    assert audit.stdout.count("OK  ") == 6, audit.stdout
    bad = tmp / "variant-bad"
    bad.mkdir()
    lib13 = written[2]
    relabelled = bad / lib13.name.replace("-cu13.whl", "-cu12.whl")
    relabelled.write_bytes(lib13.read_bytes())
    proc = run([backend_python, "-m", "cudawheel", "audit", relabelled], check=False)
    assert proc.returncode == 1 and "not exactly the file name's label \"cu12\"" in proc.stdout, proc.stdout
    # uv picks both wheels' label by the driver; the binding loads the library of its major.
    runtime_dir = tmp / "variant-runtime"
    run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", runtime_dir,
         *sorted({r for w in wheels for r in Wheel(w).field("Requires-Dist") if r.startswith("nvidia")})],
        env=clean_env())
    code = ("import json, importlib.metadata as md, pybind_saxpy as m\n"
            "labels = {d: [*json.loads(md.distribution(d).read_text('variant.json'))['variants']]"
            " for d in ('pybind-saxpy', 'pybind-saxpy-lib')}\n"
            f"lib = {{l.split()[-1] for l in open('/proc/self/maps') if '{SONAME}' in l}}\n"
            "print(json.dumps([labels, m.runtime_version() // 1000, sorted(lib)]))")
    for minor in (9, 12):
        for driver, label in (("12.8", "cu12"), ("13.0", "cu13")):
            py, proc = uv_install(tmp, pyenv_python(minor), [out, runtime_dir], driver, "9.0")
            assert proc.returncode == 0, proc.stderr
            labels, major, lib = json.loads(run([py, "-c", code], cwd=tmp, env=clean_env()).stdout)
            assert labels == {"pybind-saxpy": [label], "pybind-saxpy-lib": [label]}, (minor, driver, labels)
            assert major == int(label[2:]) and len(lib) == 1 and lib[0].endswith(f"site-packages/pybind_saxpy_lib/{SONAME}"), lib
    # Control: a GPU whose arch family neither variant carries code for (sm_8.6) gets no variant.
    _, proc = uv_install(tmp, pyenv_python(12), [out, runtime_dir], "13.0", "8.6")
    assert proc.returncode != 0, proc.stdout

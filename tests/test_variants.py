"""Wheel variants (PEP 825): `variant = "cuda"` derives the properties from what was
built, `python -m cudawheel wheel --cuda 12 --cuda 13` builds the matrix and the index file,
variantlib 0.2.2 (the reference library) accepts every wheel and computes the same index, and
uv (the pinned one, `--preview-features wheel-variants`) installs the variant matching a given
driver and GPU, with that variant's own NVIDIA runtime wheel.

One arch per build (sm_90 SASS); the cu13 wheel is rebuilt once with `120-virtual` added (PTX
only, cheap) for the Blackwell case. Toolkits: CUDA 12.4 as CUDA_HOME, 13 from PyPI as CUDA_PATH,
so discovery finds each major by itself.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import Wheel, clean_env, copy_example, new_venv, run, toolkit_home

variantlib = pytest.importorskip("variantlib", reason="variantlib==0.2.2 comes from requirements-dev.txt")
from variantlib.constants import VALIDATION_WHEEL_NAME_REGEX  # noqa: E402
from variantlib.variant_dist_info import VariantDistInfo  # noqa: E402

ARCH = "90-real"


def build_env():
    return clean_env(CUDA_HOME=toolkit_home(12), CUDA_PATH=toolkit_home(13))


def cudawheel(py, *args, check=True):
    return run([py, "-m", "cudawheel", *args], env=build_env(), check=check)


def variant_json(wheel: Path) -> dict:
    """The wheel's variant.json, after variantlib accepted it for the file name's label."""
    w = Wheel(wheel)
    text = w.read(f"{w.dist_info}/variant.json")
    m = VALIDATION_WHEEL_NAME_REGEX.fullmatch(wheel.name)
    assert m and m.group("variant_label"), wheel.name
    assert VariantDistInfo(text, m.group("variant_label")).variant_desc.label == m.group("variant_label")
    return json.loads(text)


def only(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    assert len(found) == 1, f"{pattern}: {found}"
    return found[0]


@pytest.fixture(scope="module")
def matrix(backend_python, scratch):
    """saxpy built as variants: cu12 and cu13 by the matrix command (sm_90 SASS each), cu13 then
    rebuilt with 120-virtual added and the index refreshed by `variants-json`, and a null
    variant. Returns (project, out folder, first index text, matrix command output)."""
    base = scratch("variants")
    proj = copy_example("saxpy", base)
    out = base / "out"
    proc = cudawheel(backend_python, "wheel", proj, "-o", out, "--cuda", "12", "--cuda", "13",
                     "-C", "variant=cuda", "-C", f"archs={ARCH}")
    first_index = (out / "saxpy-0.1.0-variants.json").read_text()
    first = {p.name: variant_json(p) for p in out.glob("*.whl")}
    cudawheel(backend_python, "wheel", proj, "-o", out, "-C", "cuda=13", "-C", "variant=cuda",
              "-C", f"archs={ARCH};120-virtual")
    cudawheel(backend_python, "wheel", proj, "-o", out, "-C", "cuda=13", "-C", "null-variant=true",
              "-C", f"archs={ARCH}")
    cudawheel(backend_python, "variants-json", out)
    return proj, out, first_index, first, proc.stdout


def test_matrix_builds_one_variant_per_major(matrix, backend_python):
    _, out, first_index, first, stdout = matrix
    cu12 = only(out, "saxpy-0.1.0-cp*-abi3-manylinux_*_x86_64-cu12.whl")
    cu13 = only(out, "saxpy-0.1.0-cp*-abi3-manylinux_*_x86_64-cu13.whl")
    assert str(cu12) in stdout and str(cu13) in stdout and "saxpy-0.1.0-variants.json" in stdout
    # What the matrix command derived: <major>.0 and the SASS it built, nothing else.
    props = {name.rsplit("-", 1)[1][:-4]: v["variants"] for name, v in first.items()}
    assert props == {
        "cu12": {"cu12": {"nvidia": {"cuda_version_lower_bound": ["12.0"], "sm_arch": ["90_real"]}}},
        "cu13": {"cu13": {"nvidia": {"cuda_version_lower_bound": ["13.0"], "sm_arch": ["90_real"]}}},
    }
    assert json.loads(first_index)["variants"] == {k: v[k] for k, v in props.items()}
    # The rebuilt cu13 carries the PTX for 12.0 too, read back from its ELF.
    assert variant_json(cu13)["variants"]["cu13"]["nvidia"]["sm_arch"] == ["120_virtual", "90_real"]
    for wheel, runtime in [(cu12, "nvidia-cuda-runtime-cu12>=12.4,<13"), (cu13, "nvidia-cuda-runtime>=13.")]:
        w = Wheel(wheel)
        assert w.field("Name") == ["saxpy"]
        reqs = w.field("Requires-Dist")
        assert len(reqs) == 1 and reqs[0].startswith(runtime), reqs
        assert f"{w.dist_info}/variant.json" in w.check_record()
        v = variant_json(wheel)
        assert v["$schema"].startswith("https://variants-schema.wheelnext.dev/")
        assert v["default-priorities"] == {"namespace": ["nvidia"]}
        assert v["providers"] == {"nvidia": {
            "requires": ["nvidia-variant-provider>=0.0.1,<1.0.0"],
            "plugin-api": "nvidia_variant_provider.plugin:NvidiaVariantPlugin"}}
        assert "cuda_version_upper_bound" not in json.dumps(v)
    null = only(out, "*-null.whl")
    assert variant_json(null)["variants"] == {"null": {}}
    proc = cudawheel(backend_python, "audit", cu12, cu13, null)
    assert proc.stdout.count("OK ") == 3, proc.stdout


def test_variantlib_accepts_the_wheels_and_the_index(matrix, tmp_path):
    _, out, _, _, _ = matrix
    wheels = sorted(out.glob("*.whl"))
    assert len(wheels) == 3
    for wheel in wheels:
        m = VALIDATION_WHEEL_NAME_REGEX.fullmatch(wheel.name)
        assert m and m.group("name") == "saxpy" and m.group("variant_label"), wheel.name
        label = m.group("variant_label")
        w = Wheel(wheel)
        info = VariantDistInfo(w.read(f"{w.dist_info}/variant.json"), label)
        assert info.variant_desc.label == label
        assert (label == "null") == (info.variant_desc.properties == [])
    # variantlib's own index over the same wheels equals cudawheel's (the $schema URL aside:
    # variantlib writes its own; cudawheel writes the one uv knows).
    theirs = tmp_path / "idx"
    theirs.mkdir()
    for wheel in wheels:
        shutil.copy(wheel, theirs)
    run([sys.executable, "-c", "import sys; from variantlib.commands.generate_index_json import generate_index_json;"
         " generate_index_json(sys.argv[1:])", "-d", theirs])
    a = json.loads((theirs / "saxpy-0.1.0-variants.json").read_text())
    b = json.loads((out / "saxpy-0.1.0-variants.json").read_text())
    a.pop("$schema"), b.pop("$schema")
    assert a == b
    assert sorted(b["variants"]) == ["cu12", "cu13", "null"]


@pytest.fixture(scope="module")
def runtime_wheels(matrix, scratch):
    """The NVIDIA runtime wheels the variants require (from PyPI, once), for offline installs."""
    _, out, _, _, _ = matrix
    folder = scratch("runtime")
    reqs = sorted({r for w in out.glob("*.whl") for r in Wheel(w).field("Requires-Dist")})
    run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", folder, *reqs],
        env=clean_env())
    return folder


def uv_install(venv_dir: Path, find_links: list[Path], driver=None, sm=None, preview=True, name="saxpy",
               extra=()):
    env = clean_env(UV_CACHE_DIR=venv_dir.parent / "uv-cache")
    run([sys.executable, "-m", "uv", "venv", "-q", "--offline", "--python", sys.executable, venv_dir], env=env)
    py = venv_dir / "bin" / "python"
    for key in ("NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION", "NV_VARIANT_PROVIDER_FORCE_SM_ARCH"):
        env.pop(key, None)
    if driver:
        env["NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION"] = driver
    if sm:
        env["NV_VARIANT_PROVIDER_FORCE_SM_ARCH"] = sm
    cmd = [sys.executable, "-m", "uv", "pip", "install", "--offline", "--no-index", "--python", py]
    if preview:
        cmd += ["--preview-features", "wheel-variants"]
    for f in find_links:
        cmd += ["--find-links", f]
    proc = run(cmd + [*extra, name], env=env, check=False)
    return py, proc


def installed(py: Path) -> tuple[str, list[str]]:
    """The label of the installed saxpy (from its variant.json) and the NVIDIA wheels present."""
    code = ("import json, importlib.metadata as md;"
            " v = json.loads(md.distribution('saxpy').read_text('variant.json'));"
            " print(*v['variants']); print(*sorted(x.metadata['Name'] for x in md.distributions()"
            " if x.metadata['Name'].startswith('nvidia')))")
    lines = run([py, "-c", code]).stdout.splitlines()
    return lines[0], lines[1].split()


@pytest.mark.parametrize("driver, sm, label, runtime", [
    ("12.8", "9.0", "cu12", "nvidia-cuda-runtime-cu12"),
    ("13.0", "9.0", "cu13", "nvidia-cuda-runtime"),
    ("13.1", "12.0", "cu13", "nvidia-cuda-runtime"),
    (None, None, "null", "nvidia-cuda-runtime"),
])
def test_uv_installs_the_variant_for_the_driver_and_gpu(matrix, runtime_wheels, tmp_path, driver, sm, label, runtime):
    _, out, _, _, _ = matrix
    py, proc = uv_install(tmp_path / "v", [out, runtime_wheels], driver, sm)
    assert proc.returncode == 0, proc.stderr
    got, nvidia = installed(py)
    assert (got, nvidia) == (label, [runtime])


def test_uv_controls(matrix, runtime_wheels, backend_python, tmp_path):
    """The same install fails where it must: no variant fits (no driver, no null variant), and
    uv without the preview flag cannot install variant wheels at all."""
    _, out, _, _, _ = matrix
    no_null = tmp_path / "no-null"
    no_null.mkdir()
    for w in out.glob("*-cu1[23].whl"):
        shutil.copy(w, no_null)
    run([backend_python, "-m", "cudawheel", "variants-json", no_null], env=clean_env())
    _, proc = uv_install(tmp_path / "a", [no_null, runtime_wheels])
    assert proc.returncode != 0 and "unsupported wheel variants" in proc.stderr, proc.stderr
    # An sm_8.6 GPU with a 13.0 driver: neither variant has SASS of its family.
    _, proc = uv_install(tmp_path / "b", [no_null, runtime_wheels], "13.0", "8.6")
    assert proc.returncode != 0, proc.stdout
    _, proc = uv_install(tmp_path / "c", [out, runtime_wheels], "13.0", "9.0", preview=False)
    assert proc.returncode != 0, proc.stdout


def test_toolkit_floor_and_inconsistent_index(matrix, backend_python, tmp_path):
    """`variant-driver-floor = "toolkit"` writes nvcc's major.minor; a folder where one label has
    two property sets is refused by `variants-json`, and nothing is written."""
    proj, out, _, _, _ = matrix
    other = tmp_path / "other"
    cudawheel(backend_python, "wheel", proj, "-o", other, "-C", "cuda=12", "-C", "variant=cuda",
              "-C", "variant-driver-floor=toolkit", "-C", f"archs={ARCH}", "-C", "build-dir=build/floor")
    w = only(other, "*-cu12.whl")
    assert variant_json(w)["variants"]["cu12"]["nvidia"]["cuda_version_lower_bound"] == ["12.4"]
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(only(out, "*-cu12.whl"), mixed)
    shutil.copy(w, mixed / re.sub(r"-cp\d+-", "-cp310-", w.name))
    proc = cudawheel(backend_python, "variants-json", mixed, check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert 'the label "cu12" has the properties' in proc.stderr and "\nhint: " in proc.stderr, proc.stderr
    assert not list(mixed.glob("*.json"))


def test_explicit_properties(matrix, backend_python, tmp_path):
    proj, _, _, _, _ = matrix
    out = tmp_path / "out"
    cudawheel(backend_python, "wheel", proj, "-o", out, "-C", "cuda=12", "-C", f"archs={ARCH}",
              "-C", "variant=nvidia :: cuda_version_lower_bound :: 12.8; nvidia :: sm_arch :: 90_real",
              "-C", "variant-label=cu128", "-C", "build-dir=build/explicit")
    w = only(out, "saxpy-0.1.0-*-cu128.whl")
    assert variant_json(w)["variants"] == {
        "cu128": {"nvidia": {"cuda_version_lower_bound": ["12.8"], "sm_arch": ["90_real"]}}}


def test_audit_catches_a_renamed_variant_wheel(matrix, backend_python, tmp_path):
    _, out, _, _, _ = matrix
    cu12 = only(out, "*-cu12.whl")
    renamed = tmp_path / cu12.name.replace("-cu12.whl", "-cu13.whl")
    shutil.copy(cu12, renamed)
    plain = tmp_path / cu12.name.replace("-cu12.whl", ".whl")
    shutil.copy(cu12, plain)
    proc = cudawheel(backend_python, "audit", cu12, renamed, plain, check=False)
    assert proc.returncode == 1
    assert f"OK   {cu12}" in proc.stdout
    assert f"FAIL {renamed}" in proc.stdout and "not exactly the file name's label \"cu13\"" in proc.stdout
    assert f"FAIL {plain}" in proc.stdout and "but no variant label in its file name" in proc.stdout


def test_sdist_of_a_variant_project_builds_every_major(matrix, backend_python, tmp_path):
    proj, _, _, _, _ = matrix
    sd = tmp_path / "sdist"
    cudawheel(backend_python, "sdist", proj, "-o", sd, "-C", "variant=cuda")
    sdist = only(sd, "*.tar.gz")
    assert sdist.name == "saxpy-0.1.0.tar.gz"
    with tarfile.open(sdist) as t:
        t.extractall(tmp_path / "src", filter="data")
        pkg_info = t.extractfile("saxpy-0.1.0/PKG-INFO").read().decode()
        pyproject = t.extractfile("saxpy-0.1.0/pyproject.toml").read().decode()
    assert "Name: saxpy\n" in pkg_info
    assert pyproject == (proj / "pyproject.toml").read_text()  # no major pinned
    src = tmp_path / "src" / "saxpy-0.1.0"
    out = tmp_path / "out"
    proc = cudawheel(backend_python, "wheel", src, "-o", out, "--cuda", "12", "--cuda", "13",
                     "-C", "variant=cuda", "-C", f"archs={ARCH}")
    assert sorted(p.name.rsplit("-", 1)[1] for p in out.glob("*.whl")) == ["cu12.whl", "cu13.whl"], proc.stdout
    # Without `variant` the sdist's name does not fit the -cuNN wheel: a clean error.
    proc = cudawheel(backend_python, "wheel", src, "-o", tmp_path / "plain", "-C", "cuda=13", check=False)
    assert proc.returncode == 1 and "This sdist is saxpy" in proc.stderr and "-C variant=cuda" in proc.stderr


def test_default_builds_stay_non_variant(matrix, backend_python, tmp_path):
    """The control: the same project without `variant` makes an ordinary -cuNN wheel."""
    proj, _, _, _, _ = matrix
    out = tmp_path / "out"
    cudawheel(backend_python, "wheel", proj, "-o", out, "-C", "cuda=13", "-C", f"archs={ARCH}",
              "-C", "build-dir=build/plain")
    w = only(out, "*.whl")
    assert w.name.startswith("saxpy_cu13-0.1.0-") and w.name.endswith("_x86_64.whl")
    assert not [n for n in zipfile.ZipFile(w).namelist() if n.endswith("variant.json")]


def test_matrix_failure_leaves_no_wheel(matrix, backend_python, tmp_path):
    """A major that cannot be built (no CUDA 11 toolkit here) fails the command cleanly, and
    the wheel already built for 12 is removed: all or nothing."""
    proj, _, _, _, _ = matrix
    out = tmp_path / "out"
    proc = cudawheel(backend_python, "wheel", proj, "-o", out, "--cuda", "12", "--cuda", "11",
                     "-C", "variant=cuda", "-C", f"archs={ARCH}", check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.count("cudawheel: error:") == 1 and "\nhint: " in proc.stderr, proc.stderr
    assert "built saxpy-0.1.0-" in proc.stderr  # the cu12 wheel was built, then removed
    assert list(out.glob("*")) == []


def test_wrapped_arch_groups_install_the_group_the_gpu_runs(wheelhouse, tmp_path):
    """One CUDA major in arch groups, in wrap mode: where one library's GPU code for every arch
    is over `max-wheel-size` (llama-cpp-python's ggml, docs/how-to/wheel-size.md), each group
    of archs is a variant wheel with a label of its own, and the index names both. uv installs
    the group whose SASS runs on the GPU, its own SASS before a lower one of its family (8.6 runs
    the first group's 86; 8.9 could too, and takes the second group's 89), and none for a GPU no
    group covers (7.5; 10.0, which the 120 PTX cannot serve)."""
    from test_dist import wrapped_dist_project

    py = new_venv(tmp_path / "v", wheelhouse, "cudawheel", "nvidia-cuda-nvcc>=13,<14", "nvidia-cuda-cccl>=13,<14",
                  "nvidia-cuda-runtime>=13,<14", "scikit-build-core>=0.10", "cmake", "ninja")
    project = wrapped_dist_project(tmp_path / "checkout")
    out = tmp_path / "out"
    groups = {"cu13a": "80-real;86-real", "cu13b": "89-real;90-real;120"}
    for label, archs in groups.items():
        run([py, "-m", "cudawheel", "wheel", project, "-o", out, "-C", "jobs=2", "-C", "variant=cuda",
             "-C", f"variant-label={label}", "-C", f"archs={archs}", "-C", f"build-dir=build/{label}"],
            env=clean_env())
    run([py, "-m", "cudawheel", "variants-json", out], env=clean_env())
    got = {label: variant_json(only(out, f"cwdist-1.0-*-{label}.whl"))["variants"][label]["nvidia"]["sm_arch"]
           for label in groups}
    assert got == {"cu13a": ["80_real", "86_real"], "cu13b": ["120_real", "120_virtual", "89_real", "90_real"]}, got
    index = json.loads((out / "cwdist-1.0-variants.json").read_text())
    assert sorted(index["variants"]) == ["cu13a", "cu13b"], index
    for sm, want in [("8.0", "cu13a"), ("8.6", "cu13a"), ("8.9", "cu13b"), ("9.0", "cu13b"), ("12.0", "cu13b"),
                     ("7.5", None), ("10.0", None)]:
        venv, proc = uv_install(tmp_path / f"u{sm}", [out], "13.0", sm, name="cwdist", extra=["--no-deps"])
        if want is None:
            assert proc.returncode != 0 and "unsatisfiable" in proc.stderr, (sm, proc.stdout, proc.stderr)
            continue
        assert proc.returncode == 0, (sm, proc.stderr)
        code = ("import json, importlib.metadata as md;"
                " print(*json.loads(md.distribution('cwdist').read_text('variant.json'))['variants'])")
        assert run([venv, "-c", code]).stdout.strip() == want, sm

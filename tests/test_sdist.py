"""sdists: what to build and nothing else, PKG-INFO whose Name equals the wheels'
Name, the resolved CUDA major recorded, and a wheel built from the sdist equal to one built
from the tree."""

from __future__ import annotations

import shutil
import sys
import tarfile
from pathlib import Path

import tomllib

from conftest import Wheel, clean_env, copy_example, run


def test_sdist_contents_and_wheel_from_sdist(backend_python, toolkit_python, tmp_path, wheelhouse):
    project = copy_example("saxpy", tmp_path)
    (project / "build" / "junk").mkdir(parents=True)
    (project / "build" / "junk" / "x.o").write_text("not shipped")
    dist = tmp_path / "dist"
    proc = run([backend_python, "-m", "cudawheel", "sdist", project, "-o", dist], env=clean_env())
    sdist = dist / "saxpy_cu13-0.1.0.tar.gz"
    assert proc.stdout.strip() == str(sdist)
    with tarfile.open(sdist) as tar:
        names = sorted(tar.getnames())
        pkg_info = tar.extractfile("saxpy_cu13-0.1.0/PKG-INFO").read().decode()
        pyproject = tomllib.loads(tar.extractfile("saxpy_cu13-0.1.0/pyproject.toml").read().decode())
        assert all(m.uid == 0 and m.gid == 0 for m in tar.getmembers())
    assert names == [f"saxpy_cu13-0.1.0/{p}" for p in [
        "LICENSE", "PKG-INFO", "README.md", "csrc/module.c", "csrc/saxpy.cu", "csrc/saxpy.h",
        "pyproject.toml", "saxpy/__init__.py"]]
    head = pkg_info.split("\n\n", 1)[0].splitlines()
    assert "Name: saxpy-cu13" in head and "Metadata-Version: 2.4" in head
    assert "Dynamic: Requires-Dist" in head
    assert pyproject["tool"]["cudawheel"]["cuda"] == 13
    assert pyproject["tool"]["cudawheel"]["py-limited-api"] == "cp39"  # the rest is kept as written

    # The sdist builds (isolated, nvcc from PyPI) into the wheel the tree builds.
    out = tmp_path / "from-sdist"
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", out, sdist],
        env=clean_env(PIP_FIND_LINKS=wheelhouse))
    from_sdist = Wheel(next(out.glob("*.whl")))
    tree_out = tmp_path / "from-tree"
    run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", tree_out], env=clean_env())
    from_tree = Wheel(next(tree_out.glob("*.whl")))
    assert from_sdist.path.name == from_tree.path.name == "saxpy_cu13-0.1.0-cp39-abi3-manylinux_2_5_x86_64.whl"
    assert from_sdist.read(f"{from_sdist.dist_info}/METADATA") == from_tree.read(f"{from_tree.dist_info}/METADATA")
    assert sorted(from_sdist.names) == sorted(from_tree.names)


def test_reproducible_wheels_and_sdists(backend_python, toolkit_python, tmp_path):
    """SOURCE_DATE_EPOCH set: the same sources give byte-identical sdists and wheels, whether
    built twice, from another folder, or from the unpacked sdist. The extra source has a kernel
    in an anonymous namespace (nvcc names such symbols after a hash of the source path) and
    uses __FILE__; another defines nothing external but a template instance (nvcc names its
    internal symbols after its front end's process id unless given `-frandom-seed`)."""
    from test_dist import INSTANCES

    env = clean_env(SOURCE_DATE_EPOCH="1700000000")
    a = copy_example("saxpy", tmp_path / "a")
    (a / "csrc/anon.cu").write_text(
        'namespace { __global__ void k(int *p) { *p = 1; } }\n'
        'extern "C" const char *anon_where(int *p) { k<<<1, 1>>>(p); return __FILE__; }\n')
    (a / "csrc/instances.cu").write_text(INSTANCES)
    b = tmp_path / "some/much/longer/path/saxpy"
    shutil.copytree(a, b)

    def sdist(project, out):
        return Path(run([backend_python, "-m", "cudawheel", "sdist", project, "-o", out], env=env).stdout.strip())

    def wheel(project, out):
        return Path(run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", out, "-C", "archs=80"],
                        env=env).stdout.strip())

    s1, s2 = sdist(a, tmp_path / "s1"), sdist(b, tmp_path / "s2")
    assert s1.read_bytes() == s2.read_bytes()
    with tarfile.open(s1) as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    first = wheel(a, tmp_path / "w1")
    shutil.rmtree(a / "build")
    wheels = [first, wheel(a, tmp_path / "w2"), wheel(b, tmp_path / "w3"),
              wheel(tmp_path / "unpacked/saxpy_cu13-0.1.0", tmp_path / "w4")]
    assert len({w.read_bytes() for w in wheels}) == 1, [w.stat().st_size for w in wheels]


def test_conventional_license_files_ship_without_license_files(backend_python, toolkit_python, tmp_path):
    """Without `project.license-files`, the files at the project root named like PEP 639's
    conventional patterns (LICEN[CS]E*, COPYING*, NOTICE*, AUTHORS*) go into the wheel's
    .dist-info/licenses/, METADATA's License-File and the sdist; `license-files = []` ships none."""
    project = copy_example("saxpy", tmp_path)
    pyproject = project / "pyproject.toml"
    written = pyproject.read_text()
    assert 'license-files = ["LICENSE"]\n' in written
    pyproject.write_text(written.replace('license-files = ["LICENSE"]\n', ""))
    (project / "NOTICE").write_text("Third-party notices.\n")
    (project / "csrc" / "LICENSE.vendored").write_text("not at the root: not shipped\n")

    def build(out):
        path = Path(run([toolkit_python, "-m", "cudawheel", "wheel", project, "-o", out, "-C", "archs=80"],
                        env=clean_env()).stdout.strip())
        sdist = Path(run([backend_python, "-m", "cudawheel", "sdist", project, "-o", out],
                         env=clean_env()).stdout.strip())
        with tarfile.open(sdist) as tar:
            root = sdist.name.removesuffix(".tar.gz")
            names = sorted(n.removeprefix(root + "/") for n in tar.getnames())
            pkg_info = tar.extractfile(f"{root}/PKG-INFO").read().decode()
        return Wheel(path), names, pkg_info

    wheel, sdist_names, pkg_info = build(tmp_path / "default")
    assert wheel.field("License-File") == ["LICENSE", "NOTICE"]
    licenses = sorted(n for n in wheel.names if n.startswith(f"{wheel.dist_info}/licenses/"))
    assert licenses == [f"{wheel.dist_info}/licenses/LICENSE", f"{wheel.dist_info}/licenses/NOTICE"]
    assert wheel.read(f"{wheel.dist_info}/licenses/NOTICE") == b"Third-party notices.\n"
    assert wheel.read(f"{wheel.dist_info}/licenses/LICENSE") == (project / "LICENSE").read_bytes()
    wheel.check_record()
    assert "LICENSE" in sdist_names and "NOTICE" in sdist_names
    assert "License-File: LICENSE\nLicense-File: NOTICE\n" in pkg_info

    # Control: the key present but empty is taken as written.
    pyproject.write_text(written.replace('license-files = ["LICENSE"]', "license-files = []"))
    wheel, sdist_names, pkg_info = build(tmp_path / "empty")
    assert wheel.field("License-File") == []
    assert not [n for n in wheel.names if "/licenses/" in n]
    assert "NOTICE" not in sdist_names and "LICENSE" not in sdist_names
    assert "License-File" not in pkg_info

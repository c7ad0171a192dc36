"""Another copy of a CUDA library already loaded: the generated helper's `other_copies()` (run by
`preload()` at import, and by `python -m cudawheel check`) names a copy of a SONAME the package
links that another file holds and that is older than the package needs (the loader hands that
copy to the package: it shares one library per SONAME), and a CUDA runtime of another major
beside the package's. The helper's source is the template cudawheel fills (src/package/
_cuda_libs.py) with one library, as a wheel built with nvcc 13.5 has it."""

from __future__ import annotations

import shutil
import textwrap

from conftest import REPO, clean_env, run

TEMPLATE = REPO / "src/package/_cuda_libs.py"
REQ = "nvidia-cuda-runtime>=13.5,<14"


def helper(tmp_path, site):
    """The template as a module file whose LIBRARIES name libcudart.so.13 in `site`'s wheel."""
    text = TEMPLATE.read_text()
    text += textwrap.dedent(f"""
        _OWNER = "demo"
        LIBRARIES = [("libcudart.so.13", "nvidia/cu13/lib", {REQ!r})]
        sys.path.insert(0, {str(site)!r})
    """)
    path = tmp_path / "helper.py"
    path.write_text(text)
    return path


def sentences(tmp_path, site, mapped):
    code = f"import runpy; m = runpy.run_path({str(helper(tmp_path, site))!r}); print(repr(m['other_copies']({mapped!r})))"
    return eval(run(["python3", "-c", code], env=clean_env()).stdout)


def test_an_older_copy_loaded_first_is_named_with_both_paths(tmp_path):
    site = tmp_path / "site"
    ours = site / "nvidia/cu13/lib/libcudart.so.13"
    ours.parent.mkdir(parents=True)
    ours.write_bytes(b"")
    stale = "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13.0.96"
    (line,) = sentences(tmp_path, site, [stale, str(ours)])
    assert line.startswith("demo: libcudart.so.13 13.0 is already loaded from " + stale), line
    assert f"older than the 13.5 this package needs (its copy in {ours} is not used" in line, line
    assert "LD_LIBRARY_PATH" in line and "nvidia-cuda-runtime>=13.5" in line, line
    # Controls: the package's own copy alone, and a newer system copy, say nothing.
    assert sentences(tmp_path, site, [str(ours)]) == []
    assert sentences(tmp_path, site, ["/opt/cuda/lib64/libcudart.so.13.6.20"]) == []


def test_a_second_runtime_major_is_named(tmp_path):
    site = tmp_path / "site"
    (line,) = sentences(tmp_path, site, ["/x/nvidia/cuda_runtime/lib/libcudart.so.12"])
    assert line.startswith("demo: a CUDA 12 runtime is loaded from /x/nvidia/cuda_runtime/lib/libcudart.so.12 "
                           "beside this package's CUDA 13 runtime"), line


def test_preload_warns_when_a_planted_older_runtime_was_loaded_first(toolkit_python, tmp_path):
    """A real libcudart (NVIDIA's wheel) planted under an older release's file name and loaded
    first, as a stale system copy on LD_LIBRARY_PATH would be: `preload()` warns, naming it."""
    site = run([toolkit_python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    real = f"{site}/nvidia/cu13/lib/libcudart.so.13"
    planted = tmp_path / "old/libcudart.so.13.0.48"
    planted.parent.mkdir()
    shutil.copy(real, planted)
    code = textwrap.dedent(f"""
        import ctypes, runpy, warnings
        ctypes.CDLL({str(planted)!r}, mode=ctypes.RTLD_GLOBAL)
        m = runpy.run_path({str(helper(tmp_path, site))!r})
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            m["preload"]()
        print("\\n".join(str(w.message) for w in seen if w.category.__name__ == "CudaLibraryWarning"))
    """)
    out = run([toolkit_python, "-c", code], env=clean_env(CUDAWHEEL_SKIP_GPU_CHECK="1")).stdout
    assert f"libcudart.so.13 13.0 is already loaded from {planted}" in out, out

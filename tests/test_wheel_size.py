"""Issue 5: small wheels. Fatbins are compressed; a wheel above 100 MiB is built but warned
about, naming its biggest members and the GPU architectures that cost most."""

from __future__ import annotations

import io
import os
import textwrap
import zipfile
from pathlib import Path

from conftest import Wheel, clean_env, copy_example, run


def test_wheel_is_no_bigger_than_its_files_zipped(backend_python, cu13_home, tmp_path):
    project = copy_example("saxpy", tmp_path)
    proc = run([backend_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "dist"],
               env=clean_env(CUDA_HOME=cu13_home))
    wheel = Wheel(Path(proc.stdout.strip().splitlines()[-1]))
    assert "above 100.0 MiB" not in proc.stderr
    # The same members deflated into a plain zip: the wheel adds only its .dist-info.
    plain = io.BytesIO()
    with zipfile.ZipFile(plain, "w", zipfile.ZIP_DEFLATED) as z:
        for name in wheel.names:
            if ".dist-info/" not in name:
                z.writestr(name, wheel.read(name))
    payload = sum(i.compress_size for i in wheel.zip.infolist() if ".dist-info/" not in i.filename)
    assert payload <= 1.05 * sum(i.compress_size for i in zipfile.ZipFile(plain).infolist())
    # nvcc compressed the fatbin: the .so is far smaller than its 7 SASS archs + PTX would be.
    so = wheel.read("saxpy/_core.abi3.so")
    assert len(so) < 200_000, len(so)


def test_a_wheel_above_100_mib_warns_with_members_and_archs(backend_python, cu13_home, tmp_path):
    project = tmp_path / "big"
    (project / "big").mkdir(parents=True)
    (project / "big/__init__.py").write_text("")
    blob = project / "blob.bin"
    with open(blob, "wb") as f:
        f.write(os.urandom(101 << 20))  # random: deflate cannot shrink it
    (project / "data.c").write_text(
        f'__asm__(".section .rodata\\n.globl big_blob\\nbig_blob:\\n.incbin \\"{blob}\\"\\n.previous");\n')
    (project / "k.cu").write_text("__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\n")
    (project / "pyproject.toml").write_text(textwrap.dedent("""
        [build-system]
        requires = ["cudawheel"]
        build-backend = "cudawheel"
        [project]
        name = "big"
        version = "1"
        [tool.cudawheel]
        archs = ["80", "90"]
        [[tool.cudawheel.extension]]
        name = "big._big"
        sources = ["data.c", "k.cu"]
    """))
    proc = run([backend_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "dist"],
               env=clean_env(CUDA_HOME=cu13_home))
    wheel = Path(proc.stdout.strip().splitlines()[-1])
    assert wheel.stat().st_size > 100 << 20
    warning = proc.stderr[proc.stderr.index("warning: big_cu13-1-"):]
    assert "above 100.0 MiB" in warning, proc.stderr
    assert "biggest members (compressed): big/_big." in warning, warning
    assert "GPU code by architecture: " in warning and "sm_80" in warning and "sm_90" in warning, warning
    assert "compute_90" in warning, warning

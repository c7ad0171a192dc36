"""Small wheels. Fatbins are compressed. A wheel above `max-wheel-size`
(default 100 MB, PyPI's limit) is an error naming its biggest members, the GPU architectures that
cost most and the fixes, and leaves no file behind."""

from __future__ import annotations

import io
import os
import re
import textwrap
import zipfile
from pathlib import Path

from conftest import Wheel, clean_env, copy_example, run


def test_wheel_is_no_bigger_than_its_files_zipped(backend_python, cu13_home, tmp_path):
    project = copy_example("saxpy", tmp_path)
    proc = run([backend_python, "-m", "cudawheel", "wheel", project, "-o", tmp_path / "dist"],
               env=clean_env(CUDA_HOME=cu13_home))
    wheel = Wheel(Path(proc.stdout.strip().splitlines()[-1]))
    assert "max-wheel-size" not in proc.stderr
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


def test_a_wheel_above_100_mb_is_an_error_with_members_and_archs(backend_python, cu13_home, tmp_path):
    project = tmp_path / "big"
    (project / "big").mkdir(parents=True)
    (project / "big/__init__.py").write_text("")
    blob = project / "blob.bin"
    with open(blob, "wb") as f:
        f.write(os.urandom(100_500_000))  # random: deflate cannot shrink it; above 100 MB, below 100 MiB
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
    env = clean_env(CUDA_HOME=cu13_home)
    out = tmp_path / "dist"
    proc = run([backend_python, "-m", "cudawheel", "wheel", project, "-o", out], env=env, check=False)
    assert proc.returncode == 1, proc.stderr
    err = proc.stderr
    assert "Traceback" not in err and err.count("cudawheel: error:") == 1, err
    assert re.search(r"big_cu13-1-\S+\.whl is 100\.[0-9] MB, above `max-wheel-size` \(100\.0 MB\)", err), err
    assert "biggest members (compressed): big/_big." in err, err
    assert "GPU code by architecture: " in err and "sm_80" in err and "sm_90" in err and "compute_90" in err, err
    for fix in ["fewer `archs`", "`ptx = ", "`compress", "`max-wheel-size`"]:
        assert f"hint: {fix}" in err, (fix, err)
    assert not out.exists() or list(out.iterdir()) == [], list(out.iterdir())
    # Control: the same project under a raised budget builds that wheel.
    proc = run([backend_python, "-m", "cudawheel", "wheel", project, "-o", out, "-C", "max-wheel-size=110 MB"], env=env)
    wheel = Path(proc.stdout.strip().splitlines()[-1])
    assert wheel.stat().st_size > 100_000_000

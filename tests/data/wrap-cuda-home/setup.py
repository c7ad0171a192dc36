"""A setup.py that behaves as torch's `CUDAExtension` does, without torch: it reads CUDA_HOME
at import (torch's `_join_cuda_home` raises this OSError when it is unset, and never checks
that the folder exists), so every hook that runs it needs the toolkit's variables, not only
build_wheel. Its one extension is compiled by `$CUDA_HOME/bin/nvcc`; each compile appends a
line to the file named by CUDA_HOME_DEMO_LOG (to count the builds a frontend runs)."""

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

CUDA_HOME = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
if CUDA_HOME is None:
    raise OSError("CUDA_HOME environment variable is not set. Please set it to your CUDA install root.")
LIBRARY_DIRS = [os.path.join(CUDA_HOME, "lib64")]
print(f"cuda_home_demo: CUDA_HOME={CUDA_HOME}", file=sys.stderr)


class NvccBuildExt(build_ext):
    def build_extension(self, ext):
        log = os.environ.get("CUDA_HOME_DEMO_LOG")
        if log:
            with open(log, "a") as f:
                f.write("compiled\n")
        out = Path(self.get_ext_fullpath(ext.name))
        out.parent.mkdir(parents=True, exist_ok=True)
        arch = os.environ.get("CUDAARCHS", "90").split(";")[0].split("-")[0]
        subprocess.run([os.path.join(CUDA_HOME, "bin/nvcc"), "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared",
                        f"-arch=sm_{arch}", "-I", sysconfig.get_paths()["include"], *ext.sources,
                        "-o", str(out)], check=True)


setup(
    name="cuda_home_demo",
    version="0.1.0",
    packages=["cuda_home_demo"],
    ext_modules=[Extension("cuda_home_demo._gpu", ["cuda_home_demo/_gpu.cu"], library_dirs=LIBRARY_DIRS)],
    cmdclass={"build_ext": NvccBuildExt},
)

"""A setuptools build of examples/torch_muladd's operator with torch's CUDAExtension, as
PyTorch's extension template writes it (setup.py, BuildExtension, CUDA_HOME from the
environment): wrap mode builds it unchanged."""

import glob

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="torch_muladd_setuptools",
    version="0.1.0",
    packages=["torch_muladd"],
    ext_modules=[
        CUDAExtension(
            "torch_muladd._C",
            sorted(glob.glob("csrc/*.cpp") + glob.glob("csrc/*.cu")),
            include_dirs=["csrc"],
            extra_compile_args={"cxx": ["-O2"], "nvcc": ["-O2"]},
        )
    ],
    cmdclass={"build_ext": BuildExtension},
    install_requires=["torch"],
)

"""The CPU build of a project that also publishes CUDA wheels: a C extension that links no CUDA."""

from setuptools import Extension, setup

setup(packages=["cpu_ext"], ext_modules=[Extension("cpu_ext._add", ["cpu_ext/_add.c"])])

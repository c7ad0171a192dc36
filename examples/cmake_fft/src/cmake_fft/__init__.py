"""A CMake project's package: its extension links cuFFT (through a vendored CUDA library), FFTW
and OpenMP."""

from ._core import cufft_bin1, cufft_version, fftw_bin1, fftw_version, gpu_scale, omp_sum

__all__ = ["cufft_bin1", "cufft_version", "fftw_bin1", "fftw_version", "gpu_scale", "omp_sum"]

"""A plain CUDA extension plus an optional NVSHMEM one: a cudawheel example.

``nvshmem_hello._basic`` (CUDA runtime only) is always there.
``nvshmem_hello._nvshmem`` is built only where NVSHMEM was found at build
time; ``HAVE_NVSHMEM`` says whether it is usable here, and if it was built
but cannot be loaded, ``NVSHMEM_IMPORT_ERROR`` holds the ImportError.

    import nvshmem_hello
    if nvshmem_hello.HAVE_NVSHMEM:
        nvshmem = nvshmem_hello.nvshmem
        nvshmem.init()
        print(nvshmem.my_pe(), nvshmem.n_pes(), nvshmem.ring_exchange())
        nvshmem.finalize()
"""

from importlib.util import find_spec as _find_spec

# cudawheel generates _cuda_libs.py in the wheel: it checks the CUDA driver and loads the
# NVIDIA libraries even where the extension's $ORIGIN RPATH cannot reach them.
from . import _cuda_libs

_cuda_libs.preload()

from ._basic import device_count, driver_version, runtime_version

HAVE_NVSHMEM = False
NVSHMEM_IMPORT_ERROR = None
nvshmem = None  # the _nvshmem module when HAVE_NVSHMEM

if _find_spec(__name__ + "._nvshmem") is not None:  # built with NVSHMEM
    try:
        from . import _nvshmem as nvshmem
    except ImportError as e:  # e.g. libnvshmem_host.so.3 missing here
        NVSHMEM_IMPORT_ERROR = e
    else:
        HAVE_NVSHMEM = True

__all__ = [
    "HAVE_NVSHMEM",
    "NVSHMEM_IMPORT_ERROR",
    "device_count",
    "driver_version",
    "nvshmem",
    "runtime_version",
]

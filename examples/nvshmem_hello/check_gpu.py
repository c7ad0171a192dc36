#!/usr/bin/env python3
"""End-to-end check of the installed nvshmem_hello wheel on a machine with a GPU.

Run after `pip install nvshmem_hello-*.whl`:
    python check_gpu.py                    # one PE
    nvshmrun -np 2 python check_gpu.py     # several PEs (or mpirun, srun)
Exits 0 when the CUDA runtime works and, where the wheel has the NVSHMEM
extension, the GPU ring exchange delivers the right PE numbers; non-zero
otherwise. A wheel built without NVSHMEM passes with a note (set
REQUIRE_NVSHMEM=1 to fail instead).
"""

import os
import sys

# This script sits next to the source package nvshmem_hello/ (which has no
# compiled extensions); drop its directory from sys.path so the *installed*
# package is tested.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]


def fail(msg):
    print(f"nvshmem_hello FAILED: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    try:
        import nvshmem_hello
    except ImportError as e:
        fail(f"cannot import nvshmem_hello: {e}")

    runtime = nvshmem_hello.runtime_version()
    driver = nvshmem_hello.driver_version()
    print(f"runtime: {runtime}")
    print(f"driver:  {driver}")
    try:
        devices = nvshmem_hello.device_count()
    except RuntimeError as e:
        fail(str(e))
    print(f"devices: {devices}")

    if not nvshmem_hello.HAVE_NVSHMEM:
        why = nvshmem_hello.NVSHMEM_IMPORT_ERROR or "built without NVSHMEM"
        if os.environ.get("REQUIRE_NVSHMEM") == "1":
            fail(f"no NVSHMEM extension: {why}")
        print(f"nvshmem_hello OK (no NVSHMEM extension: {why}) "
              f"runtime={runtime} driver={driver} devices={devices}")
        return

    nv = nvshmem_hello.nvshmem
    print(f"module:  {nv.__file__}")
    print(f"nvshmem: library {nv.library_version()}, "
          f"headers {nv.header_version()}")
    if nv.library_version()[0] != nv.header_version()[0]:
        fail("NVSHMEM library and headers differ in their major version")

    try:
        nv.my_pe()
    except RuntimeError:
        pass
    else:
        fail("my_pe() before init() did not raise RuntimeError")

    try:
        nv.init()
        me, npes = nv.my_pe(), nv.n_pes()
        received = nv.ring_exchange()
    except RuntimeError as e:
        fail(str(e))
    expected = (me - 1) % npes
    print(f"PE {me} of {npes}: received {received} (expected {expected})")
    nv.finalize()
    if received != expected:
        fail(f"PE {me}: ring exchange gave {received}, expected {expected}")

    print(f"nvshmem_hello OK pe={me} n_pes={npes} runtime={runtime} "
          f"driver={driver} devices={devices}")


if __name__ == "__main__":
    main()

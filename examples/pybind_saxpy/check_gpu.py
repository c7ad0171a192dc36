#!/usr/bin/env python3
"""End-to-end check of the installed pybind_saxpy wheel on a machine with a GPU.

Run after `pip install pybind_saxpy-*.whl`:  python check_gpu.py
Exits 0 when the GPU result matches a pure-Python reference, non-zero
otherwise (including when no CUDA device/driver is available).
"""

import os
import random
import sys
from array import array

# This script sits next to the source package pybind_saxpy/ (which has no compiled
# _core); drop its directory from sys.path so the *installed* pybind_saxpy is tested.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

N = 1_000_003  # deliberately not a multiple of the block size
A = 2.5


def fail(msg):
    print(f"saxpy FAILED: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    try:
        import pybind_saxpy as saxpy
    except ImportError as e:
        fail(f"cannot import pybind_saxpy: {e}")

    runtime = saxpy.runtime_version()
    driver = saxpy.driver_version()
    print(f"module:  {saxpy._core.__file__}")
    print(f"runtime: {runtime}")
    print(f"driver:  {driver}")

    # Length mismatch is rejected before any CUDA call.
    try:
        saxpy.saxpy(1.0, [1.0, 2.0], [1.0])
    except ValueError:
        pass
    else:
        fail("length mismatch did not raise ValueError")

    try:
        devices = saxpy.device_count()
        print(f"devices: {devices}")

        # Tiny case, exactly representable in float32: compare exactly.
        tiny = saxpy.saxpy(2.0, [1.0, 2.0, 3.0], [10.0, 20.0, 30.0])
        print(f"saxpy(2.0, [1.0, 2.0, 3.0], [10.0, 20.0, 30.0]) = {tiny}")
        if tiny != [12.0, 24.0, 36.0]:
            fail(f"tiny case: expected [12.0, 24.0, 36.0], got {tiny}")

        # Inputs are rounded to float32 up front (array('f')), so the
        # reference differs from the GPU only by float32 arithmetic rounding.
        rng = random.Random(0)
        x = list(array("f", (rng.uniform(-100.0, 100.0) for _ in range(N))))
        y = list(array("f", (rng.uniform(-100.0, 100.0) for _ in range(N))))
        out = saxpy.saxpy(A, x, y)
    except RuntimeError as e:
        fail(str(e))

    if len(out) != N:
        fail(f"expected {N} results, got {len(out)}")
    max_err = 0.0
    bad = None
    for i, (xi, yi, oi) in enumerate(zip(x, y, out)):
        ref = A * xi + yi
        err = abs(oi - ref)
        max_err = max(max_err, err)
        if bad is None and err > 1e-5 * max(1.0, abs(ref)):
            bad = (i, ref, oi)
    if bad is not None:
        i, ref, got = bad
        fail(f"mismatch at i={i}: expected {ref!r}, got {got!r} "
             f"(max_abs_err={max_err:.3g})")

    print(f"saxpy OK n={N} max_abs_err={max_err:.3g} "
          f"runtime={runtime} driver={driver} devices={devices}")


if __name__ == "__main__":
    main()

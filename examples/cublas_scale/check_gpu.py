#!/usr/bin/env python3
"""End-to-end check of the installed cublas_scale wheel on a machine with a GPU.

Run after `pip install cublas_scale-*.whl`:  python check_gpu.py
Exits 0 when the GPU results (kernel and cuBLAS) match a pure-Python
reference, non-zero otherwise (including when no CUDA device/driver is
available).
"""

import math
import os
import random
import sys
from array import array

# This script sits next to the source package cublas_scale/ (which has no
# compiled _core); drop its directory from sys.path so the *installed*
# package is tested.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

N = 1_000_003  # deliberately not a multiple of the block size
A = 2.5


def fail(msg):
    print(f"cublas_scale FAILED: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    try:
        import cublas_scale
    except ImportError as e:
        fail(f"cannot import cublas_scale: {e}")

    runtime = cublas_scale.runtime_version()
    driver = cublas_scale.driver_version()
    print(f"module:  {cublas_scale._core.__file__}")
    print(f"runtime: {runtime}")
    print(f"driver:  {driver}")

    # Length mismatch is rejected before any CUDA call.
    try:
        cublas_scale.axpy_dot(1.0, [1.0, 2.0], [1.0])
    except ValueError:
        pass
    else:
        fail("length mismatch did not raise ValueError")

    try:
        devices = cublas_scale.device_count()
        print(f"devices: {devices}")
        cublas = cublas_scale.cublas_version()
        print(f"cublas:  {cublas}")

        # Empty input: no CUDA work, dot product 0.
        if cublas_scale.axpy_dot(1.0, [], []) != ([], 0.0):
            fail("empty input did not give ([], 0.0)")

        # Tiny case, exactly representable in float32: compare exactly.
        tiny = cublas_scale.axpy_dot(2.0, [1.0, 2.0, 3.0], [10.0, 20.0, 30.0])
        print(f"axpy_dot(2.0, [1.0, 2.0, 3.0], [10.0, 20.0, 30.0]) = {tiny}")
        if tiny != ([12.0, 24.0, 36.0], 168.0):
            fail(f"tiny case: expected ([12.0, 24.0, 36.0], 168.0), "
                 f"got {tiny}")

        # Inputs are rounded to float32 up front (array('f')), so the
        # reference differs from the GPU only by float32 arithmetic rounding.
        rng = random.Random(0)
        x = list(array("f", (rng.uniform(-100.0, 100.0) for _ in range(N))))
        y = list(array("f", (rng.uniform(-100.0, 100.0) for _ in range(N))))
        out, dot = cublas_scale.axpy_dot(A, x, y)
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
        fail(f"axpy mismatch at i={i}: expected {ref!r}, got {got!r} "
             f"(max_abs_err={max_err:.3g})")

    # The dot product of the GPU's own `out` with x, summed exactly; cuBLAS
    # accumulates in float32, so allow a float32-sized error relative to
    # the sum of the magnitudes of the terms.
    ref_dot = math.fsum(oi * xi for oi, xi in zip(out, x))
    scale = math.fsum(abs(oi * xi) for oi, xi in zip(out, x))
    dot_err = abs(dot - ref_dot)
    if dot_err > 1e-4 * scale:
        fail(f"dot mismatch: expected {ref_dot!r}, got {dot!r} "
             f"(abs_err={dot_err:.3g}, scale={scale:.3g})")

    print(f"cublas_scale OK n={N} max_abs_err={max_err:.3g} "
          f"dot={dot!r} ref={ref_dot!r} rel_err={dot_err / scale:.3g} "
          f"runtime={runtime} cublas={cublas} driver={driver} "
          f"devices={devices}")


if __name__ == "__main__":
    main()

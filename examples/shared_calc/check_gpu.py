#!/usr/bin/env python3
"""End-to-end check of the installed shared_calc wheel on a machine with a GPU.

Run after `pip install shared_calc-*.whl`:  python check_gpu.py
Exits 0 when libcalc's GPU reduction matches a pure-Python reference,
non-zero otherwise (including when no CUDA device/driver is available).
"""

import math
import os
import random
import sys
from array import array

# This script sits next to the source package shared_calc/ (which has no
# compiled _ext); drop its directory from sys.path so the *installed*
# package is tested.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

N = 1_000_003  # deliberately not a multiple of the block size


def fail(msg):
    print(f"shared_calc FAILED: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    try:
        import shared_calc
    except ImportError as e:
        fail(f"cannot import shared_calc: {e}")

    # The shared library must sit inside the package, where the extension's
    # $ORIGIN RPATH looks for it.
    pkg_dir = os.path.dirname(shared_calc.__file__)
    lib = os.path.join(pkg_dir, "lib", "libcalc.so")
    if not os.path.isfile(lib):
        fail(f"{lib} is missing")

    runtime = shared_calc.runtime_version()
    driver = shared_calc.driver_version()
    print(f"module:  {shared_calc._ext.__file__}")
    print(f"library: {lib}")
    print(f"runtime: {runtime}")
    print(f"driver:  {driver}")

    # Bad input is rejected before any CUDA call.
    try:
        shared_calc.square_sum([1.0, "two"])
    except TypeError:
        pass
    else:
        fail("a non-number did not raise TypeError")

    try:
        devices = shared_calc.device_count()
        print(f"devices: {devices}")

        if shared_calc.square_sum([]) != 0.0:
            fail("empty input did not give 0.0")

        # Tiny case, exact in float32: compare exactly.
        tiny = shared_calc.square_sum([1.0, 2.0, 3.0])
        print(f"square_sum([1.0, 2.0, 3.0]) = {tiny}")
        if tiny != 14.0:
            fail(f"tiny case: expected 14.0, got {tiny}")

        # Inputs rounded to float32 up front (array('f')); the GPU adds up in
        # double and rounds once to float32, so the result must be within a
        # few float32 ulps of the exact sum.
        rng = random.Random(0)
        x = list(array("f", (rng.uniform(-100.0, 100.0) for _ in range(N))))
        got = shared_calc.square_sum(x)
    except RuntimeError as e:
        fail(str(e))

    ref = math.fsum(v * v for v in x)
    rel_err = abs(got - ref) / ref
    if rel_err > 1e-6:
        fail(f"square_sum mismatch: expected {ref!r}, got {got!r} "
             f"(rel_err={rel_err:.3g})")

    print(f"shared_calc OK n={N} square_sum={got!r} ref={ref!r} "
          f"rel_err={rel_err:.3g} runtime={runtime} driver={driver} "
          f"devices={devices}")


if __name__ == "__main__":
    main()

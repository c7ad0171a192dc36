"""Runs one of JAX's absltest files (argv[1]) as its own __main__, then prints the libcudart
copies the process mapped. Exit status 1 when a test failed or was skipped (on the GPU machine
a skip means the CUDA backend was not there), or the process maps other than one libcudart.

usage: python run_jax_test.py TEST_FILE.py
"""

import os
import runpy
import sys
import unittest

path = os.path.abspath(sys.argv[1])
skipped = []
_add_skip = unittest.TestResult.addSkip


def add_skip(self, test, reason):
    skipped.append(f"{test.id()}: {reason}")
    return _add_skip(self, test, reason)


unittest.TestResult.addSkip = add_skip
sys.argv = [path]
sys.path.insert(0, os.path.dirname(path))
status = 0
try:
    runpy.run_path(path, run_name="__main__")
except SystemExit as e:
    status = 0 if e.code in (None, 0, False) else 1


def mapped(word):
    with open("/proc/self/maps") as f:
        paths = {parts[5] for parts in map(str.split, f) if len(parts) >= 6}
    return sorted(p for p in paths if word in os.path.basename(p))


cudart = mapped("libcudart")
print(f"{os.path.basename(path)}: exit status {status}, skipped {len(skipped)}")
for s in skipped:
    print(f"  SKIPPED {s}")
print("libcudart mapped:", cudart)
print("jax_ffi_example objects mapped:", mapped("examples"))
ok = status == 0 and not skipped and len(cudart) == 1
print("PASS" if ok else "FAIL", os.path.basename(path))
sys.exit(0 if ok else 1)

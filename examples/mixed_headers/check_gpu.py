"""Runs the half-precision AXPY on the GPU and compares with the CPU (exit 1 on a mismatch)."""

import struct
import sys

import mixed_headers as m


def to_half(v: float) -> float:
    return struct.unpack("<e", struct.pack("<e", v))[0]


n = 4096
x = [to_half((i % 97) / 16.0) for i in range(n)]
y = [to_half(((i * 7) % 31) / 8.0 - 2.0) for i in range(n)]
a = 1.5
got = m.haxpy(a, x, y)
want = [to_half(to_half(a * xi) + yi) for xi, yi in zip(x, y)]
bad = [i for i in range(n) if abs(got[i] - want[i]) > 1e-2 * max(1.0, abs(want[i]))]
print(f"mixed_headers: headers .cpp CUDART_VERSION={m.cpp_cudart_version()} .cu={m.cu_cudart_version()}, "
      f"libcudart loaded: {m.runtime_version()}, haxpy n={n}: {len(bad)} mismatches")
if bad or m.cpp_cudart_version() != m.cu_cudart_version():
    i = bad[0] if bad else 0
    print(f"FAILED: got[{i}]={got[i]} want {want[i]}", file=sys.stderr)
    sys.exit(1)
print("mixed_headers: OK")

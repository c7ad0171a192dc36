"""JAX-on-GPU probe: CUDA device, a jitted elementwise function, an XLA FFI custom call to a
CUDA handler in a ctypes-loaded .so, and the libcudart copies mapped into the process.

usage: python test_jax_gpu.py [--ffi-lib PATH] [--ffi-first] [--project] [--require-gpu]

  --ffi-lib PATH  a .so exporting the XLA FFI handler symbol SqPlusOne (sq_ffi.cu): y = x*x + 1
  --ffi-first     ctypes-load the .so BEFORE the JAX backend exists (the order an extension's
                  import gives); default: after jax.devices()
  --project       also import jax_ffi_example (cudawheel's examples/jax_ffi wheel) and run
                  square_add and its gradient
  --require-gpu   exit non-zero unless the default backend is CUDA
Environment it expects on a machine without cuDNN: JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1.
"""

import argparse
import ctypes
import os
import sys
import traceback

ap = argparse.ArgumentParser()
ap.add_argument("--ffi-lib")
ap.add_argument("--ffi-first", action="store_true")
ap.add_argument("--project", action="store_true")
ap.add_argument("--require-gpu", action="store_true")
args = ap.parse_args()

failures = []


def check(name, fn, fatal=True):
    try:
        fn()
        print(f"PASS {name}")
    except Exception:
        print(f"{'FAIL' if fatal else 'INFO-FAIL'} {name}")
        traceback.print_exc()
        if fatal:
            failures.append(name)


def mapped(pred):
    paths = set()
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and pred(parts[5]):
                paths.add(parts[5])
    return sorted(paths)


def cuda_libs():
    keys = ("libcu", "libnv", "cudnn", "nccl", "cupti", "libcublas", "jit", "xla_cuda", "sq_ffi",
            "jax_ffi")
    return mapped(lambda p: any(k in os.path.basename(p) for k in keys))


for k in ("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "JAX_PLATFORMS", "CUDA_ROOT", "LD_LIBRARY_PATH",
          "XLA_FLAGS", "TF_CPP_MIN_LOG_LEVEL"):
    print(f"env {k}={os.environ.get(k)!r}")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

print("jax", jax.__version__, "python", sys.version.split()[0])

lib = None
if args.ffi_lib and args.ffi_first:
    lib = ctypes.CDLL(os.path.abspath(args.ffi_lib))
    print("ffi lib loaded before the backend; libcudart now:", mapped(lambda p: "libcudart" in p))

devs = jax.devices()
print("devices:", devs, "default backend:", jax.default_backend())
print("device kind:", getattr(devs[0], "device_kind", "?"))
from jax._src import lib as jlib  # noqa: E402

print("jax._src.lib.cuda_path =", repr(jlib.cuda_path))
if args.require_gpu and jax.default_backend() != "gpu":
    print("FAIL no CUDA backend")
    sys.exit(2)

# 1. jitted elementwise function
def t_jit():
    f = jax.jit(lambda x, y: 2.0 * x * x + y)
    x = jnp.arange(4096, dtype=jnp.float32)
    y = jnp.ones(4096, jnp.float32)
    r = np.asarray(f(x, y).block_until_ready())
    np.testing.assert_allclose(r, 2.0 * np.arange(4096, dtype=np.float32) ** 2 + 1.0, rtol=1e-6)
    print("  result on", list(f(x, y).devices()))
check("jit elementwise", t_jit)

# 1b. libdevice-style math (needs nvvm/libdevice or XLA's own approximations)
def t_sin():
    x = np.linspace(-3, 3, 1024, dtype=np.float32)
    r = np.asarray(jax.jit(lambda v: jnp.sin(v) * jnp.exp(-v * v))(x))
    np.testing.assert_allclose(r, np.sin(x) * np.exp(-x * x), rtol=1e-5, atol=1e-6)
check("jit sin/exp", t_sin, fatal=False)

# 1c. a matmul (cuBLAS from the system CUDA; not needed for the FFI question)
def t_dot():
    a = np.random.default_rng(0).standard_normal((256, 256), dtype=np.float32)
    r = np.asarray(jax.jit(jnp.dot)(a, a))
    np.testing.assert_allclose(r, a @ a, rtol=2e-2, atol=2e-2)
check("jit matmul (cuBLAS)", t_dot, fatal=False)

# 2. XLA FFI custom call to a CUDA handler in a ctypes-loaded .so
if args.ffi_lib:
    def t_ffi():
        global lib
        if lib is None:
            lib = ctypes.CDLL(os.path.abspath(args.ffi_lib))
        jax.ffi.register_ffi_target("probe_sq_plus_one", jax.ffi.pycapsule(lib.SqPlusOne),
                                    platform="CUDA")
        x = jnp.linspace(-2, 2, 1000, dtype=jnp.float32)
        fn = jax.jit(lambda v: jax.ffi.ffi_call(
            "probe_sq_plus_one", jax.ShapeDtypeStruct(v.shape, v.dtype))(v))
        hlo = fn.lower(x).as_text()
        line = next((ln.strip() for ln in hlo.splitlines() if "custom_call" in ln), None)
        print("  lowered:", line)
        assert line and "probe_sq_plus_one" in line
        r = np.asarray(fn(x).block_until_ready())
        np.testing.assert_allclose(r, np.asarray(x) ** 2 + 1.0, rtol=1e-6)
    check("ffi custom call (ctypes .so, platform=CUDA)", t_ffi)

# 3. the project's example wheel (cudawheel examples/jax_ffi)
if args.project:
    def t_project():
        import jax_ffi_example as m
        x = jnp.linspace(-1, 1, 4096, dtype=jnp.float32)
        y = jnp.ones_like(x)
        r = np.asarray(jax.jit(lambda a, b: m.square_add(a, b, 2.0))(x, y))
        np.testing.assert_allclose(r, 2.0 * np.asarray(x) ** 2 + 1.0, rtol=1e-6)
        g = np.asarray(jax.jit(jax.grad(lambda v: m.square_add(v, v, 2.0).sum()))(jnp.ones(4)))
        np.testing.assert_allclose(g, np.full(4, 5.0, np.float32), rtol=1e-6)  # d/dv sum(a*v*v + v) = 2*a*v + 1 = 5
    check("project jax_ffi_example square_add + grad", t_project)

# 4. which libcudart copies (and which CUDA libraries) the process maps
cudart = mapped(lambda p: "libcudart" in os.path.basename(p))
print("libcudart mapped:", cudart)
print("CUDA-related objects mapped:")
for p in cuda_libs():
    print("  ", p)
print("cuDNN mapped:", bool(mapped(lambda p: "cudnn" in p)))
if len(cudart) != 1:
    print(f"FAIL expected exactly one libcudart, got {len(cudart)}")
    failures.append("one libcudart")
else:
    print("PASS exactly one libcudart")

print("SUMMARY:", "FAILED " + ", ".join(failures) if failures else "ALL PASS")
sys.exit(1 if failures else 0)

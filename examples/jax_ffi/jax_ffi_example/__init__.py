"""square_add(x, y, a) = a * x**2 + y as a JAX custom call (XLA FFI), with a custom VJP.

The CPU handlers come from the nanobind module ``_cpu``; the CUDA handlers from the shared
library ``lib/libjax_ffi_cuda.so``, opened with ``_cuda_libs.load`` (which loads the CUDA runtime
first and checks the GPUs against the GPU code the wheel carries).
"""

from __future__ import annotations

import importlib.util
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from . import _cpu, _cuda_libs

for _name, _capsule in _cpu.registrations().items():
    jax.ffi.register_ffi_target(_name, _capsule, platform="cpu")

_CUDA_HANDLERS = {"jax_ffi_square_add": "SquareAddCuda", "jax_ffi_square_add_grad": "SquareAddGradCuda"}


def _jax_has_cuda_plugin() -> bool:
    return any(importlib.util.find_spec(p) is not None for p in ("jax_cuda13_plugin", "jax_cuda12_plugin"))


def register_cuda() -> bool:
    """Loads the CUDA handlers and registers them with JAX for platform "CUDA". Returns False
    only where the CUDA libraries are missing and JAX has no CUDA plugin either (CPU-only use);
    with a JAX CUDA plugin installed, a library that cannot load raises ImportError."""
    try:
        lib = _cuda_libs.load("jax_ffi_cuda")
    except ImportError:
        if _jax_has_cuda_plugin():
            raise
        return False
    for name, symbol in _CUDA_HANDLERS.items():
        jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(lib, symbol)), platform="CUDA")
    return True


HAS_CUDA_HANDLERS = register_cuda()


def _call(name, a, *args):
    out = jax.ShapeDtypeStruct(args[0].shape, jnp.float32)
    return jax.ffi.ffi_call(name, out, vmap_method="broadcast_all")(*args, a=np.float32(a))


@partial(jax.custom_vjp, nondiff_argnums=(2,))
def square_add(x, y, a=1.0):
    """a * x**2 + y, elementwise, in float32."""
    x, y = jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32)
    return _call("jax_ffi_square_add", a, x, y)


def _fwd(x, y, a):
    x, y = jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32)
    return _call("jax_ffi_square_add", a, x, y), x


def _bwd(a, x, g):
    return _call("jax_ffi_square_add_grad", a, g, x), g


square_add.defvjp(_fwd, _bwd)

__all__ = ["square_add", "register_cuda", "HAS_CUDA_HANDLERS"]

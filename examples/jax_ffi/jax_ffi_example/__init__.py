"""square_add(x, y, a) = a * x**2 + y as a JAX custom call (XLA FFI), with a custom VJP.

The CPU handlers come from the nanobind module ``_cpu``; the CUDA handlers from the shared
library ``lib/libjax_ffi_cuda.so``, opened with ``_cuda_libs.load`` (which loads the CUDA runtime
first and checks the GPUs against the GPU code the wheel carries).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from . import _cuda_libs

# The CUDA runtime first (from NVIDIA's wheel of the [cuda_pip] extra, else a system CUDA): both
# the module and the handler library link it. Without either, this says what to install.
_cuda_libs.preload()

from . import _cpu  # noqa: E402

for _name, _capsule in _cpu.registrations().items():
    jax.ffi.register_ffi_target(_name, _capsule, platform="cpu")

# The CUDA handlers: registered for platform "CUDA" (JAX keeps them until a CUDA backend
# exists, so this works with a CPU-only jax too).
_lib = _cuda_libs.load("jax_ffi_cuda")
for _name, _symbol in {"jax_ffi_square_add": "SquareAddCuda", "jax_ffi_square_add_grad": "SquareAddGradCuda"}.items():
    jax.ffi.register_ffi_target(_name, jax.ffi.pycapsule(getattr(_lib, _symbol)), platform="CUDA")


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

__all__ = ["square_add"]

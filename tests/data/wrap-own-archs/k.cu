#include <Python.h>

__global__ void touch(float *x) { x[threadIdx.x] += 1.0f; }

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_k", NULL, -1, NULL};

extern "C" PyMODINIT_FUNC PyInit__k(void) {
  void (*kernel)(float *) = touch;  // keep the kernel in the fatbin
  (void)kernel;
  return PyModule_Create(&module);
}

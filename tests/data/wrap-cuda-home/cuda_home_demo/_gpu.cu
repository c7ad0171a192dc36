// One kernel and a function that asks the CUDA runtime for the GPUs it sees (0 without one).
#include <Python.h>
#include <cuda_runtime.h>

__global__ void scale(float *x, float a) { x[threadIdx.x] *= a; }

static PyObject *devices(PyObject *, PyObject *) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
    return PyLong_FromLong(n);
}

static PyMethodDef methods[] = {{"devices", devices, METH_NOARGS, "GPUs the runtime sees."}, {nullptr, nullptr, 0, nullptr}};
static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_gpu", nullptr, -1, methods};

PyMODINIT_FUNC PyInit__gpu(void) { return PyModule_Create(&module); }

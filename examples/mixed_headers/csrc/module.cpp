// module.cpp - the mixed_headers._core extension, compiled by the host C++ compiler. It uses the
// runtime API and cuda_fp16.h's host conversions itself, so it needs the same CUDA headers as
// haxpy.cu: CUDART_VERSION of both is exported to check that.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <vector>

#include "haxpy.h"

static PyObject *cuda_error(cudaError_t e, const char *what)
{
    PyErr_Format(PyExc_RuntimeError, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
    return nullptr;
}

static bool to_halves(PyObject *seq, std::vector<__half> &out)
{
    Py_ssize_t n = PySequence_Size(seq);
    if (n < 0)
        return false;
    out.resize((size_t)n);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_GetItem(seq, i);
        if (!item)
            return false;
        double v = PyFloat_AsDouble(item);
        Py_DECREF(item);
        if (v == -1.0 && PyErr_Occurred())
            return false;
        out[(size_t)i] = __float2half((float)v);  // host conversion from cuda_fp16.h
    }
    return true;
}

// haxpy(a, x, y) -> list of floats (computed on the GPU in half precision)
static PyObject *haxpy(PyObject *, PyObject *args)
{
    double a;
    PyObject *xs, *ys;
    if (!PyArg_ParseTuple(args, "dOO", &a, &xs, &ys))
        return nullptr;
    std::vector<__half> x, y;
    if (!to_halves(xs, x) || !to_halves(ys, y))
        return nullptr;
    if (x.size() != y.size()) {
        PyErr_SetString(PyExc_ValueError, "x and y differ in length");
        return nullptr;
    }
    size_t n = x.size(), bytes = n * sizeof(__half);
    __half *d_x = nullptr, *d_y = nullptr, *d_out = nullptr;
    std::vector<__half> out(n);
    cudaError_t e = cudaMalloc(&d_x, bytes ? bytes : 1);
    if (e == cudaSuccess) e = cudaMalloc(&d_y, bytes ? bytes : 1);
    if (e == cudaSuccess) e = cudaMalloc(&d_out, bytes ? bytes : 1);
    if (e == cudaSuccess) e = cudaMemcpy(d_x, x.data(), bytes, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemcpy(d_y, y.data(), bytes, cudaMemcpyHostToDevice);
    if (e == cudaSuccess && n) e = haxpy_launch(__float2half((float)a), d_x, d_y, d_out, n);
    if (e == cudaSuccess) e = cudaMemcpy(out.data(), d_out, bytes, cudaMemcpyDeviceToHost);
    cudaFree(d_x);
    cudaFree(d_y);
    cudaFree(d_out);
    if (e != cudaSuccess)
        return cuda_error(e, "haxpy");
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (!list)
        return nullptr;
    for (size_t i = 0; i < n; i++)
        PyList_SetItem(list, (Py_ssize_t)i, PyFloat_FromDouble(__half2float(out[i])));
    return list;
}

static PyObject *runtime_version(PyObject *, PyObject *)
{
    int v = 0;
    cudaError_t e = cudaRuntimeGetVersion(&v);
    if (e != cudaSuccess)
        return cuda_error(e, "cudaRuntimeGetVersion");
    return PyLong_FromLong(v);
}

static PyObject *cpp_cudart_version(PyObject *, PyObject *) { return PyLong_FromLong(CUDART_VERSION); }

static PyObject *cu_cudart_version(PyObject *, PyObject *) { return PyLong_FromLong(haxpy_cu_cudart_version()); }

static PyMethodDef methods[] = {
    {"haxpy", haxpy, METH_VARARGS, "haxpy(a, x, y): a*x+y on the GPU in half precision"},
    {"runtime_version", runtime_version, METH_NOARGS, "cudaRuntimeGetVersion() of the loaded libcudart"},
    {"cpp_cudart_version", cpp_cudart_version, METH_NOARGS, "CUDART_VERSION module.cpp was compiled against"},
    {"cu_cudart_version", cu_cudart_version, METH_NOARGS, "CUDART_VERSION haxpy.cu was compiled against"},
    {nullptr, nullptr, 0, nullptr},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_core", nullptr, -1, methods};

PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&module); }

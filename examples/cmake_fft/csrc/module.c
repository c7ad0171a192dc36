/* cmake_fft._core: FFTW (a system library), OpenMP, and the vendored CUDA library. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <fftw3.h>
#include <math.h>
#include <omp.h>

#include "gpuscale.h"

/* |X[1]| of a cosine of one period over n samples, by FFTW on the CPU (n/2 exactly). */
static PyObject *py_fftw_bin1(PyObject *self, PyObject *args)
{
    int n;
    if (!PyArg_ParseTuple(args, "i", &n) || n < 2)
        return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_ValueError, "n must be >= 2");
    double *in = fftw_alloc_real(n);
    fftw_complex *out = fftw_alloc_complex(n / 2 + 1);
    fftw_plan p = fftw_plan_dft_r2c_1d(n, in, out, FFTW_ESTIMATE);
    for (int i = 0; i < n; i++)
        in[i] = cos(2 * M_PI * i / n);
    fftw_execute(p);
    double mag = sqrt(out[1][0] * out[1][0] + out[1][1] * out[1][1]);
    fftw_destroy_plan(p);
    fftw_free(in);
    fftw_free(out);
    return PyFloat_FromDouble(mag);
}

/* sum of 0..n-1 by an OpenMP reduction, and the threads it may use. */
static PyObject *py_omp_sum(PyObject *self, PyObject *args)
{
    long long n, s = 0;
    if (!PyArg_ParseTuple(args, "L", &n))
        return NULL;
#pragma omp parallel for reduction(+ : s)
    for (long long i = 0; i < n; i++)
        s += i;
    return Py_BuildValue("(Li)", s, omp_get_max_threads());
}

static PyObject *py_fftw_version(PyObject *self, PyObject *args)
{
    return PyUnicode_FromString(fftw_version);
}

static PyObject *py_cufft_version(PyObject *self, PyObject *args)
{
    return PyLong_FromLong(gpuscale_cufft_version());
}

/* |X[1]| of the same cosine by cuFFT on the GPU. */
static PyObject *py_cufft_bin1(PyObject *self, PyObject *args)
{
    int n;
    if (!PyArg_ParseTuple(args, "i", &n) || n < 2)
        return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_ValueError, "n must be >= 2");
    double *x = PyMem_Malloc(n * sizeof(double));
    for (int i = 0; i < n; i++)
        x[i] = cos(2 * M_PI * i / n);
    double mag = 0;
    int r = gpuscale_fft_bin1(x, n, &mag);
    PyMem_Free(x);
    if (r != 0)
        return PyErr_Format(PyExc_RuntimeError, "cuFFT/CUDA error %d", r);
    return PyFloat_FromDouble(mag);
}

/* The vendored kernel: [x * a for x in values]. */
static PyObject *py_gpu_scale(PyObject *self, PyObject *args)
{
    int n;
    float a;
    if (!PyArg_ParseTuple(args, "if", &n, &a))
        return NULL;
    float *x = PyMem_Malloc(n * sizeof(float));
    for (int i = 0; i < n; i++)
        x[i] = (float)i;
    int r = gpuscale_scale(x, n, a);
    PyObject *list = r ? NULL : PyList_New(n);
    for (int i = 0; list && i < n; i++)
        PyList_SET_ITEM(list, i, PyFloat_FromDouble(x[i]));
    PyMem_Free(x);
    if (r != 0)
        return PyErr_Format(PyExc_RuntimeError, "CUDA error %d", r);
    return list;
}

static PyMethodDef methods[] = {
    {"fftw_bin1", py_fftw_bin1, METH_VARARGS, "FFTW on the CPU"},
    {"omp_sum", py_omp_sum, METH_VARARGS, "an OpenMP reduction"},
    {"fftw_version", py_fftw_version, METH_NOARGS, "FFTW's version string"},
    {"cufft_version", py_cufft_version, METH_NOARGS, "cuFFT's version (no GPU needed)"},
    {"cufft_bin1", py_cufft_bin1, METH_VARARGS, "cuFFT on the GPU"},
    {"gpu_scale", py_gpu_scale, METH_VARARGS, "the vendored kernel"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_core", NULL, -1, methods};

PyMODINIT_FUNC PyInit__core(void)
{
    return PyModule_Create(&module);
}

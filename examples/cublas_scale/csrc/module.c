/* module.c - the cublas_scale._core extension module.
 *
 * Written only against the Python limited API (built with
 * -DPy_LIMITED_API=0x03090000), so one abi3 binary serves CPython >= 3.9.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>

#include "cublas_scale.h"

#define ERRLEN 512

/* Copy a sequence of numbers into a new PyMem_Malloc'ed float array.
 * Returns NULL with an exception set on failure (n == 0 gives a 1-element
 * dummy buffer so that NULL always means failure). */
static float *to_floats(PyObject *seq, Py_ssize_t n, const char *name)
{
    float *buf;
    Py_ssize_t i;

    if ((size_t)n > PY_SSIZE_T_MAX / sizeof(float))
        return (float *)PyErr_NoMemory();
    buf = PyMem_Malloc(n > 0 ? (size_t)n * sizeof(float) : 1);
    if (buf == NULL)
        return (float *)PyErr_NoMemory();
    for (i = 0; i < n; i++) {
        PyObject *item = PySequence_GetItem(seq, i);
        double v;
        if (item == NULL)
            goto fail;
        v = PyFloat_AsDouble(item);
        Py_DECREF(item);
        if (v == -1.0 && PyErr_Occurred()) {
            if (PyErr_ExceptionMatches(PyExc_TypeError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError,
                             "%s[%zd] must be a real number", name, i);
            }
            goto fail;
        }
        buf[i] = (float)v;
    }
    return buf;

fail:
    PyMem_Free(buf);
    return NULL;
}

/* Length of a sequence argument, with a friendly TypeError. */
static Py_ssize_t seq_len(PyObject *obj, const char *name)
{
    if (!PySequence_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be a sequence of floats",
                     name);
        return -1;
    }
    return PySequence_Size(obj);
}

/* A new list of Python floats from out[0..n). */
static PyObject *to_list(const float *out, Py_ssize_t n)
{
    PyObject *list = PyList_New(n);
    Py_ssize_t i;

    if (list == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        PyObject *f = PyFloat_FromDouble((double)out[i]);
        /* PyList_SetItem steals f (and handles f == NULL by failing). */
        if (f == NULL || PyList_SetItem(list, i, f) < 0) {
            Py_DECREF(list);
            return NULL;
        }
    }
    return list;
}

PyDoc_STRVAR(axpy_dot_doc,
"axpy_dot(a, x, y) -> tuple[list[float], float]\n\n"
"Compute out = a * x + y with a CUDA kernel, then the dot product\n"
"<out, x> with cuBLAS (cublasSdot), all in single precision; return\n"
"(out, dot). Raises ValueError if len(x) != len(y), OverflowError if\n"
"len(x) exceeds cuBLAS's int range and RuntimeError if CUDA or cuBLAS\n"
"fails (e.g. no device).");

static PyObject *py_axpy_dot(PyObject *self, PyObject *args)
{
    float a, dot = 0.0f;
    PyObject *xo, *yo, *list = NULL, *result = NULL;
    Py_ssize_t n, ny;
    float *x = NULL, *y = NULL, *out = NULL;
    char err[ERRLEN] = "";
    int rc;

    (void)self;
    if (!PyArg_ParseTuple(args, "fOO:axpy_dot", &a, &xo, &yo))
        return NULL;
    if ((n = seq_len(xo, "x")) < 0 || (ny = seq_len(yo, "y")) < 0)
        return NULL;
    if (n != ny) {
        PyErr_Format(PyExc_ValueError,
                     "x and y must have the same length (got %zd and %zd)",
                     n, ny);
        return NULL;
    }
    if ((size_t)n > (size_t)INT_MAX) {
        PyErr_Format(PyExc_OverflowError,
                     "cuBLAS takes at most %d elements (got %zd)", INT_MAX,
                     n);
        return NULL;
    }
    if ((x = to_floats(xo, n, "x")) == NULL ||
        (y = to_floats(yo, n, "y")) == NULL)
        goto done;
    if ((out = PyMem_Malloc(n > 0 ? (size_t)n * sizeof(float) : 1)) == NULL) {
        PyErr_NoMemory();
        goto done;
    }

    /* The GPU work does not touch Python objects: let other threads run. */
    Py_BEGIN_ALLOW_THREADS
    rc = cs_axpy_dot(a, x, y, out, (size_t)n, &dot, err, sizeof err);
    Py_END_ALLOW_THREADS
    if (rc != 0) {
        PyErr_Format(PyExc_RuntimeError, "CUDA error: %s", err);
        goto done;
    }

    if ((list = to_list(out, n)) == NULL)
        goto done;
    /* "N" steals the reference to list. */
    result = Py_BuildValue("(Nd)", list, (double)dot);

done:
    PyMem_Free(out);
    PyMem_Free(y);
    PyMem_Free(x);
    return result;
}

PyDoc_STRVAR(cublas_version_doc,
"cublas_version() -> int\n\n"
"Version of the loaded cuBLAS library (cublasGetVersion), e.g. 131000\n"
"for cuBLAS 13.10.0. It needs a cuBLAS handle, so it raises RuntimeError\n"
"when no usable GPU is present.");

static PyObject *py_cublas_version(PyObject *self, PyObject *unused)
{
    int version = 0, rc;
    char err[ERRLEN] = "";

    (void)self;
    (void)unused;
    Py_BEGIN_ALLOW_THREADS
    rc = cs_cublas_version(&version, err, sizeof err);
    Py_END_ALLOW_THREADS
    if (rc != 0)
        return PyErr_Format(PyExc_RuntimeError, "CUDA error: %s", err);
    return PyLong_FromLong(version);
}

PyDoc_STRVAR(device_count_doc,
"device_count() -> int\n\n"
"Number of CUDA devices. Raises RuntimeError if CUDA cannot be\n"
"initialised (e.g. no driver or no device).");

static PyObject *py_device_count(PyObject *self, PyObject *unused)
{
    int count = 0, rc;
    char err[ERRLEN] = "";

    (void)self;
    (void)unused;
    rc = cs_device_count(&count, err, sizeof err);
    if (rc != 0)
        return PyErr_Format(PyExc_RuntimeError, "CUDA error: %s", err);
    return PyLong_FromLong(count);
}

PyDoc_STRVAR(runtime_version_doc,
"runtime_version() -> int\n\n"
"CUDA runtime version (cudaRuntimeGetVersion), e.g. 13000 for 13.0.");

static PyObject *py_runtime_version(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyLong_FromLong(cs_runtime_version());
}

PyDoc_STRVAR(driver_version_doc,
"driver_version() -> int\n\n"
"CUDA version supported by the installed driver (cudaDriverGetVersion),\n"
"or 0 when no driver is installed.");

static PyObject *py_driver_version(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyLong_FromLong(cs_driver_version());
}

static PyMethodDef core_methods[] = {
    {"axpy_dot", py_axpy_dot, METH_VARARGS, axpy_dot_doc},
    {"cublas_version", py_cublas_version, METH_NOARGS, cublas_version_doc},
    {"device_count", py_device_count, METH_NOARGS, device_count_doc},
    {"runtime_version", py_runtime_version, METH_NOARGS, runtime_version_doc},
    {"driver_version", py_driver_version, METH_NOARGS, driver_version_doc},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    "cublas_scale._core",                              /* m_name */
    "CUDA kernel + cuBLAS sdot (cudawheel example).",  /* m_doc */
    -1,                                                /* m_size */
    core_methods,                                      /* m_methods */
    NULL, NULL, NULL, NULL                             /* slots, traverse, ... */
};

PyMODINIT_FUNC PyInit__core(void)
{
    return PyModule_Create(&core_module);
}

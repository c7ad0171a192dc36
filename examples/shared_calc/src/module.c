/* module.c - the shared_calc._ext extension module.
 *
 * A thin wrapper around libcalc (lib/include/calc.h), which is shipped in
 * the wheel as shared_calc/lib/libcalc.so. This file needs neither nvcc nor
 * the CUDA headers. Written only against the Python limited API (built with
 * -DPy_LIMITED_API=0x03090000), so one abi3 binary serves CPython >= 3.9.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "calc.h"

/* Raise RuntimeError for a libcalc error code. Returns NULL. */
static PyObject *calc_error(int code, const char *what)
{
    return PyErr_Format(PyExc_RuntimeError, "CUDA error: %s (%s from %s)",
                        calc_error_string(code), calc_error_name(code),
                        what);
}

/* Copy a sequence of numbers into a new PyMem_Malloc'ed float array and
 * store its length in *n. Returns NULL with an exception set on failure
 * (an empty sequence gives a 1-element dummy buffer so that NULL always
 * means failure). */
static float *to_floats(PyObject *obj, Py_ssize_t *n)
{
    float *buf;
    Py_ssize_t i;

    if (!PySequence_Check(obj)) {
        PyErr_SetString(PyExc_TypeError, "x must be a sequence of floats");
        return NULL;
    }
    if ((*n = PySequence_Size(obj)) < 0)
        return NULL;
    if ((size_t)*n > PY_SSIZE_T_MAX / sizeof(float))
        return (float *)PyErr_NoMemory();
    buf = PyMem_Malloc(*n > 0 ? (size_t)*n * sizeof(float) : 1);
    if (buf == NULL)
        return (float *)PyErr_NoMemory();
    for (i = 0; i < *n; i++) {
        PyObject *item = PySequence_GetItem(obj, i);
        double v;
        if (item == NULL)
            goto fail;
        v = PyFloat_AsDouble(item);
        Py_DECREF(item);
        if (v == -1.0 && PyErr_Occurred()) {
            if (PyErr_ExceptionMatches(PyExc_TypeError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, "x[%zd] must be a real number",
                             i);
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

PyDoc_STRVAR(square_sum_doc,
"square_sum(x) -> float\n\n"
"Return sum(v * v for v in x), computed on the GPU by libcalc (inputs\n"
"rounded to float32, accumulated in double precision, result rounded to\n"
"float32). Raises RuntimeError if CUDA fails (e.g. no device).");

static PyObject *py_square_sum(PyObject *self, PyObject *x_obj)
{
    Py_ssize_t n;
    float *x, result = 0.0f;
    int rc;

    (void)self;
    if ((x = to_floats(x_obj, &n)) == NULL)
        return NULL;
    /* The GPU work does not touch Python objects: let other threads run. */
    Py_BEGIN_ALLOW_THREADS
    rc = calc_square_sum(x, (size_t)n, &result);
    Py_END_ALLOW_THREADS
    PyMem_Free(x);
    if (rc != 0)
        return calc_error(rc, "calc_square_sum");
    return PyFloat_FromDouble((double)result);
}

PyDoc_STRVAR(device_count_doc,
"device_count() -> int\n\n"
"Number of CUDA devices. Raises RuntimeError if CUDA cannot be\n"
"initialised (e.g. no driver or no device).");

static PyObject *py_device_count(PyObject *self, PyObject *unused)
{
    int count = 0, rc;

    (void)self;
    (void)unused;
    if ((rc = calc_device_count(&count)) != 0)
        return calc_error(rc, "calc_device_count");
    return PyLong_FromLong(count);
}

PyDoc_STRVAR(runtime_version_doc,
"runtime_version() -> int\n\n"
"CUDA runtime version libcalc runs with (cudaRuntimeGetVersion), e.g.\n"
"13000 for 13.0.");

static PyObject *py_runtime_version(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyLong_FromLong(calc_runtime_version());
}

PyDoc_STRVAR(driver_version_doc,
"driver_version() -> int\n\n"
"CUDA version supported by the installed driver (cudaDriverGetVersion),\n"
"or 0 when no driver is installed.");

static PyObject *py_driver_version(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyLong_FromLong(calc_driver_version());
}

static PyMethodDef ext_methods[] = {
    {"square_sum", py_square_sum, METH_O, square_sum_doc},
    {"device_count", py_device_count, METH_NOARGS, device_count_doc},
    {"runtime_version", py_runtime_version, METH_NOARGS, runtime_version_doc},
    {"driver_version", py_driver_version, METH_NOARGS, driver_version_doc},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef ext_module = {
    PyModuleDef_HEAD_INIT,
    "shared_calc._ext",                                /* m_name */
    "Python wrapper of libcalc (cudawheel example).",  /* m_doc */
    -1,                                                /* m_size */
    ext_methods,                                       /* m_methods */
    NULL, NULL, NULL, NULL                             /* slots, ... */
};

PyMODINIT_FUNC PyInit__ext(void)
{
    return PyModule_Create(&ext_module);
}

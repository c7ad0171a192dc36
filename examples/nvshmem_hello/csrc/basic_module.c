/* basic_module.c - the nvshmem_hello._basic extension module (CUDA runtime
 * only; always built).
 *
 * Written only against the Python limited API (built with
 * -DPy_LIMITED_API=0x03090000), so one abi3 binary serves CPython >= 3.9.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "basic.h"

PyDoc_STRVAR(runtime_version_doc,
"runtime_version() -> int\n\n"
"CUDA runtime version (cudaRuntimeGetVersion), e.g. 13000 for 13.0.");

static PyObject *py_runtime_version(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyLong_FromLong(basic_runtime_version());
}

PyDoc_STRVAR(driver_version_doc,
"driver_version() -> int\n\n"
"CUDA version supported by the installed driver (cudaDriverGetVersion),\n"
"or 0 when no driver is installed.");

static PyObject *py_driver_version(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyLong_FromLong(basic_driver_version());
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
    if ((rc = basic_device_count(&count)) != 0)
        return PyErr_Format(PyExc_RuntimeError,
                            "CUDA error: %s (%s from cudaGetDeviceCount)",
                            basic_error_string(rc), basic_error_name(rc));
    return PyLong_FromLong(count);
}

static PyMethodDef basic_methods[] = {
    {"runtime_version", py_runtime_version, METH_NOARGS, runtime_version_doc},
    {"driver_version", py_driver_version, METH_NOARGS, driver_version_doc},
    {"device_count", py_device_count, METH_NOARGS, device_count_doc},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef basic_module = {
    PyModuleDef_HEAD_INIT,
    "nvshmem_hello._basic",                       /* m_name */
    "CUDA runtime queries (cudawheel example).",  /* m_doc */
    -1,                                           /* m_size */
    basic_methods,                                /* m_methods */
    NULL, NULL, NULL, NULL                        /* slots, ... */
};

PyMODINIT_FUNC PyInit__basic(void)
{
    return PyModule_Create(&basic_module);
}

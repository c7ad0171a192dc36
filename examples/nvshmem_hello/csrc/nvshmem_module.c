/* nvshmem_module.c - the nvshmem_hello._nvshmem extension module (optional:
 * built only where NVSHMEM is available).
 *
 * Written only against the Python limited API (built with
 * -DPy_LIMITED_API=0x03090000), so one abi3 binary serves CPython >= 3.9.
 * All NVSHMEM and CUDA calls live in nvshmem_ext.cu.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "nvshmem_ext.h"

#define ERRLEN 512

/* RuntimeError unless NVSHMEM is initialised; returns 0 if it is. */
static int require_init(void)
{
    if (nh_is_initialized())
        return 0;
    PyErr_SetString(PyExc_RuntimeError,
                    "NVSHMEM is not initialised (call init() first)");
    return -1;
}

PyDoc_STRVAR(library_version_doc,
"library_version() -> tuple[int, int, int]\n\n"
"Version (major, minor, patch) of the loaded NVSHMEM host library. Needs\n"
"neither a GPU nor init().");

static PyObject *py_library_version(PyObject *self, PyObject *unused)
{
    int major = 0, minor = 0, patch = 0;

    (void)self;
    (void)unused;
    nh_library_version(&major, &minor, &patch);
    return Py_BuildValue("(iii)", major, minor, patch);
}

PyDoc_STRVAR(header_version_doc,
"header_version() -> tuple[int, int, int]\n\n"
"Version (major, minor, patch) of the NVSHMEM headers this module was\n"
"compiled with.");

static PyObject *py_header_version(PyObject *self, PyObject *unused)
{
    int major = 0, minor = 0, patch = 0;

    (void)self;
    (void)unused;
    nh_header_version(&major, &minor, &patch);
    return Py_BuildValue("(iii)", major, minor, patch);
}

PyDoc_STRVAR(init_doc,
"init() -> None\n\n"
"Initialise NVSHMEM (nvshmem_init) and bind this PE to a GPU of its node.\n"
"Does nothing if already initialised. Raises RuntimeError when there is no\n"
"usable CUDA device. Run the program under an NVSHMEM-aware launcher\n"
"(nvshmrun, mpirun, srun) for more than one PE; without one it is a single\n"
"PE. NVSHMEM ends the process if its bootstrap fails.");

static PyObject *py_init(PyObject *self, PyObject *unused)
{
    char err[ERRLEN] = "";
    int rc;

    (void)self;
    (void)unused;
    /* Collective: it waits for the other PEs, so let other threads run. */
    Py_BEGIN_ALLOW_THREADS
    rc = nh_init(err, sizeof err);
    Py_END_ALLOW_THREADS
    if (rc != 0)
        return PyErr_Format(PyExc_RuntimeError, "CUDA error: %s", err);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(finalize_doc,
"finalize() -> None\n\n"
"Finalise NVSHMEM (nvshmem_finalize); does nothing if not initialised.");

static PyObject *py_finalize(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    Py_BEGIN_ALLOW_THREADS
    nh_finalize();
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

PyDoc_STRVAR(is_initialized_doc,
"is_initialized() -> bool\n\n"
"Whether NVSHMEM is initialised.");

static PyObject *py_is_initialized(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyBool_FromLong(nh_is_initialized());
}

PyDoc_STRVAR(my_pe_doc,
"my_pe() -> int\n\n"
"This PE's number (nvshmem_my_pe). Needs init().");

static PyObject *py_my_pe(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (require_init() < 0)
        return NULL;
    return PyLong_FromLong(nh_my_pe());
}

PyDoc_STRVAR(n_pes_doc,
"n_pes() -> int\n\n"
"The number of PEs (nvshmem_n_pes). Needs init().");

static PyObject *py_n_pes(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (require_init() < 0)
        return NULL;
    return PyLong_FromLong(nh_n_pes());
}

PyDoc_STRVAR(ring_exchange_doc,
"ring_exchange() -> int\n\n"
"Every PE's GPU writes its PE number into the next PE's memory\n"
"(nvshmem_int_p from a kernel); return the number received, which is\n"
"(my_pe() - 1) % n_pes(). Collective: all PEs must call it. Needs init().");

static PyObject *py_ring_exchange(PyObject *self, PyObject *unused)
{
    char err[ERRLEN] = "";
    int received = -1, rc;

    (void)self;
    (void)unused;
    if (require_init() < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = nh_ring_exchange(&received, err, sizeof err);
    Py_END_ALLOW_THREADS
    if (rc != 0)
        return PyErr_Format(PyExc_RuntimeError, "NVSHMEM error: %s", err);
    return PyLong_FromLong(received);
}

static PyMethodDef nvshmem_methods[] = {
    {"library_version", py_library_version, METH_NOARGS, library_version_doc},
    {"header_version", py_header_version, METH_NOARGS, header_version_doc},
    {"init", py_init, METH_NOARGS, init_doc},
    {"finalize", py_finalize, METH_NOARGS, finalize_doc},
    {"is_initialized", py_is_initialized, METH_NOARGS, is_initialized_doc},
    {"my_pe", py_my_pe, METH_NOARGS, my_pe_doc},
    {"n_pes", py_n_pes, METH_NOARGS, n_pes_doc},
    {"ring_exchange", py_ring_exchange, METH_NOARGS, ring_exchange_doc},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef nvshmem_module = {
    PyModuleDef_HEAD_INIT,
    "nvshmem_hello._nvshmem",                          /* m_name */
    "NVSHMEM on host and device (cudawheel example).", /* m_doc */
    -1,                                                /* m_size */
    nvshmem_methods,                                   /* m_methods */
    NULL, NULL, NULL, NULL                             /* slots, ... */
};

PyMODINIT_FUNC PyInit__nvshmem(void)
{
    return PyModule_Create(&nvshmem_module);
}

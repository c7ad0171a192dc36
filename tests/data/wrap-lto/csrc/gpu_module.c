#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>

int wrap_lto_saxpy(int n, float a, const float *x, float *y);
int wrap_lto_runtime_version(void);

/* saxpy(a, xs, ys) -> list: a*x + y computed on the GPU. */
static PyObject *saxpy(PyObject *self, PyObject *args) {
  float a;
  PyObject *xs, *ys;
  if (!PyArg_ParseTuple(args, "fOO", &a, &xs, &ys)) return NULL;
  Py_ssize_t n = PySequence_Size(xs);
  if (n < 0 || PySequence_Size(ys) != n) {
    PyErr_SetString(PyExc_ValueError, "x and y must be sequences of one length");
    return NULL;
  }
  float *x = malloc(sizeof(float) * (n ? n : 1)), *y = malloc(sizeof(float) * (n ? n : 1));
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *xi = PySequence_GetItem(xs, i), *yi = PySequence_GetItem(ys, i);
    x[i] = (float)PyFloat_AsDouble(xi);
    y[i] = (float)PyFloat_AsDouble(yi);
    Py_XDECREF(xi);
    Py_XDECREF(yi);
  }
  int err = wrap_lto_saxpy((int)n, a, x, y);
  PyObject *out = NULL;
  if (err) {
    PyErr_Format(PyExc_RuntimeError, "CUDA error %d", err);
  } else {
    out = PyList_New(n);
    for (Py_ssize_t i = 0; i < n; i++) PyList_SET_ITEM(out, i, PyFloat_FromDouble(y[i]));
  }
  free(x);
  free(y);
  return out;
}

static PyObject *runtime_version(PyObject *self, PyObject *args) {
  return PyLong_FromLong(wrap_lto_runtime_version());
}

static PyMethodDef methods[] = {
    {"saxpy", saxpy, METH_VARARGS, "a*x + y on the GPU"},
    {"runtime_version", runtime_version, METH_NOARGS, "cudaRuntimeGetVersion"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_gpu", NULL, -1, methods};

PyMODINIT_FUNC PyInit__gpu(void) { return PyModule_Create(&module); }

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>

int wrap_cuda12_scale(int n, float a, float *host);
int wrap_cuda12_runtime_version(void);

/* scale(a, ys) -> list: a*y computed on the GPU. */
static PyObject *scale(PyObject *self, PyObject *args) {
  float a;
  PyObject *ys;
  if (!PyArg_ParseTuple(args, "fO", &a, &ys)) return NULL;
  Py_ssize_t n = PySequence_Size(ys);
  if (n < 0) return NULL;
  float *y = malloc(sizeof(float) * (n ? n : 1));
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *yi = PySequence_GetItem(ys, i);
    y[i] = (float)PyFloat_AsDouble(yi);
    Py_XDECREF(yi);
  }
  int err = wrap_cuda12_scale((int)n, a, y);
  PyObject *out = NULL;
  if (err) {
    PyErr_Format(PyExc_RuntimeError, "CUDA error %d", err);
  } else {
    out = PyList_New(n);
    for (Py_ssize_t i = 0; i < n; i++) PyList_SET_ITEM(out, i, PyFloat_FromDouble(y[i]));
  }
  free(y);
  return out;
}

static PyObject *runtime_version(PyObject *self, PyObject *args) {
  return PyLong_FromLong(wrap_cuda12_runtime_version());
}

static PyMethodDef methods[] = {
    {"scale", scale, METH_VARARGS, "a*y on the GPU"},
    {"runtime_version", runtime_version, METH_NOARGS, "cudaRuntimeGetVersion"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_k", NULL, -1, methods};

PyMODINIT_FUNC PyInit__k(void) { return PyModule_Create(&module); }

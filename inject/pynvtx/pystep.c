/*
 * _truffld_pystep: a CPython extension module for the one call at each end of an engine step.
 *
 * Why: the always-on tier pays a step boundary per engine step (a step range's push fused with
 * the detail-window query, then its pop fused with the query; libtruffld_pynvtx.so's
 * truffld_pynvtx_step_push / truffld_pynvtx_step_pop). Through ctypes each such call runs
 * libffi, argument conversion and a GIL release and re-acquire, and next to a model's step, with
 * the caches full of the model's code, that costs microseconds. Here each is a METH_FASTCALL
 * function that calls the shim's function through a pointer, holding the GIL (the shim and the
 * injector's push never block), with the step name taken as str (its cached UTF-8) or bytes.
 *
 * The module has no NVTX code and links nothing: windows.py hands it the addresses of the shim's
 * two functions (``bind``), taken from the shim already loaded by ctypes, so the ranges go
 * through the same shim and its per-thread stack of open ranges. Optional: where it is not
 * built or cannot be loaded, the hooks call the shim through ctypes (nvtx.py).
 *
 * Thread-safety: ``bind`` is called once before any step call (under the windows lookup); the
 * step calls may run on any thread (the shim keeps its state per thread).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

typedef int (*step_push_fn)(void* domain, const char* name, unsigned long long* generation);
typedef int (*step_pop_fn)(int depth, unsigned long long* generation);

static step_push_fn g_step_push = NULL;
static step_pop_fn g_step_pop = NULL;

/* bind(push_address, pop_address): the shim's truffld_pynvtx_step_push and _step_pop. */
static PyObject* pystep_bind(PyObject* self, PyObject* args) {
  unsigned long long push = 0, pop = 0;
  (void)self;
  if (!PyArg_ParseTuple(args, "KK", &push, &pop)) return NULL;
  if (push == 0 || pop == 0) {
    PyErr_SetString(PyExc_ValueError, "bind: a function address is 0");
    return NULL;
  }
  g_step_push = (step_push_fn)(uintptr_t)push;
  g_step_pop = (step_pop_fn)(uintptr_t)pop;
  Py_RETURN_NONE;
}

/* The generation buffer: an int address of an unsigned long long (ctypes.addressof). */
static unsigned long long* generation_of(PyObject* address) {
  unsigned long long* buffer = (unsigned long long*)PyLong_AsVoidPtr(address);
  if (buffer == NULL && !PyErr_Occurred()) {
    PyErr_SetString(PyExc_ValueError, "the generation buffer's address is 0");
  }
  return buffer;
}

/* step_push(name, generation_address) -> the shim's packed answer (see pynvtx.c). */
static PyObject* pystep_step_push(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "step_push(name, generation_address)");
    return NULL;
  }
  if (g_step_push == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "step_push before bind");
    return NULL;
  }
  unsigned long long* generation = generation_of(args[1]);
  if (generation == NULL) return NULL;
  PyObject* name = args[0];
  PyObject* encoded = NULL;
  const char* text;
  if (PyBytes_CheckExact(name)) {
    text = PyBytes_AS_STRING(name);
  } else if (PyUnicode_Check(name)) {
    text = PyUnicode_AsUTF8(name);   /* cached in the str after the first call */
    if (text == NULL) {              /* lone surrogates: replace them, as nvtx.py does */
      PyErr_Clear();
      encoded = PyUnicode_AsEncodedString(name, "utf-8", "replace");
      if (encoded == NULL) return NULL;
      text = PyBytes_AS_STRING(encoded);
    }
  } else {
    PyErr_SetString(PyExc_TypeError, "step_push: the name must be str or bytes");
    return NULL;
  }
  int packed = g_step_push(NULL, text, generation);
  Py_XDECREF(encoded);
  return PyLong_FromLong(packed);
}

/* step_pop(depth, generation_address) -> the shim's packed answer (see pynvtx.c). */
static PyObject* pystep_step_pop(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "step_pop(depth, generation_address)");
    return NULL;
  }
  if (g_step_pop == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "step_pop before bind");
    return NULL;
  }
  long depth = PyLong_AsLong(args[0]);
  if (depth == -1 && PyErr_Occurred()) return NULL;
  unsigned long long* generation = generation_of(args[1]);
  if (generation == NULL) return NULL;
  return PyLong_FromLong(g_step_pop((int)depth, generation));
}

static PyMethodDef pystep_methods[] = {
    {"bind", pystep_bind, METH_VARARGS,
     "bind(push_address, pop_address): the shim's step functions (int addresses)."},
    {"step_push", (PyCFunction)(void (*)(void))pystep_step_push, METH_FASTCALL,
     "step_push(name, generation_address) -> packed: truffld_pynvtx_step_push, default "
     "domain."},
    {"step_pop", (PyCFunction)(void (*)(void))pystep_step_pop, METH_FASTCALL,
     "step_pop(depth, generation_address) -> packed: truffld_pynvtx_step_pop."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef pystep_module = {
    PyModuleDef_HEAD_INIT, "_truffld_pystep",
    "truffld's step boundary calls into libtruffld_pynvtx.so without ctypes.", -1,
    pystep_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__truffld_pystep(void) { return PyModule_Create(&pystep_module); }

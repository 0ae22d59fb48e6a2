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
 * through the same shim and its per-thread stack of open ranges. ``step_name`` builds a step
 * range's name as truffld_hooks.naming.step_name does (its plain cases; None otherwise), since
 * that name, built in Python between two model steps, costs as much as the calls. Optional: where it is not
 * built or cannot be loaded, the hooks call the shim through ctypes (nvtx.py).
 *
 * Thread-safety: ``bind`` is called once before any step call (under the windows lookup); the
 * step calls may run on any thread (the shim keeps its state per thread).
 */
#include "pystep.h"

#include <string.h>

step_push_fn g_step_push = NULL;
step_pop_fn g_step_pop = NULL;

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

const char* pystep_name_text(PyObject* name, PyObject** encoded) {
  *encoded = NULL;
  if (PyBytes_CheckExact(name)) return PyBytes_AS_STRING(name);
  if (!PyUnicode_Check(name)) {
    PyErr_SetString(PyExc_TypeError, "step_push: the name must be str or bytes");
    return NULL;
  }
  const char* text = PyUnicode_AsUTF8(name);   /* cached in the str after the first call */
  if (text != NULL) return text;
  PyErr_Clear();                                /* lone surrogates: replaced, as nvtx.py does */
  *encoded = PyUnicode_AsEncodedString(name, "utf-8", "replace");
  return *encoded != NULL ? PyBytes_AS_STRING(*encoded) : NULL;
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
  PyObject* encoded = NULL;
  const char* text = pystep_name_text(args[0], &encoded);
  if (text == NULL) return NULL;
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

/* A tag's count: None -> -1 (no tag); an exact int: itself when >= 0, else -1 (no tag, as
 * naming.step_name); returns 0 for anything else (a bool, a subclass, a huge int). */
static int count_of(PyObject* value, long long* out) {
  *out = -1;
  if (value == Py_None) return 1;
  if (!PyLong_CheckExact(value)) return 0;
  int overflow = 0;
  long long n = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (overflow != 0 || (n == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return 0;
  }
  *out = n >= 0 ? n : -1;
  return 1;
}

static const char* const kPhases[] = {"prefill", "decode", "mixed"};

/* The phase tag's text: NULL for None or a str outside kPhases; 0 for anything else. */
static int phase_of(PyObject* phase, const char** out) {
  *out = NULL;
  if (phase == Py_None) return 1;
  if (!PyUnicode_CheckExact(phase)) return 0;
  for (size_t i = 0; i < sizeof(kPhases) / sizeof(kPhases[0]); ++i) {
    if (PyUnicode_CompareWithASCIIString(phase, kPhases[i]) == 0) *out = kPhases[i];
  }
  return 1;
}

static char* put(char* at, const char* text, size_t size) {
  memcpy(at, text, size);
  return at + size;
}

/* `[key:count]` (nothing for a count < 0); digits by hand: printf's machinery is far more
 * code to bring into the caches between two model steps. */
static char* put_tag(char* at, const char* key, long long count) {
  if (count < 0) return at;
  char digits[24];
  int n = 0;
  unsigned long long value = (unsigned long long)count;
  do {
    digits[n++] = (char)('0' + value % 10);
    value /= 10;
  } while (value != 0);
  *at++ = '[';
  at = put(at, key, strlen(key));
  *at++ = ':';
  while (n > 0) *at++ = digits[--n];
  *at++ = ']';
  return at;
}

/* Writes the name into `out` (room for `room` bytes, enough by construction); returns its end. */
static char* write_name(char* out, const char* base, Py_ssize_t base_size, PyObject** ids,
                        Py_ssize_t count, const char* phase, long long tokens, long long ctx) {
  char* at = put(out, base, (size_t)base_size);
  if (count == 0) return put(at, "[empty]", 7);
  at = put(at, "[request_ids:", 13);
  for (Py_ssize_t i = 0; i < count; ++i) {
    Py_ssize_t size = 0;
    const char* text = PyUnicode_AsUTF8AndSize(ids[i], &size);   /* checked by the caller */
    if (i > 0) *at++ = '_';
    for (Py_ssize_t k = 0; k < size; ++k) {
      char c = text[k];
      if (c == '\\' || c == '_' || c == ']') *at++ = '\\';
      *at++ = c;
    }
  }
  *at++ = ']';
  if (phase != NULL) {
    at = put(at, "[phase:", 7);
    at = put(at, phase, strlen(phase));
    *at++ = ']';
  }
  at = put_tag(at, "tokens", tokens);
  return put_tag(at, "ctx", ctx);
}

/* step_name(ids, base, phase, tokens, ctx) -> the name naming.step_name builds (not a dummy
 * step), for a list or tuple of str ids, a str base, a str or None phase and exact int or None
 * counts; None for anything else (naming.step_name then builds it). */
PyObject* pystep_step_name(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 5) {
    PyErr_SetString(PyExc_TypeError, "step_name(ids, base, phase, tokens, ctx)");
    return NULL;
  }
  PyObject* ids = args[0];
  const char* phase;
  long long tokens, ctx;
  if ((!PyList_CheckExact(ids) && !PyTuple_CheckExact(ids)) || !PyUnicode_CheckExact(args[1]) ||
      !phase_of(args[2], &phase) || !count_of(args[3], &tokens) || !count_of(args[4], &ctx)) {
    Py_RETURN_NONE;
  }
  Py_ssize_t base_size = 0;
  const char* base = PyUnicode_AsUTF8AndSize(args[1], &base_size);
  Py_ssize_t count = PySequence_Fast_GET_SIZE(ids);
  PyObject** items = PySequence_Fast_ITEMS(ids);
  size_t need = (size_t)base_size + 128;   /* brackets, phase and two 20-digit counts */
  for (Py_ssize_t i = 0; base != NULL && i < count; ++i) {
    Py_ssize_t size = 0;
    if (!PyUnicode_CheckExact(items[i]) || PyUnicode_AsUTF8AndSize(items[i], &size) == NULL) {
      base = NULL;
      break;
    }
    need += 2 * (size_t)size + 1;
  }
  if (base == NULL) {   /* a lone surrogate or an id that is not a str */
    PyErr_Clear();
    Py_RETURN_NONE;
  }
  char stack[1024];
  char* out = need <= sizeof(stack) ? stack : (char*)PyMem_Malloc(need);
  if (out == NULL) return PyErr_NoMemory();
  char* end = write_name(out, base, base_size, items, count, phase, tokens, ctx);
  PyObject* name = PyUnicode_DecodeUTF8(out, end - out, "strict");
  if (out != stack) PyMem_Free(out);
  return name;
}

static PyMethodDef pystep_methods[] = {
    {"step_name", (PyCFunction)(void (*)(void))pystep_step_name, METH_FASTCALL,
     "step_name(ids, base, phase, tokens, ctx) -> str, or None: naming.step_name's plain "
     "cases."},
    {"bind", pystep_bind, METH_VARARGS,
     "bind(push_address, pop_address): the shim's step functions (int addresses)."},
    {"step_push", (PyCFunction)(void (*)(void))pystep_step_push, METH_FASTCALL,
     "step_push(name, generation_address) -> packed: truffld_pynvtx_step_push, default "
     "domain."},
    {"step_pop", (PyCFunction)(void (*)(void))pystep_step_pop, METH_FASTCALL,
     "step_pop(depth, generation_address) -> packed: truffld_pynvtx_step_pop."},
    {"configure", pystep_configure, METH_VARARGS,
     "configure(state): the hooks' objects the step boundary reads (see pystep_boundary.c)."},
    {"forget_threads", pystep_forget_threads, METH_NOARGS,
     "forget_threads(): each thread's step state is looked up again (windows.reset_for_tests)."},
    {"enter_step", (PyCFunction)(void (*)(void))pystep_enter_step, METH_FASTCALL,
     "enter_step(config, name) -> token: windows.enter_step in C."},
    {"exit_step", (PyCFunction)(void (*)(void))pystep_exit_step, METH_FASTCALL,
     "exit_step(config, token): windows.exit_step in C."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef pystep_module = {
    PyModuleDef_HEAD_INIT, "_truffld_pystep",
    "truffld's step boundary calls into libtruffld_pynvtx.so without ctypes.", -1,
    pystep_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__truffld_pystep(void) {
  PyObject* module = PyModule_Create(&pystep_module);
  if (module != NULL && pystep_boundary_init(module) < 0) Py_CLEAR(module);
  return module;
}

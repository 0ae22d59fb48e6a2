/*
 * The whole step boundary outside detail windows in C: the StepRange type (truffld_hooks'
 * step_range) and enter_step/exit_step (windows.py's, used by the engine hooks' run_step).
 *
 * Why: next to a model's step every line of Python the boundary runs costs microseconds (its
 * code is out of the caches), so the name, the counters, the fused push/pop and the window
 * bookkeeping that runs every step are one C call each way (tests/bench/step_boundary_bench.py).
 * The state stays where windows.py keeps it (the per-thread _Thread objects, windows.counters,
 * detail.ACTIVE, windows._fused, engines.counters), so this path and the Python one are
 * interchangeable step by step: C reads and writes the same objects and calls back into Python
 * (windows._began/_ended) exactly where windows.enter_step/exit_step would, at window edges and
 * when the accounting changes. Every case the fast path does not take (windows not resolved, a
 * nested step, an emitter trace, the ctypes path) goes to windows.py's own functions.
 *
 * ``configure`` hands the objects over once (truffld_hooks' import); before it, StepRange and
 * the two functions raise RuntimeError. The StepRange type itself is in pystep_range.c.
 *
 * Thread-safety: holds the GIL throughout; per-thread state is windows.py's thread-local.
 */
#include "pystep.h"

/* The hooks' objects (strong references, set once by configure). */
static struct {
  PyObject *self, *package, *nvtx, *tls, *thread_state, *fused, *counters, *active, *steps;
  PyObject *began, *ended, *py_enter, *py_exit, *step_name, *default_base;
} g;

static PyObject *s_t, *s_depth, *s_address, *s_backend, *s_trace, *s_native, *s_emitter,
    *s_answer, *s_steps, *s_config, *s_fallback_config;

/* configure((self, package, nvtx, tls, thread_state, fused, counters, active, steps, began,
 * ended, py_enter, py_exit, step_name, default_base)). */
PyObject* pystep_configure(PyObject* self, PyObject* args) {
  PyObject* v[15];
  (void)self;
  if (!PyArg_ParseTuple(args, "(OOOOOOOOOOOOOOO)", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                        &v[6], &v[7], &v[8], &v[9], &v[10], &v[11], &v[12], &v[13], &v[14])) {
    return NULL;
  }
  if (!PyList_CheckExact(v[5]) || PyList_GET_SIZE(v[5]) < 1 || !PyList_CheckExact(v[7]) ||
      PyList_GET_SIZE(v[7]) < 1 || !PyDict_CheckExact(v[6]) || !PyDict_CheckExact(v[8])) {
    PyErr_SetString(PyExc_TypeError, "configure: fused and active must be lists, counters dicts");
    return NULL;
  }
  PyObject** slots = &g.self;
  for (int i = 0; i < 15; ++i) {
    Py_INCREF(v[i]);
    Py_XSETREF(slots[i], v[i]);
  }
  Py_RETURN_NONE;
}

/* The config handed to Python callbacks: the caller's, else the package's
 * ``_config or _fallback_config()`` (new reference). */
static PyObject* config_of(PyObject* given) {
  if (given != NULL) {
    Py_INCREF(given);
    return given;
  }
  PyObject* config = PyObject_GetAttr(g.package, s_config);
  if (config == NULL) return NULL;
  int truth = PyObject_IsTrue(config);
  if (truth != 0) return truth > 0 ? config : (Py_DECREF(config), NULL);
  Py_DECREF(config);
  return PyObject_CallMethodNoArgs(g.package, s_fallback_config);
}

/* This thread's windows._tls.t as last looked up (a strong reference, never released: one
 * small object per thread that ever ran a step), valid while its epoch is g_epoch: windows.py replaces _tls.t only in reset_for_tests,
 * which calls forget_threads. */
static _Thread_local PyObject* t_thread = NULL;
static _Thread_local void* t_buffer = NULL;   /* its .address (fixed for its life) */
static _Thread_local unsigned long t_epoch = 0;
static unsigned long g_epoch = 1;

/* windows._tls.t, made by windows._thread_state() the first time (new reference); t_buffer
 * is then its generation buffer. */
static PyObject* thread_get(void) {
  if (t_thread != NULL && t_epoch == g_epoch) {
    Py_INCREF(t_thread);
    return t_thread;
  }
  PyObject* thread = PyObject_GetAttr(g.tls, s_t);
  if (thread == NULL && PyErr_ExceptionMatches(PyExc_AttributeError)) {
    PyErr_Clear();
    thread = PyObject_CallNoArgs(g.thread_state);
  }
  PyObject* address = thread != NULL ? PyObject_GetAttr(thread, s_address) : NULL;
  void* buffer = address != NULL ? PyLong_AsVoidPtr(address) : NULL;
  Py_XDECREF(address);
  if (buffer == NULL) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "the generation buffer is 0");
    Py_XDECREF(thread);
    return NULL;
  }
  Py_INCREF(thread);
  Py_XSETREF(t_thread, thread);
  t_buffer = buffer;
  t_epoch = g_epoch;
  return thread;
}

/* forget_threads(): every thread looks windows._tls.t up again at its next step. */
PyObject* pystep_forget_threads(PyObject* self, PyObject* unused) {
  (void)self;
  (void)unused;
  ++g_epoch;
  Py_RETURN_NONE;
}

/* 1 when windows.py's fused path with this module applies (windows resolved to the shim's
 * fused calls, this emitter current, no trace, bound to this module); 0 otherwise, -1 error. */
static int fused_applies(void) {
  PyObject* emitter = PyList_GET_ITEM(g.fused, 0);
  if (emitter == Py_None || g_step_push == NULL) return 0;
  PyObject* current = PyObject_GetAttr(g.nvtx, s_emitter);
  if (current == NULL) return -1;
  Py_DECREF(current);
  if (current != emitter) return 0;
  PyObject* trace = PyObject_GetAttr(emitter, s_trace);
  if (trace == NULL) return -1;
  Py_DECREF(trace);
  if (trace != Py_None) return 0;
  PyObject* native = PyObject_GetAttr(emitter, s_native);
  if (native == NULL) return -1;
  Py_DECREF(native);
  return native == g.self;
}

/* The long value of attribute `name` of `object`; -1 with an exception set on error. */
static long long long_attr(PyObject* object, PyObject* name) {
  PyObject* value = PyObject_GetAttr(object, name);
  if (value == NULL) return -1;
  long long out = PyLong_AsLongLong(value);
  Py_DECREF(value);
  return out;
}

/* Calls windows._began/_ended(config, thread, answer). 0, or -1 with an exception set. */
static int call_edge(PyObject* function, PyObject* config, PyObject* thread, int answer) {
  PyObject* cfg = config_of(config);
  PyObject* number = cfg != NULL ? PyLong_FromLong(answer) : NULL;
  PyObject* result = number != NULL ?
      PyObject_CallFunctionObjArgs(function, cfg, thread, number, NULL) : NULL;
  Py_XDECREF(cfg);
  Py_XDECREF(number);
  Py_XDECREF(result);
  return result != NULL ? 0 : -1;
}

/* windows.counters["answer"] != answer, as Python compares them (-1 on error). */
static int answer_differs(int answer) {
  PyObject* seen = PyDict_GetItemWithError(g.counters, s_answer);   /* borrowed */
  if (seen == NULL) return PyErr_Occurred() ? -1 : 1;
  if (!PyLong_CheckExact(seen)) return 1;
  int overflow = 0;
  long value = PyLong_AsLongAndOverflow(seen, &overflow);
  return overflow != 0 || value != answer;
}

/* windows.py's fused path with the packed answer of a step call; the rest in pystep_enter. */
static int after_push(PyObject* config, PyObject* thread, int packed) {
  int answer = (packed & 3) - 2;
  PyObject* on = answer != 0 ? Py_True : Py_False;
  int need = (packed & 4) != 0;
  if (!need && (need = answer_differs(answer)) < 0) return -1;
  if (!need) {
    PyObject* backend = PyObject_GetAttr(thread, s_backend);
    if (backend == NULL) return -1;
    Py_DECREF(backend);
    need = backend != on || PyList_GET_ITEM(g.active, 0) != on;
  }
  return need ? call_edge(g.began, config, thread, answer) : 0;
}

/* windows.enter_step(config, name) with config NULL meaning the package's (see config_of). */
PyObject* pystep_enter(PyObject* config, PyObject* name) {
  int fused = fused_applies();
  PyObject* thread = fused > 0 ? thread_get() : NULL;
  long long depth = thread != NULL ? long_attr(thread, s_depth) : 0;
  if (fused < 0 || (fused > 0 && thread == NULL) || (depth == -1 && PyErr_Occurred())) {
    Py_XDECREF(thread);
    return NULL;
  }
  if (fused == 0 || depth != 0) {
    Py_XDECREF(thread);
    PyObject* cfg = config_of(config);
    PyObject* token = cfg != NULL ? PyObject_CallFunctionObjArgs(g.py_enter, cfg, name, NULL)
                                  : NULL;
    Py_XDECREF(cfg);
    return token;
  }
  PyObject* encoded = NULL;
  void* buffer = t_buffer;
  const char* text = pystep_name_text(name, &encoded);
  PyObject* one = text != NULL ? PyLong_FromLong(1) : NULL;
  int packed = 0;
  if (one != NULL) packed = g_step_push(NULL, text, (unsigned long long*)buffer);
  Py_XDECREF(encoded);
  int ok = one != NULL && PyObject_SetAttr(thread, s_depth, one) == 0 &&
           after_push(config, thread, packed) == 0;
  Py_XDECREF(one);
  Py_DECREF(thread);
  if (!ok) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "the generation buffer is 0");
    return NULL;
  }
  return PyLong_FromLongLong(((long long)(packed >> 3) << 1) | 1);
}

/* windows.py's fused exit after the pop's packed answer. */
static int after_pop(PyObject* config, PyObject* thread, int packed) {
  int answer = (packed & 3) - 2;
  int need = (packed & 4) != 0;
  if (!need && (need = answer_differs(answer)) < 0) return -1;
  if (!need && answer == 0) {
    int active = PyObject_IsTrue(PyList_GET_ITEM(g.active, 0));
    if (active < 0) return -1;
    PyObject* backend = PyObject_GetAttr(thread, s_backend);
    if (backend == NULL) return -1;
    Py_DECREF(backend);
    need = active || backend != Py_False;
  }
  return need ? call_edge(g.ended, config, thread, answer) : 0;
}

/* windows.exit_step(config, token); config NULL as for enter. */
PyObject* pystep_leave(PyObject* config, PyObject* token_object) {
  long long token = PyLong_AsLongLong(token_object);
  if (token == -1 && PyErr_Occurred()) return NULL;
  int fused = (token & 1) ? fused_applies() : 0;
  if (fused <= 0) {
    if (fused < 0) return NULL;
    PyObject* cfg = config_of(config);
    PyObject* done = cfg != NULL ?
        PyObject_CallFunctionObjArgs(g.py_exit, cfg, token_object, NULL) : NULL;
    Py_XDECREF(cfg);
    return done;
  }
  PyObject* thread = thread_get();
  if (thread == NULL) return NULL;
  long long depth = long_attr(thread, s_depth);
  PyObject* lower = depth > 0 ? PyLong_FromLongLong(depth - 1) : NULL;
  void* buffer = t_buffer;
  int ok = !PyErr_Occurred() &&
           (lower == NULL || PyObject_SetAttr(thread, s_depth, lower) == 0);
  Py_XDECREF(lower);
  if (ok) ok = after_pop(config, thread, g_step_pop((int)(token >> 1),
                                                    (unsigned long long*)buffer)) == 0;
  Py_DECREF(thread);
  if (!ok) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "the generation buffer is 0");
    return NULL;
  }
  Py_RETURN_NONE;
}

int pystep_configured(void) {
  if (g.self != NULL) return 1;
  PyErr_SetString(PyExc_RuntimeError, "_truffld_pystep: step boundary used before configure");
  return 0;
}

PyObject* pystep_enter_step(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "enter_step(config, name)");
    return NULL;
  }
  return pystep_configured() ? pystep_enter(args[0], args[1]) : NULL;
}

PyObject* pystep_exit_step(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "exit_step(config, token)");
    return NULL;
  }
  return pystep_configured() ? pystep_leave(args[0], args[1]) : NULL;
}

/* engines.counters["steps"] += 1 */
int pystep_count_step(void) {
  PyObject* steps = PyDict_GetItemWithError(g.steps, s_steps);   /* borrowed */
  if (steps == NULL) {
    if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, s_steps);
    return -1;
  }
  PyObject* one = PyLong_FromLong(1);
  PyObject* more = one != NULL ? PyNumber_Add(steps, one) : NULL;
  Py_XDECREF(one);
  int rc = more != NULL ? PyDict_SetItem(g.steps, s_steps, more) : -1;
  Py_XDECREF(more);
  return rc;
}

/* The step name for step_range's arguments v[5]: the C builder's, else naming.step_name's. */
PyObject* pystep_build_name(PyObject** v) {
  PyObject* name = pystep_step_name(NULL, v, 5);
  if (name != Py_None) return name;
  Py_DECREF(name);   /* outside the plain cases */
  return PyObject_CallFunctionObjArgs(g.step_name, v[0], v[1], Py_False, v[2], v[3], v[4], NULL);
}

PyObject* pystep_default_base(void) { return g.default_base; }

int pystep_boundary_init(PyObject* module) {
  static const char* const names[] = {"t", "depth", "address", "backend", "trace", "native",
                                      "_emitter", "answer", "steps", "_config",
                                      "_fallback_config"};
  PyObject** slots[] = {&s_t, &s_depth, &s_address, &s_backend, &s_trace, &s_native,
                        &s_emitter, &s_answer, &s_steps, &s_config, &s_fallback_config};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
    if ((*slots[i] = PyUnicode_InternFromString(names[i])) == NULL) return -1;
  }
  return pystep_range_init(module);
}

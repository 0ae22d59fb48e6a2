/*
 * StepRange: truffld_hooks.step_range as a C type of the _truffld_pystep extension module.
 *
 * Why: a ``with step_range(ids, phase=..., tokens=..., ctx=...)`` per engine step is the
 * always-on tier's whole cost outside detail windows; as a type called by vectorcall (no
 * argument tuple or dict) whose __enter__/__exit__ are one C call each into the boundary
 * (pystep_boundary.c), it runs no Python bytecode. Same arguments, name, counters and ranges as
 * the package's Python class (_PyStepRange, used where this module does not load).
 *
 * Thread-safety: an object is entered and exited on one thread (as the Python class); runs
 * holding the GIL.
 */
#include "pystep.h"

#include <structmember.h>

typedef struct {
  PyObject_HEAD
  PyObject* name;
  PyObject* token;   /* None until entered */
} StepRange;

static PyObject* s_keywords[5];   /* request_ids, base, phase, tokens, ctx (interned) */

/* The arguments of step_range(request_ids, base=STEP_EXECUTE, phase=None, tokens=None,
 * ctx=None) from a vectorcall, into v (borrowed); -1 with TypeError for anything else. */
static int range_arguments(PyObject* const* args, size_t nargsf, PyObject* kwnames,
                           PyObject** v) {
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
  v[0] = NULL, v[1] = pystep_default_base(), v[2] = v[3] = v[4] = Py_None;
  if (nargs > 5) goto bad;
  for (Py_ssize_t i = 0; i < nargs; ++i) v[i] = args[i];
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    int at = -1;
    for (int i = 0; i < 5 && at < 0; ++i) {
      if (key == s_keywords[i] || PyUnicode_Compare(key, s_keywords[i]) == 0) at = i;
    }
    if (at < nargs) goto bad;   /* unknown, or given twice */
    v[at] = args[nargs + k];
  }
  if (v[0] != NULL) return 0;
bad:
  if (!PyErr_Occurred()) {
    PyErr_SetString(PyExc_TypeError, "step_range(request_ids, base='step_execute_model', "
                                     "phase=None, tokens=None, ctx=None)");
  }
  return -1;
}

/* step_range(...): called through vectorcall (no argument tuple or dict built). */
static PyObject* range_new(PyObject* type, PyObject* const* args, size_t nargsf,
                           PyObject* kwnames) {
  PyObject* v[5];
  if (!pystep_configured() || range_arguments(args, nargsf, kwnames, v) < 0) return NULL;
  PyObject* name = pystep_build_name(v);
  if (name == NULL) return NULL;
  StepRange* self = (StepRange*)((PyTypeObject*)type)->tp_alloc((PyTypeObject*)type, 0);
  if (self == NULL) {
    Py_DECREF(name);
    return NULL;
  }
  self->name = name;
  Py_INCREF(Py_None);
  self->token = Py_None;
  return (PyObject*)self;
}

/* The same through tp_call (a call with an argument tuple and dict). */
static PyObject* range_new_tuple(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  return PyVectorcall_Call((PyObject*)type, args, kwargs);
}

static PyObject* range_enter(StepRange* self, PyObject* unused) {
  (void)unused;
  if (self->name == NULL || !pystep_configured()) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "step_range not initialised");
    return NULL;
  }
  if (pystep_count_step() < 0) return NULL;
  PyObject* token = pystep_enter(NULL, self->name);
  if (token == NULL) return NULL;
  Py_XSETREF(self->token, token);
  Py_INCREF(self->name);
  return self->name;
}

static PyObject* range_exit(StepRange* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)args;
  (void)nargs;
  if (!pystep_configured()) return NULL;
  PyObject* token = self->token != NULL && self->token != Py_None ? self->token : NULL;
  PyObject* zero = token == NULL ? PyLong_FromLong(0) : NULL;
  PyObject* done = token != NULL || zero != NULL ? pystep_leave(NULL, token != NULL ? token : zero)
                                                 : NULL;
  Py_XDECREF(zero);
  if (done == NULL) return NULL;
  Py_DECREF(done);
  Py_RETURN_FALSE;
}

static void range_dealloc(StepRange* self) {
  Py_XDECREF(self->name);
  Py_XDECREF(self->token);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

static PyMethodDef range_methods[] = {
    {"__enter__", (PyCFunction)range_enter, METH_NOARGS, "Pushes the step; returns its name."},
    {"__exit__", (PyCFunction)(void (*)(void))range_exit, METH_FASTCALL,
     "Closes the step (and every range opened inside it); returns False."},
    {NULL, NULL, 0, NULL}};

static PyMemberDef range_members[] = {
    {"name", T_OBJECT, offsetof(StepRange, name), 0, "the step range's name"},
    {NULL, 0, 0, 0, NULL}};

PyTypeObject pystep_StepRangeType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "truffld_hooks.step_range",
    .tp_basicsize = sizeof(StepRange),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "step_range(request_ids, base='step_execute_model', phase=None, tokens=None, "
              "ctx=None): a step range for custom engines, ``with step_range(ids) as name:``; "
              "truffld_hooks' Python step_range with its boundary in C (pystep_boundary.c).",
    .tp_new = range_new_tuple,
    .tp_vectorcall = range_new,
    .tp_dealloc = (destructor)range_dealloc,
    .tp_methods = range_methods,
    .tp_members = range_members,
};

int pystep_range_init(PyObject* module) {
  static const char* const keywords[] = {"request_ids", "base", "phase", "tokens", "ctx"};
  for (int i = 0; i < 5; ++i) {
    if ((s_keywords[i] = PyUnicode_InternFromString(keywords[i])) == NULL) return -1;
  }
  if (PyType_Ready(&pystep_StepRangeType) < 0) return -1;
  Py_INCREF(&pystep_StepRangeType);
  return PyModule_AddObject(module, "StepRange", (PyObject*)&pystep_StepRangeType);
}

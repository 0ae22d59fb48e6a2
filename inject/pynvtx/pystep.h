/*
 * _truffld_pystep's parts shared between its two files: the shim's step calls (pystep.c, set by
 * ``bind``), its step name builder (pystep.c) and the whole step boundary (pystep_boundary.c:
 * enter_step/exit_step, windows.py's outside-window path in C; pystep_range.c: the StepRange
 * type on top of it).
 *
 * Thread-safety: as pystep.c says; everything here runs holding the GIL.
 */
#ifndef TRUFFLD_PYSTEP_H
#define TRUFFLD_PYSTEP_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

typedef int (*step_push_fn)(void* domain, const char* name, unsigned long long* generation);
typedef int (*step_pop_fn)(int depth, unsigned long long* generation);

extern step_push_fn g_step_push;   /* NULL before bind */
extern step_pop_fn g_step_pop;

/* step_name(ids, base, phase, tokens, ctx) -> str, or None outside naming.step_name's plain
 * cases (METH_FASTCALL). */
PyObject* pystep_step_name(PyObject* self, PyObject* const* args, Py_ssize_t nargs);

/* The step name's UTF-8 (str: cached, lone surrogates replaced into *encoded; bytes: as is);
 * NULL with an exception set for anything else. */
const char* pystep_name_text(PyObject* name, PyObject** encoded);

extern PyTypeObject pystep_StepRangeType;
PyObject* pystep_configure(PyObject* self, PyObject* args);
PyObject* pystep_forget_threads(PyObject* self, PyObject* unused);
PyObject* pystep_enter_step(PyObject* self, PyObject* const* args, Py_ssize_t nargs);
PyObject* pystep_exit_step(PyObject* self, PyObject* const* args, Py_ssize_t nargs);
int pystep_boundary_init(PyObject* module);   /* interned names, the type; -1 on error */

/* pystep_boundary.c's parts for the StepRange type (pystep_range.c). */
int pystep_configured(void);   /* 1, or 0 with RuntimeError before configure */
PyObject* pystep_enter(PyObject* config, PyObject* name);   /* config NULL: the package's */
PyObject* pystep_leave(PyObject* config, PyObject* token);
int pystep_count_step(void);   /* engines.counters["steps"] += 1; -1 on error */
PyObject* pystep_build_name(PyObject** v);   /* step_range's 5 arguments -> its name */
PyObject* pystep_default_base(void);   /* naming.STEP_EXECUTE (borrowed) */
int pystep_range_init(PyObject* module);

#endif

"""Detail windows: the per-operator layers (detail.py) follow the injector's detail windows,
decided at step boundaries only.

The injector (libcupti_injector.so, loaded by NVTX at the process's first NVTX call) exports

    int truffld_detail_window(unsigned long long* generation);

1 when a detail window is open now, 0 when closed, -1 when it is not sampling (detail always on,
or not initialised yet); ``*generation`` = windows opened so far. Its windows open just before a
step's push is stamped and close just after a step's pop (never inside a step), so the hooks ask
right after they push the outermost step range of a thread (install when open) and right after
they pop it (remove when closed). Nested steps are not boundaries, as for the injector.

The function is found once, through ``ctypes.CDLL(NVTX_INJECTION64_PATH, RTLD_NOLOAD)`` at the
first step boundary (the step's push has loaded the library by then): no library loaded, no such
symbol, or TRUFFLD_HOOKS_WINDOWS=0 -> detail always on for the process (the layers stay as
installed at import, backend ranges are entered at the first step, as before windows existed);
-1 at a boundary -> detail on until it answers otherwise. Once found, the function is handed to
the NVTX shim (libtruffld_pynvtx.so), so that a step's push and the query are one C call
(``enter_step``), its pop and the query another (``exit_step``), and a boundary where nothing
changed reads nothing back: in a real step the boundary's cost is set by how much code it runs,
far more than by its time in a tight loop (tests/bench/hooks_windows_bench.py, ``--paired``).
Where the _truffld_pystep extension module loads, ``use_native`` replaces ``enter_step`` and
``exit_step`` by its C copies (inject/pynvtx/pystep_boundary.c), which keep to this module's
state and call ``_began``/``_ended`` and the Python functions (``py_enter_step``/``py_exit_step``)
where these would.

The generation tells windows the hooks never saw open apart from a window that is still the same:
``counters["missed"]`` counts windows that opened and closed between two boundaries (a step of
another thread the hooks do not wrap, a time window between steps); detail is then already off
and stays so. A window that opens while the layers are still on from the previous one keeps them.

Thread-safety: the query uses a per-thread buffer; switching the layers happens under detail's
lock (set_active), backend ranges are switched per thread at that thread's own boundaries.
"""

import _thread
import os

from . import backend, config as config_mod, detail, nvtx

_tls = _thread._local()
_fn = None            # the injector's truffld_detail_window once found
_resolved = False     # True once the lookup was made (found or not)
counters = {"generation": 0, "seen": 0, "missed": 0, "answer": None}
mode = ["unresolved"]  # "windows", or why detail is always on
_fused = [None]       # the shim emitter that asks the query itself (enter_step/exit_step)


def _resolve(config):
    """Finds truffld_detail_window in the loaded injector (see module doc); sets ``mode``."""
    global _fn, _resolved
    if not getattr(config, "windows", True):
        _resolved, mode[0] = True, "always (TRUFFLD_HOOKS_WINDOWS=0)"
        return
    path = os.environ.get("NVTX_INJECTION64_PATH", "")
    if not path:
        _resolved, mode[0] = True, "always (no NVTX_INJECTION64_PATH)"
        return
    import ctypes
    try:
        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        if nvtx.get().kind == "null":
            return  # nothing reached NVTX yet: ask again at the next boundary
        _resolved, mode[0] = True, "always (injector not loaded)"
        return
    try:
        function = lib.truffld_detail_window
    except AttributeError:
        _resolved, mode[0] = True, "always (injector has no truffld_detail_window)"
        return
    function.restype = ctypes.c_int
    function.argtypes = None   # a prepared byref() converts natively: the cheapest call
    _fn, _resolved, mode[0] = function, True, "windows"
    emitter = nvtx.get()
    if getattr(emitter, "set_window_query", None) is not None and nvtx.stable(emitter) and \
            emitter.set_window_query(function):
        _fused[0] = emitter
    config_mod.debug_log(config, "detail windows from %s" % path)


class _Thread(object):
    """Per-thread state: step nesting, the query's buffer, whether this thread's backend ranges
    already follow the detail state it last saw."""

    __slots__ = ("depth", "value", "ref", "address", "backend")

    def __init__(self):
        import ctypes
        self.depth = 0
        self.value = ctypes.c_ulonglong(0)
        self.ref = ctypes.byref(self.value)
        self.address = ctypes.addressof(self.value)   # for the extension module's calls
        self.backend = None   # True/False once synced to that state; None: not (yet) settled


def _thread_state():
    try:
        return _tls.t
    except AttributeError:
        state = _tls.t = _Thread()
        return state


def _observe(answer, generation):
    """Window accounting: plain counters, updated without a lock (approximate only when several
    threads cross boundaries at the same instant)."""
    counters["answer"] = answer
    last = counters["generation"]
    if generation != last:
        opened = generation - last
        # the newest window is seen when it is open now; the others opened and closed unseen
        counters["missed"] += opened - (1 if answer == 1 else 0)
        counters["generation"] = generation
        if answer == 1:
            counters["seen"] += 1


def step_began(config):
    """Right after the push of a step range on this thread; returns True when that step is the
    thread's outermost (a boundary), to be passed to ``step_ended``."""
    thread = _thread_state()
    thread.depth += 1
    if thread.depth > 1:
        return False
    function = _fn
    if function is None:
        if not _resolved:
            _resolve(config)
            function = _fn
        if function is None:
            backend.ensure_thread(config)   # no windows: every layer on, as always
            return True
    _began(config, thread, function(thread.ref))
    return True


def _began(config, thread, answer):
    """The boundary after an outermost push, given the injector's answer."""
    if answer != counters["answer"] or thread.value.value != counters["generation"]:
        _observe(answer, thread.value.value)
    on = answer != 0
    if on is not detail.ACTIVE[0]:
        _switch(config, on)
    if thread.backend is not on:
        thread.backend = on if backend.sync_thread(config, on) else None


def step_ended(config, outermost):
    """Right after the step range's pop; removes the layers when the window has closed."""
    thread = _thread_state()
    if thread.depth > 0:
        thread.depth -= 1
    function = _fn
    if not outermost or function is None:
        return
    _ended(config, thread, function(thread.ref))


def _ended(config, thread, answer):
    """The boundary after an outermost pop, given the injector's answer."""
    if answer != counters["answer"] or thread.value.value != counters["generation"]:
        _observe(answer, thread.value.value)
    if answer == 0:
        if detail.ACTIVE[0]:
            _switch(config, False)
        if thread.backend is not False:
            thread.backend = False if backend.sync_thread(config, False) else None


def enter_step(config, name):
    """Pushes the step range ``name`` (str or UTF-8 bytes) on this thread and crosses the step
    boundary (``step_began``); returns the token for ``exit_step`` (the depth before the push
    times 2, plus 1 for a thread's outermost step). Once the windows are
    resolved, an outermost step on the shim costs one C call: its push and the query fused
    (``truffld_pynvtx_step_push``, which also says whether the generation changed since this
    thread's previous query, so nothing is read back when nothing changed), through the
    _truffld_pystep extension module when it loaded, else ctypes."""
    emitter = _fused[0]
    try:
        thread = _tls.t
    except AttributeError:
        thread = _thread_state()
    if emitter is not None and emitter is nvtx._emitter and thread.depth == 0 and \
            emitter.trace is None:
        native = emitter.native
        if native is not None:
            packed = native.step_push(name, thread.address)
        else:
            packed = emitter.step_push(None, name if name.__class__ is bytes else name.encode(
                "utf-8", "replace"), thread.ref)
        thread.depth = 1
        answer = (packed & 3) - 2
        if packed & 4 or answer != counters["answer"] or thread.backend is not (answer != 0) \
                or (answer != 0) is not detail.ACTIVE[0]:
            _began(config, thread, answer)
        return (packed >> 3 << 1) | 1
    emitter = nvtx.get()
    depth = emitter.depth()
    emitter.push(name)
    return (depth << 1) | (1 if step_began(config) else 0)


def exit_step(config, token):
    """Closes the step ``enter_step`` opened (and any range left open inside it), then crosses
    the boundary (``step_ended``); one C call on the fused path."""
    depth, outermost = token >> 1, token & 1
    emitter = _fused[0]
    if outermost and emitter is not None and emitter is nvtx._emitter and emitter.trace is None:
        try:
            thread = _tls.t
        except AttributeError:
            thread = _thread_state()
        if thread.depth > 0:
            thread.depth -= 1
        native = emitter.native
        packed = native.step_pop(depth, thread.address) if native is not None else \
            emitter.step_pop(depth, thread.ref)
        answer = (packed & 3) - 2
        if packed & 4 or answer != counters["answer"] or \
                (answer == 0 and (detail.ACTIVE[0] or thread.backend is not False)):
            _ended(config, thread, answer)
        return
    nvtx.get().pop_to(depth)
    step_ended(config, outermost == 1)


py_enter_step, py_exit_step = enter_step, exit_step
_native = [None]   # the extension module once use_native handed it the boundary


def use_native(module, package, engines, naming):
    """Hands the step boundary to the _truffld_pystep extension module (pystep_boundary.c):
    ``enter_step``/``exit_step`` become its C copies of the two functions above, which read and
    write this module's state (and engines.counters) and call ``_began``/``_ended`` and the
    Python functions exactly where these would; returns its StepRange type for step_range."""
    global enter_step, exit_step
    _native[0] = module
    module.configure((module, package, nvtx, _tls, _thread_state, _fused, counters, detail.ACTIVE,
                      engines.counters, _began, _ended, py_enter_step, py_exit_step,
                      naming.step_name, naming.STEP_EXECUTE))
    enter_step, exit_step = module.enter_step, module.exit_step
    return module.StepRange


def _switch(config, on):
    if detail.set_active(on):
        config_mod.debug_log(config, "detail %s (window generation %d)"
                             % ("on" if on else "off", counters["generation"]))


def stepless_notice(config, write=None):
    """At exit (registered by install): a process that ran model code without ever crossing a
    step boundary kept every operator layer on throughout, since windows open and close at step
    boundaries: under two-tier capture it cost what ``--capture all`` costs. Says so once, on
    stderr, with the fix. Nothing when steps ran, an engine was patched, or windows are off."""
    from . import engines
    if not backend.stepless_used[0] or not engines.stepless() or not getattr(config, "windows", True):
        return False
    if not os.environ.get("NVTX_INJECTION64_PATH"):
        return False
    (write or _stderr_write)(
        "truffld_hooks[%d]: this process ran model code without engine steps, so every operator "
        "layer stayed on throughout (detail windows open and close at step boundaries): it cost "
        "what --capture all costs. truffld-merge makes steps of its repeated model call; to trace "
        "it at the always-on cost instead, wrap each iteration in truffld_hooks.step_range(...). "
        "TRUFFLD_HOOKS_WINDOWS=0 keeps the layers on without this note.\n" % os.getpid())
    return True


def _stderr_write(text):
    import sys
    try:
        sys.stderr.write(text)
    except Exception:  # a closed stderr at exit: nothing to tell
        pass


def snapshot():
    """Plain dict for truffld_hooks.stats()."""
    return dict(counters, mode=mode[0], detail=detail.snapshot())


def reset_for_tests():
    global _fn, _resolved
    if _fused[0] is not None:
        _fused[0].set_window_query(None)
    _fn, _resolved, _fused[0] = None, False, None
    mode[0] = "unresolved"
    _tls.t = _Thread()
    if _native[0] is not None:
        _native[0].forget_threads()

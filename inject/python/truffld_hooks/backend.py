"""Backend operator ranges (``aten::mm, seq = 0, op_id = 42``), enabled lazily per thread.

PyTorch's own NVTX emission (``torch.autograd.profiler.emit_nvtx``) registers thread-local
RecordFunction callbacks, so it must be entered on the thread that runs the model; and its
``__enter__`` synchronises CUDA, so it is entered only once CUDA is already initialised (the
engine did it) -- the hooks never initialise CUDA. The step wrappers call ``ensure_thread()`` at
every step; after the first success it costs one thread-local lookup.

When torch has no NVTX binding (CPU builds such as Debian's torch 1.13), a
``TorchDispatchMode`` is pushed on the thread instead; it emits ``aten::<op>, op_id = <n>``
through truffld's C shim for every ATen operator, which the merge classifies the same way
(family = text before the first ", "). Without detail windows the mode stays entered for the
thread's lifetime; with windows (windows.py) each thread enters it at the first step boundary
inside a window and leaves it at the first one outside (``sync_thread``), so outside windows no
ATen operator pays for it. emit_nvtx synchronises CUDA on entry and exit: once per window edge.

Thread-safety: per-thread state only; the op counter is an itertools.count (atomic in CPython).
"""

import _thread
import itertools
import sys

from . import config as config_mod
from . import nvtx

_tls = _thread._local()
_op_ids = itertools.count(1)
status = {}   # thread name -> "emit_nvtx" | "dispatch" | "waiting-for-cuda" | "failed: ..."


def _has_torch_nvtx(torch):
    return getattr(getattr(torch, "_C", None), "_nvtx", None) is not None


def _enter_emit_nvtx(torch):
    ctx = torch.autograd.profiler.emit_nvtx(enabled=True, record_shapes=False)
    ctx.__enter__()
    return ctx


def _make_dispatch_mode(torch):
    from torch.utils._python_dispatch import TorchDispatchMode  # torch >= 1.13

    names = {}

    class NvtxDispatchMode(TorchDispatchMode):
        """Emits one NVTX range per ATen operator executed on this thread."""

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            base = names.get(func)
            if base is None:
                schema = getattr(func, "_schema", None)
                base = getattr(schema, "name", None) or str(func)
                names[func] = base
            emitter = nvtx.get()
            emitter.push("%s, op_id = %d" % (base, next(_op_ids)))
            try:
                return func(*args, **(kwargs or {}))
            finally:
                emitter.pop()

    return NvtxDispatchMode()


def ensure_thread(config):
    """Enables backend ranges on the calling thread if not done yet (see module doc)."""
    state = getattr(_tls, "state", None)
    if state is not None:
        return state
    mode = getattr(config, "backend", "auto")
    torch = sys.modules.get("torch")
    if mode == "off" or torch is None:
        return None
    import threading  # torch imported it already
    thread = threading.current_thread().name
    try:
        if mode in ("auto", "emit_nvtx") and _has_torch_nvtx(torch):
            cuda = getattr(torch, "cuda", None)
            if cuda is None or not cuda.is_initialized():
                status[thread] = "waiting-for-cuda"
                return None  # retried at the next step; never initialise CUDA ourselves
            _tls.ctx = _enter_emit_nvtx(torch)
            _tls.state = "emit_nvtx"
        elif mode == "dispatch" or (mode == "auto" and not _has_torch_nvtx(torch)):
            dispatch_mode = _make_dispatch_mode(torch)
            dispatch_mode.__enter__()
            _tls.ctx = dispatch_mode
            _tls.state = "dispatch"
        else:
            _tls.state = "unavailable"
    except Exception as exc:  # e.g. another profiler already enabled on this thread
        _tls.state = "failed"
        status[thread] = "failed: %s: %s" % (type(exc).__name__, exc)
        config_mod.debug_log(config, "backend ranges unavailable on %s: %s" % (thread, exc))
        return _tls.state
    status[thread] = _tls.state
    config_mod.debug_log(config, "backend ranges on thread %s: %s" % (thread, _tls.state))
    return _tls.state


# [True] once a thread of this process entered its backend ranges as a program without steps.
stepless_used = [False]


def ensure_stepless(config):
    """Backend ranges for a program without steps (the outermost module call of a thread, while
    engines.stepless()): entered as at a step, so a plain PyTorch loop gets its backend ops
    (the merge then makes steps of its repeated model call). Never during a CUDA graph
    capture (emit_nvtx synchronises). Once steps run, windows.py decides at their boundaries."""
    if getattr(_tls, "state", None) is not None:
        return
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    try:
        if cuda is not None and cuda.is_initialized() and cuda.is_current_stream_capturing():
            return
    except Exception:  # an old torch without the query: no graphs to protect
        pass
    stepless_used[0] = True
    ensure_thread(config)


def disable_thread():
    """Leaves the backend mode on this thread (window closed; tests)."""
    ctx = getattr(_tls, "ctx", None)
    _tls.ctx = None
    _tls.state = None
    if ctx is not None:
        ctx.__exit__(None, None, None)


def sync_thread(config, on):
    """Makes the calling thread's backend ranges follow the detail state ``on`` (windows.py,
    at this thread's step boundaries): entered when on (as ensure_thread), left when off. A
    thread that failed or has no backend keeps that state. Returns False while the thread waits
    (for CUDA to be initialised: ask again at the next boundary), else True."""
    state = getattr(_tls, "state", None)
    if on:
        if state is None:
            state = ensure_thread(config)
        return state is not None
    if state == "emit_nvtx" or state == "dispatch":
        import threading  # torch imported it already
        try:
            disable_thread()
            status[threading.current_thread().name] = "off"
        except Exception as exc:  # e.g. a mode the engine entered after ours is still active
            status[threading.current_thread().name] = "failed: %s: %s" % (type(exc).__name__, exc)
            _tls.state = "failed"
    return True

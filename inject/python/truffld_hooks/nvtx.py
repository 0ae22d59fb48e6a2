"""NVTX emission for the hooks: one process-wide emitter choosing the best available binding.

Order of preference: the truffld C shim (libtruffld_pynvtx.so via ctypes; works with or without
torch, supports domains), then torch's own binding (``torch._C._nvtx``, default domain only),
else a null emitter that only counts. Whichever is used, the bytes go through NVTX, so the tool
named by ``NVTX_INJECTION64_PATH`` (truffld's injector) receives them with its own timestamps
(ns, injector clock) -- nothing here reads a clock.

The emitter keeps a per-thread depth of the push ranges *it* opened, so a caller (the step
wrapper) can close ranges left open by an exception inside the step (``pop_to``): NVTX's stack
stays balanced even when module post-hooks never ran.

Thread-safety: ``push``/``pop``/``mark``/``start``/``end`` may be called from any thread; the
depth bookkeeping is thread-local. ``get()`` initialises once under a lock.
"""

import ctypes
import os
import sys
import threading

_SHIM_NAME = "libtruffld_pynvtx.so"
_ABI = 1


class _Counters(object):
    __slots__ = ("pushes", "pops", "marks", "encode_errors")

    def __init__(self):
        self.pushes = self.pops = self.marks = self.encode_errors = 0


def _encode(name):
    if isinstance(name, bytes):
        return name
    return name.encode("utf-8", "replace")


class Emitter(object):
    """Emits NVTX through ``binding``; ``kind`` is "shim", "torch" or "null" (see module doc)."""

    def __init__(self, kind, lib=None, torch_nvtx=None, path=""):
        self.kind = kind
        self.path = path
        self._lib = lib
        self._torch = torch_nvtx
        self._domains = {}
        self._tls = threading.local()
        self.counters = _Counters()
        self.upgraded = False
        self.errors = []
        self.trace = None   # tests set a list: every push/pop/mark is appended as (op, name)

    # -- depth bookkeeping ------------------------------------------------------------------
    def depth(self):
        return getattr(self._tls, "depth", 0)

    def _stack(self):
        stack = getattr(self._tls, "domains", None)
        if stack is None:
            stack = self._tls.domains = []
        return stack

    # -- domains ----------------------------------------------------------------------------
    def domain(self, name):
        """Opaque handle for NVTX domain ``name`` (None = default domain; torch/null: None)."""
        if not name or self._lib is None:
            return None
        handle = self._domains.get(name)
        if handle is None:
            handle = self._lib.truffld_pynvtx_domain_create(_encode(name))
            self._domains[name] = handle
        return handle

    # -- ranges -----------------------------------------------------------------------------
    def push(self, name, domain=None):
        """Opens a push/pop range on this thread; ``name`` is str or pre-encoded bytes."""
        if self._lib is not None:
            self._lib.truffld_pynvtx_push(domain, _encode(name))
        elif self._torch is not None:
            self._torch.rangePushA(name.decode("utf-8") if isinstance(name, bytes) else name)
        self._stack().append(domain)
        self._tls.depth = self.depth() + 1
        self.counters.pushes += 1
        if self.trace is not None:
            self.trace.append(("push", name.decode("utf-8") if isinstance(name, bytes) else name))

    def pop(self):
        """Closes the innermost range this emitter opened on this thread (no-op if none)."""
        stack = self._stack()
        if not stack:
            return
        domain = stack.pop()
        self._tls.depth = len(stack)
        if self._lib is not None:
            self._lib.truffld_pynvtx_pop(domain)
        elif self._torch is not None:
            self._torch.rangePop()
        self.counters.pops += 1
        if self.trace is not None:
            self.trace.append(("pop", None))

    def pop_to(self, depth):
        """Pops until this thread's depth is ``depth`` (repairs ranges skipped by exceptions)."""
        while self.depth() > depth:
            self.pop()

    def mark(self, name, domain=None):
        if self._lib is not None:
            self._lib.truffld_pynvtx_mark(domain, _encode(name))
        elif self._torch is not None:
            self._torch.markA(name.decode("utf-8") if isinstance(name, bytes) else name)
        self.counters.marks += 1
        if self.trace is not None:
            self.trace.append(("mark", name.decode("utf-8") if isinstance(name, bytes) else name))

    def start(self, name, domain=None):
        """Start/end range (may end on another thread); returns an id for ``end``."""
        if self._lib is not None:
            return self._lib.truffld_pynvtx_start(domain, _encode(name))
        if self._torch is not None:
            return self._torch.rangeStartA(name.decode("utf-8") if isinstance(name, bytes)
                                           else name)
        return 0

    def end(self, range_id, domain=None):
        if self._lib is not None:
            self._lib.truffld_pynvtx_end(domain, range_id)
        elif self._torch is not None:
            self._torch.rangeEnd(range_id)


def _load_shim(path):
    lib = ctypes.CDLL(path)
    if lib.truffld_pynvtx_abi() != _ABI:
        raise OSError("%s has ABI %d, expected %d" % (path, lib.truffld_pynvtx_abi(), _ABI))
    vp, cp = ctypes.c_void_p, ctypes.c_char_p
    lib.truffld_pynvtx_domain_create.argtypes, lib.truffld_pynvtx_domain_create.restype = [cp], vp
    lib.truffld_pynvtx_push.argtypes, lib.truffld_pynvtx_push.restype = [vp, cp], ctypes.c_int
    lib.truffld_pynvtx_pop.argtypes, lib.truffld_pynvtx_pop.restype = [vp], ctypes.c_int
    lib.truffld_pynvtx_start.argtypes, lib.truffld_pynvtx_start.restype = [vp, cp], ctypes.c_uint64
    lib.truffld_pynvtx_end.argtypes, lib.truffld_pynvtx_end.restype = [vp, ctypes.c_uint64], None
    lib.truffld_pynvtx_mark.argtypes, lib.truffld_pynvtx_mark.restype = [vp, cp], None
    return lib


def shim_candidates(explicit=""):
    """Where the shim may be: $TRUFFLD_PYNVTX_LIB, next to the package, its parent folder."""
    here = os.path.dirname(os.path.abspath(__file__))
    out = [explicit] if explicit else []
    out += [os.path.join(here, _SHIM_NAME), os.path.join(os.path.dirname(here), _SHIM_NAME)]
    return out


def create(explicit_path="", allow_torch=True):
    """Builds an Emitter: shim if loadable, else torch's binding if torch is imported, else null.

    Never imports torch: torch's binding is only used when torch is already in sys.modules.
    """
    errors = []
    for path in shim_candidates(explicit_path):
        if path and os.path.exists(path):
            try:
                return Emitter("shim", lib=_load_shim(path), path=path)
            except (OSError, AttributeError) as exc:
                errors.append("%s: %s" % (path, exc))
    if explicit_path and not os.path.exists(explicit_path):
        errors.append("%s: no such file (TRUFFLD_PYNVTX_LIB)" % explicit_path)
    torch = sys.modules.get("torch")
    binding = getattr(getattr(torch, "_C", None), "_nvtx", None) if allow_torch else None
    if binding is not None:
        return Emitter("torch", torch_nvtx=binding)
    emitter = Emitter("null")
    emitter.errors = errors
    return emitter


_lock = threading.Lock()
_emitter = None
_default_path = ""


def set_default_path(path):
    """Shim path used when the emitter is first created ($TRUFFLD_PYNVTX_LIB via install())."""
    global _default_path
    _default_path = path or ""


def get(explicit_path=""):
    """The process-wide emitter (created on first use; re-created after fork is not needed:
    ctypes handles and NVTX state are inherited)."""
    global _emitter
    explicit_path = explicit_path or _default_path
    emitter = _emitter
    if emitter is None or (emitter.kind == "null" and not emitter.upgraded and
                           "torch" in sys.modules):
        with _lock:
            if _emitter is None:
                _emitter = create(explicit_path)
            elif _emitter.kind == "null" and not _emitter.upgraded:
                # torch got imported after a shim-less start: use its binding if it has one.
                better = create(explicit_path)
                if better.kind != "null":
                    better.trace = _emitter.trace
                    _emitter = better
                else:
                    _emitter.upgraded = True
        emitter = _emitter
    return emitter


def reset_for_tests(emitter=None):
    global _emitter
    _emitter = emitter

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

import _thread
import os
import sys

from . import naming

_SHIM_NAME = "libtruffld_pynvtx.so"
_ABI = 2


def _encode(name):
    if isinstance(name, bytes):
        return name
    return name.encode("utf-8", "replace")


class Emitter(object):
    """Emits NVTX through torch's binding (``kind`` "torch") or nowhere ("null"), keeping the
    per-thread push stack in Python; ShimEmitter ("shim") overrides the range calls."""

    def __init__(self, kind, lib=None, torch_nvtx=None, path=""):
        self.kind = kind
        self.path = path
        self._lib = lib
        self._torch = torch_nvtx
        self._domains = {}
        self._tls = _thread._local()
        self.upgraded = False
        self.errors = []
        self.trace = None   # tests set a list: every push/pop/mark is appended as (op, name)

    # -- depth bookkeeping ------------------------------------------------------------------
    def depth(self):
        """Number of push ranges this emitter has open on the calling thread."""
        stack = getattr(self._tls, "domains", None)
        return len(stack) if stack is not None else 0

    def _stack(self):
        try:
            return self._tls.domains
        except AttributeError:
            stack = self._tls.domains = []
            return stack

    # -- domains ----------------------------------------------------------------------------
    def domain(self, name):
        """Opaque handle for NVTX domain ``name`` (None = default domain; torch/null: None)."""
        if not name or self._lib is None:
            return None
        handle = self._domains.get(name)
        if handle is None:
            import ctypes
            # kept as a c_void_p object so calls without argtypes pass a full pointer
            handle = ctypes.c_void_p(self._lib.truffld_pynvtx_domain_create(_encode(name)))
            self._domains[name] = handle
        return handle

    # -- ranges -----------------------------------------------------------------------------
    def push(self, name, domain=None):
        """Opens a push/pop range on this thread; ``name`` is str or pre-encoded bytes."""
        if self._torch is not None:
            self._torch.rangePushA(name.decode("utf-8") if isinstance(name, bytes) else name)
        self._stack().append(domain)
        if self.trace is not None:
            self.trace.append(("push", name.decode("utf-8") if isinstance(name, bytes) else name))

    def pop(self):
        """Closes the innermost range this emitter opened on this thread (no-op if none)."""
        stack = self._stack()
        if not stack:
            return
        stack.pop()
        if self._torch is not None:
            self._torch.rangePop()
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


class ShimEmitter(Emitter):
    """Emitter over libtruffld_pynvtx.so; the per-thread stack lives in C (one ctypes call per
    push or pop, no Python bookkeeping)."""

    def __init__(self, lib, path):
        Emitter.__init__(self, "shim", lib=lib, path=path)
        self._push = lib.truffld_pynvtx_push
        self._pop_any = lib.truffld_pynvtx_pop_any
        self._pop_to = lib.truffld_pynvtx_pop_to
        self._depth = lib.truffld_pynvtx_depth
        # a step's push/pop fused with the detail-window query (None: an older shim)
        self.step_push = getattr(lib, "truffld_pynvtx_step_push", None)
        self.step_pop = getattr(lib, "truffld_pynvtx_step_pop", None)
        # the same two calls through the _truffld_pystep extension module (None: ctypes only)
        self.native = _load_native(lib, path) if self.step_push is not None and \
            self.step_pop is not None else None

    def set_window_query(self, function):
        """Hands the injector's truffld_detail_window (a ctypes function, or None to clear) to
        the shim's fused step calls; False when this shim has none."""
        setter = getattr(self._lib, "truffld_pynvtx_set_window_query", None)
        if setter is None or self.step_push is None or self.step_pop is None:
            return False
        import ctypes
        setter(ctypes.cast(function, ctypes.c_void_p) if function is not None else None)
        return True

    def depth(self):
        return self._depth()

    def push(self, name, domain=None):
        self._push(domain, name if name.__class__ is bytes else _encode(name))
        if self.trace is not None:
            self.trace.append(("push", name.decode("utf-8") if isinstance(name, bytes) else name))

    def pop(self):
        if self._pop_any() >= 0 and self.trace is not None:
            self.trace.append(("pop", None))

    def pop_to(self, depth):
        closed = self._pop_to(depth)
        if self.trace is not None:
            self.trace.extend([("pop", None)] * closed)


def _load_shim(path):
    import ctypes  # only when a shim exists: keeps interpreter start-up cheap
    lib = ctypes.CDLL(path)
    if lib.truffld_pynvtx_abi() != _ABI:
        raise OSError("%s has ABI %d, expected %d" % (path, lib.truffld_pynvtx_abi(), _ABI))
    # Hot calls (push/pop_any/pop_to/depth) deliberately have no argtypes: bytes, None and
    # c_void_p domain objects convert natively, which is several times cheaper per call.
    vp, cp = ctypes.c_void_p, ctypes.c_char_p
    lib.truffld_pynvtx_domain_create.argtypes, lib.truffld_pynvtx_domain_create.restype = [cp], vp
    lib.truffld_pynvtx_start.argtypes, lib.truffld_pynvtx_start.restype = [vp, cp], ctypes.c_uint64
    lib.truffld_pynvtx_end.argtypes, lib.truffld_pynvtx_end.restype = [vp, ctypes.c_uint64], None
    lib.truffld_pynvtx_mark.argtypes, lib.truffld_pynvtx_mark.restype = [vp, cp], None
    lib.truffld_pynvtx_depth_overflows.restype = ctypes.c_ulong
    return lib


_NATIVE_NAME = "_truffld_pystep"


def _load_native(lib, shim_path):
    """The _truffld_pystep extension module (inject/pynvtx/pystep.c, ``native_module``) bound to
    ``lib``'s step calls; None when it is absent, cannot load (another interpreter's build) or
    TRUFFLD_HOOKS_NATIVE=0: the step calls then go through ctypes."""
    module = native_module(shim_path)
    if module is None:
        return None
    import ctypes
    try:
        module.bind(ctypes.cast(lib.truffld_pynvtx_step_push, ctypes.c_void_p).value,
                    ctypes.cast(lib.truffld_pynvtx_step_pop, ctypes.c_void_p).value)
    except (AttributeError, ValueError):
        return None
    return module


_native = []   # [module or None] once searched


def native_module(shim_path=""):
    """The _truffld_pystep extension module, loaded once per process from the folder of
    ``shim_path`` or of the shim's candidates (``shim_candidates``: $TRUFFLD_PYNVTX_LIB, the
    package's folders); None when absent, unloadable, or TRUFFLD_HOOKS_NATIVE=0. Unbound: its
    step calls need ``bind`` (``_load_native``)."""
    if _native and (_native[0] is not None or not shim_path):
        return _native[0]
    if os.environ.get("TRUFFLD_HOOKS_NATIVE", "1") == "0":
        return None
    import importlib.machinery   # not importlib.util: this runs at every interpreter start-up
    folders = [os.path.dirname(os.path.abspath(shim_path))] if shim_path else []
    explicit = os.environ.get("TRUFFLD_PYNVTX_LIB", "")
    folders += [os.path.dirname(p) for p in shim_candidates(explicit)
                if os.path.dirname(p) not in folders]
    module = None
    for folder in folders:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, _NATIVE_NAME + suffix)
            if module is not None or not os.path.exists(path):
                continue
            try:
                loader = importlib.machinery.ExtensionFileLoader(_NATIVE_NAME, path)
                module = loader.create_module(importlib.machinery.ModuleSpec(
                    _NATIVE_NAME, loader, origin=path))
                loader.exec_module(module)
            except (ImportError, OSError):
                module = None
    _native[:] = [module]
    naming.NATIVE_STEP_NAME[0] = getattr(module, "step_name", None)
    return module


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
                return ShimEmitter(_load_shim(path), path)
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


_lock = _thread.allocate_lock()
_emitter = None
_default_path = ""


def set_default_path(path):
    """Shim path used when the emitter is first created ($TRUFFLD_PYNVTX_LIB via install())."""
    global _default_path
    _default_path = path or ""


def get(explicit_path=""):
    """The process-wide emitter (created on first use; inherited as is by forked children:
    ctypes handles and NVTX state survive fork). Fast path: one global read, one compare."""
    emitter = _emitter
    if emitter is not None and (emitter.kind != "null" or emitter.upgraded):
        return emitter
    return _create_or_upgrade(explicit_path or _default_path)


def stable(emitter):
    """True when ``emitter`` will stay the process's emitter (callers may then cache it)."""
    return emitter is _emitter and (emitter.kind != "null" or emitter.upgraded)


def _create_or_upgrade(path):
    global _emitter
    with _lock:
        if _emitter is None:
            _emitter = create(path)
        elif _emitter.kind == "null" and not _emitter.upgraded and "torch" in sys.modules:
            # torch got imported after a shim-less start: use its binding if it has one.
            better = create(path)
            if better.kind != "null":
                better.trace = _emitter.trace
                _emitter = better
            else:
                _emitter.upgraded = True
        return _emitter


def reset_for_tests(emitter=None):
    global _emitter
    _emitter = emitter

"""Shared helpers to replace a function or method in place, once, reversibly.

``resolve(module, "Class.method")`` finds the owner object and attribute; ``replace`` swaps in a
wrapper built by a factory from the original and remembers the original on the wrapper
(``__truffld_wrapped__``) so patching twice is a no-op and tests can undo it; ``prepare``
builds the same wrapper as a ``Site`` that detail.py installs and removes with the detail
windows. Also holds the
lazily resolved ``is_compiling`` probe used by every wrapper: torch.compile must trace the
original function, not NVTX calls.

Thread-safety: patching happens under the import lock (post-import callbacks) or at install time;
``is_compiling`` is safe from any thread.
"""

import sys

MARK = "__truffld_wrapped__"


class PatchStats(object):
    """Counts what the table asked for and what happened (reported by truffld_hooks.stats())."""

    def __init__(self):
        self.patched = []    # "module:Class.func"
        self.missing = []    # asked for but absent in this version
        self.failed = []     # present but could not be replaced ("name: reason")


stats = PatchStats()


def resolve(module, dotted):
    """Returns (owner, attribute name, current value) or None when absent."""
    owner = module
    parts = dotted.split(".")
    for part in parts[:-1]:
        owner = getattr(owner, part, None)
        if owner is None:
            return None
    if not hasattr(owner, parts[-1]):
        return None
    return owner, parts[-1], getattr(owner, parts[-1])


_ABSENT = object()


class Site(object):
    """One attribute that switches between its original and a wrapper (``install``/``remove``).

    ``raw_original`` is what ``owner.__dict__`` held (``_ABSENT`` when the attribute was
    inherited: removing then deletes the owner's own entry again, so ``owner.attr`` is the
    inherited object itself). Both only act when the attribute still holds what they expect, so
    a later patch by someone else is never overwritten nor lost; they return False then.
    """

    __slots__ = ("owner", "attr", "raw_original", "raw_wrapper", "label")

    def __init__(self, owner, attr, raw_original, raw_wrapper, label):
        self.owner, self.attr, self.label = owner, attr, label
        self.raw_original, self.raw_wrapper = raw_original, raw_wrapper

    def _raw(self):
        return vars(self.owner).get(self.attr, _ABSENT)

    def install(self):
        current = self._raw()
        if current is self.raw_wrapper:
            return True
        if current is not self.raw_original:
            return False
        setattr(self.owner, self.attr, self.raw_wrapper)
        return True

    def remove(self):
        current = self._raw()
        if current is not self.raw_wrapper:
            return current is self.raw_original
        if self.raw_original is _ABSENT:
            delattr(self.owner, self.attr)
        else:
            setattr(self.owner, self.attr, self.raw_original)
        return True

    def installed(self):
        return self._raw() is self.raw_wrapper


def prepare(module, dotted, factory, label=None):
    """Builds the Site that would replace ``module.<dotted>`` by ``factory(original,
    is_method)`` without installing it. None when absent (counted in ``stats.missing``), already
    wrapped by truffld, or unwrappable (``stats.failed``). Static/class methods keep their
    descriptor kind."""
    label = label or "%s:%s" % (module.__name__, dotted)
    found = resolve(module, dotted)
    if found is None:
        stats.missing.append(label)
        return None
    owner, attr, current = found
    if getattr(current, MARK, None) is not None:
        return None
    try:
        raw = vars(owner).get(attr, _ABSENT)
    except TypeError:
        raw = _ABSENT
    is_method = isinstance(owner, type) and not isinstance(raw, (staticmethod, classmethod))
    try:
        if isinstance(raw, staticmethod):
            wrapper = staticmethod(_marked(factory(raw.__func__, False), raw.__func__))
        elif isinstance(raw, classmethod):
            wrapper = classmethod(_marked(factory(raw.__func__, True), raw.__func__))
        else:
            wrapper = _marked(factory(current, is_method), current)
    except (TypeError, AttributeError) as exc:
        stats.failed.append("%s: %s" % (label, exc))
        return None
    return Site(owner, attr, raw, wrapper, label)


def replace(module, dotted, factory, label=None):
    """Replaces ``module.<dotted>`` by ``factory(original, is_method)`` for good; True when
    patched now or earlier (see ``prepare``)."""
    label = label or "%s:%s" % (module.__name__, dotted)
    found = resolve(module, dotted)
    if found is not None and getattr(found[2], MARK, None) is not None:
        return True
    site = prepare(module, dotted, factory, label)
    if site is None:
        return False
    try:
        site.install()
    except (TypeError, AttributeError) as exc:
        stats.failed.append("%s: %s" % (label, exc))
        return False
    stats.patched.append(label)
    return True


def _marked(wrapper, original):
    setattr(wrapper, MARK, original)
    for field in ("__name__", "__qualname__", "__doc__", "__module__"):
        try:
            setattr(wrapper, field, getattr(original, field))
        except (AttributeError, TypeError):
            pass
    import inspect  # at patch time only (torch already imported it): keeps start-up cheap
    try:
        wrapper.__signature__ = inspect.signature(original)
    except (TypeError, ValueError):
        pass
    return wrapper


def unpatch(module, dotted):
    """Restores the original (tests)."""
    found = resolve(module, dotted)
    if found is None:
        return
    owner, attr, current = found
    original = getattr(current, MARK, None)
    if original is not None:
        setattr(owner, attr, original)


def _never():
    return False


def _dynamo_probe():
    dynamo = sys.modules.get("torch._dynamo")
    return dynamo is not None and bool(dynamo.is_compiling())


_probe = _never   # until torch is imported nothing can be compiling


def resolve_compiling_probe(torch):
    """Called once torch is imported (importhook callback): picks the cheapest exact probe."""
    global _probe
    version = str(getattr(torch, "__version__", ""))
    compiler = getattr(torch, "compiler", None)
    if getattr(compiler, "is_compiling", None) is not None:
        _probe = compiler.is_compiling          # torch >= 2.3
    elif version.startswith("1."):
        _probe = _never                         # torch 1.x has no torch.compile
    else:
        _probe = _dynamo_probe                  # torch 2.0 .. 2.2


def is_compiling():
    """True while torch.compile / dynamo traces (wrappers then call the original directly).
    The probes never raise (torch's is_compiling reads a flag), so no try/except here."""
    return _probe()

"""Run a callback right after a named module is first imported, without importing it ourselves.

A ``sys.meta_path`` finder that answers only for the registered module names: it asks the
remaining finders for the real spec, then wraps the spec's loader so that ``exec_module`` runs
the original code and then the callbacks registered for that name. For every other import the
finder returns None after one dict lookup, so processes that never import the targets (compile
workers, resource trackers) pay almost nothing. Modules already in ``sys.modules`` when a callback
is registered are patched at once.

Callbacks must be idempotent (they are guarded here too: each (module, key) runs once per module
object, except after an ``importlib.reload``, which re-executes the module) and must never raise into the importer; exceptions are caught, counted and reported on
stderr with the module name.

Thread-safety: registration and the finder use one lock; Python's import lock serialises
exec_module per module.
"""

import _thread
import sys

_lock = _thread.RLock()  # _thread, not threading/importlib.abc: keeps start-up cheap
_callbacks = {}      # module name -> list of (key, callback)
_done = set()        # (id(module), key) already applied
_lazy = {}           # top-level name -> callback run once before that name is first looked up
errors = []          # (module name, key, message) for callbacks that raised


class _PostImportLoader(object):
    """Delegates to the real loader, then runs the callbacks for the module's name."""

    def __init__(self, real):
        self._real = real

    def create_module(self, spec):
        create = getattr(self._real, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module):
        self._real.exec_module(module)
        _run_callbacks(module.__name__, module, force=True)  # also re-patch after reload()

    def __getattr__(self, name):  # get_source, get_filename, is_package, ... for tools
        return getattr(self._real, name)


class PostImportFinder(object):
    """Finder that intercepts only registered names (see module docstring)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in _lazy:
            _run_lazy(fullname)
        if fullname not in _callbacks:
            return None
        for finder in sys.meta_path:
            if finder is self or isinstance(finder, PostImportFinder):
                continue
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec = find(fullname, path, target)
            if spec is None:
                continue
            loader = spec.loader
            if loader is None or not hasattr(loader, "exec_module"):
                return spec  # namespace packages / legacy loaders: patched by poll_loaded()
            spec.loader = _PostImportLoader(loader)
            return spec
        return None


def _run_callbacks(name, module, force=False):
    with _lock:
        entries = list(_callbacks.get(name, ()))
    for key, callback in entries:
        token = (id(module), key)
        with _lock:
            if token in _done and not force:
                continue
            _done.add(token)
        try:
            callback(module)
        except Exception as exc:  # never break the user's import
            errors.append((name, key, "%s: %s" % (type(exc).__name__, exc)))
            sys.stderr.write("truffld_hooks: patching %s (%s) failed: %s: %s\n"
                             % (name, key, type(exc).__name__, exc))


def _run_lazy(name):
    with _lock:
        callback = _lazy.pop(name, None)
    if callback is None:
        return
    try:
        callback()
    except Exception as exc:
        errors.append((name, "lazy", "%s: %s" % (type(exc).__name__, exc)))
        sys.stderr.write("truffld_hooks: preparing patches for %s failed: %s: %s\n"
                         % (name, type(exc).__name__, exc))


def before_first_import(roots, callback):
    """Runs ``callback()`` once, just before the first of the top-level packages ``roots`` is
    imported (or now if one already is), so costly set-up (reading the injection table) is
    skipped by processes that never import them. ``callback`` usually calls when_imported."""
    once = []

    def run_once():
        if not once:
            once.append(True)
            callback()

    if any(root in sys.modules for root in roots):
        run_once()
        return
    with _lock:
        for root in roots:
            _lazy[root] = run_once


def install_finder():
    """Puts the finder first on sys.meta_path once (idempotent)."""
    with _lock:
        for finder in sys.meta_path:
            if isinstance(finder, PostImportFinder):
                return finder
        finder = PostImportFinder()
        sys.meta_path.insert(0, finder)
        return finder


def when_imported(name, key, callback):
    """Runs ``callback(module)`` once when ``name`` is imported (now if it already is)."""
    with _lock:
        entries = _callbacks.setdefault(name, [])
        if all(k != key for k, _ in entries):
            entries.append((key, callback))
    module = sys.modules.get(name)
    spec = getattr(module, "__spec__", None)
    if module is not None and not getattr(spec, "_initializing", False):
        _run_callbacks(name, module)  # already imported: patch now


def poll_loaded():
    """Applies callbacks to registered modules that are loaded but were missed (e.g. imported
    through a loader we could not wrap). Cheap: one dict lookup per registered name."""
    with _lock:
        names = list(_callbacks)
    for name in names:
        module = sys.modules.get(name)
        if module is not None:
            _run_callbacks(name, module)


def registered_names():
    with _lock:
        return sorted(_callbacks)

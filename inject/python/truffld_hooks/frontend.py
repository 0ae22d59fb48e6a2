"""Frontend operator ranges: wrap the functions named by the injection table, and time every
``nn.Module`` forward through torch's global module hooks.

Range names follow naming.frontend_name: ``<module>.<function> <caller file>:<line>``; module
forwards are ``nn.Module:<Class.__qualname__>.forward <file>:<line>`` where the call
site is the first frame outside torch/nn/modules/module.py. Names are cached per (code object,
line) so the steady state does one dict lookup, two ctypes calls and no string formatting.
Nothing is emitted while torch.compile traces (patching.is_compiling).

The injection table (schemas/injection_table.json) is a JSON list of
``{"domain", "module", "functions", "layer"?, "comment"?}``; "layer" is "frontend" (default),
"comm" (handled by comm.py) or "module_hooks" (the global module hooks, module
torch.nn.modules.module).

Wrappers and module hooks are detail layers (detail.py): installed only while a detail window
is open (always, without windows), the originals restored in between.

Thread-safety: wrappers may run on any thread; name caches are plain dicts (a racing insert of
the same key is harmless); module-hook bookkeeping is thread-local.
"""

import _thread
import sys

from . import backend, detail, engines, importhook, naming, nvtx, patching

_CACHE_LIMIT = 8192
# [config] while the process may be a plain program without steps (see outermost_stepless);
# [None] once a step ran or an engine is patched, or before register().
STEPLESS = [None]
_MODULE_FILE_SUFFIXES = ("torch/nn/modules/module.py",)


def load_table(path):
    """Reads and checks the table; returns (entries, problems). Never raises on bad content:
    malformed entries are skipped and described in ``problems`` ("<path>: entry N: why")."""
    import json  # at first use only (see importhook.when_first_imported)
    problems = []
    try:
        with open(path, "r", encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        return [], ["%s: %s" % (path, exc)]
    if not isinstance(data, list):
        return [], ["%s: top level must be a JSON list of entries" % path]
    entries = []
    for index, entry in enumerate(data):
        where = "%s: entry %d" % (path, index)
        if not isinstance(entry, dict):
            problems.append(where + ": not an object")
            continue
        missing = [k for k in ("domain", "module", "functions") if k not in entry]
        if missing:
            problems.append(where + ": missing " + ", ".join(missing))
            continue
        if not isinstance(entry["functions"], list) or not all(
                isinstance(f, str) and f for f in entry["functions"]):
            problems.append(where + ": functions must be a list of non-empty strings")
            continue
        layer = entry.get("layer", "frontend")
        if layer not in ("frontend", "comm", "module_hooks"):
            problems.append(where + ": unknown layer %r" % layer)
            continue
        entries.append(dict(entry, layer=layer))
    return entries, problems


def outermost_stepless():
    """In a plain program (no step has run, no engine is patched: engines.stepless), the
    calling thread's backend ranges are turned on (backend.ensure_stepless) by its first wrapped
    call or module forward; once steps run, they decide (windows.py) and this is never asked
    again."""
    config = STEPLESS[0]
    if config is None:
        return
    if not engines.stepless():
        STEPLESS[0] = None
        return
    backend.ensure_stepless(config)


def make_wrapper(original, qualified, domain_name):
    """Wrapper emitting one push/pop range named by ``qualified`` and the caller's site."""
    cache = {}
    state = [None, None]  # [emitter, domain], resolved on the first call (see nvtx.stable)
    getframe = sys._getframe
    compiling = patching.is_compiling
    active = detail.ACTIVE   # False only for a reference kept past removal (see detail.py)
    stepless = STEPLESS

    def wrapper(*args, **kwargs):
        if not active[0] or compiling():
            return original(*args, **kwargs)
        if stepless[0] is not None:
            outermost_stepless()
        frame = getframe(1)
        key = (frame.f_code, frame.f_lineno)
        name = cache.get(key)
        if name is None:
            name = naming.frontend_name(qualified, frame.f_code.co_filename,
                                        key[1]).encode("utf-8", "replace")
            if len(cache) < _CACHE_LIMIT:
                cache[key] = name
        emitter, domain = state
        if emitter is None:
            emitter = nvtx.get()
            domain = emitter.domain(domain_name)
            if nvtx.stable(emitter):
                state[0], state[1] = emitter, domain
        emitter.push(name, domain)
        try:
            return original(*args, **kwargs)
        finally:
            emitter.pop()

    return wrapper


def patch_entry(module, entry, domains_enabled=True):
    """Wraps every function of one frontend entry in ``module`` as a detail layer (installed
    now when detail is on, see detail.py); returns the count of functions wrapped."""
    domain = entry["domain"] if domains_enabled else None
    count = 0
    for dotted in entry["functions"]:
        qualified = module.__name__ + "." + dotted

        def factory(original, is_method, qualified=qualified):
            return make_wrapper(original, qualified, domain)

        site = patching.prepare(module, dotted, factory)
        if site is not None:
            detail.add(site)
            patching.stats.patched.append(site.label)
            count += 1
    return count


class ModuleForwardHooks(object):
    """Global pre/post forward hooks emitting one range per module call (see module doc)."""

    def __init__(self, domain_name):
        self._domain_name = domain_name
        self._domain = None
        self._resolved = False
        self._tls = _thread._local()
        self._names = {}
        self.handles = []
        self._module_module = None

    def _name(self, module):
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename.endswith(_MODULE_FILE_SUFFIXES):
            frame = frame.f_back
        cls = type(module)
        key = (cls, frame.f_code, frame.f_lineno) if frame is not None else (cls, None, 0)
        name = self._names.get(key)
        if name is None:
            qualified = "nn.Module:%s.forward" % cls.__qualname__
            where = (frame.f_code.co_filename, frame.f_lineno) if frame else ("?", 0)
            name = naming.frontend_name(qualified, *where).encode("utf-8", "replace")
            if len(self._names) < _CACHE_LIMIT:
                self._names[key] = name
        return name

    def pre(self, module, args):
        if patching.is_compiling():
            return None
        emitter = nvtx.get()
        if not self._resolved:
            self._domain, self._resolved = emitter.domain(self._domain_name), True
        stack = getattr(self._tls, "stack", None)
        if stack is None:
            stack = self._tls.stack = []
        if not stack and STEPLESS[0] is not None:
            outermost_stepless()
        stack.append((id(module), emitter.depth()))
        emitter.push(self._name(module), self._domain)
        return None

    def post(self, module, args, output):
        if patching.is_compiling():
            return None  # nothing was pushed while tracing; keep dynamo away from thread-locals
        stack = getattr(self._tls, "stack", None)
        if not stack:
            return None
        target = id(module)
        # Unwind to this module's entry: entries above it lost their post-hook to an exception.
        for index in range(len(stack) - 1, -1, -1):
            if stack[index][0] == target:
                depth = stack[index][1]
                del stack[index:]
                nvtx.get().pop_to(depth)
                break
        return None

    def bind(self, module_module):
        """Import callback for torch.nn.modules.module: registers these hooks as a detail
        layer (installed now when detail is on)."""
        if getattr(module_module, "register_module_forward_pre_hook", None) is None or \
                getattr(module_module, "register_module_forward_hook", None) is None:
            patching.stats.missing.append("torch.nn.modules.module:global forward hooks")
            return False
        self._module_module = module_module
        patching.stats.patched.append("torch.nn.modules.module:global forward hooks")
        detail.add(self)
        return True

    def install(self):
        """Registers the global hooks (idempotent); each install starts fresh per-thread
        stacks (entries left by a removal in mid-forward are dropped)."""
        if self.handles:
            return True
        module_module = self._module_module
        self._tls = _thread._local()
        self.handles.append(module_module.register_module_forward_pre_hook(self.pre))
        register_post = module_module.register_module_forward_hook
        try:  # torch >= 2.1: call the post hook even when forward raises
            self.handles.append(register_post(self.post, always_call=True))
        except TypeError:
            self.handles.append(register_post(self.post))
        return True

    def remove(self):
        """Unregisters the hooks: torch's global hook dicts are empty again."""
        for handle in self.handles:
            handle.remove()
        self.handles = []
        return True


def alias_sites(torch_module):
    """torch re-exports names of torch.functional (``from .functional import *``) while their
    wrappers are installed, so ``torch.split`` would keep calling a wrapper outside windows:
    each such binding in torch's namespace becomes a detail layer of its own, switched with the
    others (import callback for torch)."""
    sites = {}
    for layer in detail.layers():
        if isinstance(layer, patching.Site) and layer.owner is not torch_module:
            sites[id(layer.raw_wrapper)] = layer
    for attr, value in list(vars(torch_module).items()):
        site = sites.get(id(value))
        if site is not None and site.raw_wrapper is value and site.raw_original is not None:
            detail.add(patching.Site(torch_module, attr, site.raw_original, value,
                                     "%s (as torch.%s)" % (site.label, attr)))


_module_hooks = None


def register(entries, config):
    """Registers post-import patches for frontend and module-hook entries."""
    global _module_hooks
    domains = config is None or getattr(config, "domains", True)
    if config is not None:
        STEPLESS[0] = config
    for entry in entries:
        if entry["layer"] == "frontend":
            importhook.when_imported(
                entry["module"], "frontend:" + ",".join(entry["functions"]),
                lambda module, entry=entry: patch_entry(module, entry, domains))
        elif entry["layer"] == "module_hooks" and (config is None or config.modules):
            if _module_hooks is None:
                _module_hooks = ModuleForwardHooks(entry["domain"] if domains else None)
            importhook.when_imported(entry["module"], "module_hooks", _module_hooks.bind)
    importhook.when_imported("torch", "frontend-aliases", alias_sites)

"""truffld_hooks: the Python half of truffld's capture, enabled by environment variables alone.

``sitecustomize`` (on PYTHONPATH, see inject/python/README.md) calls ``install()``, which only
registers post-import patches (importhook) -- it imports neither torch nor any engine and never
touches CUDA, so it is safe before vLLM forks its workers. When the engine, torch or
torch.distributed are later imported, the patches add NVTX ranges:

* steps (engines.py): ``step_execute_model[request_ids:a_b_c][phase:decode][tokens:N]``, one
  per engine iteration;
* frontend operators (frontend.py): ``torch.nn.functional.linear <file>:<line>``, module forwards;
* backend operators (backend.py): ``aten::mm, seq = 0, op_id = 42`` from torch's emit_nvtx, or
  the dispatch-mode fallback when torch has no NVTX binding;
* communication (comm.py): ``nccl:all_reduce, bytes=..., world_size=..., impl=...`` in NVTX
  domain ``truffld.comm`` (the injection table's; default domain with TRUFFLD_HOOKS_DOMAINS=0).

Steps and communication are always on. The per-operator layers (frontend, module hooks, backend)
follow the injector's detail windows (windows.py, detail.py): installed at a step boundary
inside a window, removed (originals restored) at one outside; always on when the injector does
not sample or TRUFFLD_HOOKS_WINDOWS=0.

The ranges go through NVTX (nvtx.py) to the tool named by NVTX_INJECTION64_PATH, i.e. truffld's
libcupti_injector.so, which timestamps them (ns) and writes them to $TRUFFLD_OUTPUT_DIR.

Public API (all thread-safe): ``install()``, ``installed()``, ``step_range(ids)`` for engines
truffld does not know, ``stats()``.
"""

import _thread
import os
import sys

from . import backend, comm, config as config_mod, detail, engines, frontend, importhook, naming
from . import nvtx, patching, windows

__all__ = ["install", "installed", "step_range", "stats", "__version__"]
__version__ = "0.1.0"

_lock = _thread.allocate_lock()
_config = None
table_problems = []


def install(config=None):
    """Registers every patch once per process (idempotent; later calls return the first config).

    Returns the active Config, or None when TRUFFLD_HOOKS=0.
    """
    global _config
    with _lock:
        if _config is not None:
            return _config
        config = config or config_mod.Config.from_environ()
        if not config.enabled:
            return None
        nvtx.set_default_path(config.pynvtx_path)
        importhook.install_finder()
        importhook.when_imported("torch", "compiling-probe", patching.resolve_compiling_probe)
        if config.steps:
            engines.register(config)
        if config.frontend or config.comm:
            # The default table only names torch/vLLM/SGLang modules: read it when one of them
            # is first imported. A user table may name anything: read it now.
            if config.table_is_default:
                importhook.before_first_import(TABLE_ROOTS, lambda: _load_table(config))
            else:
                _load_table(config)
        _config = config
        if config.windows and os.environ.get("NVTX_INJECTION64_PATH"):
            import atexit
            atexit.register(windows.stepless_notice, config)
        config_mod.debug_log(config, "installed; watching %d modules"
                             % len(importhook.registered_names()))
        return config


TABLE_ROOTS = ("torch", "vllm", "sglang")


def _load_table(config):
    entries, problems = frontend.load_table(config.table_path)
    table_problems.extend(problems)
    for problem in problems:
        config_mod.debug_log(config, "injection table: " + problem)
    if config.frontend:
        frontend.register(entries, config)
    if config.comm:
        comm.register(entries, config is None or getattr(config, "domains", True))


def installed():
    return _config is not None


class _PyStepRange(object):
    """``step_range`` where the _truffld_pystep extension module does not load (its StepRange
    type, the same in C, otherwise). A step range for custom engines:
    ``with step_range(["a", "b"]) as name: model(...)``.

    Ids are escaped as the merge expects; no suffix stripping; ``phase`` ("prefill", "decode" or
    "mixed") adds the ``[phase:X]`` tag, ``tokens`` (tokens scheduled in the step) and ``ctx``
    (summed context length of its requests) the ``[tokens:N]`` and ``[ctx:N]`` tags. A step
    boundary for detail windows like the built-in engine hooks (windows.py: per-operator layers
    installed after the push when a window is open, removed after the pop when it closed);
    closes every range opened inside on exit.
    """

    __slots__ = ("name", "_token")

    def __init__(self, request_ids, base=naming.STEP_EXECUTE, phase=None, tokens=None, ctx=None):
        self.name = naming.step_name(request_ids, base, False, phase, tokens, ctx)
        self._token = 0

    def __enter__(self):
        engines.counters["steps"] += 1
        self._token = windows.enter_step(_config or _fallback_config(), self.name)
        return self.name

    def __exit__(self, *exc):
        windows.exit_step(_config or _fallback_config(), self._token)
        return False


_fallback = []
_native = nvtx.native_module()
# the boundary in C where the extension module loads (windows.use_native), else in Python
step_range = windows.use_native(_native, sys.modules[__name__], engines, naming) \
    if _native is not None else _PyStepRange


def _fallback_config():
    """The environment's Config for step_range used without install() (read once)."""
    if not _fallback:
        _fallback.append(config_mod.Config.from_environ())
    return _fallback[0]


def stats():
    """What was patched, what was missing, which NVTX binding is used (plain dict)."""
    emitter = nvtx.get()
    return {
        "installed": installed(),
        "nvtx_binding": emitter.kind,
        "nvtx_binding_path": emitter.path,
        "nvtx_errors": list(getattr(emitter, "errors", [])),
        "patched": list(patching.stats.patched),
        "missing": list(patching.stats.missing),
        "failed": list(patching.stats.failed),
        "import_errors": list(importhook.errors),
        "table_problems": list(table_problems),
        "backend": dict(backend.status),
        "steps": dict(engines.counters),
        "windows": windows.snapshot(),
    }

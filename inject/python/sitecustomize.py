"""truffld's sitecustomize: installs the truffld_hooks import hook, then chains to the
sitecustomize this file shadows.

Python imports exactly one module named ``sitecustomize`` at start-up: the first on sys.path.
Putting this folder first on PYTHONPATH (``eval "$(truffld-env)"``) therefore hides any
sitecustomize of the distribution (Debian's /usr/lib/python3.X/sitecustomize.py), of a
virtualenv or of the user; this file finds the next one on sys.path after its own folder and
executes it under the name ``_truffld_chained_sitecustomize`` so its side effects still happen.
Duplicated PYTHONPATH entries pointing here are skipped (no recursion).

Nothing here imports torch or an engine, or touches CUDA. Errors are reported on stderr and never
stop the interpreter. Set TRUFFLD_HOOKS=0 to keep only the chaining.
"""

import importlib.machinery
import os
import sys
import types

_HERE = os.path.dirname(os.path.realpath(__file__))


def _chain():
    """Executes the next sitecustomize on sys.path that is not this file (at most one)."""
    if "_truffld_chained_sitecustomize" in sys.modules:
        return
    mine = os.path.realpath(__file__)
    for entry in sys.path:
        folder = os.path.realpath(entry or os.getcwd())
        if folder == _HERE:
            continue
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", [entry])
        if spec is None or spec.origin is None:
            continue
        if os.path.realpath(spec.origin) == mine:
            continue
        module = types.ModuleType(spec.name)  # importlib.util would cost start-up time
        module.__spec__, module.__loader__, module.__file__ = spec, spec.loader, spec.origin
        sys.modules["_truffld_chained_sitecustomize"] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # the shadowed file's failure must not stop the interpreter
            sys.stderr.write("truffld: chained sitecustomize %s failed: %s: %s\n"
                             % (spec.origin, type(exc).__name__, exc))
        return


def _install():
    if os.environ.get("TRUFFLD_HOOKS", "1").strip().lower() in ("0", "false", "no", "off", ""):
        return  # disabled: do not even import the package
    if _HERE not in [os.path.realpath(p) for p in sys.path if p]:
        sys.path.append(_HERE)  # make truffld_hooks importable even if run by path
    try:
        import truffld_hooks
        truffld_hooks.install()
    except Exception as exc:
        sys.stderr.write("truffld: hooks not installed: %s: %s\n" % (type(exc).__name__, exc))


_install()
_chain()

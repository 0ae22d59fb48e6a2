"""The per-operator layers as one switch: frontend wrappers, global module forward hooks and
(per thread) backend ranges are installed while a detail window is open and removed when it
closes, so that outside windows torch runs its own objects (``F.linear is`` the original,
``torch.nn.modules.module._global_forward_hooks`` empty: the module call fast path).

Layers are objects with ``install()`` and ``remove()`` (patching.Site for a wrapped function,
frontend.ModuleForwardHooks for the global module hooks), registered with ``add`` when their
module is imported; ``set_active(on)`` installs or removes all of them at once. Backend ranges
are thread-local (emit_nvtx, dispatch mode), so they cannot be switched from here: each thread
that runs steps follows ``ACTIVE`` at its own step boundaries (windows.py, backend.sync_thread).

A wrapper can outlive its removal where a caller bound it while it was installed
(``from torch.nn.functional import relu``); it then calls straight through while ``ACTIVE[0]``
is False, so such a reference costs a call but emits nothing outside windows.

The layers start installed (today's always-on behaviour) and stay so unless the injector
answers that it samples (windows.py).

Thread-safety: ``add`` and ``set_active`` run under importhook's lock (the lock the post-import
callbacks that register layers use); ``ACTIVE`` is a one-element list read without a lock by
wrappers (a wrapper that saw True pushes and pops its range even if the window closes meanwhile).
"""

from . import importhook

ACTIVE = [True]
_layers = {}      # key -> layer (key: (id(owner), attr) for sites, id(obj) otherwise)
state = {"installs": 0, "removals": 0, "displaced": 0}


def _key(layer):
    owner = getattr(layer, "owner", None)
    return (id(owner), layer.attr) if owner is not None else id(layer)


def add(layer):
    """Registers a layer (replacing an older one for the same attribute, e.g. after a module
    reload) and installs it at once when detail is on. Returns the layer."""
    with importhook._lock:
        _layers[_key(layer)] = layer
        if ACTIVE[0]:
            _apply(layer, True)
    return layer


def _apply(layer, on):
    try:
        done = layer.install() if on else layer.remove()
    except Exception:  # a read-only attribute, a torch without global hooks: never raise
        done = False
    if done is False:
        state["displaced"] += 1   # someone else holds the attribute: theirs is left alone


def set_active(on):
    """Installs (``on``) or removes every layer; returns True when the state changed."""
    on = bool(on)
    with importhook._lock:
        if ACTIVE[0] is on:
            return False
        ACTIVE[0] = on   # off first: wrappers bound elsewhere call through from now on
        for layer in list(_layers.values()):
            _apply(layer, on)
        state["installs" if on else "removals"] += 1
        return True


def layers():
    with importhook._lock:
        return list(_layers.values())


def snapshot():
    """Plain dict for truffld_hooks.stats()."""
    with importhook._lock:
        return dict(state, active=ACTIVE[0], layers=len(_layers))

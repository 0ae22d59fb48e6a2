"""Communication ranges around collectives, carrying message bytes and world size in the name.

Each wrapped collective emits one push/pop range ``nccl:<op>, bytes=B, world_size=W, impl=I``
(naming.comm_name): NVTX's C API cannot carry a JSON payload without the payload extension, so
the merge reads these ``k=v`` pairs from the name instead. ``bytes`` is the size of the
collective's input (send) buffer on this rank (a tensor, or the sum over a list of tensors);
``world_size`` comes from the communicator object's ``world_size`` attribute (vLLM/SGLang
PyNcclCommunicator, CustomAllreduce, ...) or, for torch.distributed, from
``get_world_size(group)``; -1 when unknown.

Table entries with ``"layer": "comm"`` name the functions; ``"impl"`` labels them and
``"input_arg"`` maps a function to ``[positional index (self excluded), keyword name]`` of its
input buffer (default ``[0, null]``).

Thread-safety: wrappers run on any thread; the world-size cache is a dict keyed by group id.
"""

import sys

from . import importhook, naming, nvtx, patching

_world_sizes = {}


def tensor_bytes(obj):
    """Bytes of a tensor-like (``numel()*element_size()``) or list/tuple of them; -1 if none."""
    numel = getattr(obj, "numel", None)
    size = getattr(obj, "element_size", None)
    if callable(numel) and callable(size):
        try:
            return int(numel()) * int(size())
        except Exception:
            return -1
    if isinstance(obj, (list, tuple)) and obj:
        total = 0
        for item in obj:
            part = tensor_bytes(item)
            if part < 0:
                return -1
            total += part
        return total
    return -1


def _dist_world_size(group):
    key = id(group)
    cached = _world_sizes.get(key)
    if cached is not None:
        return cached
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is None or not dist.is_initialized():
            return -1
        size = int(dist.get_world_size(group) if group is not None else dist.get_world_size())
    except Exception:
        return -1
    _world_sizes[key] = size
    return size


def world_size_of(owner, kwargs):
    if owner is not None:
        size = getattr(owner, "world_size", None)
        if isinstance(size, int):
            return size
        group = getattr(owner, "group", None)
        return _dist_world_size(group) if group is not None else -1
    return _dist_world_size(kwargs.get("group"))


def make_wrapper(original, op, impl, is_method, input_arg, domain_name=None):
    """Wrapper emitting one comm range around ``original`` (see module docstring), in NVTX
    domain ``domain_name`` (the injection table's, "truffld.comm"; None: default domain)."""
    index, keyword = input_arg
    state = [None, None]  # [emitter, domain], resolved on the first call (see nvtx.stable)

    def wrapper(*args, **kwargs):
        if patching.is_compiling():
            return original(*args, **kwargs)
        owner = args[0] if is_method and args else None
        positional = args[1:] if is_method else args
        buffer = positional[index] if len(positional) > index else kwargs.get(keyword)
        name = naming.comm_name(op, tensor_bytes(buffer) if buffer is not None else -1,
                                world_size_of(owner, kwargs), impl)
        emitter, domain = state
        if emitter is None:
            emitter = nvtx.get()
            domain = emitter.domain(domain_name) if domain_name else None
            if nvtx.stable(emitter):
                state[0], state[1] = emitter, domain
        emitter.push(name, domain)
        try:
            return original(*args, **kwargs)
        finally:
            emitter.pop()

    return wrapper


def patch_entry(module, entry, domains_enabled=True):
    impl = entry.get("impl") or module.__name__
    domain_name = entry.get("domain") if domains_enabled else None
    inputs = entry.get("input_arg", {})
    count = 0
    for dotted in entry["functions"]:
        op = dotted.rsplit(".", 1)[-1].lstrip("_")
        spec = inputs.get(dotted, [0, None])
        input_arg = (int(spec[0]), spec[1] if len(spec) > 1 else None)

        def factory(original, is_method, op=op, input_arg=input_arg):
            return make_wrapper(original, op, impl, is_method, input_arg, domain_name)

        count += bool(patching.replace(module, dotted, factory))
    return count


def register(entries, domains_enabled=True):
    for entry in entries:
        if entry["layer"] == "comm":
            importhook.when_imported(entry["module"], "comm:" + ",".join(entry["functions"]),
                                     lambda module, entry=entry: patch_entry(module, entry, domains_enabled))

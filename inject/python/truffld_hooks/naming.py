"""Pure naming rules for the NVTX ranges the hooks emit (no torch, no NVTX, no I/O).

The merge stage (truffld-merge) classifies ranges by name alone, so every name produced here is
a contract with it:

* Step ranges: ``step_execute_model[request_ids:a_b_c]``. Ids are joined by ``_``; inside one
  id a backslash is written ``\\\\``, an underscore ``\\_`` and a closing bracket ``\\]``, so
  ``parse_step_name`` (and the merge's C++ parser, which unescapes any ``\\x``) recover the
  exact ids. A step with no requests is
  ``step_execute_model[empty]``; an engine's padding/dummy run is ``step_execute_model[dummy]``.
  vLLM's split sampling call is ``step_execute_model:sample_tokens[request_ids:...]`` with the
  ids of the preceding ``execute_model`` on the same worker (the prefix keeps it a step for the
  merge's ``^step_execute_model`` rule).
  Tags follow the ids, in this order, each left out when unknown and never on
  ``[empty]``/``[dummy]`` steps: ``[phase:X]`` with ``prefill``, ``decode`` or ``mixed``
  (chunked prefill batched with decodes); ``[tokens:N]``, the tokens scheduled in the step
  (all requests together); ``[ctx:N]``, the summed context length of the step's requests
  (tokens already in their KV cache plus the scheduled ones):
  ``step_execute_model[request_ids:a_b_c][phase:decode][tokens:3][ctx:1536]``.
* Frontend ranges: ``<dotted.python.name> <file>:<line>`` -- the family is the text before the
  first space, the call site is the frame that called it. Module forwards are
  ``nn.Module:<Class qualname>.forward <file>:<line>``.
* Communication ranges: ``nccl:<op>, bytes=<int>, world_size=<int>, impl=<name>`` -- like
  PyTorch's ``aten::mm, seq = 0`` the family is the text before the first ``,``; the rest are
  ``k=v`` pairs separated by ``, ``; ``bytes``/``world_size`` are ``-1`` when unknown. Values never
  contain ``,``, ``=``, spaces or brackets.

Thread-safety: every function here is pure and safe from any thread.
"""

STEP_EXECUTE = "step_execute_model"
STEP_SAMPLE = "step_execute_model:sample_tokens"
PHASES = ("prefill", "decode", "mixed")
TAGS = ("phase", "tokens", "ctx")  # the order tags follow the ids in

# vLLM >= 0.11 appends "-" + 8 lowercase hex characters (random_uuid()[:8]) to every request id
# it receives (vllm/v1/engine/input_processor.py, assign_request_id); users know the id without it.
_HEX = frozenset("0123456789abcdef")


def escape_request_id(rid):
    """Escapes one id so that ``_`` can join ids: ``\\`` -> ``\\\\``, ``_`` -> ``\\_``,
    ``]`` -> ``\\]``."""
    return str(rid).replace("\\", "\\\\").replace("_", "\\_").replace("]", "\\]")


def strip_random_suffix(rid):
    """Removes vLLM's ``-xxxxxxxx`` (8 lowercase hex) suffix, if present and not the whole id."""
    rid = str(rid)  # plain string tests, not re: keeps interpreter start-up cheap
    if len(rid) > 9 and rid[-9] == "-" and _HEX.issuperset(rid[-8:]):
        return rid[:-9]
    return rid


def _count(value):
    """``value`` when it is a whole number >= 0 (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


# _truffld_pystep's step_name (its C copy of step_name_py's plain cases) once loaded (nvtx.py)
NATIVE_STEP_NAME = [None]


def step_name(request_ids, base=STEP_EXECUTE, dummy=False, phase=None, tokens=None, ctx=None):
    """The step range's name (``step_name_py``), built in C where the extension module loaded."""
    build = NATIVE_STEP_NAME[0]
    if build is not None and not dummy:
        name = build(request_ids, base, phase, tokens, ctx)
        if name is not None:
            return name
    return step_name_py(request_ids, base, dummy, phase, tokens, ctx)


def step_name_py(request_ids, base=STEP_EXECUTE, dummy=False, phase=None, tokens=None, ctx=None):
    """Builds a step range name from an iterable of ids (already normalised, order kept);
    ``phase`` (one of PHASES), ``tokens`` and ``ctx`` (whole numbers >= 0) add their tags after
    the ids; other values are ignored. Runs once per engine step: ids of plain strings without
    ``\\``, ``_`` or ``]`` are joined without a per-id call."""
    if dummy:
        return base + "[dummy]"
    ids = request_ids if request_ids.__class__ is list else list(request_ids)
    if not ids:
        return base + "[empty]"
    try:
        joined = "_".join(ids)
    except TypeError:   # an id that is not a str
        joined = None
    if joined is None or joined.count("_") != len(ids) - 1 or "\\" in joined or "]" in joined:
        joined = "_".join([escape_request_id(r) for r in ids])
    name = base + "[request_ids:" + joined + "]"
    if phase in PHASES:
        name += "[phase:" + phase + "]"
    if tokens.__class__ is int and tokens >= 0 or _count(tokens) is not None:
        name += "[tokens:%d]" % tokens
    if ctx.__class__ is int and ctx >= 0 or _count(ctx) is not None:
        name += "[ctx:%d]" % ctx
    return name


def parse_step_tags(name):
    """Splits the trailing tags off a step name: returns (name without them, {tag: text}).
    Each tag must follow an unescaped ``]`` (the ids' or the previous tag's), so an id that
    contains ``[phase:`` never reads as one; tags come in TAGS order, each at most once."""
    tags, rest, allowed = {}, name, len(TAGS)
    while rest.endswith("]"):
        at = rest.rfind("[")
        if at < 1 or rest[at - 1] != "]":
            break
        slashes = len(rest[:at - 1]) - len(rest[:at - 1].rstrip("\\"))
        if slashes % 2:
            break
        key, sep, value = rest[at + 1:-1].partition(":")
        if not sep or key not in TAGS[:allowed]:
            break
        allowed = TAGS.index(key)
        tags[key] = value
        rest = rest[:at]
    return rest, tags


def parse_step_phase(name):
    """The ``[phase:X]`` tag of a step name (X in PHASES), or None (see parse_step_tags)."""
    value = parse_step_tags(name)[1].get("phase")
    return value if value in PHASES else None


def parse_step_count(name, tag):
    """The whole number of the ``[tokens:N]`` or ``[ctx:N]`` tag of a step name, or None."""
    value = parse_step_tags(name)[1].get(tag)
    return int(value) if value is not None and value.isdigit() else None


def parse_step_name(name):
    """Inverse of step_name for tests and tools: returns (base, ids or None, tag).

    ``tag`` is "requests", "empty", "dummy" or None (not a step name); trailing tags
    (``[phase:X]``, ``[tokens:N]``, ``[ctx:N]``) are skipped (see parse_step_tags). Raises
    nothing: malformed names come back as (name, None, None).
    """
    full = name
    name = parse_step_tags(name)[0]
    open_at = name.find("[")
    if open_at <= 0 or not name.endswith("]"):
        return full, None, None
    base, body = name[:open_at], name[open_at + 1:-1]
    if body in ("empty", "dummy"):
        return base, [], body
    if not body.startswith("request_ids:"):
        return full, None, None
    body = body[len("request_ids:"):]
    ids, cur, i = [], [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            cur.append(body[i + 1])
            i += 2
            continue
        if c == "_":
            ids.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    ids.append("".join(cur))
    return base, ids, "requests"


def _clean_value(value):
    text = str(value)
    for bad in ",=[] ":
        text = text.replace(bad, "-")
    return text


def comm_name(op, nbytes, world_size, impl=None):
    """``nccl:all_reduce, bytes=1048576, world_size=8, impl=pynccl`` (see module docstring)."""
    parts = ["nccl:" + _clean_value(op),
             "bytes=%d" % int(nbytes if nbytes is not None and nbytes >= 0 else -1),
             "world_size=%d" % int(world_size if world_size is not None else -1)]
    if impl:
        parts.append("impl=" + _clean_value(impl))
    return ", ".join(parts)


def parse_comm_name(name):
    """Returns (op, {key: value-string}) for a comm_name, or None when ``name`` is not one."""
    if not name.startswith("nccl:"):
        return None
    items = name.split(", ")
    fields = {}
    for item in items[1:]:
        key, sep, value = item.partition("=")
        if not sep:
            return None
        fields[key] = value
    return items[0][len("nccl:"):], fields


def frontend_name(qualified, filename, lineno):
    """``torch.nn.functional.linear /path/model.py:123`` (call site of the user frame)."""
    return "%s %s:%d" % (qualified, filename, lineno)

"""Request-id extraction from engine step arguments, robust across engine versions.

Pure functions over duck-typed objects (no engine import): each reads only attributes, never
calls engine code, and returns a list of request-id strings (possibly empty) or None when the
object does not look like the expected type (the caller then names the step without ids and
counts it). Mirrored layouts:

* vLLM V1 ``vllm.v1.core.sched.output.SchedulerOutput`` (0.8 .. 0.11+):
  ``num_scheduled_tokens`` (dict req_id -> tokens, insertion order = batch order) is read first;
  fallbacks are ``scheduled_new_reqs[i].req_id`` plus ``scheduled_cached_reqs`` which is either a
  list of objects with ``req_id`` (0.8/0.9) or one ``CachedRequestData`` with ``req_ids``
  (0.10+).
* vLLM V0 ``ModelInputForGPUWithSamplingMetadata.request_ids_to_seq_ids`` (dict, 0.4 .. 0.10),
  passed as ``model_input`` to ``vllm.worker.model_runner.ModelRunner.execute_model``.
* SGLang ``sglang.srt.managers.schedule_batch.ScheduleBatch``: ``reqs[i].rid`` (0.3 .. 0.5);
  ``forward_mode.is_idle()`` marks a DP-attention idle (dummy) batch.

Step phases (``prefill``, ``decode``, ``mixed`` or None when unknown; see naming.step_name),
from the same objects, never raising:

* vLLM V1: a request is a prefill when it is in ``scheduled_new_reqs`` or is scheduled more than
  one token besides its speculative tokens (``scheduled_spec_decode_tokens``, req_id -> list);
  decode when every entry of ``num_scheduled_tokens`` is one such token and nothing is new;
  prefill when every request is a prefill; mixed otherwise (chunked prefill with decodes).
* vLLM V0: ``model_input.attn_metadata`` counts (``num_prefills``, ``num_decode_tokens``) when
  present, else ``model_input.is_prompt`` (the first ``seq_group_metadata.is_prompt``).
* SGLang: ``batch.forward_mode``: ``is_mixed()`` -> mixed, ``is_decode()`` or
  ``is_target_verify()`` (speculative verification of decode tokens) -> decode,
  ``is_extend()`` -> prefill.

Step sizes (``[tokens:N]`` and ``[ctx:N]``, see naming.step_name; None when unknown, never
raising):

* vLLM V1: tokens = ``total_num_scheduled_tokens`` (else the sum of ``num_scheduled_tokens``);
  context = the sum over the step's requests of ``num_computed_tokens`` (``NewRequestData`` and
  ``CachedRequestData``: per object in 0.8/0.9, a list parallel to ``req_ids`` in 0.10+) plus
  the tokens scheduled now; unknown when any request's is missing.
* vLLM V0: tokens = ``attn_metadata.num_prefill_tokens + num_decode_tokens``; context = the sum
  of ``attn_metadata.seq_lens``.
* SGLang: tokens = ``batch.extend_num_tokens`` for extend batches (prefill, mixed,
  speculative verification), the number of requests for decode batches; context =
  ``batch.seq_lens_sum``.

Thread-safety: pure; safe from any thread.
"""

from . import naming

_MISSING = object()


def _ordered_unique(ids):
    seen, out = set(), []
    for rid in ids:
        if rid is None:
            continue
        rid = str(rid)
        if rid not in seen:
            seen.add(rid)
            out.append(rid)
    return out


def vllm_v1_request_ids(scheduler_output):
    """Ids scheduled in this step (see module docstring), or None if unrecognised."""
    if scheduler_output is None:
        return None
    tokens = getattr(scheduler_output, "num_scheduled_tokens", _MISSING)
    if isinstance(tokens, dict) and tokens:
        return _ordered_unique(tokens.keys())
    ids = []
    recognised = tokens is not _MISSING
    new_reqs = getattr(scheduler_output, "scheduled_new_reqs", _MISSING)
    if new_reqs is not _MISSING:
        recognised = True
        for req in new_reqs or ():
            ids.append(getattr(req, "req_id", None))
    cached = getattr(scheduler_output, "scheduled_cached_reqs", _MISSING)
    if cached is not _MISSING:
        recognised = True
        req_ids = getattr(cached, "req_ids", _MISSING)
        if req_ids is not _MISSING:          # vLLM >= 0.10: one CachedRequestData
            ids.extend(req_ids or ())
        else:                                 # vLLM 0.8/0.9: list[CachedRequestData]
            for req in cached or ():
                ids.append(getattr(req, "req_id", None))
    return _ordered_unique(ids) if recognised else None


def vllm_v1_is_empty(scheduler_output):
    """True when the scheduler sent no tokens (vLLM still calls execute_model then)."""
    total = getattr(scheduler_output, "total_num_scheduled_tokens", None)
    return isinstance(total, int) and total == 0


def vllm_v0_request_ids(model_input):
    """``model_input.request_ids_to_seq_ids`` keys, or None if absent."""
    mapping = getattr(model_input, "request_ids_to_seq_ids", _MISSING)
    if mapping is _MISSING or mapping is None:
        return None
    try:
        return _ordered_unique(mapping.keys())
    except AttributeError:
        return None


def sglang_request_ids(batch):
    """``batch.reqs[i].rid``, or None if ``batch`` has no ``reqs``."""
    reqs = getattr(batch, "reqs", _MISSING)
    if reqs is _MISSING or reqs is None:
        return None
    return _ordered_unique(getattr(r, "rid", None) for r in reqs)


def sglang_is_idle(batch):
    mode = getattr(batch, "forward_mode", None)
    is_idle = getattr(mode, "is_idle", None)
    try:
        return bool(is_idle()) if callable(is_idle) else False
    except Exception:  # an engine bug must never break the step
        return False


def _phase_of(prefills, decodes):
    if prefills and decodes:
        return "mixed"
    if prefills:
        return "prefill"
    if decodes:
        return "decode"
    return None


def vllm_v1_phase(scheduler_output):
    """Phase of a V1 ``SchedulerOutput`` (see module docstring), or None."""
    try:
        tokens = getattr(scheduler_output, "num_scheduled_tokens", None)
        if not isinstance(tokens, dict) or not tokens:
            return None
        new_ids = set()
        for req in getattr(scheduler_output, "scheduled_new_reqs", None) or ():
            new_ids.add(getattr(req, "req_id", None))
        spec = getattr(scheduler_output, "scheduled_spec_decode_tokens", None)
        if not isinstance(spec, dict):
            spec = {}
        prefills = decodes = 0
        for rid, count in tokens.items():
            count = int(count) - len(spec.get(rid) or ())
            if rid in new_ids or count > 1:
                prefills += 1
            else:
                decodes += 1
        if new_ids - set(tokens):  # new requests listed but not keyed in num_scheduled_tokens
            prefills += 1
        return _phase_of(prefills, decodes)
    except Exception:
        return None


def vllm_v0_phase(model_input):
    """Phase of a V0 ``ModelInputForGPUWithSamplingMetadata`` (see module docstring), or None."""
    try:
        attn = getattr(model_input, "attn_metadata", None)
        prefills = getattr(attn, "num_prefills", None)
        decodes = getattr(attn, "num_decode_tokens", None)
        if isinstance(prefills, int) and isinstance(decodes, int):
            return _phase_of(prefills > 0, decodes > 0)
        is_prompt = getattr(model_input, "is_prompt", None)
        if isinstance(is_prompt, bool):
            return "prefill" if is_prompt else "decode"
        return None
    except Exception:
        return None


def sglang_phase(batch):
    """Phase of an SGLang ``ScheduleBatch`` from its ``forward_mode``, or None."""
    try:
        mode = getattr(batch, "forward_mode", None)
        if mode is None:
            return None
        for method, phase in (("is_mixed", "mixed"), ("is_target_verify", "decode"),
                              ("is_decode", "decode"), ("is_extend", "prefill")):
            test = getattr(mode, method, None)
            if callable(test) and test():
                return phase
        return None
    except Exception:  # an engine bug must never break the step
        return None


def _whole(value):
    """``value`` as an int when it is a whole number >= 0 (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def vllm_v1_tokens(scheduler_output):
    """Tokens scheduled in a V1 step (see module docstring), or None."""
    try:
        total = _whole(getattr(scheduler_output, "total_num_scheduled_tokens", None))
        if total is not None:
            return total
        tokens = getattr(scheduler_output, "num_scheduled_tokens", None)
        if not isinstance(tokens, dict) or not tokens:
            return None
        counts = [_whole(c) for c in tokens.values()]
        return None if None in counts else sum(counts)
    except Exception:
        return None


def vllm_v1_context(scheduler_output):
    """Summed context length of a V1 step's requests (see module docstring), or None."""
    try:
        tokens = getattr(scheduler_output, "num_scheduled_tokens", None)
        if not isinstance(tokens, dict) or not tokens:
            return None
        computed = {}
        for req in getattr(scheduler_output, "scheduled_new_reqs", None) or ():
            computed[getattr(req, "req_id", None)] = getattr(req, "num_computed_tokens", None)
        cached = getattr(scheduler_output, "scheduled_cached_reqs", None)
        req_ids = getattr(cached, "req_ids", _MISSING)
        if req_ids is not _MISSING:                  # vLLM >= 0.10: parallel lists
            counts = getattr(cached, "num_computed_tokens", None) or ()
            computed.update(zip(req_ids or (), counts))
        else:                                        # vLLM 0.8/0.9: one object per request
            for req in cached or ():
                computed[getattr(req, "req_id", None)] = getattr(req, "num_computed_tokens", None)
        total = 0
        for rid, count in tokens.items():
            done, now = _whole(computed.get(rid)), _whole(count)
            if done is None or now is None:
                return None
            total += done + now
        return total
    except Exception:
        return None


def vllm_v0_tokens(model_input):
    """Tokens of a V0 step: prefill plus decode tokens of its attention metadata, or None."""
    try:
        attn = getattr(model_input, "attn_metadata", None)
        prefill = _whole(getattr(attn, "num_prefill_tokens", None))
        decode = _whole(getattr(attn, "num_decode_tokens", None))
        return None if prefill is None or decode is None else prefill + decode
    except Exception:
        return None


def vllm_v0_context(model_input):
    """Sum of a V0 step's ``attn_metadata.seq_lens``, or None."""
    try:
        lens = getattr(getattr(model_input, "attn_metadata", None), "seq_lens", None)
        if not isinstance(lens, (list, tuple)) or not lens:
            return None
        counts = [_whole(n) for n in lens]
        return None if None in counts else sum(counts)
    except Exception:
        return None


def _mode_is(batch, method):
    test = getattr(getattr(batch, "forward_mode", None), method, None)
    return bool(test()) if callable(test) else False


def sglang_tokens(batch):
    """Tokens of an SGLang batch (see module docstring), or None."""
    try:
        if _mode_is(batch, "is_extend") or _mode_is(batch, "is_mixed") or _mode_is(batch, "is_target_verify"):
            return _whole(getattr(batch, "extend_num_tokens", None))
        if _mode_is(batch, "is_decode"):
            reqs = getattr(batch, "reqs", None)
            return len(reqs) if isinstance(reqs, (list, tuple)) else None
        return None
    except Exception:  # an engine bug must never break the step
        return None


def sglang_context(batch):
    """``batch.seq_lens_sum`` of an SGLang batch, or None."""
    try:
        return _whole(getattr(batch, "seq_lens_sum", None))
    except Exception:
        return None


def normalise(ids, strip_suffix):
    """Applies vLLM's suffix stripping when asked; keeps order, drops duplicates it creates."""
    if ids is None:
        return None
    if strip_suffix:
        ids = [naming.strip_random_suffix(r) for r in ids]
    return _ordered_unique(ids)

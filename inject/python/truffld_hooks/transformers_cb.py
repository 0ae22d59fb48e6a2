"""Step ranges for transformers' continuous-batching engine (``generate_batch``,
``init_continuous_batching``, ``transformers serve``), transformers 4.56 .. 5.x.

One engine iteration is ``prepare_next_batch`` (scheduling, input tensors), ``_generation_step``
(forward, logits processing, sampling, copy of the new tokens to the host) and ``update_batch``
(host bookkeeping). The step range wraps ``_generation_step``, which exists on
``ContinuousBatchProcessor`` (``_generation_step(self, model)``, 5.3+) and, in older releases, on
``ContinuousBatchingManager`` (``_generation_step(self, batch_processor)``, where the manager ran
the forward itself); newer managers keep a ``_generation_step(self)`` that calls the processor's.
Both are patched; the inner one sees the outer range open on its thread and only calls through,
so each iteration is one range whichever class does the work.

The scheduled requests are read from the processor after ``prepare_next_batch``:
``processor.requests_in_batch`` (older) or ``processor.inputs_and_outputs.requests_in_batch``
(newer; items wrap the ``RequestState`` in ``.state``), else from the list the processor last
passed to ``metrics.record_batch_metrics`` on this thread. Per request: ``request_id``; the
tokens it processes now, the wrapper's ``query_length`` (5.3+: by the time the step runs,
``tokens_to_process`` of a request whose prefill ends in it already holds the one placeholder
token to decode next), else ``len(tokens_to_process)`` (``prompt_ids`` before 5.3); ``status``
(``PREFILLING``/``PREFILLING_SPLIT``/``SPLIT_PENDING_REMAINDER`` or more than one token: a
prefill; ``DECODING``: a decode); ``position_offset``, which ``prepare_next_batch`` has already
advanced past this step's tokens, so it is the request's context (cache plus tokens now).
The name is ``step_execute_model[request_ids:...][phase:...][tokens:N][ctx:N]`` (naming).

With async batching (``use_async_batching``) the batch is read through the metrics fallback
and the range covers only the launch of the step's work (its copy of the new tokens to the host
does not block there).

Thread-safety: the wrappers run on the engine's generation thread; the fallback batch and the
"a step is open" flag are per thread.
"""

import _thread

from . import naming, requests

_tls = _thread._local()
MODULE = "transformers.generation.continuous_batching.continuous_api"
METRICS_MODULE = "transformers.utils.metrics"


def _items(processor):
    """The items of the batch ``processor`` scheduled last (``RequestState`` objects, or
    wrappers holding one in ``.state``), or None. The metrics fallback is used once: a step
    without a fresh batch gets no ids rather than the previous step's."""
    for holder in (processor, getattr(processor, "inputs_and_outputs", None)):
        batch = getattr(holder, "requests_in_batch", None) if holder is not None else None
        if isinstance(batch, (list, tuple)):
            return batch
    batch = getattr(_tls, "metrics_batch", None)
    _tls.metrics_batch = None
    return batch if isinstance(batch, (list, tuple)) else None


def _prefilling(state):
    """Whether the request's status says it is (still) prefilling."""
    status = getattr(state, "status", None)
    return str(getattr(status, "name", status) or "").startswith(("PREFILL", "SPLIT"))


def _tokens_now(item, state):
    """Tokens the request processes in this step, or None when they cannot be known: in 5.3+ a
    prefill that ends in this step already holds only its placeholder in ``tokens_to_process``,
    so without the wrapper's ``query_length`` (the metrics fallback, async batching) a prefill's
    count is not guessed."""
    length = requests._whole(getattr(item, "query_length", None))
    if length is not None:
        return length
    pending = getattr(state, "tokens_to_process", None)
    if isinstance(pending, (list, tuple)):
        return None if _prefilling(state) else len(pending)
    value = getattr(state, "prompt_ids", None)  # before 5.3: the tokens of this step
    return len(value) if isinstance(value, (list, tuple)) else None


def _is_prefill(state, tokens):
    if _prefilling(state):
        return True
    status = getattr(state, "status", None)
    if str(getattr(status, "name", status) or "").startswith("DECODING"):
        return tokens is not None and tokens > 1
    return None


def step_info(processor):
    """(ids, tags) of the processor's current batch; ids None when it cannot be read. Tags are
    naming.step_name's keyword arguments, each None when any request does not say."""
    items = _items(processor)
    if items is None:
        return None, {}
    ids, prefills, decodes, tokens, ctx = [], 0, 0, 0, 0
    for item in items:
        state = getattr(item, "state", item)
        rid = getattr(state, "request_id", None)
        if rid is None:
            return None, {}
        ids.append(str(rid))
        n = _tokens_now(item, state)
        kind = _is_prefill(state, n)
        prefills += kind is True
        decodes += kind is False
        tokens = None if tokens is None or n is None else tokens + n
        offset = requests._whole(getattr(state, "position_offset", None))
        ctx = None if ctx is None or offset is None else ctx + offset
    phase = requests._phase_of(prefills, decodes) if prefills + decodes == len(items) else None
    return requests.normalise(ids, False), {"phase": phase, "tokens": tokens, "ctx": ctx}


def make_step_wrapper(original, from_manager, config, run_step, counters):
    """Wraps ``_generation_step``; ``from_manager``: ``self`` is the manager, whose processor is
    the first argument (older) or ``self.batch_processor`` (newer)."""

    def wrapper(self, *args, **kwargs):
        if getattr(_tls, "open", False):
            return original(self, *args, **kwargs)
        try:
            processor = self
            if from_manager:
                processor = args[0] if args else getattr(self, "batch_processor", None)
            ids, tags = step_info(processor)
        except Exception:
            counters["id_errors"] += 1
            ids, tags = None, {}
        if ids is None:
            counters["unrecognised"] += 1
            name = naming.STEP_EXECUTE
        else:
            name = naming.step_name(ids, **tags)
        _tls.open = True
        try:
            return run_step(name, config, original, self, *args, **kwargs)
        finally:
            _tls.open = False

    return wrapper


def make_metrics_wrapper(original):
    """Keeps the batch passed to ``record_batch_metrics`` for ``_items``' last resort."""

    def wrapper(self, *args, **kwargs):
        batch = args[0] if args else kwargs.get("requests_in_batch")
        _tls.metrics_batch = batch if isinstance(batch, (list, tuple)) else None
        return original(self, *args, **kwargs)

    return wrapper

"""Step ranges for inference engines: one NVTX range per engine iteration naming its requests.

Patched entry points (module paths and signatures mirrored from the engines' sources):

* vLLM V1 ``vllm.v1.worker.gpu_worker.Worker`` (0.8 .. 0.11+):
  ``execute_model(self, scheduler_output, ...)`` ->
  ``step_execute_model[request_ids:...][phase:decode][tokens:N][ctx:N]`` (tags when known, see
  requests);
  ``sample_tokens(self, grammar_output, ...)`` (split sampling, 0.11+) ->
  ``step_execute_model:sample_tokens[...]`` with the ids and tags of the last execute_model on
  the same thread;
  ``execute_dummy_batch(self)`` (data-parallel padding) -> ``step_execute_model[dummy]``.
  Subclasses (CPU/XPU workers) inherit the patch. Ids lose vLLM's random suffix (naming).
* vLLM V0 ``vllm.worker.model_runner.ModelRunner.execute_model(self, model_input, kv_caches,
  intermediate_tensors=None, num_steps=1, ...)`` (0.4 .. 0.10).
* SGLang ``sglang.srt.managers.scheduler.Scheduler.run_batch(self, batch, ...)`` (0.3 .. 0.5);
  an idle (DP-attention) batch is a dummy step.
* transformers' continuous batching (``generate_batch``, ``transformers serve``):
  ``ContinuousBatchProcessor._generation_step`` / ``ContinuousBatchingManager._generation_step``
  (see transformers_cb).

Every step is a decision point for detail windows (windows.py): after its push the per-operator
layers are installed when a window is open (backend ranges on its thread), after its pop removed
when the window has closed. Every step wrapper closes any range left open inside the step (nvtx.Emitter.pop_to) so one failing step never
unbalances the NVTX stack. An exception while *reading* ids never reaches the engine: the step
is then named without ids and counted in ``counters['id_errors']``.

Thread-safety: wrappers may run on any thread; the "last ids" (and tags) for sample_tokens
are per thread.
"""

import _thread

from . import importhook, naming, patching, requests, transformers_cb, windows

counters = {"steps": 0, "id_errors": 0, "unrecognised": 0, "engine_patched": 0}
_tls = _thread._local()


def _argument(args, kwargs, keyword):
    if args:
        return args[0]
    return kwargs.get(keyword)


def _name_for(kind, payload, strip):
    """(step name, ids, tags) for one call, ``tags`` the keyword arguments of naming.step_name
    (phase, tokens, ctx); ``kind`` selects the extraction rule."""
    if kind == "vllm_v1":
        ids = requests.vllm_v1_request_ids(payload)
        if ids is not None and not ids and requests.vllm_v1_is_empty(payload):
            ids = []
        ids = requests.normalise(ids, strip)
        tags = {"phase": requests.vllm_v1_phase(payload), "tokens": requests.vllm_v1_tokens(payload),
                "ctx": requests.vllm_v1_context(payload)}
    elif kind == "vllm_v0":
        ids = requests.normalise(requests.vllm_v0_request_ids(payload), False)
        tags = {"phase": requests.vllm_v0_phase(payload), "tokens": requests.vllm_v0_tokens(payload),
                "ctx": requests.vllm_v0_context(payload)}
    elif kind == "sglang":
        if requests.sglang_is_idle(payload):
            return naming.step_name((), dummy=True), [], {}
        ids = requests.normalise(requests.sglang_request_ids(payload), False)
        tags = {"phase": requests.sglang_phase(payload), "tokens": requests.sglang_tokens(payload),
                "ctx": requests.sglang_context(payload)}
    else:
        raise ValueError("unknown step kind %r" % kind)
    if ids is None:
        counters["unrecognised"] += 1
        return naming.STEP_EXECUTE, None, {}
    return naming.step_name(ids, **tags), ids, tags


def make_step_wrapper(original, kind, keyword, config):
    strip = getattr(config, "strip_suffix", True)

    def wrapper(self, *args, **kwargs):
        try:
            name, ids, tags = _name_for(kind, _argument(args, kwargs, keyword), strip)
        except Exception:
            counters["id_errors"] += 1
            name, ids, tags = naming.STEP_EXECUTE, None, {}
        _tls.last_ids = ids
        _tls.last_tags = tags
        return run_step(name, config, original, self, *args, **kwargs)

    return wrapper


def make_sample_wrapper(original, config):
    def wrapper(self, *args, **kwargs):
        ids = getattr(_tls, "last_ids", None)
        name = (naming.STEP_SAMPLE if ids is None
                else naming.step_name(ids, base=naming.STEP_SAMPLE, **getattr(_tls, "last_tags", {})))
        return run_step(name, config, original, self, *args, **kwargs)

    return wrapper


def make_dummy_wrapper(original, config):
    def wrapper(self, *args, **kwargs):
        return run_step(naming.step_name((), dummy=True), config, original, self, *args, **kwargs)

    return wrapper


def run_step(name, config, function, *args, **kwargs):
    """Runs ``function`` inside one step range named ``name`` on this thread."""
    counters["steps"] += 1
    token = windows.enter_step(config, name)
    try:
        return function(*args, **kwargs)
    finally:
        windows.exit_step(config, token)


# (module, "Class.method", factory(original, config)) for every engine entry point.
TARGETS = (
    ("vllm.v1.worker.gpu_worker", "Worker.execute_model",
     lambda f, c: make_step_wrapper(f, "vllm_v1", "scheduler_output", c)),
    ("vllm.v1.worker.gpu_worker", "Worker.sample_tokens", make_sample_wrapper),
    ("vllm.v1.worker.gpu_worker", "Worker.execute_dummy_batch", make_dummy_wrapper),
    ("vllm.worker.model_runner", "ModelRunner.execute_model",
     lambda f, c: make_step_wrapper(f, "vllm_v0", "model_input", c)),
    ("sglang.srt.managers.scheduler", "Scheduler.run_batch",
     lambda f, c: make_step_wrapper(f, "sglang", "batch", c)),
    (transformers_cb.MODULE, "ContinuousBatchProcessor._generation_step",
     lambda f, c: transformers_cb.make_step_wrapper(f, False, c, run_step, counters)),
    (transformers_cb.MODULE, "ContinuousBatchingManager._generation_step",
     lambda f, c: transformers_cb.make_step_wrapper(f, True, c, run_step, counters)),
    (transformers_cb.METRICS_MODULE, "ContinuousBatchProcessorMetrics.record_batch_metrics",
     lambda f, c: transformers_cb.make_metrics_wrapper(f)),
)


def _patch(module, dotted, factory, config):
    if patching.replace(module, dotted, lambda original, is_method: factory(original, config)):
        counters["engine_patched"] = 1


def stepless():
    """True while the process is a plain program: no step has run and no engine entry point
    is patched (an engine's warm-up before its first step is not stepless)."""
    return counters["steps"] == 0 and not counters["engine_patched"]


def register(config):
    for module_name, dotted, factory in TARGETS:
        importhook.when_imported(
            module_name, "step:" + dotted,
            lambda module, dotted=dotted, factory=factory: _patch(module, dotted, factory, config))

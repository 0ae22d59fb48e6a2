"""Stand-in for transformers.generation.continuous_batching.continuous_api: the classes and
attributes the hooks read, in the newer layout (5.3+: the processor runs the step, its
inputs_and_outputs holds FutureRequestState items, RequestState.tokens_to_process) or, with
STANDIN_CB_STYLE=old, the older one (the manager runs the step with the processor as argument,
processor.requests_in_batch holds RequestState items with prompt_ids). STANDIN_CB_HIDE=1 hides
the batch attributes so only the metrics call names the requests."""

import enum
import os

from ...utils.metrics import ContinuousBatchProcessorMetrics

OLD = os.environ.get("STANDIN_CB_STYLE") == "old"
HIDE = os.environ.get("STANDIN_CB_HIDE") == "1"


class RequestStatus(enum.IntEnum):
    PENDING = 0
    PREFILLING = 1
    DECODING = 2


class RequestState:
    def __init__(self, request_id, tokens, past, status):
        self.request_id = request_id
        # Newer engines have already replaced the tokens of a prefill that ends in this step by
        # the one placeholder to decode next; the wrapper's query_length keeps the count.
        ending_prefill = status == RequestStatus.PREFILLING and tokens > 1
        setattr(self, "prompt_ids" if OLD else "tokens_to_process",
                [-1] if ending_prefill and not OLD else list(range(tokens)))
        self._n = tokens
        self.position_offset = past + tokens  # advanced by prepare_next_batch, as the real one
        self.status = status



class FutureRequestState:
    def __init__(self, state):
        self.state = state
        self.query_length = state._n


class IOs:
    """Holds requests_in_batch once a batch is prepared (newer layout)."""


class ContinuousBatchProcessor:
    def __init__(self):
        if not OLD:
            self.inputs_and_outputs = IOs()
        self.metrics = ContinuousBatchProcessorMetrics()
        self.forwards = 0

    def prepare_next_batch(self, states):
        if HIDE:
            pass
        elif OLD:
            self.requests_in_batch = states
        else:
            self.inputs_and_outputs.requests_in_batch = [FutureRequestState(s) for s in states]
        self.metrics.record_batch_metrics(states)  # the real engine passes the states themselves
        return True

    def _generation_step(self, model):
        self.forwards += 1
        return model


class ContinuousBatchingManager:
    def __init__(self):
        self.batch_processor = ContinuousBatchProcessor()
        self.model = "model"

    if OLD:
        def _generation_step(self, batch_processor):
            batch_processor.forwards += 1
    else:
        def _generation_step(self):
            self.batch_processor._generation_step(self.model)

    def iterate(self, states):
        self.batch_processor.prepare_next_batch(states)
        if OLD:
            self._generation_step(self.batch_processor)
        else:
            self._generation_step()

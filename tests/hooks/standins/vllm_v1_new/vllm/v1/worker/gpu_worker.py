"""Stand-in for vllm/v1/worker/gpu_worker.py as of vLLM 0.11+ (execute_model + split
sample_tokens + execute_dummy_batch). ``model`` is a callable run per step (the e2e test passes a
small torch transformer); ``calls`` records what the engine saw."""


class WorkerBase:
    pass


class Worker(WorkerBase):
    def __init__(self, model=None):
        self.model = model
        self.calls = []

    def execute_model(self, scheduler_output):
        self.calls.append(("execute_model", sorted(scheduler_output.num_scheduled_tokens)))
        if self.model is not None:
            self.model(scheduler_output)
        return None  # sampling happens in sample_tokens (0.11+)

    def sample_tokens(self, grammar_output):
        self.calls.append(("sample_tokens", grammar_output))
        return "sampled"

    def execute_dummy_batch(self):
        self.calls.append(("execute_dummy_batch", None))

"""Stand-in for vllm/v1/worker/gpu_worker.py as of vLLM 0.8/0.9 (no sample_tokens)."""


class Worker:
    def __init__(self, model=None):
        self.model = model
        self.calls = []

    def execute_model(self, scheduler_output):
        self.calls.append("execute_model")
        if self.model is not None:
            self.model(scheduler_output)
        return "output"

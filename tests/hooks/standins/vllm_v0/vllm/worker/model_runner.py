"""Stand-in for vllm/worker/model_runner.py (V0 engine, vLLM 0.4-0.10)."""
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ModelInputForGPUWithSamplingMetadata:
    input_tokens: object = None
    request_ids_to_seq_ids: dict = field(default_factory=dict)
    virtual_engine: int = 0


class GPUModelRunnerBase:
    pass


class ModelRunner(GPUModelRunnerBase):
    def __init__(self):
        self.calls = 0

    def execute_model(self, model_input, kv_caches, intermediate_tensors=None, num_steps=1,
                      **kwargs):
        self.calls += 1
        return ["output"]

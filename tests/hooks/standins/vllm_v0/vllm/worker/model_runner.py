"""Stand-in for vllm/worker/model_runner.py (V0 engine, vLLM 0.4-0.10): the model input carries
``attn_metadata`` (vllm.attention.backends.abstract.AttentionMetadata) and ``is_prompt`` (the first
seq_group_metadata's is_prompt, set by prepare_model_input)."""
from dataclasses import dataclass, field
from typing import Optional


@dataclass(frozen=True)
class ModelInputForGPUWithSamplingMetadata:
    input_tokens: object = None
    request_ids_to_seq_ids: dict = field(default_factory=dict)
    attn_metadata: object = None
    is_prompt: Optional[bool] = None
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

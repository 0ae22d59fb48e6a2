"""Stand-in for vllm/v1/core/sched/output.py as of vLLM 0.10/0.11 (one CachedRequestData with
req_ids; SchedulerOutput.num_scheduled_tokens keyed by internal id with random suffix;
scheduled_spec_decode_tokens lists speculative tokens per request)."""
from dataclasses import dataclass, field


@dataclass
class NewRequestData:
    req_id: str
    prompt_token_ids: list = field(default_factory=list)
    num_computed_tokens: int = 0  # prefix-cache hits


@dataclass
class CachedRequestData:
    req_ids: list
    resumed_req_ids: set = field(default_factory=set)
    new_token_ids: list = field(default_factory=list)
    num_computed_tokens: list = field(default_factory=list)  # parallel to req_ids

    @classmethod
    def make_empty(cls):
        return cls(req_ids=[])


@dataclass
class SchedulerOutput:
    scheduled_new_reqs: list
    scheduled_cached_reqs: CachedRequestData
    num_scheduled_tokens: dict
    total_num_scheduled_tokens: int
    scheduled_spec_decode_tokens: dict = field(default_factory=dict)  # req_id -> draft token ids
    finished_req_ids: set = field(default_factory=set)

    @classmethod
    def make_empty(cls):
        return cls([], CachedRequestData.make_empty(), {}, 0)

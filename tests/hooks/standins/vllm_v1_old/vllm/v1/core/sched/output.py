"""Stand-in for vllm/v1/core/sched/output.py as of vLLM 0.8/0.9 (scheduled_cached_reqs is a
list of CachedRequestData, each with req_id; request ids carry no random suffix)."""
from dataclasses import dataclass, field


@dataclass
class NewRequestData:
    req_id: str
    prompt_token_ids: list = field(default_factory=list)
    num_computed_tokens: int = 0


@dataclass
class CachedRequestData:
    req_id: str
    resumed_from_preemption: bool = False
    new_token_ids: list = field(default_factory=list)
    num_computed_tokens: int = 0


@dataclass
class SchedulerOutput:
    scheduled_new_reqs: list
    scheduled_cached_reqs: list
    num_scheduled_tokens: dict
    total_num_scheduled_tokens: int
    scheduled_spec_decode_tokens: dict = field(default_factory=dict)  # req_id -> draft token ids
    finished_req_ids: set = field(default_factory=set)

"""Stand-in for vllm/attention/backends/abstract.py (V0): the batch-shape counts every backend's
metadata carries (prefill requests and tokens, decode tokens) with chunked prefill."""
from dataclasses import dataclass


@dataclass
class AttentionMetadata:
    num_prefills: int
    num_prefill_tokens: int
    num_decode_tokens: int
    slot_mapping: object = None
    seq_lens: object = None  # list[int] per sequence (FlashAttentionMetadata and others)

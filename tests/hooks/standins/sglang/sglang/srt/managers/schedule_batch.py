"""Stand-in for sglang/srt/managers/schedule_batch.py (SGLang 0.4/0.5): Req.rid, ScheduleBatch.reqs,
ScheduleBatch.extend_num_tokens and seq_lens_sum, ScheduleBatch.forward_mode (sglang/srt/model_executor/forward_batch_info.py ForwardMode, whose
is_extend() is also true for MIXED and TARGET_VERIFY)."""
import enum


class ForwardMode(enum.IntEnum):
    EXTEND = 1
    DECODE = 2
    MIXED = 3
    IDLE = 4
    TARGET_VERIFY = 5

    def is_extend(self):
        return self in (ForwardMode.EXTEND, ForwardMode.MIXED, ForwardMode.TARGET_VERIFY)

    def is_decode(self):
        return self == ForwardMode.DECODE

    def is_mixed(self):
        return self == ForwardMode.MIXED

    def is_idle(self):
        return self == ForwardMode.IDLE

    def is_target_verify(self):
        return self == ForwardMode.TARGET_VERIFY


class Req:
    def __init__(self, rid):
        self.rid = rid


class ScheduleBatch:
    def __init__(self, reqs, forward_mode=ForwardMode.DECODE, extend_num_tokens=None,
                 seq_lens_sum=None):
        self.reqs = reqs
        self.forward_mode = forward_mode
        self.extend_num_tokens = extend_num_tokens  # set by prepare_for_extend
        self.seq_lens_sum = seq_lens_sum

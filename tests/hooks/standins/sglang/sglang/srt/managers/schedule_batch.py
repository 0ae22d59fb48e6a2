"""Stand-in for sglang/srt/managers/schedule_batch.py (SGLang 0.4/0.5): Req.rid, ScheduleBatch.reqs,
ForwardMode.is_idle()."""
import enum


class ForwardMode(enum.IntEnum):
    EXTEND = 1
    DECODE = 2
    IDLE = 4

    def is_idle(self):
        return self == ForwardMode.IDLE


class Req:
    def __init__(self, rid):
        self.rid = rid


class ScheduleBatch:
    def __init__(self, reqs, forward_mode=ForwardMode.DECODE):
        self.reqs = reqs
        self.forward_mode = forward_mode

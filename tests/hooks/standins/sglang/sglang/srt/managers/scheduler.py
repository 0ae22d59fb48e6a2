"""Stand-in for sglang/srt/managers/scheduler.py (SGLang 0.4/0.5): Scheduler.run_batch(batch)."""


class Scheduler:
    def __init__(self):
        self.forward_ct = 0

    def run_batch(self, batch, pp_proxy_tensors=None):
        self.forward_ct += 1
        if getattr(batch, "fail", False):
            raise RuntimeError("model failure inside the step")
        return "result"

"""Stand-in for transformers.utils.metrics (only what the hooks touch)."""


class ContinuousBatchProcessorMetrics:
    def __init__(self):
        self.batches = 0

    def record_batch_metrics(self, requests_in_batch):
        self.batches += 1

"""Workload for the end-to-end test (run with the hooks enabled by PYTHONPATH): a small
randomly initialised transformer driven by the stand-in vLLM V1 Worker for a few steps, each
scheduling a different request set and ending with a (stand-in) pynccl all-reduce. Prints the
request sets it used as JSON."""

import json
import sys

import torch

from vllm.distributed.device_communicators.pynccl import PyNcclCommunicator
from vllm.v1.core.sched.output import CachedRequestData, NewRequestData, SchedulerOutput
from vllm.v1.worker.gpu_worker import Worker


class TinyLM(torch.nn.Module):
    """Embedding -> 2 transformer encoder layers -> LM head; ~40k parameters."""

    def __init__(self, vocab=64, dim=32):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        layer = torch.nn.TransformerEncoderLayer(dim, nhead=4, dim_feedforward=64,
                                                 batch_first=True)
        self.layers = torch.nn.ModuleList([layer, torch.nn.TransformerEncoderLayer(
            dim, nhead=4, dim_feedforward=64, batch_first=True)])
        self.norm = torch.nn.LayerNorm(dim)
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, tokens):
        h = self.embed(tokens)
        for layer in self.layers:
            h = layer(h)
        return torch.nn.functional.softmax(self.head(self.norm(h)), dim=-1)


def main():
    torch.manual_seed(0)
    model = TinyLM().eval()

    comm = PyNcclCommunicator(world_size=2)

    def run(scheduler_output):
        batch = len(scheduler_output.num_scheduled_tokens)
        with torch.no_grad():
            model(torch.randint(0, 64, (batch, 8)))
            comm.all_reduce(torch.ones(256))  # 1024 bytes of float32 ("tensor parallel")

    worker = Worker(model=run)
    steps = [["cmpl-a-0-0123abcd", "req_b-89abcdef"], ["cmpl-a-0-0123abcd"],
             ["req_b-89abcdef", "c\\d-00000000"]]
    for ids in steps:
        out = SchedulerOutput([NewRequestData(i) for i in ids], CachedRequestData([]),
                              {i: 8 for i in ids}, 8 * len(ids))
        worker.execute_model(out)
        worker.sample_tokens(None)
    json.dump({"steps": [[i.rsplit("-", 1)[0] for i in ids] for ids in steps]}, sys.stdout)


if __name__ == "__main__":
    main()

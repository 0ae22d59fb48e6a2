#!/usr/bin/env python3
"""Small PyTorch forward loop for the overhead comparison (tests/gpu/overhead.py).

Usage: torch_loop.py [--iters N] [--profiler]
Runs a 4-layer MLP + layer norm forward pass N times on the GPU inside NVTX step ranges and
prints elapsed_s=<seconds>. With --profiler the loop runs under torch.profiler (CPU+CUDA).
"""
import argparse
import contextlib
import time

import torch


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--profiler", action="store_true")
    args = ap.parse_args()
    dev = torch.device("cuda")
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024),
        torch.nn.LayerNorm(1024), torch.nn.Linear(1024, 4096), torch.nn.GELU(),
        torch.nn.Linear(4096, 1024)).to(dev).half()
    x = torch.randn(64, 1024, device=dev, dtype=torch.half)
    with torch.no_grad():
        for _ in range(10):
            model(x)
    torch.cuda.synchronize()
    ctx = contextlib.nullcontext()
    if args.profiler:
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        ctx = torch.profiler.profile(activities=acts)
    t0 = time.perf_counter()
    with ctx, torch.no_grad():
        for i in range(args.iters):
            torch.cuda.nvtx.range_push(f"step_execute_model[request_ids:{i}]")
            model(x)
            torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
    print(f"elapsed_s={time.perf_counter() - t0:.6f}")


if __name__ == "__main__":
    main()

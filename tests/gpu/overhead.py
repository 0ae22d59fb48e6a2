#!/usr/bin/env python3
"""Overhead of truffld tracing on the GPU workload and on a PyTorch forward loop.

Usage: overhead.py --workload BIN --injector LIB [--runs 5] [--torch-loop torch_loop.py]
                   [--python python3] [--out DIR]

Each configuration runs --runs times (>= 5); the median elapsed time (printed by the programs as
elapsed_s=...) is compared with the untraced median:
  workload:   none | truffld (CUDA_INJECTION64_PATH + NVTX_INJECTION64_PATH)
  torch loop: none | truffld | torch.profiler
Prints one line per configuration with the median and the ratio to "none".
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile


def elapsed(cmd, env):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    m = re.search(r"elapsed_s=([0-9.]+)", p.stdout)
    if p.returncode != 0 or not m:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return float(m.group(1))


def measure(name, cmd, env, runs, baseline=None):
    times = [elapsed(cmd, env) for _ in range(runs)]
    med = statistics.median(times)
    ratio = f"{med / baseline:.3f}x" if baseline else "1.000x"
    print(f"{name:<28} median {med:9.4f} s over {runs} runs  ratio {ratio}  runs={['%.4f' % t for t in times]}")
    return med


def traced_env(injector, out):
    env = dict(os.environ)
    env.update({"CUDA_INJECTION64_PATH": injector, "NVTX_INJECTION64_PATH": injector,
                "TRUFFLD_OUTPUT_DIR": out})
    return env


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", required=True)
    ap.add_argument("--injector", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--torch-loop")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    runs = max(5, args.runs)
    out = args.out or tempfile.mkdtemp(prefix="truffld-overhead-")
    plain = dict(os.environ)
    for k in ("CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"):
        plain.pop(k, None)
    wl = [args.workload, "--quiet", "--steps", "50", "--replays", "50"]
    base = measure("workload: none", wl, plain, runs)
    measure("workload: truffld", wl, traced_env(args.injector, os.path.join(out, "wl")), runs, base)
    if args.torch_loop:
        try:
            tl = [args.python, args.torch_loop]
            tbase = measure("torch loop: none", tl, plain, runs)
            measure("torch loop: truffld", tl, traced_env(args.injector, os.path.join(out, "torch")), runs, tbase)
            measure("torch loop: torch.profiler", tl + ["--profiler"], plain, runs, tbase)
        except (RuntimeError, FileNotFoundError) as e:
            print(f"SKIP torch loop: {e}")
    if not args.out:
        shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Overhead of truffld tracing on the GPU workload and on a PyTorch forward loop.

Usage: overhead.py --workload BIN --injector LIB [--runs 5] [--torch-loop torch_loop.py]
                   [--python python3] [--variants] [--out DIR]

Each configuration runs --runs times (>= 5). Two times per run: `loop`, the traced part as the
program itself measures it (elapsed_s=..., after CUDA and CUPTI are initialised), and `process`,
the whole process wall time from here (includes loading CUPTI, context creation and the final
flush). Medians are compared with the untraced configuration:
  workload:    none | truffld (CUDA_INJECTION64_PATH + NVTX_INJECTION64_PATH)
  launch loop: the workload's --launches mode (200000 empty kernels): cost per kernel launch
  torch loop: none | truffld | torch.profiler (CPU+CUDA activities, inside the loop's window)
With --variants, truffld is also run with parts switched off or on, to show where the cost is:
  nvtx only (TRUFFLD_CUPTI=0), activity only (TRUFFLD_CUPTI_API=none), every API call
  (TRUFFLD_CUPTI_API_SET=all) instead of the default essential set, and sampled device windows
  (TRUFFLD_DEVICE_WINDOWS=steps:10: kernels of one step in ten; =off: no device activity).
Configurations take turns run by run, so slow drift of the machine does not favour one.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def elapsed(cmd, env):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    m = re.search(r"elapsed_s=([0-9.]+)", p.stdout)
    if p.returncode != 0 or not m:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return float(m.group(1)), wall


def row(name, times, base=None, per=None):
    """Prints one configuration: medians of loop and process time, ratios to `base`."""
    loop = statistics.median(t for t, _ in times)
    proc = statistics.median(w for _, w in times)
    ratio = (f"loop {loop / base[0]:.3f}x  process {proc / base[1]:.3f}x" if base
             else "loop 1.000x  process 1.000x")
    print(f"{name:<36} loop median {loop:8.4f} s  process {proc:7.3f} s  {ratio}  "
          f"loops={['%.4f' % t for t, _ in times]}", flush=True)
    if base and per:
        print(f"{'':<36} {(loop - base[0]) * 1e9 / per:+8.0f} ns per iteration ({per} iterations)")
    return loop, proc


def traced_env(injector, out, **extra):
    env = dict(os.environ)
    env.update({"CUDA_INJECTION64_PATH": injector, "NVTX_INJECTION64_PATH": injector,
                "TRUFFLD_OUTPUT_DIR": out})
    env.update(extra)
    return env


VARIANTS = [("nvtx only", {"TRUFFLD_CUPTI": "0"}),
            ("activity only", {"TRUFFLD_CUPTI_API": "none"}),
            ("all API calls", {"TRUFFLD_CUPTI_API_SET": "all"}),
            ("device windows steps:10", {"TRUFFLD_DEVICE_WINDOWS": "steps:10"}),
            ("device windows off", {"TRUFFLD_DEVICE_WINDOWS": "off"})]


def run_all(label, cmd, plain, injector, out, runs, variants, profiler_cmd=None, per=None):
    """Times `cmd` untraced, traced, and (--variants) traced with parts off. Configurations take
    turns run by run (none, truffld, ..., none, truffld, ...), so that drift of the machine
    (clocks, other tenants) spreads over all of them instead of favouring one."""
    configs = [("none", cmd, plain), ("truffld", cmd, traced_env(injector, out))]
    if variants:
        configs += [(f"truffld {n}", cmd, traced_env(injector, out, **e)) for n, e in VARIANTS]
    if profiler_cmd:
        configs.append(("torch.profiler", profiler_cmd, plain))
    times = {name: [] for name, _, _ in configs}
    for _ in range(runs):
        for name, c, env in configs:
            times[name].append(elapsed(c, env))
    base = row(f"{label}: none", times["none"])
    for name, _, _ in configs[1:]:
        row(f"{label}: {name}", times[name], base, None if name == "torch.profiler" else per)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", required=True)
    ap.add_argument("--injector", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--torch-loop")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--variants", action="store_true", help="also time truffld with parts switched off")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    runs = max(5, args.runs)
    out = args.out or tempfile.mkdtemp(prefix="truffld-overhead-")
    plain = dict(os.environ)
    for k in ("CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"):
        plain.pop(k, None)
    wl = [args.workload, "--quiet", "--steps", "50", "--replays", "50"]
    run_all("workload", wl, plain, args.injector, os.path.join(out, "wl"), runs, args.variants)
    launches = 200000
    ll = [args.workload, "--launches", str(launches)]
    run_all("launch loop", ll, plain, args.injector, os.path.join(out, "ll"), runs, args.variants,
            per=launches)
    if args.torch_loop:
        try:
            tl = [args.python, args.torch_loop, "--iters", "3000"]
            run_all("torch loop", tl, plain, args.injector, os.path.join(out, "torch"), runs,
                    args.variants, tl + ["--profiler"], per=3000)
        except (RuntimeError, FileNotFoundError) as e:
            print(f"SKIP torch loop: {e}")
    if not args.out:
        shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

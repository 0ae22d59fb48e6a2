#!/usr/bin/python3
"""Median model-step CPU of a traced process against an untraced one, step by step.

The eager small-op model of tests/bench/hooks_windows_bench.py (8 blocks, 4x64, one thread) runs
550 steps in a fresh process per setting, settings interleaved round by round: untraced; the
hooks imported with the stand-in NVTX tool answering "never a window" and each forward inside
``truffld_hooks.step_range`` (the always-on tier's boundary, no detail window ever); the same
without steps (a stepless program keeps every layer on, as documented). Each process reports the
median thread CPU of its last 500 steps; printed: per setting the median over rounds and the
median paired ratio to untraced with its range. Run from the build folder:

    /usr/bin/python3 ../tests/bench/hooks_step_probe.py --rounds 12

Needs inject/pynvtx/libtruffld_pynvtx.so and tests/hooks/libtruffld_test_nvtx_tool.so there.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hooks_windows_bench.py")
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def model_source():
    """The model definition of hooks_windows_bench.py's child (one copy of the model)."""
    text = open(CHILD).read()
    child = text.split('CHILD = r"""', 1)[1]
    start = child.index("class Block")
    end = child.index("steps, warmup")
    return "import torch, torch.nn.functional as F\n" + child[start:end]


RUN = r"""
import json, os, statistics, time
import torch
torch.set_num_threads(1)
mode = os.environ["PROBE_MODE"]
if mode != "plain":
    import truffld_hooks
exec(os.environ["PROBE_MODEL_SRC"])
per = []
with torch.no_grad():
    for i in range(550):
        c0 = time.thread_time_ns()
        if mode == "steps":
            with truffld_hooks.step_range(ids, phase="decode", tokens=4, ctx=64 + 4 * i):
                model(x)
        else:
            model(x)
        per.append(time.thread_time_ns() - c0)
print(json.dumps(statistics.median(per[50:])))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=12)
    args = parser.parse_args()
    for need in ("inject/pynvtx/libtruffld_pynvtx.so", "tests/hooks/libtruffld_test_nvtx_tool.so"):
        if not os.path.exists(need):
            sys.exit("hooks_step_probe: %s not found: run from a build folder" % need)
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("TRUFFLD_", "NVTX_", "CUDA_INJECTION", "FAKE_"))}
    base.pop("PYTHONPATH", None)
    base.update(OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1", PROBE_MODEL_SRC=model_source())
    hooks = dict(base, PYTHONPATH=os.path.join(SRC, "inject", "python"),
                 TRUFFLD_PYNVTX_LIB=os.path.abspath("inject/pynvtx/libtruffld_pynvtx.so"),
                 NVTX_INJECTION64_PATH=os.path.abspath("tests/hooks/libtruffld_test_nvtx_tool.so"),
                 FAKE_DETAIL_WINDOW="0", TRUFFLD_HOOKS_WINDOWS="1")
    settings = {"untraced": dict(base, PROBE_MODE="plain"),
                "hooks, steps, no window": dict(hooks, PROBE_MODE="steps"),
                "hooks, no steps": dict(hooks, PROBE_MODE="imported")}
    medians = {k: [] for k in settings}
    for r in range(args.rounds):
        for name, env in settings.items():
            out = subprocess.run([sys.executable, "-c", RUN], env=env, capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit("hooks_step_probe: %s failed:\n%s" % (name, out.stderr[-2000:]))
            medians[name].append(json.loads(out.stdout))
        print("round %d/%d done" % (r + 1, args.rounds), file=sys.stderr)
    print("%d rounds; load average %s" % (args.rounds, open("/proc/loadavg").read().split()[:3]))
    for name, values in medians.items():
        ratios = sorted(a / b for a, b in zip(values, medians["untraced"]))
        print("%-24s median step %.1f us, paired ratio median %.4f (range %.3f-%.3f)"
              % (name, statistics.median(values) / 1e3, statistics.median(ratios), ratios[0], ratios[-1]))


if __name__ == "__main__":
    main()

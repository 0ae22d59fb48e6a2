#!/usr/bin/python3
"""Median model-step CPU of a traced process against an untraced one, step by step.

The eager small-op model of tests/bench/hooks_windows_bench.py (8 blocks, 4x64, one thread) runs
50 warm-up steps and --steps timed ones (500) in a fresh process per setting, settings interleaved
round by round: untraced; the hooks imported with the stand-in NVTX tool answering "never a
window" and each forward inside ``truffld_hooks.step_range`` (the always-on tier's boundary, no
detail window ever); the same without steps (a stepless program keeps every layer on, as
documented); and, with --injector, what ``tools/truffld-env`` sets (the real injector and its
writer thread): with its default windows, and with no window at all
(``TRUFFLD_DEVICE_WINDOWS=requested``, ``TRUFFLD_WINDOW_SLOW=0``), which is the always-on tier
alone; --plan PLAN adds the injector with TRUFFLD_DEVICE_WINDOWS=PLAN (another plan beside the
default, in the same rounds). Each process reports the median thread CPU of its timed steps and the process's CPU time
over them (writer thread included); printed: per setting the medians over rounds and the median
paired ratios to untraced with their 95 % bootstrap intervals (paired_ratio.py) and ranges. Run from the build folder:

    /usr/bin/python3 ../tests/bench/hooks_step_probe.py --rounds 12 [--steps 2000 --injector]

Needs inject/pynvtx/libtruffld_pynvtx.so and tests/hooks/libtruffld_test_nvtx_tool.so there.
"""
import argparse
import json
import os
import statistics
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paired_ratio import bootstrap_median_ci  # noqa: E402

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
    for i in range(50 + int(os.environ["PROBE_STEPS"])):
        if i == 50:
            p0 = time.process_time()
        c0 = time.thread_time_ns()
        if mode == "steps":
            with truffld_hooks.step_range(ids, phase="decode", tokens=4, ctx=64 + 4 * i):
                model(x)
        else:
            model(x)
        per.append(time.thread_time_ns() - c0)
print(json.dumps([statistics.median(per[50:]), time.process_time() - p0]))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--steps", type=int, default=500, help="timed steps per process (after 50 warm-up)")
    parser.add_argument("--injector", action="store_true",
                        help="add the real injector's settings (tools/truffld-env): default windows, and none")
    parser.add_argument("--plan", action="append", default=[],
                        help="with --injector: also the injector with this window plan (repeatable)")
    args = parser.parse_args()
    for need in ("inject/pynvtx/libtruffld_pynvtx.so", "tests/hooks/libtruffld_test_nvtx_tool.so"):
        if not os.path.exists(need):
            sys.exit("hooks_step_probe: %s not found: run from a build folder" % need)
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("TRUFFLD_", "NVTX_", "CUDA_INJECTION", "FAKE_"))}
    base.pop("PYTHONPATH", None)
    child = dict(OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1", PROBE_MODEL_SRC=model_source(),
                 PROBE_STEPS=str(args.steps))  # every setting's child
    base.update(child)
    hooks = dict(base, PYTHONPATH=os.path.join(SRC, "inject", "python"),
                 TRUFFLD_PYNVTX_LIB=os.path.abspath("inject/pynvtx/libtruffld_pynvtx.so"),
                 NVTX_INJECTION64_PATH=os.path.abspath("tests/hooks/libtruffld_test_nvtx_tool.so"),
                 FAKE_DETAIL_WINDOW="0", TRUFFLD_HOOKS_WINDOWS="1")
    settings = {"untraced": dict(base, PROBE_MODE="plain"),
                "hooks, steps, no window": dict(hooks, PROBE_MODE="steps"),
                "hooks, no steps": dict(hooks, PROBE_MODE="imported")}
    out_dir = tempfile.mkdtemp(prefix="hooks_step_probe_")
    if args.injector:
        sys.path.insert(0, os.path.dirname(CHILD))
        import hooks_windows_bench  # noqa: E402  (beside this file: truffld_env)
        env = hooks_windows_bench.truffld_env(".", "--output-dir", out_dir)
        if env is None:
            sys.exit("hooks_step_probe: tools/truffld-env --build-dir . failed (no injector built?)")
        env.update(child, PROBE_MODE="steps")
        settings["injector, default windows"] = env
        settings["injector, no window"] = dict(env, TRUFFLD_DEVICE_WINDOWS="requested", TRUFFLD_WINDOW_SLOW="0")
        for plan in args.plan:
            settings["injector, " + plan] = dict(env, TRUFFLD_DEVICE_WINDOWS=plan)
    elif args.plan:
        sys.exit("hooks_step_probe: --plan needs --injector")
    medians = {k: [] for k in settings}
    for r in range(args.rounds):
        for name, env in settings.items():
            out = subprocess.run([sys.executable, "-c", RUN], env=env, capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit("hooks_step_probe: %s failed:\n%s" % (name, out.stderr[-2000:]))
            medians[name].append(json.loads(out.stdout))
            shutil.rmtree(out_dir, ignore_errors=True)  # the injector's dumps are not needed
            os.makedirs(out_dir, exist_ok=True)
        print("round %d/%d done" % (r + 1, args.rounds), file=sys.stderr)
    shutil.rmtree(out_dir, ignore_errors=True)
    print("%d rounds of %d timed steps; load average %s"
          % (args.rounds, args.steps, open("/proc/loadavg").read().split()[:3]))
    for name, values in medians.items():
        step = sorted(a[0] / b[0] for a, b in zip(values, medians["untraced"]))
        cpu = sorted(a[1] / b[1] for a, b in zip(values, medians["untraced"]))
        _, s_lo, s_hi = bootstrap_median_ci(step)
        _, c_lo, c_hi = bootstrap_median_ci(cpu)
        print("%-26s median step %.1f us, paired ratio median %.4f (95%% bootstrap %.4f-%.4f, range "
              "%.3f-%.3f); process CPU paired ratio median %.4f (95%% bootstrap %.4f-%.4f, range %.3f-%.3f)"
              % (name, statistics.median(v[0] for v in values) / 1e3, statistics.median(step), s_lo, s_hi,
                 step[0], step[-1], statistics.median(cpu), c_lo, c_hi, cpu[0], cpu[-1]))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Capture overhead on a real serving engine and on an eager PyTorch loop, interleaved.

Usage: engine_overhead.py --injector LIB --hooks DIR [--pynvtx LIB] [--rounds 10] [--json FILE]
                          [--settings off,two-tier,all] [--budget-s S]
                          [--workload LABEL=CMD ...]   (CMD: serve_cb.py ... or torch_loop.py ...)
                          [--engine-cmd CMD] [--loop-cmd CMD]   (shorthands for --workload)

Capture settings (each a fresh process; settings take turns round by round, so slow drift of
the machine spreads over all of them):
  off          nothing: no hooks, no injector
  hooks only   the Python hooks on PYTHONPATH, no injector (their NVTX calls go nowhere)
  nvtx only    hooks + injector with TRUFFLD_CUPTI=0 (NVTX ranges, steps; no CUDA activity)
  two-tier     what truffld-env sets by default: steps, communication and blocking calls always;
               operator ranges, API calls and device activity in detail windows
               (TRUFFLD_DEVICE_WINDOWS as truffld-env's default, read from tools/truffld-env)
  all          hooks + injector with every layer always on (TRUFFLD_DEVICE_WINDOWS=all)
  full         all + TRUFFLD_CUPTI_API_SET=all (every runtime and driver call)
  windows      all + TRUFFLD_DEVICE_WINDOWS=steps:10 (device activity of one step in ten)
A workload whose command runs serve_cb.py reports serving throughput (generated tokens/s, the
last stdout line's JSON); any other prints elapsed_s=S. Per setting: the median of the paired
per-round ratios to "off" with a bootstrap 95 % interval (tests/bench/paired_ratio.py); 1.05x
means the setting costs 5 %. The JSON report is rewritten after every round, and no round starts
once --budget-s seconds have passed, so a run cut short still leaves every finished round.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "bench"))
import paired_ratio  # noqa: E402


def truffld_env_default_windows():
    """The TRUFFLD_DEVICE_WINDOWS value truffld-env exports by default ('all' when it sets none)."""
    try:
        with open(os.path.join(ROOT, "tools", "truffld-env")) as handle:
            match = re.search(r"^windows=([^\s#]+)", handle.read(), re.M)
    except OSError:
        match = None
    return match.group(1) if match else "all"


SETTINGS = {"off": None, "hooks only": {}, "nvtx only": {"TRUFFLD_CUPTI": "0"},
            "two-tier": {"TRUFFLD_DEVICE_WINDOWS": truffld_env_default_windows(), "TRUFFLD_HOOKS_WINDOWS": "1"},
            "all": {"TRUFFLD_DEVICE_WINDOWS": "all", "TRUFFLD_HOOKS_WINDOWS": "0"},
            "full": {"TRUFFLD_DEVICE_WINDOWS": "all", "TRUFFLD_HOOKS_WINDOWS": "0", "TRUFFLD_CUPTI_API_SET": "all"},
            "windows": {"TRUFFLD_DEVICE_WINDOWS": "steps:10", "TRUFFLD_HOOKS_WINDOWS": "0"}}


def environment(args, name, out):
    extra = SETTINGS[name]
    env = {k: v for k, v in os.environ.items()  # where CUPTI lives is kept, not a setting
           if k == "TRUFFLD_CUPTI_LIBRARY" or not k.startswith(("TRUFFLD", "CUDA_INJECTION", "NVTX_INJECTION"))}
    env.pop("PYTHONPATH", None)
    if extra is None:
        return env
    env["PYTHONPATH"] = args.hooks
    if args.pynvtx:
        env["TRUFFLD_PYNVTX_LIB"] = args.pynvtx
    if name == "hooks only":
        return env
    env.update({"NVTX_INJECTION64_PATH": args.injector, "CUDA_INJECTION64_PATH": args.injector,
                "TRUFFLD_OUTPUT_DIR": out})
    env.update(extra)
    return env


def measure(cmd, env, engine):
    """(value, wall seconds): tokens/s for the engine, elapsed_s for a loop."""
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s\n%s" % (cmd, proc.returncode, proc.stdout[-2000:],
                                                       proc.stderr[-3000:]))
    if engine:
        return json.loads(proc.stdout.strip().splitlines()[-1])["tokens_per_s"], wall
    match = re.search(r"elapsed_s=([0-9.]+)", proc.stdout)
    if not match:
        raise RuntimeError("%s printed no elapsed_s=:\n%s" % (cmd, proc.stdout[-2000:]))
    return float(match.group(1)), wall


def rows(values, engine):
    out = []
    for name, vals in values.items():
        summary = paired_ratio.summarise([v for v, _ in values["off"]], [v for v, _ in vals], engine)
        summary.update({"setting": name, "values": [round(v, 4) for v, _ in vals],
                        "wall_s": [round(w, 2) for _, w in vals]})
        out.append(summary)
    return out


def run(args, workloads, report):
    values = {label: {name: [] for name in args.settings} for label, _ in workloads}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="truffld-ovh-") as out:
        for r in range(args.rounds):
            if r and time.monotonic() - t0 > args.budget_s:
                print("budget of %.0f s spent: %d rounds" % (args.budget_s, r), flush=True)
                break
            for label, cmd in workloads:
                engine = "serve_cb" in cmd
                for name in args.settings:
                    values[label][name].append(measure(shlex.split(cmd), environment(args, name, out), engine))
                    for f in os.listdir(out):  # the dumps are not what is measured here
                        os.unlink(os.path.join(out, f))
                report["workloads"][label] = {"cmd": cmd, "unit": "tokens/s" if engine else "s",
                                              "rows": rows(values[label], engine)}
            report["rounds"] = r + 1
            write(args, report)
            print("round %d done at %.0f s" % (r + 1, time.monotonic() - t0), flush=True)


def write(args, report):
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(report, handle, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--injector", required=True)
    ap.add_argument("--hooks", required=True, help="the folder holding truffld_hooks (inject/python)")
    ap.add_argument("--pynvtx")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--settings", default="off,two-tier,all")
    ap.add_argument("--budget-s", type=float, default=1e9)
    ap.add_argument("--workload", action="append", default=[], metavar="LABEL=CMD")
    ap.add_argument("--engine-cmd")
    ap.add_argument("--loop-cmd")
    ap.add_argument("--json")
    args = ap.parse_args()
    args.settings = [s.strip() for s in args.settings.split(",") if s.strip()]
    bad = [s for s in args.settings if s not in SETTINGS]
    if bad or "off" not in args.settings:
        ap.error("--settings needs 'off' and names from %s (got %s)" % (", ".join(SETTINGS), bad or args.settings))
    workloads = [tuple(w.split("=", 1)) for w in args.workload if "=" in w]
    if len(workloads) != len(args.workload):
        ap.error("--workload takes LABEL=CMD")
    workloads += [(label, cmd) for label, cmd in (("engine", args.engine_cmd), ("eager loop", args.loop_cmd)) if cmd]
    if not workloads:
        ap.error("no workload: give --workload, --engine-cmd or --loop-cmd")
    report = {"rounds": 0, "settings": args.settings, "two_tier_windows": SETTINGS["two-tier"]["TRUFFLD_DEVICE_WINDOWS"],
              "workloads": {}}
    try:
        run(args, workloads, report)
    except (RuntimeError, subprocess.TimeoutExpired, ValueError, KeyError) as exc:
        print("FAIL: %s" % exc, flush=True)
        report["error"] = str(exc)[-2000:]
        write(args, report)
        return 1
    for label, data in report["workloads"].items():
        for row in data["rows"]:
            print("%-14s %-10s %s" % (label, row["setting"], paired_ratio.describe(row)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

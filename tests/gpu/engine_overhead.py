#!/usr/bin/env python3
"""Capture overhead on a real serving engine and on an eager PyTorch loop, interleaved.

Usage: engine_overhead.py --injector LIB --hooks DIR [--pynvtx LIB] [--rounds 2] [--json FILE]
                          [--engine-cmd "python3 serve_cb.py ..."] [--loop-cmd "python3 torch_loop.py ..."]

Capture settings (each a fresh process; settings take turns round by round, so slow drift of
the machine spreads over all of them):
  off          nothing: no hooks, no injector
  hooks only   the Python hooks on PYTHONPATH, no injector (their NVTX calls go nowhere)
  nvtx only    hooks + injector with TRUFFLD_CUPTI=0 (NVTX ranges, steps; no CUDA activity)
  default      hooks + injector with everything on (essential API set, all device activity, every
               hook layer): what truffld-env set before two-tier, now ``--capture all``
  full         default + TRUFFLD_CUPTI_API_SET=all (every runtime and driver call)
  windows      default + TRUFFLD_DEVICE_WINDOWS=steps:10 (device activity of one step in ten)
  two-tier     what truffld-env sets by default: TRUFFLD_DEVICE_WINDOWS=steps:500:2 and
               TRUFFLD_HOOKS_WINDOWS=1 (operator and device detail only inside the windows,
               when the injector exports truffld_detail_window)
The engine reports its serving throughput (generated tokens/s, the last stdout line's JSON);
the loop its elapsed_s. Medians per setting, and the ratio to "off" (engine: off/x, so 1.05x
means 5 % fewer tokens per second).
"""
import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

SETTINGS = [("off", None), ("hooks only", {}), ("nvtx only", {"TRUFFLD_CUPTI": "0"}),
            ("default", {"INJECT": "1"}), ("full", {"TRUFFLD_CUPTI_API_SET": "all"}),
            ("windows", {"TRUFFLD_DEVICE_WINDOWS": "steps:10"}),
            ("two-tier", {"TRUFFLD_DEVICE_WINDOWS": "steps:500:2", "TRUFFLD_HOOKS_WINDOWS": "1"})]


def environment(args, name, extra, out):
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
    env.update({k: v for k, v in extra.items() if k != "INJECT"})
    return env


def measure(cmd, env, kind):
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s\n%s" % (cmd, proc.returncode, proc.stdout[-2000:],
                                                       proc.stderr[-3000:]))
    if kind == "engine":
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        return result["tokens_per_s"], wall
    match = re.search(r"elapsed_s=([0-9.]+)", proc.stdout)
    return float(match.group(1)), wall


def run(args, label, cmd, kind):
    values = {name: [] for name, _ in SETTINGS}
    with tempfile.TemporaryDirectory(prefix="truffld-ovh-") as out:
        for _ in range(args.rounds):
            for name, extra in SETTINGS:
                values[name].append(measure(cmd, environment(args, name, extra, out), kind))
                for f in os.listdir(out):  # the dumps are not what is measured here
                    os.unlink(os.path.join(out, f))
    base = statistics.median(v for v, _ in values["off"])
    rows = []
    for name, _ in SETTINGS:
        med = statistics.median(v for v, _ in values[name])
        ratio = base / med if kind == "engine" else med / base
        rows.append({"setting": name, "median": med, "ratio": round(ratio, 4),
                     "values": [v for v, _ in values[name]], "process_s": [round(w, 2) for _, w in values[name]]})
        unit = "tokens/s" if kind == "engine" else "s"
        print("%-12s %-11s median %10.3f %-8s %.3fx  %s" % (label, name, med, unit, ratio,
                                                          [round(v, 3) for v, _ in values[name]]), flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--injector", required=True)
    ap.add_argument("--hooks", required=True, help="the folder holding truffld_hooks (inject/python)")
    ap.add_argument("--pynvtx")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--engine-cmd")
    ap.add_argument("--loop-cmd")
    ap.add_argument("--json")
    args = ap.parse_args()
    report = {"rounds": args.rounds}
    for label, cmd, kind in (("engine", args.engine_cmd, "engine"), ("eager loop", args.loop_cmd, "loop")):
        if not cmd:
            continue
        try:
            report[kind] = {"cmd": cmd, "rows": run(args, label, shlex.split(cmd), kind)}
        except (RuntimeError, subprocess.TimeoutExpired, ValueError, KeyError) as exc:
            print("FAIL %s: %s" % (label, exc), flush=True)
            report[kind] = {"cmd": cmd, "error": str(exc)[-2000:]}
        if args.json:
            with open(args.json, "w") as handle:
                json.dump(report, handle, indent=1)
    return 0 if all("error" not in v for v in report.values() if isinstance(v, dict)) else 1


if __name__ == "__main__":
    sys.exit(main())

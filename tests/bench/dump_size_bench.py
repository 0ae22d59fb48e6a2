"""Benchmark (ctest label bench): dump size per rank-step in each capture mode (issue #41).

The workload of hooks_windows_bench.py (8 small transformer blocks on Debian's CPU torch, each
forward one engine step through truffld_hooks.step_range with 4 request ids and tags) runs
under the real injector with the variables `truffld-env` prints, once per mode:
  always-on only  two tiers with no window at all (--windows requested, TRUFFLD_WINDOW_SLOW=0):
                  steps, the time between them, the essential API calls; a step outside windows
  two-tier        truffld-env's default (cost:0.5:2): always-on plus 2-step windows as often as
                  keeps them within 0.5 % of the step time (every 2,048 steps on this model,
                  512 until the first window was measured: run 4,096 steps or more to see it)
  two-tier 500:2  a fixed plan (2 detail steps in 500)
  two-tier 50:2   a denser plan (2 detail steps in 50)
  all             --capture all: every layer on every step
For each mode: dump bytes per step (plain JSONL as written, and compressed by zstd level 3 as
TRUFFLD_COMPRESS=zstd writes it, measured by compressing the plain dump with the `zstd` tool),
records per step, and for the two-tier modes the steps inside detail windows. On a GPU each
detail step also holds its kernels, copies and memsets (one record each, about 250 bytes): add
them per window step. Never asserts a size.

Run: /usr/bin/python3 tests/bench/dump_size_bench.py --build build [--steps 4096]
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hooks_windows_bench as hwb  # noqa: E402  (the workload and truffld-env's variables)

# (label, truffld-env arguments, extra variables); the always-on row also turns the slow-step
# trigger off, so no window opens at all.
MODES = (("always-on only", ("--windows", "requested"), {"TRUFFLD_WINDOW_SLOW": "0"}), ("two-tier", (), {}),
         ("two-tier 500:2", ("--windows", "steps:500:2"), {}), ("two-tier 50:2", ("--windows", "steps:50:2"), {}),
         ("all", ("--capture", "all"), {}))


def zstd_bytes(path):
    proc = subprocess.run(["zstd", "-3", "-c", "-q", path], capture_output=True)
    return len(proc.stdout) if proc.returncode == 0 else None


def measure(build, label, args, extra, steps, warmup):
    with tempfile.TemporaryDirectory() as out:
        env = hwb.truffld_env(build, "--output-dir", out, *args)
        if env is None:
            sys.exit("tools/truffld-env --build-dir %s failed (no injector built?)" % build)
        env.update(extra)
        env.update(BENCH_TRACED="1", OMP_NUM_THREADS="1", BENCH_STEPS=str(steps), BENCH_WARMUP=str(warmup))
        proc = subprocess.run([hwb.hookstest.PYTHON, "-c", hwb.CHILD], env=env, capture_output=True,
                              text=True, timeout=900)
        if proc.returncode != 0:
            sys.exit("%s: workload failed:\n%s" % (label, proc.stderr[-3000:]))
        run = json.loads(proc.stdout.splitlines()[-1])
        dumps = glob.glob(os.path.join(out, "truffld-*.jsonl"))
        if len(dumps) != 1:
            sys.exit("%s: expected one dump in %s, got %s" % (label, out, dumps))
        size = os.path.getsize(dumps[0])
        with open(dumps[0], "rb") as f:
            records = sum(1 for _ in f)
        total = steps + warmup
        inside = sum(1 for i in run.get("inside") or [] if i)
        return {"mode": label, "args": " ".join(list(args) + ["%s=%s" % kv for kv in extra.items()]) or "(default)", "steps": total,
                "bytes_per_step": size / total, "zstd_bytes_per_step": (zstd_bytes(dumps[0]) or 0) / total,
                "records_per_step": records / total, "timed_steps_in_windows": inside}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.environ.get("TRUFFLD_BUILD_DIR", ""))
    parser.add_argument("--steps", type=int, default=4096)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--json", help="write the rows here")
    a = parser.parse_args()
    if not a.build or not os.path.isdir(a.build):
        print("SKIP: no build directory (--build)")
        return 77
    if subprocess.run([hwb.hookstest.PYTHON, "-c", "import torch"], capture_output=True).returncode:
        print("SKIP: torch is not importable by %s" % hwb.hookstest.PYTHON)
        return 77
    rows = [measure(a.build, label, args, extra, a.steps, a.warmup) for label, args, extra in MODES]
    print("| mode | truffld-env | bytes / step | zstd bytes / step | records / step | timed steps in windows |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | `%s` | %.0f | %.0f | %.1f | %d of %d |" % (
            r["mode"], r["args"], r["bytes_per_step"], r["zstd_bytes_per_step"], r["records_per_step"],
            r["timed_steps_in_windows"], a.steps))
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

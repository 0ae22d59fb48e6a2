"""Benchmark (ctest label bench): per-call cost the hooks add to a wrapped function.

Measures, in one process with the hooks enabled through sitecustomize (as in production):
  * a plain Python function, unwrapped vs wrapped by the frontend wrapper (NVTX shim, no tool
    attached, i.e. NVTX calls are no-ops: the wrapper's own cost);
  * the same with a recording NVTX tool attached when TRUFFLD_TEST_NVTX_TOOL is set;
  * torch.nn.functional.relu on a 16-element CPU tensor, original vs wrapped;
  * start-up: CPU time of an interpreter with vs without the hooks on PYTHONPATH.
Prints one line per case (ns of thread CPU time per call, best of 7 repeats). Never asserts a speed: the numbers are
for the report. Run directly: /usr/bin/python3 tests/bench/hooks_overhead.py
"""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "hooks"))
import hookstest  # noqa: E402

CHILD = r"""
import json, time
import truffld_hooks
from truffld_hooks import frontend, nvtx

def plain(x):
    return x

wrapped = frontend.make_wrapper(plain, "bench.plain", None)

def per_call(fn, n=50000, repeats=7):
    # thread CPU time, best of the repeats: stable on a shared, loaded machine
    best = float("inf")
    for _ in range(repeats):
        t0 = time.thread_time_ns()
        for i in range(n):
            fn(i)
        best = min(best, (time.thread_time_ns() - t0) / n)
    return best

out = {"binding": nvtx.get().kind}
out["plain_ns"] = per_call(plain)
out["wrapped_ns"] = per_call(wrapped)
try:
    import torch
    import torch.nn.functional as F
    x = torch.ones(16)
    relu_orig = F.relu.__truffld_wrapped__
    out["relu_orig_ns"] = per_call(lambda _: relu_orig(x), n=20000)
    out["relu_wrapped_ns"] = per_call(lambda _: F.relu(x), n=20000)
except ImportError:
    pass
print(json.dumps(out))
"""


def run(env):
    proc = subprocess.run([hookstest.PYTHON, "-c", CHILD], env=env, capture_output=True,
                          text=True, timeout=600)
    if proc.returncode != 0:
        sys.exit("benchmark child failed: " + proc.stderr)
    return json.loads(proc.stdout.splitlines()[-1])


def startup_cpu_ms(env, repeats=15):
    """Best CPU time (user+sys) of `python -c pass`: robust to a loaded machine."""
    import resource
    best = float("inf")
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([hookstest.PYTHON, "-c", "pass"], env=env, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime))
    return best * 1e3


def main():
    env = hookstest.hooks_env(NVTX_INJECTION64_PATH=None, TRUFFLD_HOOKS_BACKEND="0")
    base = run(env)
    print("binding=%s (no NVTX tool attached)" % base["binding"])
    print("plain python call         %7.1f ns/call" % base["plain_ns"])
    print("wrapped python call       %7.1f ns/call  (+%.1f ns)"
          % (base["wrapped_ns"], base["wrapped_ns"] - base["plain_ns"]))
    if "relu_orig_ns" in base:
        print("F.relu(16 floats) orig    %7.1f ns/call" % base["relu_orig_ns"])
        print("F.relu(16 floats) wrapped %7.1f ns/call  (+%.1f ns)"
              % (base["relu_wrapped_ns"], base["relu_wrapped_ns"] - base["relu_orig_ns"]))
    tool = os.environ.get("TRUFFLD_INJECTOR") or os.environ.get("TRUFFLD_TEST_NVTX_TOOL")
    if tool and os.path.exists(tool):
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            env_tool = dict(env, NVTX_INJECTION64_PATH=tool, TRUFFLD_OUTPUT_DIR=tmp,
                            FAKE_NVTX_LOG=os.path.join(tmp, "log"))
            withtool = run(env_tool)
        print("wrapped, tool %-12s %7.1f ns/call  (+%.1f ns over plain)"
              % (os.path.basename(tool)[:12], withtool["wrapped_ns"],
                 withtool["wrapped_ns"] - withtool["plain_ns"]))
    cached = dict(env)
    cached.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: bytecode compiled once
    off = dict(cached, PYTHONPATH="")
    print("interpreter start-up CPU  %7.1f ms without hooks, %.1f ms with hooks (best of 15)"
          % (startup_cpu_ms(off), startup_cpu_ms(cached)))


if __name__ == "__main__":
    main()

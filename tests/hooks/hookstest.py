"""Shared helpers for the truffld_hooks tests: locations, and running a child interpreter with
the hooks enabled exactly as a user would (PYTHONPATH + sitecustomize), returning what the
child printed as JSON on its last stdout line.

Paths come from the environment set by tests/hooks/CMakeLists.txt (TRUFFLD_HOOKS_SRC,
TRUFFLD_PYNVTX_LIB, ...) and fall back to the source tree so a developer can run a file directly
with /usr/bin/python3.
"""

import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.dirname(HERE))  # tests/: truffld_unittest (last: shadows nothing)
from truffld_unittest import main, require  # noqa: E402,F401  (the hooks tests' runner)
SOURCE_DIR = os.environ.get("TRUFFLD_SOURCE_DIR") or os.path.normpath(os.path.join(HERE, "..", ".."))
HOOKS_SRC = os.environ.get("TRUFFLD_HOOKS_SRC") or os.path.join(SOURCE_DIR, "inject", "python")
STANDINS = os.path.join(HERE, "standins")
PYTHON = os.environ.get("TRUFFLD_SYSTEM_PYTHON") or "/usr/bin/python3"

# Prologue run in every child: the hooks are already installed by sitecustomize; record ranges.
PROLOGUE = """
import json, sys
import truffld_hooks
from truffld_hooks import nvtx
_em = nvtx.get()
_em.trace = []
def ranges():
    return [name for op, name in _em.trace if op == "push"]
def balanced():
    depth = 0
    for op, _ in _em.trace:
        depth += 1 if op == "push" else -1 if op == "pop" else 0
        if depth < 0:
            return False
    return depth == 0
"""


def hooks_env(*extra_paths, **overrides):
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["PYTHONPATH"] = os.pathsep.join([HOOKS_SRC] + [p for p in extra_paths if p])
    env.setdefault("TRUFFLD_HOOKS", "1")
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def run_child(code, standin=None, env=None, expect_ok=True, timeout=120):
    """Runs PROLOGUE + code in a fresh interpreter; returns the JSON of the last stdout line."""
    env = env or hooks_env(os.path.join(STANDINS, standin) if standin else None)
    proc = subprocess.run([PYTHON, "-c", PROLOGUE + code], env=env, capture_output=True,
                          text=True, timeout=timeout)
    if expect_ok and proc.returncode != 0:
        raise AssertionError("child failed (rc=%d)\nstdout:\n%s\nstderr:\n%s"
                             % (proc.returncode, proc.stdout, proc.stderr))
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if not lines:
        raise AssertionError("child printed nothing; stderr:\n" + proc.stderr)
    return json.loads(lines[-1])


def import_hooks_here():
    """Makes the package importable in the test process itself (pure-logic tests)."""
    if HOOKS_SRC not in sys.path:
        sys.path.insert(0, HOOKS_SRC)


# The end-to-end scripts' outcomes (ctest: SKIP_RETURN_CODE 77).
SKIP = 77


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def skip(message):
    print("SKIP: " + message)
    sys.exit(SKIP)


def run_tool(cmd, timeout=300, **kw):
    """Runs a truffld tool or a traced program; fails the test naming its output on a non-zero
    exit. Returns the CompletedProcess."""
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if proc.returncode != 0:
        fail("%s failed rc=%d\n%s\n%s" % (cmd[0], proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    return proc


def trace_merge_diagnose(tools, env, workload, tmp):
    """Runs `workload` (Python source) under `env`, which writes its dump to env's
    TRUFFLD_OUTPUT_DIR, then truffld-merge (no trace.json) and truffld-diagnose (--llm off, no
    HTML) on it, in folders under `tmp`; `tools` maps TRUFFLD_MERGE and TRUFFLD_DIAGNOSE to the
    binaries. Fails the test when a step fails or no dump was written. Returns (merged, diag)."""
    if os.environ.get("TRUFFLD_ASAN_PRELOAD"):
        env["LD_PRELOAD"] = os.environ["TRUFFLD_ASAN_PRELOAD"]
    run_tool([PYTHON, "-c", workload], env=env)
    dumps = env["TRUFFLD_OUTPUT_DIR"]
    files = sorted(glob.glob(os.path.join(dumps, "truffld-*.jsonl*")))
    if not files:
        fail("no dump in " + dumps)
    merged, diag = os.path.join(tmp, "merged"), os.path.join(tmp, "diag")
    run_tool([tools["TRUFFLD_MERGE"], *files, "-o", merged, "--no-trace-json"])
    run_tool([tools["TRUFFLD_DIAGNOSE"], merged, "-o", diag, "--llm", "off", "--no-html", "--quiet"])
    return merged, diag


# Per-step timing a workload records for machine_slowdowns: wall ms of each step, and the wall
# ms its thread did not run (preempted). Python source for the workloads: SETUP before the loop
# (each step: `_t = _step_begin()` before it, `_step_end(_t)` after it), SAVE after it.
STEP_TIMING_SETUP = """
import time as _time
_wall, _lost = [], []
def _step_begin():
    return _time.perf_counter(), _time.thread_time()
def _step_end(t):
    _wall.append(1e3 * (_time.perf_counter() - t[0]))
    _lost.append(_wall[-1] - 1e3 * (_time.thread_time() - t[1]))
"""
STEP_TIMING_SAVE = """
import json as _json, os as _os
with open(_os.environ["TRUFFLD_TEST_TIMING_OUT"], "w") as _f:
    _json.dump({"wall": _wall, "lost": _lost}, _f)
"""


def machine_slowdowns(vertical, steps, timing):
    """Of the abnormal `steps` (vertical: step index -> diagnosis unit), those the machine
    explains: (preempted, slower). A loaded machine preempts a loop now and then, and a shared VM
    can also run it slower for a while without preempting it: real host stalls, which the
    diagnosis rightly flags. Preempted: its thread lost over 0.3 ms of wall time while not
    running. Slower: it really took longer than the median step, by at least half the cost the
    diagnosis gives it. What is left are alarms on steps that were not slower (false alarms).
    `timing`: {"wall": [ms per step], "lost": [ms per step]} as the workload measured them."""
    wall, lost = timing["wall"], timing["lost"]
    median = sorted(wall)[len(wall) // 2] if wall else 0.0
    preempted = [s for s in steps if s < len(lost) and lost[s] > 0.3]
    slower = [s for s in steps if s not in preempted and s < len(wall) and
              wall[s] - median >= 0.5e-6 * vertical[s].get("impact_ns", float("inf"))]
    return preempted, slower

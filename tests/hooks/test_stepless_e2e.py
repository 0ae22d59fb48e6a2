"""Integration test, end to end: a plain PyTorch program without steps is diagnosed.

A CPU loop (4 nn.Linear layers in an nn.Sequential, the third wrapped in a module that sleeps
20 ms at one iteration) runs under the line `truffld-env` prints (two tiers, its defaults), with
no truffld_hooks.step_range and no profiler: what a user who only evals that line gets.
truffld-merge must make one step per model call (repeated_call_steps, no implicit step), the
backend operator ranges must be there (the hooks turn them on without a step), and
truffld-diagnose (--llm off) must call the stalled iteration abnormal, blame the stalled module
with an impact of about 20 ms, and leave most other steps normal.

Argument 1: the CMake build directory. Needs the injector, truffld-merge and truffld-diagnose
from it and torch for the system interpreter; exits 77 (ctest SKIP) naming what is missing."""

import json
import os
import shlex
import subprocess
import sys
import tempfile

import hookstest
from hookstest import fail, run_tool as run, skip

STEPS = 40
STALL_STEP = 25
SLEEP_S = 0.02
STALLED = "nn.Module:Stall.forward"

WORKLOAD = """
import json, time
import torch
torch.manual_seed(0)
torch.set_num_threads(1)

class Stall(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner, self.calls = inner, 0
    def forward(self, x):
        self.calls += 1
        if self.calls == %(stall)d + 1:
            time.sleep(%(sleep)f)
        return self.inner(x)

model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Linear(256, 256),
                            Stall(torch.nn.Linear(256, 256)), torch.nn.Linear(256, 256))
x = torch.randn(32, 256)
%(setup)s
with torch.no_grad():
    for step in range(%(steps)d):
        _t = _step_begin()
        y = model(x)
        _step_end(_t)
%(save)s
print(json.dumps({"steps": %(steps)d}))
""" % {"steps": STEPS, "stall": STALL_STEP, "sleep": SLEEP_S, "setup": hookstest.STEP_TIMING_SETUP,
       "save": hookstest.STEP_TIMING_SAVE}


def env_from_truffld_env(build, dumps):
    """The variables of the `export ...` line truffld-env prints (source copy, --build-dir)."""
    tool = os.path.join(hookstest.SOURCE_DIR, "tools", "truffld-env")
    line = run([tool, "--build-dir", build, "--output-dir", dumps, "--no-cuda"]).stdout.strip()
    words = shlex.split(line)
    if not words or words[0] != "export":
        fail("truffld-env printed %r, not an export line" % line)
    env = hookstest.hooks_env()
    env.pop("PYTHONPATH", None)
    for word in words[1:]:
        key, _, value = word.partition("=")
        env[key] = value
    return env


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else ""
    tools = {k: os.environ.get(k, "") for k in ("TRUFFLD_INJECTOR", "TRUFFLD_MERGE", "TRUFFLD_DIAGNOSE")}
    for key, path in tools.items():
        if not path or not os.path.exists(path):
            skip("%s is not built (%s=%r)" % (os.path.basename(path) or key, key, path))
    if not build or not os.path.isdir(build):
        skip("no build directory given (argument 1)")
    probe = subprocess.run([hookstest.PYTHON, "-c", "import torch"], capture_output=True)
    if probe.returncode != 0:
        skip("torch is not importable by %s" % hookstest.PYTHON)
    with tempfile.TemporaryDirectory() as tmp:
        dumps = os.path.join(tmp, "dumps")
        env = env_from_truffld_env(build, dumps)
        if env.get("TRUFFLD_HOOKS_WINDOWS") != "1":
            fail("truffld-env's default is not two-tier: %r" % env.get("TRUFFLD_HOOKS_WINDOWS"))
        env["TRUFFLD_TEST_TIMING_OUT"] = os.path.join(tmp, "timing.json")
        merged, diag = hookstest.trace_merge_diagnose(tools, env, WORKLOAD, tmp)
        check_merge(merged)
        check_diagnosis(diag, json.load(open(env["TRUFFLD_TEST_TIMING_OUT"])))
    print("PASS")


def check_merge(merged):
    total = json.load(open(os.path.join(merged, "summary.json")))["total"]
    print("merge: steps %d, repeated_call_steps %d, implicit_steps %d" %
          (total["steps"], total["repeated_call_steps"], total["implicit_steps"]))
    if total["implicit_steps"] != 0 or total["repeated_call_steps"] != STEPS or total["steps"] != STEPS:
        fail("expected %d steps from the repeated model call and no implicit step" % STEPS)
    layers, names = set(), set()
    for line in open(os.path.join(merged, "trees.jsonl")):
        tree = json.loads(line)
        names.add(tree["step"])
        stack = [tree["root"]]
        while stack:
            node = stack.pop()
            layers.add(node.get("layer"))
            stack.extend(node.get("children", []))
    if not all(n.startswith("nn.Module:Sequential.forward") for n in names):
        fail("steps are not the model's calls: %s" % sorted(names)[:3])
    if "backend_op" not in layers:
        fail("no backend operator ranges without a step (layers: %s)" % sorted(l for l in layers if l))


def check_diagnosis(diag, timing):
    units = [json.loads(l) for l in open(os.path.join(diag, "diagnosis.jsonl")) if l.strip()]
    vertical = {u["step_index"]: u for u in units if u["view"] == "vertical"}
    u = vertical.get(STALL_STEP)
    if u is None:
        fail("step %d missing from the diagnosis" % STALL_STEP)
    faulty = [f["family"] for f in u.get("faulty", [])]
    if u["label"] != "abnormal" or not faulty or faulty[0] != STALLED:
        fail("step %d: expected abnormal with %s blamed first, got %s %s\n%s" %
             (STALL_STEP, STALLED, u["label"], faulty, u.get("evidence", "")))
    impact = u["faulty"][0].get("impact_ns", 0)
    if not 0.7 * SLEEP_S * 1e9 <= impact <= 1.5 * SLEEP_S * 1e9:
        fail("step %d: impact %s ns, expected about %d ms" % (STALL_STEP, impact, SLEEP_S * 1e3))
    print("step %d: %s" % (STALL_STEP, u["faulty"][0]["evidence"]))
    others = [s for s, v in vertical.items() if s != STALL_STEP and v["label"] == "abnormal"]
    judged = sum(1 for v in vertical.values() if v["label"] in ("normal", "abnormal"))
    # Steps the machine slowed are not counted (hookstest.machine_slowdowns); the bound catches
    # alarms on steps that were not slower: systematic false alarms.
    preempted, slower = hookstest.machine_slowdowns(vertical, others, timing)
    others = [s for s in others if s not in preempted and s not in slower]
    print("judged %d vertical steps; other steps abnormal: %s (not counted: preempted %s, really "
          "slower by half the cost given or more %s)" % (judged, others, preempted, slower))
    if judged < STEPS - 2:
        fail("only %d of %d steps judged" % (judged, STEPS))
    if len(others) > max(3, judged // 4):
        fail("more than 25%% of the untouched steps are abnormal: %s\n%s" %
             (others, "\n".join(vertical[s]["evidence"][:300] for s in others[:4])))


if __name__ == "__main__":
    main()

"""Integration test, end to end: two-tier capture with the real injector on a CPU PyTorch loop.

The hooks and libcupti_injector.so (NVTX injection) run a small model, one `step_range` per
forward, with TRUFFLD_DEVICE_WINDOWS=requested: no periodic windows, only those the injector
opens itself. One step sleeps inside (a slow step); later the loop touches the control file
($TRUFFLD_OUTPUT_DIR/truffld.detail) between steps. The dump must show:

* a window with trigger `slow_step` opening within 2 steps after the slow one, and a window with
  trigger `request` opening within 2 steps after the touch;
* per-operator ranges (frontend, module, backend) in every step inside a window and in no step
  outside one (the hooks' layers follow the injector's windows);
* at the end, outside a window, torch's own functions back in place and no global module hook.

Needs TRUFFLD_INJECTOR from the build and torch for the system interpreter; exits 77 (ctest
SKIP) naming what is missing.
"""

import glob
import json
import os
import subprocess
import sys
import tempfile

import hookstest
from hookstest import SKIP, fail

STEPS = 44
SLOW_STEP = 20     # sleeps inside the step
TOUCH_BEFORE = 32  # the loop touches the control file, then waits, before this step
WINDOW_STEPS = 3

WORKLOAD = """
import json, os, time
import torch
import torch.nn.functional as F
import truffld_hooks
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64))
x = torch.randn(8, 64)
control = os.path.join(os.environ["TRUFFLD_OUTPUT_DIR"], "truffld.detail")
for step in range(%(steps)d):
    if step == %(touch)d:
        open(control, "w").close()
        time.sleep(0.2)  # the writer looks every TRUFFLD_FLUSH_MS
    with truffld_hooks.step_range(["r%%d" %% step]):
        y = model(x)
        if step == %(slow)d:
            time.sleep(0.5)
        s = y.sum()
from torch.nn.modules import module as m
print(json.dumps({"restored": F.linear is torch._C._nn.linear,  # torch's own builtin again
                  "global_hooks": len(m._global_forward_hooks) + len(m._global_forward_pre_hooks),
                  "windows": truffld_hooks.stats().get("windows")}))
""" % {"steps": STEPS, "touch": TOUCH_BEFORE, "slow": SLOW_STEP}


def read_dump(path):
    steps, windows, pushes = [], {}, []
    opener = ["zstdcat", path] if path.endswith(".zst") else ["cat", path]
    text = subprocess.run(opener, capture_output=True, text=True, check=True).stdout
    stack = []
    for line in text.splitlines():
        r = json.loads(line)
        kind = r.get("type")
        if kind == "NVTX_PUSH":
            stack.append((r["name"], r["timestamp"]))
            if not r["name"].startswith("step_execute_model"):
                pushes.append(r["timestamp"])
        elif kind == "NVTX_POP" and stack:
            name, start = stack.pop()
            if name.startswith("step_execute_model"):
                steps.append((start, r["timestamp"]))
        elif kind == "DEVICE_WINDOW":
            w = windows.setdefault(r["id"], {})
            w[r["edge"]] = r["timestamp"]
            w.setdefault("trigger", r.get("trigger"))
    return sorted(steps), windows, sorted(pushes)


def main():
    injector = os.environ.get("TRUFFLD_INJECTOR", "")
    if not injector or not os.path.exists(injector):
        print("SKIP: libcupti_injector.so is not built (TRUFFLD_INJECTOR=%r)" % injector)
        sys.exit(SKIP)
    if subprocess.run([hookstest.PYTHON, "-c", "import torch"], capture_output=True).returncode != 0:
        print("SKIP: torch is not importable by %s" % hookstest.PYTHON)
        sys.exit(SKIP)
    with tempfile.TemporaryDirectory() as out:
        env = hookstest.hooks_env(NVTX_INJECTION64_PATH=injector, CUDA_INJECTION64_PATH=None,
                                  TRUFFLD_OUTPUT_DIR=out, TRUFFLD_DEVICE_WINDOWS="requested",
                                  TRUFFLD_WINDOW_SLOW="100", TRUFFLD_WINDOW_STEPS=str(WINDOW_STEPS),
                                  TRUFFLD_HOOKS_WINDOWS="1", TRUFFLD_FLUSH_MS="10", TRUFFLD_COMPRESS="none")
        proc = subprocess.run([hookstest.PYTHON, "-c", WORKLOAD], env=env, capture_output=True, text=True,
                              timeout=300)
        if proc.returncode != 0:
            fail("workload failed rc=%d\n%s\n%s" % (proc.returncode, proc.stdout[-2000:], proc.stderr[-3000:]))
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        dumps = glob.glob(os.path.join(out, "truffld-*.jsonl*"))
        if len(dumps) != 1:
            fail("expected one dump in %s, got %s" % (out, dumps))
        steps, windows, pushes = read_dump(dumps[0])
    if len(steps) != STEPS:
        fail("%d step ranges in the dump, expected %d" % (len(steps), STEPS))
    if result["windows"].get("mode") != "windows":
        fail("the hooks did not follow the injector's windows: %s" % result["windows"])

    def step_of(ts):
        return next((i for i, (s, e) in enumerate(steps) if s >= ts), len(steps))

    opened = {}
    inside = set()
    for wid, w in sorted(windows.items()):
        end = w.get("end", float("inf"))
        members = [i for i, (s, e) in enumerate(steps) if w["start"] <= s and e <= end]
        inside.update(members)
        opened.setdefault(w["trigger"], []).append(step_of(w["start"]))
        print("window %s (%s): steps %s" % (wid, w["trigger"], members))
    if not any(SLOW_STEP < s <= SLOW_STEP + 2 for s in opened.get("slow_step", [])):
        fail("no slow_step window opened within 2 steps after step %d: %s" % (SLOW_STEP, opened))
    if not any(TOUCH_BEFORE <= s <= TOUCH_BEFORE + 1 for s in opened.get("request", [])):
        fail("no request window opened within 2 steps of the touch before step %d: %s" % (TOUCH_BEFORE, opened))
    for i, (s, e) in enumerate(steps):
        ops = sum(1 for t in pushes if s <= t <= e)
        if (i in inside) != (ops > 0):
            fail("step %d (%s a window) has %d operator ranges" % (i, "inside" if i in inside else "outside", ops))
    if (STEPS - 1) not in inside and (not result["restored"] or result["global_hooks"]):
        fail("after the last window the layers are still installed: %s" % result)
    print("PASS: %d steps, %d inside windows (%s); layers removed after the last window"
          % (len(steps), len(inside), opened))


if __name__ == "__main__":
    main()

"""Detail windows (truffld_hooks.windows/detail, Debian's CPU torch 1.13): the per-operator
layers (frontend wrappers, global module hooks, backend dispatch mode) are installed at a step
boundary inside a detail window and removed, originals restored, at one outside; steps stay.

The window source is the recording NVTX tool (fake_nvtx_tool.c) standing in for the injector's
``truffld_detail_window`` export: the child sets its answer with ``fake_detail_set`` (0 closed,
1 open, -1 not sampling) or lets it follow ``FAKE_DETAIL_WINDOW=steps:N:M``. Each scenario
runs in one fresh interpreter with the hooks enabled by PYTHONPATH, as a user would."""

import os
import subprocess
import unittest

import hookstest

try:
    import importlib.util
    HAVE_TORCH = importlib.util.find_spec("torch") is not None
except Exception:  # pragma: no cover
    HAVE_TORCH = False
TOOL = os.environ.get("TRUFFLD_TEST_NVTX_TOOL", "")
SHIM = os.environ.get("TRUFFLD_PYNVTX_LIB", "")

# A small model, a probe of every per-operator layer, and one step that records what it saw.
MODEL = """
import ctypes, os, threading
import torch, torch.nn.functional as F
import torch.nn.modules.module as mm
from torch.nn.functional import gelu as bound_gelu   # bound while the layers are installed
from truffld_hooks import detail, windows
torch.set_num_threads(1)
tool = ctypes.CDLL(os.environ["NVTX_INJECTION64_PATH"])
ORIG = {"relu": F.relu.__truffld_wrapped__, "linear": F.linear.__truffld_wrapped__}
WRAP = {"relu": F.relu}

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(16)
        self.up = torch.nn.Linear(16, 32)
        self.down = torch.nn.Linear(32, 16)
    def forward(self, x):
        return x + self.down(F.relu(self.up(self.norm(x))))

model = torch.nn.Sequential(Block(), Block()).eval()
x = torch.randn(2, 16)

def dispatch_mode():
    from torch.utils import _python_dispatch as pd
    getter = getattr(pd, "_get_current_dispatch_mode", None)
    return type(getter()).__name__ if getter and getter() is not None else None

def probe():
    hooks = len(mm._global_forward_hooks) + len(mm._global_forward_pre_hooks)
    hooks += len(getattr(mm, "_global_forward_hooks_always_called", {}))
    return {"relu_orig": F.relu is ORIG["relu"], "linear_orig": F.linear is ORIG["linear"],
            "relu_wrapper": F.relu is WRAP["relu"],
            "to_orig": torch.Tensor.to is torch._C._TensorBase.to and "to" not in vars(torch.Tensor),
            "split_orig": getattr(torch.split, "__truffld_wrapped__", None) is None,
            "global_hooks": hooks, "mode": dispatch_mode()}

def step(rid, inside=None):
    start = len(_em.trace)
    with truffld_hooks.step_range([rid]):
        seen = probe()
        with torch.no_grad():
            model(x)
            bound_gelu(x)
        if inside is not None:
            inside()
    names = [n for op, n in _em.trace[start:] if op == "push"]
    return {"in": seen, "after": probe(), "step": names[0], "ops": names[1:]}
"""


def families(ops):
    """Range families: "aten", "nn.Module", or the frontend function's qualified name."""
    return sorted(set(n.split(" ")[0].split(",")[0].split(":")[0] for n in ops))


def child(code, **env):
    base = {"NVTX_INJECTION64_PATH": TOOL}
    base.update(env)
    return hookstest.run_child(MODEL + code, env=hookstest.hooks_env(**base))


@unittest.skipUnless(HAVE_TORCH, "torch is not importable by this interpreter")
@unittest.skipUnless(TOOL and SHIM, "needs the recording NVTX tool and the NVTX shim "
                     "(TRUFFLD_TEST_NVTX_TOOL, TRUFFLD_PYNVTX_LIB: run through ctest)")
class WindowsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.out = child("""
out = {"import": probe()}
out["closed"] = step("a")                                # closed from the first step on
tool.fake_detail_set(1)                                  # the injector opens a window ...
out["open"] = step("b")                                  # ... seen after the next push
out["still_open"] = step("c", inside=lambda: None)
out["closing"] = step("d", inside=lambda: tool.fake_detail_set(0))  # closes at its pop
tool.fake_detail_set(1)
out["reopened"] = step("e")
out["wrapper_kept"] = F.relu is WRAP["relu"]
tool.fake_detail_set(0)                                  # closed between two boundaries
out["closed_between"] = step("f")
tool.fake_detail_set(1); tool.fake_detail_set(0)         # opened and closed in between
out["missed"] = step("g")
# a thread whose backend was entered in a window leaves it at its own next boundary
tool.fake_detail_set(1)
box = {}
def worker():
    box["first"] = step("t1")
    box["barrier"].wait(); box["closed"].wait()
    box["second"] = step("t2")
box["barrier"], box["closed"] = threading.Barrier(2), threading.Event()
thread = threading.Thread(target=worker, name="engine2"); thread.start()
box["barrier"].wait()
out["main_closes"] = step("h", inside=lambda: tool.fake_detail_set(0))
out["engine2_mode_meanwhile"] = truffld_hooks.stats()["backend"].get("engine2")
box["closed"].set(); thread.join()
out["thread"] = {"first": box["first"], "second": box["second"]}
out["stats"] = truffld_hooks.stats()
out["balanced"] = balanced()
print(json.dumps(out))
""", FAKE_DETAIL_WINDOW="0")

    def assert_off(self, seen):
        self.assertTrue(seen["relu_orig"] and seen["linear_orig"] and seen["to_orig"], seen)
        self.assertTrue(seen["split_orig"], seen)   # torch's re-export of torch.functional's
        self.assertEqual(0, seen["global_hooks"], seen)   # module call fast path
        self.assertIsNone(seen["mode"], seen)

    def assert_on(self, seen):
        self.assertTrue(seen["relu_wrapper"], seen)
        self.assertFalse(seen["linear_orig"] or seen["to_orig"] or seen["split_orig"], seen)
        self.assertEqual(2, seen["global_hooks"], seen)
        self.assertEqual("NvtxDispatchMode", seen["mode"], seen)

    def test_layers_installed_at_import_until_the_first_boundary(self):
        seen = self.out["import"]
        self.assertTrue(seen["relu_wrapper"])
        self.assertEqual(2, seen["global_hooks"])

    def test_outside_a_window_nothing_per_operator(self):
        step = self.out["closed"]
        self.assertEqual("step_execute_model[request_ids:a]", step["step"])
        self.assert_off(step["in"])
        self.assert_off(step["after"])
        self.assertEqual([], step["ops"])   # not even through the gelu bound at import

    def test_inside_a_window_every_layer_emits(self):
        for key in ("open", "still_open", "reopened"):
            step = self.out[key]
            self.assert_on(step["in"])
            self.assert_on(step["after"])
            self.assertEqual(["aten", "nn.Module", "torch.nn.functional.gelu",
                              "torch.nn.functional.layer_norm", "torch.nn.functional.linear",
                              "torch.nn.functional.relu"], families(step["ops"]), key)

    def test_closing_restores_the_originals(self):
        step = self.out["closing"]
        self.assert_on(step["in"])
        self.assert_off(step["after"])
        self.assertTrue(self.out["wrapper_kept"])   # reinstalled: the same wrapper object
        detail = self.out["stats"]["windows"]["detail"]
        self.assertGreaterEqual(detail["installs"], 3)
        self.assertEqual(0, detail["displaced"])

    def test_window_closed_between_boundaries_is_removed_at_the_next_push(self):
        step = self.out["closed_between"]
        self.assert_off(step["in"])
        self.assertEqual([], step["ops"])

    def test_window_opened_and_closed_between_boundaries(self):
        step = self.out["missed"]
        self.assert_off(step["in"])
        self.assertEqual([], step["ops"])
        windows = self.out["stats"]["windows"]
        self.assertEqual("windows", windows["mode"])
        self.assertEqual(1, windows["missed"])
        self.assertEqual(windows["generation"], windows["seen"] + windows["missed"])

    def test_backend_follows_each_threads_own_boundaries(self):
        first, second = self.out["thread"]["first"], self.out["thread"]["second"]
        self.assertEqual("NvtxDispatchMode", first["after"]["mode"])
        self.assertIn("aten", families(first["ops"]))
        self.assertEqual("dispatch", self.out["engine2_mode_meanwhile"])  # closed on main
        self.assert_off(second["in"])
        self.assertEqual([], second["ops"])
        self.assertEqual("off", self.out["stats"]["backend"]["engine2"])
        self.assertTrue(self.out["balanced"])

    def test_steps_plan_like_the_injector(self):
        out = child("""
steps = [step("s%d" % i) for i in range(9)]
print(json.dumps({"ops": [bool(s["ops"]) for s in steps], "stats": truffld_hooks.stats()}))
""", FAKE_DETAIL_WINDOW="steps:4:2")
        self.assertEqual([True, True, False, False, True, True, False, False, True], out["ops"])
        windows = out["stats"]["windows"]
        self.assertEqual((3, 3, 0), (windows["generation"], windows["seen"], windows["missed"]))

    def test_switch_off_and_not_sampling_keep_every_layer_on(self):
        for env, mode in ((dict(FAKE_DETAIL_WINDOW="0", TRUFFLD_HOOKS_WINDOWS="0"),
                           "always (TRUFFLD_HOOKS_WINDOWS=0)"),
                          (dict(FAKE_DETAIL_WINDOW=None), "windows")):
            out = child("""
s = step("a"); tool.fake_detail_set(0) if os.environ.get("TRUFFLD_HOOKS_WINDOWS") else None
print(json.dumps({"a": s, "b": step("b"), "stats": truffld_hooks.stats()}))
""", **env)
            for key in ("a", "b"):
                self.assert_on(out[key]["in"])
                self.assertIn("aten", families(out[key]["ops"]))
            self.assertEqual(mode, out["stats"]["windows"]["mode"])

    def test_a_process_without_steps_is_told_what_it_cost(self):
        # Model code and no step: every layer stayed on; the note says so at exit, once.
        def run(code, **env):
            base = {"NVTX_INJECTION64_PATH": TOOL, "FAKE_DETAIL_WINDOW": "0"}
            base.update(env)
            proc = subprocess.run([hookstest.PYTHON, "-c", hookstest.PROLOGUE + MODEL + code],
                                  env=hookstest.hooks_env(**base), capture_output=True, text=True,
                                  timeout=120)
            self.assertEqual(0, proc.returncode, proc.stderr)
            return proc.stderr.count("ran model code without engine steps")
        stepless = "with torch.no_grad():\n    model(x); model(x)\nprint('{}')\n"
        self.assertEqual(1, run(stepless))
        self.assertEqual(0, run("step('a')\nprint('{}')\n"), "steps ran: the windows decided")
        self.assertEqual(0, run(stepless, TRUFFLD_HOOKS_WINDOWS="0"), "layers on by choice")
        self.assertEqual(0, run("print('{}')\n"), "no model code ran")


if __name__ == "__main__":
    hookstest.main()

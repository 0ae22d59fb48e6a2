"""Unit tests of _truffld_pystep (inject/pynvtx/pystep.c), the CPython extension module for the
step boundary: its step_name is naming.step_name's, its step calls answer as the shim's through
ctypes do, a traced run's ranges and detail windows are the same with it as without it
(TRUFFLD_HOOKS_NATIVE=0), and the hooks fall back to ctypes when it cannot load.
Skips (77) when the shim, the test NVTX tool or the extension module was not built."""

import glob
import importlib.machinery
import os
import shutil
import subprocess
import tempfile
import unittest

import hookstest

SHIM = os.environ.get("TRUFFLD_PYNVTX_LIB", "")
TOOL = os.environ.get("TRUFFLD_TEST_NVTX_TOOL", "")
NATIVE = sorted(glob.glob(os.path.join(os.path.dirname(SHIM), "_truffld_pystep*"))) if SHIM else []

NAMES = """
import json
from truffld_hooks import naming, nvtx
em = nvtx.create(%r)
build = em.native.step_name
cases = [
    ([], "step_execute_model", "decode", 3, 4),
    (["a"], "step_execute_model", None, None, None),
    (["a_b", "c\\\\d", "e]f", "plain"], "step_execute_model", "prefill", 0, 12),
    (("t1", "t2"), "step_execute_model:sample_tokens", "mixed", 7, None),
    (["\u00e9t\u00e9", "\u65e5\u672c"], "step_execute_model", "decode", None, 99),
    (["x"], "step_execute_model", "other", -1, -5),
    (["x"], "step_execute_model", "decode", 2 ** 62, 0),
    (["r-%%04d_x" %% i for i in range(300)], "step_execute_model", "decode", 300, 4096),
]
same = [build(*c) == naming.step_name_py(c[0], c[1], False, *c[2:]) for c in cases]
plain = [build(*c) is None for c in [
    (iter(["a"]), "s", None, None, None), (["a", 1], "s", None, None, None),
    (["a"], "s", 1, None, None), (["a"], "s", None, True, None), (["a"], "s", None, None, 2 ** 70),
    (["\\ud800"], "s", None, None, None)]]
print(json.dumps({"same": same, "none": plain}))
"""

STEP_CALLS = """
import ctypes, os
from truffld_hooks import nvtx
em = nvtx.create(%r)
tool = ctypes.CDLL(os.environ["NVTX_INJECTION64_PATH"])
assert em.set_window_query(tool.truffld_detail_window)
generation = ctypes.c_ulonglong(0)
ref, address = ctypes.byref(generation), ctypes.addressof(generation)
out = []
for state, name in ((0, "s0"), (1, "s1"), (1, "s2")):
    tool.fake_detail_set(state)
    em.push("outer")
    if os.environ.get("USE") == "native":
        out += [em.native.step_push(name, address), em.native.step_pop(1, address)]
    else:
        out += [em.step_push(None, name.encode(), ref), em.step_pop(1, ref)]
    em.pop()
print(" ".join(map(str, out + [generation.value, em.depth()])))
"""

# step_range's calls: the C type and the Python class take the same arguments, name the same.
ARGS = """
import json
import truffld_hooks
calls = [((["a", "b"],), {}), ((["a"], "base"), {"ctx": 3}), ((), {"request_ids": ()}),
         ((["x"],), {"phase": "decode", "tokens": 2}), ((iter(["a_b"]),), {"tokens": True}),
         ((["a"], "b", "mixed", 1, 2), {}), ((), {}), ((["a"],), {"bogus": 1}),
         ((["a"], "b"), {"base": "c"}), ((["a"], "b", None, None, None, 6), {})]
def outcome(kind):
    out = []
    for args, kwargs in calls:
        if args and args[0].__class__.__name__ == "list_iterator":
            args = (iter(["a_b"]),) + args[1:]
        try:
            out.append(kind(*args, **kwargs).name)
        except TypeError:
            out.append("TypeError")
    return out
print(json.dumps({"c": truffld_hooks.step_range is not truffld_hooks._PyStepRange,
                  "native": outcome(truffld_hooks.step_range),
                  "python": outcome(truffld_hooks._PyStepRange)}))
"""

# Exceptions through a step, ranges left open, nested steps, another thread, exit without enter,
# reset_for_tests between steps.
EDGES = """
import ctypes, json, os, threading
import truffld_hooks
from truffld_hooks import nvtx, windows, engines, detail
tool = ctypes.CDLL(os.environ["NVTX_INJECTION64_PATH"])
out = []
for i, st in enumerate([0, 1, 0, 1, 1, 0]):
    tool.fake_detail_set(st)
    try:
        with truffld_hooks.step_range(["x%d" % i]) as n:
            nvtx.get().push("left-open")
            with truffld_hooks.step_range(["nested"]):
                nvtx.get().push("inner-open")
            if i % 2:
                raise KeyError(i)
    except KeyError as e:
        out.append(["exc", i])
    out.append([n, nvtx.get().depth(), detail.ACTIVE[0], windows._thread_state().depth])
def worker():
    for st in [1, 0]:
        tool.fake_detail_set(st)
        with truffld_hooks.step_range(["thr"]):
            pass
t = threading.Thread(target=worker); t.start(); t.join()
s = truffld_hooks.step_range(["never"]); s.__exit__(None, None, None)
windows.reset_for_tests()
with truffld_hooks.step_range(["after-reset"]):
    out.append(["in", windows._thread_state().depth])
out.append(dict(engines.counters)); out.append(windows.snapshot())
print(json.dumps(out))
"""

# Steps on the fused path (no emitter trace) while the stand-in's window opens and closes.
RUN = """
import ctypes, json, os
import torch.nn.functional as F
import truffld_hooks
from truffld_hooks import detail, engines, nvtx, windows
tool = ctypes.CDLL(os.environ["NVTX_INJECTION64_PATH"])
seen = []
for i, state in enumerate([0, 0, 1, 1, 0, 0, 1, 0]):
    tool.fake_detail_set(state)
    with truffld_hooks.step_range(["r_%d" % i, "s"], phase="decode", tokens=2, ctx=i) as name:
        seen.append([name, detail.ACTIVE[0], hasattr(F.relu, "__truffld_wrapped__")])
seen.append([F.relu.__module__, detail.ACTIVE[0]])
cfg = truffld_hooks._fallback_config()
for i, state in enumerate([1, 1, 0, 0]):   # the engine hooks' run_step, nested steps, odd ids
    tool.fake_detail_set(state)
    seen.append(engines.run_step("step_execute_model[e%d]" % i, cfg, lambda: [
        detail.ACTIVE[0], hasattr(F.relu, "__truffld_wrapped__"),
        engines.run_step("inner", cfg, lambda: windows._thread_state().depth)]))
    with truffld_hooks.step_range(iter(["g_%d" % i]), tokens=True) as name:
        seen.append([name, detail.ACTIVE[0], windows._thread_state().depth])
native = truffld_hooks._native
print(json.dumps({"seen": seen, "native": nvtx.get().native is not None,
                  "c_path": native is not None and truffld_hooks.step_range is native.StepRange
                  and windows.enter_step is native.enter_step, "steps": engines.counters,
                  "fused": windows._fused[0] is not None, "windows": windows.snapshot()}))
"""


@unittest.skipUnless(SHIM and TOOL and NATIVE, "needs the NVTX shim, the recording NVTX tool "
                     "and _truffld_pystep (run through ctest after building truffld_pystep)")
class PystepTest(unittest.TestCase):
    def _run(self, code, **env):
        with tempfile.TemporaryDirectory() as tmp:
            log = os.path.join(tmp, "nvtx.log")
            env = hookstest.hooks_env(**dict(dict(TRUFFLD_PYNVTX_LIB=SHIM,
                                                  NVTX_INJECTION64_PATH=TOOL, FAKE_NVTX_LOG=log),
                                             **env))
            proc = subprocess.run([hookstest.PYTHON, "-c", code], env=env, capture_output=True,
                                  text=True, timeout=120)
            self.assertEqual(0, proc.returncode, proc.stderr)
            lines = []
            if os.path.exists(log):   # no NVTX call made: the tool never loaded
                with open(log) as handle:
                    lines = handle.read().splitlines()
            return proc.stdout.strip().splitlines()[-1], lines

    def test_step_name_is_namings(self):
        out, _ = self._run(NAMES % SHIM)
        result = __import__("json").loads(out)
        self.assertEqual([True] * 8, result["same"])
        self.assertEqual([True] * 6, result["none"])   # outside the plain cases: naming's

    def test_step_calls_answer_as_ctypes_does(self):
        native, native_log = self._run(STEP_CALLS % SHIM, USE="native")
        ctypes_out, ctypes_log = self._run(STEP_CALLS % SHIM, USE="ctypes")
        self.assertEqual(ctypes_out, native)
        self.assertEqual(ctypes_log, native_log)
        # depth 1 * 8 + changed * 4 + (answer + 2), then the pops; generation 1, depth 0
        self.assertEqual("10 2 15 3 11 3 1 0", native)

    def test_traced_steps_and_windows_are_the_same_without_it(self):
        native, native_log = self._run(RUN, FAKE_DETAIL_WINDOW="0")
        fallback, fallback_log = self._run(RUN, FAKE_DETAIL_WINDOW="0", TRUFFLD_HOOKS_NATIVE="0")
        native, fallback = __import__("json").loads(native), __import__("json").loads(fallback)
        self.assertTrue(native["native"] and native["fused"] and native["c_path"])
        self.assertFalse(fallback["native"] or fallback["c_path"])
        self.assertEqual(fallback["steps"], native["steps"])
        self.assertEqual(20, native["steps"]["steps"])
        self.assertTrue(fallback["fused"])
        self.assertEqual(fallback["seen"], native["seen"])
        self.assertEqual(fallback["windows"], native["windows"])
        self.assertEqual(fallback_log, native_log)
        # the layers follow the window at the boundaries, originals restored when it closes
        self.assertEqual([False, False, True, True, False, False, True, False],
                         [step[1] for step in native["seen"][:8]])
        self.assertEqual(["torch.nn.functional", False], native["seen"][8])
        self.assertIn("push step_execute_model[request_ids:r\\_2_s][phase:decode][tokens:2]"
                      "[ctx:2]", native_log)

    def test_edge_cases_are_the_same_without_it(self):
        native, native_log = self._run(EDGES, FAKE_DETAIL_WINDOW="0")
        fallback, fallback_log = self._run(EDGES, FAKE_DETAIL_WINDOW="0",
                                           TRUFFLD_HOOKS_NATIVE="0")
        self.assertEqual(fallback, native)
        self.assertEqual(fallback_log, native_log)
        self.assertIn("exc", native)
        self.assertEqual(15, __import__("json").loads(native)[-2]["steps"])

    def test_step_range_takes_the_python_class_arguments(self):
        out = __import__("json").loads(self._run(ARGS)[0])
        self.assertTrue(out["c"])
        self.assertEqual(out["python"], out["native"])
        self.assertEqual(["TypeError"] * 3, out["native"][-3:])

    def test_a_module_that_cannot_load_falls_back_to_ctypes(self):
        with tempfile.TemporaryDirectory() as tmp:
            shim = os.path.join(tmp, os.path.basename(SHIM))
            shutil.copy(SHIM, shim)
            bogus = "_truffld_pystep" + importlib.machinery.EXTENSION_SUFFIXES[0]
            with open(os.path.join(tmp, bogus), "w") as handle:
                handle.write("not a shared object")
            out, _ = self._run("import truffld_hooks\nfrom truffld_hooks import nvtx\n"
                               "em = nvtx.create(%r)\nprint(em.kind, em.native, "
                               "truffld_hooks.step_range.__module__)" % shim,
                               TRUFFLD_PYNVTX_LIB=shim)
        self.assertEqual("shim None truffld_hooks", out)


if __name__ == "__main__":
    hookstest.main()

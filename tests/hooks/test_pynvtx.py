"""Unit tests of libtruffld_pynvtx.so through its ctypes binding: every call reaches an NVTX tool
injected with NVTX_INJECTION64_PATH (a recording test tool, fake_nvtx_tool.c), domains included;
without a tool every call is a harmless no-op; the hooks' step ranges reach the tool too.
Skips (77) when the shim or the test tool was not built (no CUDA toolkit headers)."""

import os
import subprocess
import tempfile
import unittest

import hookstest

SHIM = os.environ.get("TRUFFLD_PYNVTX_LIB", "")
TOOL = os.environ.get("TRUFFLD_TEST_NVTX_TOOL", "")

SHIM_CALLS = """
from truffld_hooks import nvtx
em = nvtx.create(%r)
em.trace = []
assert em.kind == "shim", em.kind
d = em.domain("PyTorch")
em.push("outer"); em.push("inner", d); em.mark("here"); em.mark("dmark", d)
rid = em.start("async"); em.end(rid)
em.pop(); em.pop(); em.pop()   # the third pop has nothing to close: ignored
print(em.depth(), sum(1 for op, _ in em.trace if op == "push"), sum(1 for op, _ in em.trace if op == "pop"))
"""


STEP_CALLS = """
import ctypes, os
from truffld_hooks import nvtx
em = nvtx.create(%r)
tool = ctypes.CDLL(os.environ["NVTX_INJECTION64_PATH"])
generation = ctypes.c_ulonglong(0)
ref = ctypes.byref(generation)
out = [em.step_push(None, b"step_a", ref), em.step_pop(0, ref)]   # no query set: -2
assert em.set_window_query(tool.truffld_detail_window)
tool.fake_detail_set(0)
em.push("outer")
out += [em.step_push(None, b"step_b", ref), em.step_pop(1, ref)]  # closed, depth 1 before
tool.fake_detail_set(1)                                          # a window opens: changed
out += [em.step_push(None, b"step_c", ref), em.step_pop(1, ref)]  # still open, unchanged
em.set_window_query(None)
out += [em.step_push(None, b"step_d", ref), em.step_pop(1, ref), em.depth()]
print(" ".join(map(str, out)))
"""


def _read_lines(path):
    with open(path) as handle:
        return handle.read().splitlines()


class ShimTest(unittest.TestCase):
    def setUp(self):
        if not (SHIM and os.path.exists(SHIM)):
            self.skipTest("libtruffld_pynvtx.so not built (TRUFFLD_PYNVTX_LIB=%r)" % SHIM)

    def _run(self, code, tool, log, extra_path=None):
        env = hookstest.hooks_env(extra_path, TRUFFLD_PYNVTX_LIB=SHIM,
                                  NVTX_INJECTION64_PATH=tool, FAKE_NVTX_LOG=log)
        proc = subprocess.run([hookstest.PYTHON, "-c", code], env=env, capture_output=True,
                              text=True, timeout=60)
        self.assertEqual(0, proc.returncode, proc.stderr)
        return proc.stdout

    def _run_traced(self, code, extra_path=None):
        """Runs `code` under the test NVTX tool; returns its stdout and the tool's log lines."""
        if not (TOOL and os.path.exists(TOOL)):
            self.skipTest("test NVTX tool not built")
        with tempfile.TemporaryDirectory() as tmp:
            log = os.path.join(tmp, "nvtx.log")
            out = self._run(code, TOOL, log, extra_path)
            return out, _read_lines(log)

    def test_calls_reach_the_injected_tool(self):
        out, lines = self._run_traced(SHIM_CALLS % SHIM)
        self.assertEqual("0 2 2", out.strip())
        self.assertEqual(["domain PyTorch", "push outer", "dpush PyTorch|inner", "mark here",
                          "dmark PyTorch|dmark", "start async", "end", "dpop PyTorch", "pop"],
                         lines)

    def test_step_push_and_pop_ask_the_window_query(self):
        out, lines = self._run_traced(STEP_CALLS % SHIM)
        # depth * 8 + changed * 4 + (answer + 2); answer -2 without a query
        self.assertEqual([0, 0, 1 * 8 + 2, 2, 1 * 8 + 4 + 3, 3, 8, 0, 1],
                         [int(v) for v in out.split()])
        self.assertEqual(["push step_a", "pop", "push outer", "push step_b", "pop", "push step_c",
                          "pop", "push step_d", "pop"], lines)

    def test_no_tool_is_a_no_op(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = self._run(SHIM_CALLS % SHIM, None, os.path.join(tmp, "unused.log"))
        self.assertEqual("0 2 2", out.strip())

    def test_hooked_step_reaches_the_tool(self):
        code = """
from vllm.v1.core.sched.output import SchedulerOutput, CachedRequestData
from vllm.v1.worker.gpu_worker import Worker
Worker().execute_model(SchedulerOutput([], CachedRequestData([]), {"a_b-0123abcd": 1, "c": 2}, 3))
import truffld_hooks; print(truffld_hooks.stats()["nvtx_binding"])
"""
        out, lines = self._run_traced(code, os.path.join(hookstest.STANDINS, "vllm_v1_new"))
        self.assertEqual("shim", out.strip())
        self.assertEqual(["push step_execute_model[request_ids:a\\_b_c][phase:mixed][tokens:3]", "pop"], lines)


if __name__ == "__main__":
    hookstest.main()

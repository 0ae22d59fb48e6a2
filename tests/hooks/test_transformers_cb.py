"""Unit tests: step ranges for transformers' continuous batching, on a stand-in package that
mirrors the module path and the attributes the hooks read, in the newer layout (the processor
runs the step; FutureRequestState items; tokens_to_process) and the older one (the manager runs
it; RequestState items; prompt_ids), and with the batch readable only through the metrics call.
Each case runs in a fresh interpreter started with the hooks on PYTHONPATH, as in production."""

import unittest

import hookstest

STANDIN = hookstest.STANDINS + "/transformers_cb"

# Three iterations: a prefill of two new requests (12 + 5 tokens), a mixed step (a decodes while
# c prefills 7 tokens of a split prompt), a decode of both.
ITERATIONS = """
from transformers.generation.continuous_batching.continuous_api import (
    ContinuousBatchingManager, RequestState, RequestStatus)
P, D = RequestStatus.PREFILLING, RequestStatus.DECODING
m = ContinuousBatchingManager()
m.iterate([RequestState("req_0", 12, 0, P), RequestState("req_1", 5, 0, P)])
m.iterate([RequestState("req_0", 1, 12, D), RequestState("c_2", 7, 16, P)])
m.iterate([RequestState("req_0", 1, 13, D), RequestState("c_2", 1, 23, D)])
print(json.dumps({"ranges": ranges(), "balanced": balanced(), "forwards": m.batch_processor.forwards,
                  "counters": truffld_hooks.engines.counters}))
"""

EXPECTED = [
    "step_execute_model[request_ids:req\\_0_req\\_1][phase:prefill][tokens:17][ctx:17]",
    "step_execute_model[request_ids:req\\_0_c\\_2][phase:mixed][tokens:8][ctx:36]",
    "step_execute_model[request_ids:req\\_0_c\\_2][phase:decode][tokens:2][ctx:38]",
]


class TransformersContinuousBatchingTest(unittest.TestCase):
    def run_style(self, **env):
        return hookstest.run_child(ITERATIONS, env=hookstest.hooks_env(STANDIN, **env))

    def check(self, out):
        self.assertEqual(EXPECTED, out["ranges"])  # one range per iteration, never two nested
        self.assertTrue(out["balanced"])
        self.assertEqual(3, out["forwards"])
        self.assertEqual(3, out["counters"]["steps"])
        self.assertEqual(0, out["counters"]["unrecognised"])

    def test_newer_layout_processor_runs_the_step(self):
        self.check(self.run_style(STANDIN_CB_STYLE="new"))

    def test_older_layout_manager_runs_the_step(self):
        self.check(self.run_style(STANDIN_CB_STYLE="old"))

    def test_batch_read_from_the_metrics_call_when_attributes_are_absent(self):
        # The states alone (no wrapper's query_length): a prefill's token count is not guessed
        # (its tokens_to_process holds only the placeholder), so steps with one carry no tokens.
        out = self.run_style(STANDIN_CB_HIDE="1")
        self.assertEqual([EXPECTED[0].replace("[tokens:17]", ""), EXPECTED[1].replace("[tokens:8]", ""),
                          EXPECTED[2]], out["ranges"])
        self.assertTrue(out["balanced"])

    def test_metrics_fallback_is_used_once(self):
        out = hookstest.run_child("""
from transformers.generation.continuous_batching.continuous_api import (
    ContinuousBatchProcessor, RequestState, RequestStatus)
p = ContinuousBatchProcessor()
p.prepare_next_batch([RequestState("a", 1, 5, RequestStatus.DECODING)])
p._generation_step("model")
p._generation_step("model")          # no new batch: no stale ids
print(json.dumps({"ranges": ranges()}))
""", env=hookstest.hooks_env(STANDIN, STANDIN_CB_HIDE="1"))
        self.assertEqual(["step_execute_model[request_ids:a][phase:decode][tokens:1][ctx:6]",
                          "step_execute_model"], out["ranges"])

    def test_unreadable_batch_still_makes_one_step_without_ids(self):
        out = hookstest.run_child("""
from transformers.generation.continuous_batching.continuous_api import ContinuousBatchProcessor
p = ContinuousBatchProcessor()
p.inputs_and_outputs.requests_in_batch = [object()]     # no request_id: not guessed
p._generation_step("model")
print(json.dumps({"ranges": ranges(), "counters": truffld_hooks.engines.counters}))
""", env=hookstest.hooks_env(STANDIN))
        self.assertEqual(["step_execute_model"], out["ranges"])
        self.assertEqual(1, out["counters"]["unrecognised"])

    def test_engine_exception_leaves_the_stack_balanced(self):
        out = hookstest.run_child("""
from transformers.generation.continuous_batching.continuous_api import ContinuousBatchProcessor
def boom(self, model):
    truffld_hooks.nvtx.get().push("inner")
    raise RuntimeError("engine failed")
import truffld_hooks.transformers_cb as cb
wrapped = cb.make_step_wrapper(boom, False, truffld_hooks.config.Config.from_environ(),
                               truffld_hooks.engines.run_step, truffld_hooks.engines.counters)
try:
    wrapped(ContinuousBatchProcessor(), "model")
except RuntimeError:
    pass
p = ContinuousBatchProcessor()
p.prepare_next_batch([])
p._generation_step("model")                            # the next step is not nested in it
print(json.dumps({"ranges": ranges(), "balanced": balanced()}))
""", env=hookstest.hooks_env(STANDIN))
        self.assertEqual(["step_execute_model", "inner", "step_execute_model[empty]"], out["ranges"])
        self.assertTrue(out["balanced"])


if __name__ == "__main__":
    hookstest.main()

"""Unit tests: step patching of stand-in vLLM (V1 0.8/0.9, V1 0.11+, V0) and SGLang packages
that mirror the real module paths; communicator patching; idempotence; balance after
exceptions; nothing imported at start-up. Each case runs in a fresh interpreter started with the
hooks on PYTHONPATH, as in production."""

import unittest

import hookstest


class VllmV1NewTest(unittest.TestCase):
    def test_steps_name_requests_without_random_suffix(self):
        out = hookstest.run_child("""
from vllm.v1.core.sched.output import SchedulerOutput, CachedRequestData, NewRequestData
from vllm.v1.worker.gpu_worker import Worker
w = Worker()
so = SchedulerOutput([NewRequestData("cmpl-a_1-0-0123abcd")], CachedRequestData(["chat-b-89abcdef"]),
                     {"cmpl-a_1-0-0123abcd": 5, "chat-b-89abcdef": 1}, 6)
assert w.execute_model(so) is None
assert w.sample_tokens(None) == "sampled"
w.execute_model(SchedulerOutput.make_empty())
w.execute_dummy_batch()
print(json.dumps({"ranges": ranges(), "balanced": balanced(), "calls": len(w.calls),
                  "patched": truffld_hooks.stats()["patched"]}))
""", standin="vllm_v1_new")
        self.assertEqual([  # no ctx: the cached request's num_computed_tokens is not given
            "step_execute_model[request_ids:cmpl-a\\_1-0_chat-b][phase:mixed][tokens:6]",
            "step_execute_model:sample_tokens[request_ids:cmpl-a\\_1-0_chat-b][phase:mixed][tokens:6]",
            "step_execute_model[empty]",
            "step_execute_model[dummy]"], out["ranges"])
        self.assertTrue(out["balanced"])
        self.assertEqual(4, out["calls"])
        self.assertIn("vllm.v1.worker.gpu_worker:Worker.execute_model", out["patched"])

    def test_suffix_kept_when_randomization_disabled(self):
        env = hookstest.hooks_env(hookstest.STANDINS + "/vllm_v1_new",
                                  VLLM_DISABLE_REQUEST_ID_RANDOMIZATION="1")
        out = hookstest.run_child("""
from vllm.v1.core.sched.output import SchedulerOutput, CachedRequestData
from vllm.v1.worker.gpu_worker import Worker
Worker().execute_model(SchedulerOutput([], CachedRequestData([]), {"r-0123abcd": 1}, 1))
print(json.dumps(ranges()))
""", env=env)
        self.assertEqual(["step_execute_model[request_ids:r-0123abcd][phase:decode][tokens:1]"], out)

    def test_phase_tags_prefill_decode_mixed_and_speculative(self):
        out = hookstest.run_child("""
from vllm.v1.core.sched.output import SchedulerOutput, CachedRequestData, NewRequestData
from vllm.v1.worker.gpu_worker import Worker
w = Worker()
w.execute_model(SchedulerOutput([NewRequestData("a"), NewRequestData("b")], CachedRequestData([]),
                                {"a": 17, "b": 1}, 18))                       # all new: prefill
w.sample_tokens(None)
w.execute_model(SchedulerOutput([], CachedRequestData(["a", "b"]), {"a": 1, "b": 1}, 2))
w.sample_tokens(None)
w.execute_model(SchedulerOutput([], CachedRequestData(["a", "b"]), {"a": 1, "b": 256}, 257))
w.execute_model(SchedulerOutput([], CachedRequestData(["a"]), {"a": 3}, 3,
                                scheduled_spec_decode_tokens={"a": [7, 8]}))  # 1 + 2 drafts
print(json.dumps(ranges()))
""", standin="vllm_v1_new")
        self.assertEqual(["step_execute_model[request_ids:a_b][phase:prefill][tokens:18][ctx:18]",
                          "step_execute_model:sample_tokens[request_ids:a_b][phase:prefill][tokens:18][ctx:18]",
                          "step_execute_model[request_ids:a_b][phase:decode][tokens:2]",
                          "step_execute_model:sample_tokens[request_ids:a_b][phase:decode][tokens:2]",
                          "step_execute_model[request_ids:a_b][phase:mixed][tokens:257]",
                          "step_execute_model[request_ids:a][phase:decode][tokens:3]"], out)

    def test_comm_ranges_carry_bytes_and_world_size(self):
        out = hookstest.run_child("""
class FakeTensor:
    def __init__(self, n, size): self.n, self.size = n, size
    def numel(self): return self.n
    def element_size(self): return self.size
from vllm.distributed.device_communicators.pynccl import PyNcclCommunicator
from vllm.distributed.device_communicators.custom_all_reduce import CustomAllreduce
c = PyNcclCommunicator(world_size=8)
c.all_reduce(FakeTensor(1024, 2))
c.all_gather(FakeTensor(4096, 2), input_tensor=FakeTensor(512, 2))
CustomAllreduce(world_size=4).custom_all_reduce(FakeTensor(10, 4))
print(json.dumps({"ranges": ranges(), "balanced": balanced()}))
""", standin="vllm_v1_new")
        self.assertEqual([
            "nccl:all_reduce, bytes=2048, world_size=8, impl=pynccl",
            "nccl:all_gather, bytes=1024, world_size=8, impl=pynccl",
            "nccl:all_reduce, bytes=40, world_size=4, impl=custom_all_reduce"], out["ranges"])
        self.assertTrue(out["balanced"])


class VllmV1OldTest(unittest.TestCase):
    def test_list_of_cached_requests_and_missing_sample_tokens(self):
        out = hookstest.run_child("""
from vllm.v1.core.sched.output import SchedulerOutput, CachedRequestData, NewRequestData
from vllm.v1.worker.gpu_worker import Worker
so = SchedulerOutput([NewRequestData("0")], [CachedRequestData("1"), CachedRequestData("2")], {}, 3)
assert Worker().execute_model(so) == "output"
s = truffld_hooks.stats()
print(json.dumps({"ranges": ranges(), "missing": s["missing"], "failed": s["failed"]}))
""", standin="vllm_v1_old")
        # num_scheduled_tokens is empty: no phase, no ctx; the total still counts the tokens
        self.assertEqual(["step_execute_model[request_ids:0_1_2][tokens:3]"], out["ranges"])
        self.assertIn("vllm.v1.worker.gpu_worker:Worker.sample_tokens", out["missing"])
        self.assertEqual([], out["failed"])

    def test_phase_tags(self):
        out = hookstest.run_child("""
from vllm.v1.core.sched.output import SchedulerOutput, CachedRequestData, NewRequestData
from vllm.v1.worker.gpu_worker import Worker
w = Worker()
w.execute_model(SchedulerOutput([NewRequestData("0")], [], {"0": 12}, 12))
w.execute_model(SchedulerOutput([], [CachedRequestData("0")], {"0": 1}, 1))
w.execute_model(SchedulerOutput([NewRequestData("1")], [CachedRequestData("0")], {"0": 1, "1": 9}, 10))
print(json.dumps(ranges()))
""", standin="vllm_v1_old")
        self.assertEqual(["step_execute_model[request_ids:0][phase:prefill][tokens:12][ctx:12]",
                          "step_execute_model[request_ids:0][phase:decode][tokens:1][ctx:1]",
                          "step_execute_model[request_ids:0_1][phase:mixed][tokens:10][ctx:10]"], out)


class VllmV0Test(unittest.TestCase):
    def test_model_runner_steps(self):
        out = hookstest.run_child("""
from vllm.worker.model_runner import ModelRunner, ModelInputForGPUWithSamplingMetadata as MI
r = ModelRunner()
from vllm.attention.backends.abstract import AttentionMetadata as AM
r = ModelRunner()
r.execute_model(MI(request_ids_to_seq_ids={"0": [0], "1-0123abcd": [1]}), kv_caches=[])
r.execute_model(model_input=MI(), kv_caches=[])
r.execute_model(MI(request_ids_to_seq_ids={"0": [0]}, is_prompt=True), kv_caches=[])
r.execute_model(MI(request_ids_to_seq_ids={"0": [0]}, is_prompt=False), kv_caches=[])
r.execute_model(MI(request_ids_to_seq_ids={"0": [0], "1": [1]}, attn_metadata=AM(1, 40, 1),
                   is_prompt=True), kv_caches=[])                       # chunked prefill + decode
r.execute_model(MI(request_ids_to_seq_ids={"1": [1]}, attn_metadata=AM(0, 0, 1)), kv_caches=[])
print(json.dumps({"ranges": ranges(), "calls": r.calls}))
""", standin="vllm_v0")
        # V0 never randomised ids: nothing is stripped. No is_prompt/metadata: no phase tag.
        self.assertEqual(["step_execute_model[request_ids:0_1-0123abcd]",
                          "step_execute_model[empty]",
                          "step_execute_model[request_ids:0][phase:prefill]",
                          "step_execute_model[request_ids:0][phase:decode]",
                          "step_execute_model[request_ids:0_1][phase:mixed][tokens:41]",
                          "step_execute_model[request_ids:1][phase:decode][tokens:1]"], out["ranges"])
        self.assertEqual(6, out["calls"])


class SglangTest(unittest.TestCase):
    def test_run_batch_steps_idle_and_failure(self):
        out = hookstest.run_child("""
from sglang.srt.managers.schedule_batch import ScheduleBatch, Req, ForwardMode
from sglang.srt.managers.scheduler import Scheduler
s = Scheduler()
s.run_batch(ScheduleBatch([Req("9f_x"), Req("abc")]))
s.run_batch(ScheduleBatch([], ForwardMode.IDLE))
s.run_batch(ScheduleBatch([Req("p")], ForwardMode.EXTEND))
s.run_batch(ScheduleBatch([Req("p"), Req("q")], ForwardMode.MIXED))
s.run_batch(ScheduleBatch([Req("q")], ForwardMode.TARGET_VERIFY))
s.run_batch(ScheduleBatch([Req("q")], forward_mode=None))
bad = ScheduleBatch([Req("r")]); bad.fail = True
try:
    s.run_batch(bad)
except RuntimeError:
    pass
print(json.dumps({"ranges": ranges(), "balanced": balanced(), "depth": _em.depth()}))
""", standin="sglang")
        self.assertEqual(["step_execute_model[request_ids:9f\\_x_abc][phase:decode][tokens:2]",
                          "step_execute_model[dummy]",
                          "step_execute_model[request_ids:p][phase:prefill]",
                          "step_execute_model[request_ids:p_q][phase:mixed]",
                          "step_execute_model[request_ids:q][phase:decode]",
                          "step_execute_model[request_ids:q]",
                          "step_execute_model[request_ids:r][phase:decode][tokens:1]"], out["ranges"])
        self.assertTrue(out["balanced"])
        self.assertEqual(0, out["depth"])


class InstallTest(unittest.TestCase):
    def test_idempotent_and_lazy(self):
        out = hookstest.run_child("""
import importlib
before = sorted(m for m in ("torch", "vllm", "sglang", "numpy") if m in sys.modules)
cfg1 = truffld_hooks.install(); cfg2 = truffld_hooks.install()
import vllm.v1.worker.gpu_worker as gw
first = gw.Worker.execute_model
from truffld_hooks import importhook, engines
importhook.poll_loaded()
engines.register(cfg1)            # registering again must not double-wrap
gw2 = importlib.reload(gw)        # a reload re-executes the module: patched once again
from vllm.v1.core.sched.output import SchedulerOutput, CachedRequestData
gw2.Worker().execute_model(SchedulerOutput([], CachedRequestData([]), {"a": 1}, 1))
finders = sum(type(f).__name__ == "PostImportFinder" for f in sys.meta_path)
print(json.dumps({"before": before, "same_config": cfg1 is cfg2, "same_fn": first is gw.Worker.execute_model,
                  "ranges": ranges(), "finders": finders}))
""", standin="vllm_v1_new")
        self.assertEqual([], out["before"])
        self.assertTrue(out["same_config"])
        self.assertEqual(["step_execute_model[request_ids:a][phase:decode][tokens:1]"], out["ranges"])
        self.assertEqual(1, out["finders"])

    def test_disabled_by_environment(self):
        env = hookstest.hooks_env(hookstest.STANDINS + "/vllm_v1_new", TRUFFLD_HOOKS="0")
        out = hookstest.run_child("""
import vllm.v1.worker.gpu_worker as gw
print(json.dumps({"installed": truffld_hooks.installed(),
                  "wrapped": hasattr(gw.Worker.execute_model, "__truffld_wrapped__")}))
""", env=env)
        self.assertEqual({"installed": False, "wrapped": False}, out)


if __name__ == "__main__":
    hookstest.main()

"""Unit tests: range naming (escaping, suffix stripping, comm names) and request-id extraction
over stand-in objects shaped like several vLLM/SGLang versions. Pure logic, no torch."""

import types
import unittest

import hookstest

hookstest.import_hooks_here()
from truffld_hooks import frontend, naming, requests  # noqa: E402

NS = types.SimpleNamespace


class EscapingTest(unittest.TestCase):
    def test_round_trip_of_awkward_ids(self):
        ids = ["a_b", "c\\d", "e]f", "__", "\\_", "cmpl-1-0", "plain", "x\\]"]
        name = naming.step_name(ids)
        self.assertTrue(name.startswith("step_execute_model[request_ids:"))
        base, parsed, tag = naming.parse_step_name(name)
        self.assertEqual(("step_execute_model", ids, "requests"), (base, parsed, tag))

    def test_escape_is_exact(self):
        self.assertEqual("a\\_b", naming.escape_request_id("a_b"))
        self.assertEqual("a\\\\b", naming.escape_request_id("a\\b"))
        self.assertEqual("a\\]b", naming.escape_request_id("a]b"))

    def test_empty_and_dummy_steps_are_marked(self):
        self.assertEqual("step_execute_model[empty]", naming.step_name([]))
        self.assertEqual("step_execute_model[dummy]", naming.step_name(["a"], dummy=True))
        self.assertEqual(("step_execute_model", [], "empty"),
                         naming.parse_step_name("step_execute_model[empty]"))
        self.assertEqual((None, None), naming.parse_step_name("aten::mm, op_id = 1")[1:])

    def test_sample_step_keeps_the_merge_step_prefix(self):
        name = naming.step_name(["r1"], base=naming.STEP_SAMPLE)
        self.assertTrue(name.startswith("step_execute_model"))
        self.assertEqual(["r1"], naming.parse_step_name(name)[1])


class SuffixTest(unittest.TestCase):
    def test_strips_exactly_eight_lowercase_hex(self):
        self.assertEqual("cmpl-abc-0", naming.strip_random_suffix("cmpl-abc-0-1a2b3c4d"))
        self.assertEqual("req", naming.strip_random_suffix("req-deadbeef"))

    def test_leaves_other_endings(self):
        for rid in ("cmpl-abc-0", "req-1a2b3c4", "req-1A2B3C4D", "req-1a2b3c4d5", "-1a2b3c4d",
                    "x_1a2b3c4d"):
            self.assertEqual(rid, naming.strip_random_suffix(rid), rid)


class CommNameTest(unittest.TestCase):
    def test_format_and_parse(self):
        name = naming.comm_name("all_reduce", 1048576, 8, "pynccl")
        self.assertEqual("nccl:all_reduce, bytes=1048576, world_size=8, impl=pynccl", name)
        self.assertEqual(("all_reduce", {"bytes": "1048576", "world_size": "8", "impl": "pynccl"}),
                         naming.parse_comm_name(name))

    def test_unknowns_and_hostile_values(self):
        name = naming.comm_name("all gather", None, None, "a,b=c")
        self.assertEqual("nccl:all-gather, bytes=-1, world_size=-1, impl=a-b-c", name)
        self.assertIsNone(naming.parse_comm_name("aten::mm, seq = 0"))


class RequestIdsTest(unittest.TestCase):
    def test_vllm_v1_prefers_num_scheduled_tokens_in_batch_order(self):
        out = NS(num_scheduled_tokens={"b": 1, "a": 3}, scheduled_new_reqs=[NS(req_id="z")],
                 scheduled_cached_reqs=NS(req_ids=["y"]), total_num_scheduled_tokens=4)
        self.assertEqual(["b", "a"], requests.vllm_v1_request_ids(out))

    def test_vllm_v1_fallback_new_layout(self):  # 0.10+: CachedRequestData.req_ids
        out = NS(num_scheduled_tokens={}, scheduled_new_reqs=[NS(req_id="n1")],
                 scheduled_cached_reqs=NS(req_ids=["c1", "c2"]))
        self.assertEqual(["n1", "c1", "c2"], requests.vllm_v1_request_ids(out))

    def test_vllm_v1_fallback_old_layout(self):  # 0.8/0.9: list of CachedRequestData
        out = NS(scheduled_new_reqs=[NS(req_id="n1")],
                 scheduled_cached_reqs=[NS(req_id="c1"), NS(req_id="n1")])
        self.assertEqual(["n1", "c1"], requests.vllm_v1_request_ids(out))

    def test_vllm_v1_unrecognised_and_empty(self):
        self.assertIsNone(requests.vllm_v1_request_ids(NS(other=1)))
        self.assertIsNone(requests.vllm_v1_request_ids(None))
        empty = NS(num_scheduled_tokens={}, scheduled_new_reqs=[],
                   scheduled_cached_reqs=NS(req_ids=[]), total_num_scheduled_tokens=0)
        self.assertEqual([], requests.vllm_v1_request_ids(empty))
        self.assertTrue(requests.vllm_v1_is_empty(empty))

    def test_vllm_v0(self):
        self.assertEqual(["0", "7"], requests.vllm_v0_request_ids(
            NS(request_ids_to_seq_ids={"0": [0], "7": [1, 2]})))
        self.assertIsNone(requests.vllm_v0_request_ids(NS()))

    def test_sglang(self):
        batch = NS(reqs=[NS(rid="r1"), NS(rid="r2")], forward_mode=NS(is_idle=lambda: False))
        self.assertEqual(["r1", "r2"], requests.sglang_request_ids(batch))
        self.assertFalse(requests.sglang_is_idle(batch))
        self.assertTrue(requests.sglang_is_idle(NS(forward_mode=NS(is_idle=lambda: True))))
        self.assertFalse(requests.sglang_is_idle(NS(forward_mode=NS(is_idle=lambda: 1 / 0))))

    def test_normalise_strips_and_dedups(self):
        self.assertEqual(["a", "b-1"], requests.normalise(
            ["a-0123abcd", "a-89abcdef", "b-1"], strip_suffix=True))
        self.assertEqual(["a-0123abcd"], requests.normalise(["a-0123abcd"], strip_suffix=False))


class InjectionTableTest(unittest.TestCase):
    def test_shipped_table_matches_its_schema_and_loads_cleanly(self):
        import json
        import os
        schemas = os.path.join(hookstest.SOURCE_DIR, "schemas")
        table_path = os.path.join(schemas, "injection_table.json")
        with open(table_path) as handle:
            table = json.load(handle)
        with open(os.path.join(schemas, "injection_table.schema.json")) as handle:
            schema = json.load(handle)
        jsonschema = hookstest.require("jsonschema", "python3-jsonschema")
        jsonschema.validate(table, schema)
        entries, problems = frontend.load_table(table_path)
        self.assertEqual([], problems)
        self.assertEqual(len(table), len(entries))
        layers = {e["layer"] for e in entries}
        self.assertEqual({"frontend", "comm", "module_hooks"}, layers)

    def test_schema_rejects_a_malformed_entry(self):
        import json
        import os
        jsonschema = hookstest.require("jsonschema", "python3-jsonschema")
        with open(os.path.join(hookstest.SOURCE_DIR, "schemas",
                               "injection_table.schema.json")) as handle:
            schema = json.load(handle)
        with self.assertRaises(jsonschema.ValidationError):
            jsonschema.validate([{"domain": "PyTorch", "module": "torch nn",
                                  "functions": ["relu"]}], schema)


if __name__ == "__main__":
    hookstest.main()

"""Checks schemas/events.schema.json against the raw event contract (events-v1.md).

Every record type has a good example that must validate, and each required field, wrong type
and bad enum value must be rejected. Run with Debian's python3 (python3-jsonschema).
"""
import copy
import json
import os
import sys
import unittest

import jsonschema

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # truffld_unittest
import truffld_unittest  # noqa: E402

ROOT = os.environ.get("TRUFFLD_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def load(name):
    with open(os.path.join(ROOT, "schemas", name), encoding="utf-8") as f:
        return json.load(f)


HOST = {"process_id": 4242, "thread_id": 4243}
DEV = {"gpu_start": 1_000_500, "gpu_end": 1_002_000, "correlation_id": 77, "device": 0, "stream": 7}

GOOD = {
    "META": {"type": "META", "schema": "truffld.events/1", "host": "node0", "process_id": 4242,
             "rank": 3, "local_rank": 3, "world_size": 8, "clock": "realtime",
             "clock_sync": {"realtime_ns": 1_700_000_000_000_000_000, "monotonic_ns": 12_345},
             "cmdline": "python -m vllm.entrypoints.openai.api_server", "injector_version": "0.1.0",
             "devices": [{"id": 0, "name": "NVIDIA H200", "uuid": "GPU-1"}], "config": {"flush_ms": 500}},
    "NVTX_PUSH": {"type": "NVTX_PUSH", "name": "step_execute_model[request_ids:0_1_2]",
                  "timestamp": 1_000_000, "domain": "truffld", "category": 2, "color": 255, **HOST},
    "NVTX_POP": {"type": "NVTX_POP", "timestamp": 1_010_000, **HOST},
    "NVTX_START": {"type": "NVTX_START", "id": 9, "name": "ncclAllReduce", "timestamp": 1_000_100,
                   "payload": {"comm": "0x7f", "bytes": 1048576, "op": "sum"}, **HOST},
    "NVTX_END": {"type": "NVTX_END", "id": 9, "timestamp": 1_000_900, "process_id": 4242, "thread_id": 5000},
    "NVTX_MARK": {"type": "NVTX_MARK", "name": "checkpoint", "timestamp": 1_000_200, **HOST},
    "RUNTIME": {"type": "RUNTIME", "cbid": 211, "name": "cudaLaunchKernel", "start": 1_000_300,
                "end": 1_000_400, "correlation_id": 77, "return_code": 0, "stream": 7, **HOST},
    "DRIVER": {"type": "DRIVER", "cbid": 307, "name": "cuLaunchKernel", "start": 1_000_310,
               "end": 1_000_390, "correlation_id": 78, **HOST},
    "KERNEL": {"type": "KERNEL", "name": "void at::native::vectorized_elementwise_kernel<4>()",
               "grid": [128, 1, 1], "block": [256, 1, 1], "registers": 32, "shared_memory": 0,
               "graph_id": 1, "graph_node_id": 12, **DEV},
    "MEMCPY": {"type": "MEMCPY", "copy_kind": "HtoD", "bytes": 4096, "src_kind": "pinned",
               "dst_kind": "device", **DEV},
    "MEMSET": {"type": "MEMSET", "bytes": 512, **DEV},
    "SYNC": {"type": "SYNC", "sync_kind": "stream", "start": 1_003_000, "end": 1_004_000,
             "correlation_id": 80, "stream": 7},
    "GRAPH_NODE": {"type": "GRAPH_NODE", "graph_id": 1, "graph_node_id": 12, "correlation_id": 77,
                   "timestamp": 1_000_350, "original_graph_node_id": 3, **HOST},
    "CLOCK": {"type": "CLOCK", "clock_sync": {"realtime_ns": 1_700_000_000_500_000_000, "monotonic_ns": 500_012_345}},
    "STATS": {"type": "STATS", "records_written": {"KERNEL": 1, "NVTX_PUSH": 1},
              "records_dropped": {"KERNEL": 0}, "cupti_dropped": 0, "write_errors": 0,
              "ranges_dropped": {"push_pop": 0, "start_end": 0}, "unbalanced_closes": 0},
    "DEVICE_WINDOW": {"type": "DEVICE_WINDOW", "edge": "start", "id": 0, "timestamp": 999_000,
                      "trigger": "step", **HOST},
}

REQUIRED = {
    "META": ["schema", "host", "process_id", "rank", "clock", "clock_sync"],
    "NVTX_PUSH": ["name", "timestamp", "process_id", "thread_id"],
    "NVTX_POP": ["timestamp", "process_id", "thread_id"],
    "NVTX_START": ["id", "name", "timestamp", "process_id", "thread_id"],
    "NVTX_END": ["id", "timestamp", "process_id", "thread_id"],
    "NVTX_MARK": ["name", "timestamp", "process_id", "thread_id"],
    "RUNTIME": ["cbid", "name", "start", "end", "correlation_id", "process_id", "thread_id"],
    "DRIVER": ["cbid", "name", "start", "end", "correlation_id", "process_id", "thread_id"],
    "KERNEL": ["name", "gpu_start", "gpu_end", "correlation_id", "device", "stream"],
    "MEMCPY": ["copy_kind", "bytes", "gpu_start", "gpu_end", "correlation_id", "device", "stream"],
    "MEMSET": ["bytes", "gpu_start", "gpu_end", "correlation_id", "device", "stream"],
    "SYNC": ["sync_kind", "start", "end", "correlation_id"],
    "GRAPH_NODE": ["graph_id", "graph_node_id", "correlation_id", "process_id", "thread_id", "timestamp"],
    "CLOCK": ["clock_sync"],
    "STATS": ["records_written", "records_dropped"],
    "DEVICE_WINDOW": ["edge", "id", "timestamp", "process_id", "thread_id"],
}


class EventsSchemaTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        schema = load("events.schema.json")
        jsonschema.Draft202012Validator.check_schema(schema)
        cls.v = jsonschema.Draft202012Validator(schema)

    def assertValid(self, rec):
        errors = list(self.v.iter_errors(rec))
        self.assertEqual(errors, [], f"{rec} rejected: {[e.message for e in errors]}")

    def assertInvalid(self, rec, why):
        self.assertFalse(self.v.is_valid(rec), f"accepted {why}: {rec}")

    def test_every_record_type_has_a_good_example(self):
        self.assertEqual(set(GOOD), set(REQUIRED))
        for rec in GOOD.values():
            self.assertValid(rec)

    def test_good_lines_round_trip_through_json_text(self):
        for rec in GOOD.values():
            self.assertValid(json.loads(json.dumps(rec)))

    def test_added_fields_are_allowed(self):
        for rec in GOOD.values():
            self.assertValid({**rec, "x_future_field": [1, 2]})

    def test_each_required_field_is_required(self):
        for kind, fields in REQUIRED.items():
            for f in fields:
                rec = copy.deepcopy(GOOD[kind])
                del rec[f]
                self.assertInvalid(rec, f"{kind} without {f}")

    def test_missing_or_unknown_type(self):
        self.assertInvalid({"name": "x"}, "no type")
        self.assertInvalid({**GOOD["NVTX_MARK"], "type": "NVTX_MARKER"}, "dialect type in contract")
        self.assertInvalid({**GOOD["KERNEL"], "type": "kernel"}, "lower-case type")

    def test_timestamps_are_integer_nanoseconds(self):
        self.assertInvalid({**GOOD["NVTX_PUSH"], "timestamp": 1.5}, "fractional timestamp")
        self.assertInvalid({**GOOD["NVTX_PUSH"], "timestamp": "1000"}, "string timestamp")
        self.assertInvalid({**GOOD["KERNEL"], "gpu_start": 10.0 + 0.25}, "fractional gpu_start")
        self.assertInvalid({**GOOD["RUNTIME"], "end": None}, "null end")

    def test_meta_constraints(self):
        self.assertInvalid({**GOOD["META"], "schema": "truffld.events/2"}, "other schema version")
        self.assertInvalid({**GOOD["META"], "clock": "tsc"}, "unknown clock")
        self.assertValid({**GOOD["META"], "rank": None})
        self.assertInvalid({**GOOD["META"], "rank": "3"}, "string rank")
        self.assertInvalid({**GOOD["META"], "clock_sync": {"realtime_ns": 1}}, "half a clock pair")
        self.assertInvalid({**GOOD["META"], "devices": [{"name": "H200"}]}, "device without id")

    def test_device_record_constraints(self):
        self.assertInvalid({**GOOD["MEMCPY"], "copy_kind": "HostToDevice"}, "unknown copy kind")
        self.assertInvalid({**GOOD["MEMSET"], "bytes": -1}, "negative bytes")
        self.assertInvalid({**GOOD["KERNEL"], "grid": [1, 1]}, "2-d grid")
        self.assertInvalid({**GOOD["KERNEL"], "correlation_id": -4}, "negative correlation")
        self.assertInvalid({**GOOD["KERNEL"], "stream": "7"}, "string stream")

    def test_payload_must_be_an_object(self):
        self.assertInvalid({**GOOD["NVTX_START"], "payload": "bytes=4"}, "string payload")
        self.assertInvalid({**GOOD["NVTX_PUSH"], "name": 12}, "numeric name")

    def test_device_window_constraints(self):
        self.assertValid({**GOOD["DEVICE_WINDOW"], "edge": "end", "trigger": "exit"})
        for trigger in ("time", "slow_step", "request"):  # requested windows (TRUFFLD_WINDOW_*)
            self.assertValid({**GOOD["DEVICE_WINDOW"], "trigger": trigger})
        self.assertInvalid({**GOOD["DEVICE_WINDOW"], "edge": "middle"}, "unknown edge")
        self.assertInvalid({**GOOD["DEVICE_WINDOW"], "trigger": "random"}, "unknown trigger")
        self.assertInvalid({**GOOD["DEVICE_WINDOW"], "id": -1}, "negative window index")

    def test_stats_counts(self):
        self.assertValid({**GOOD["STATS"], "records_written": 12, "records_dropped": 0})
        self.assertInvalid({**GOOD["STATS"], "records_dropped": {"KERNEL": -1}}, "negative drop count")
        self.assertInvalid({**GOOD["STATS"], "ranges_dropped": {"push_pop": -1}}, "negative range count")
        self.assertInvalid({**GOOD["STATS"], "unbalanced_closes": "0"}, "string count")


class TreesSchemaTest(unittest.TestCase):
    def test_trees_schema_is_valid_and_accepts_an_example(self):
        schema = load("trees.schema.json")
        jsonschema.Draft202012Validator.check_schema(schema)
        v = jsonschema.Draft202012Validator(schema)
        kernel = {"name": "sgemm", "layer": "kernel", "family": "sgemm", "start": 30, "end": 60,
                  "correlation_id": 5, "stream": 7, "device": 0}
        api = {"name": "cudaLaunchKernel", "layer": "runtime_call", "family": "cudaLaunchKernel",
               "start": 20, "end": 25, "thread_id": 1, "correlation_id": 5, "children": [kernel]}
        mm = {"name": "aten::mm, seq = 0, op_id = 4", "layer": "backend_op", "family": "aten::mm",
              "start": 10, "end": 40, "thread_id": 1, "children": [api]}
        tree = {"schema": "truffld.trees/1", "rank": 0, "process_id": 9, "step_index": 0,
                "step": "step_execute_model[request_ids:a_b]", "requests": ["a", "b"], "request": "a",
                "view": "vertical", "start": 0, "end": 100,
                "root": {"name": "step_execute_model[request_ids:a_b]", "layer": "step", "family": "step",
                         "start": 0, "end": 100, "children": [mm]}}
        self.assertEqual(list(v.iter_errors(tree)), [])
        bad = copy.deepcopy(tree)
        bad["root"]["children"][0]["layer"] = "operator"
        self.assertFalse(v.is_valid(bad))
        bad = copy.deepcopy(tree)
        bad["view"] = "diagonal"
        self.assertFalse(v.is_valid(bad))


class AllSchemasTest(unittest.TestCase):
    def test_every_schema_file_is_a_valid_2020_12_schema(self):
        names = sorted(n for n in os.listdir(os.path.join(ROOT, "schemas")) if n.endswith(".schema.json"))
        self.assertIn("events.schema.json", names)
        for n in names:
            with self.subTest(schema=n):
                s = load(n)
                self.assertEqual(s.get("$schema"), "https://json-schema.org/draft/2020-12/schema")
                jsonschema.Draft202012Validator.check_schema(s)


if __name__ == "__main__":
    truffld_unittest.main()

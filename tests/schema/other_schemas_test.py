"""Good and bad records for every schema in schemas/ besides events (events_schema_test.py).

Each schema gets a good example that must validate and a set of targeted breakages (missing
required field, wrong type, bad enum, out-of-range number) that must each be rejected. The
outputs themselves are also validated where they are produced (merge, diagnose and synth
integration tests); this file pins the schemas' own accept/reject behaviour.
Run with Debian's python3 (python3-jsonschema).
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


def drop(d, key):
    d = copy.deepcopy(d)
    d.pop(key)
    return d


def put(d, path, value):
    d = copy.deepcopy(d)
    cur = d
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    return d


class SchemaCase(unittest.TestCase):
    schema_file = None

    def validator(self):
        s = load(self.schema_file)
        jsonschema.Draft202012Validator.check_schema(s)
        return jsonschema.Draft202012Validator(s)

    def check(self, good, bad):
        v = self.validator()
        errs = list(v.iter_errors(good))
        self.assertEqual(errs, [], [e.message for e in errs])
        for why, rec in bad.items():
            with self.subTest(breakage=why):
                self.assertFalse(v.is_valid(rec), f"{self.schema_file} accepted: {why}")


TREE = {"schema": "truffld.trees/1", "rank": 0, "process_id": 9, "step_index": 2,
        "step": "step_execute_model[request_ids:a_b_c][phase:decode]", "requests": ["a", "b", "c"],
        "request": "a", "request_group": ["a", "c"], "view": "vertical", "phase": "decode",
        "start": 0, "end": 100,
        "root": {"name": "step", "layer": "step", "family": "step", "start": 0, "end": 100}}


class TreesTest(SchemaCase):
    schema_file = "trees.schema.json"

    def test_grouped_line(self):
        self.check(TREE, {
            "request_group of one": put(TREE, ["request_group"], ["a"]),
            "request_group not strings": put(TREE, ["request_group"], ["a", 3]),
            "missing request": drop(TREE, "request"),
            "negative step_index": put(TREE, ["step_index"], -1),
            "bad phase": put(TREE, ["phase"], "warmup"),
            "bad layer": put(TREE, ["root", "layer"], "operator"),
        })

    def test_device_detail(self):
        sampled = put(TREE, ["device_detail"], False)
        self.check(sampled, {
            "device_detail not a boolean": put(TREE, ["device_detail"], "no"),
            "device_detail a number": put(TREE, ["device_detail"], 0),
        })


RULES = {"schema": "truffld.rules/1", "replace_defaults": False, "request_regex": "reqs=([^;]*)",
         "rules": [{"layer": "step", "name_regex": "^my_engine_step", "ignore_case": True},
                   {"layer": "backend_op", "name_regex": "^mylib::", "domain": "mylib"},
                   {"layer": "comm", "category": "nccl"}]}


class RulesTest(SchemaCase):
    schema_file = "rules.schema.json"

    def test_rules(self):
        self.check(RULES, {
            "rule without layer": put(RULES, ["rules", 0], {"name_regex": "^x"}),
            "unknown layer": put(RULES, ["rules", 0, "layer"], "sideways"),
            "unknown rule field (typo)": put(RULES, ["rules", 1, "name_regexp"], "^x"),
            "ignore_case not bool": put(RULES, ["rules", 0, "ignore_case"], "yes"),
            "rules not a list": put(RULES, ["rules"], {"layer": "step"}),
            "replace_defaults not bool": put(RULES, ["replace_defaults"], "yes"),
        })


class InjectionTableTest(SchemaCase):
    schema_file = "injection_table.schema.json"

    def test_packaged_table_and_breakages(self):
        good = load("injection_table.json")
        self.assertGreater(len(good), 0)
        first = good[0]
        self.check(good, {
            "entry without functions": [drop(first, "functions")] + good[1:],
            "entry without module": [drop(first, "module")] + good[1:],
            "functions not a list": [put(first, ["functions"], "linear")] + good[1:],
            "bad layer": [put(first, ["layer"], "backend")] + good[1:],
            "not a list": first,
        })


LABEL = {"rank": 1, "step_index": 4, "view": "horizontal", "abnormal": True,
         "faulty": ["ncclAllReduce"], "fault_ids": ["f3"], "phase": "decode"}


class LabelsTest(SchemaCase):
    schema_file = "labels.schema.json"

    def test_labels(self):
        self.check(LABEL, {
            "missing abnormal": drop(LABEL, "abnormal"),
            "abnormal not bool": put(LABEL, ["abnormal"], "yes"),
            "bad view": put(LABEL, ["view"], "diagonal"),
            "faulty not a list": put(LABEL, ["faulty"], "ncclAllReduce"),
            "step_index not integer": put(LABEL, ["step_index"], 1.5),
        })


LEDGER = {"id": "f3", "class": "communication", "layer": "network", "target": "ncclAllReduce",
          "rank": 1, "host": "node0", "start": 1000, "end": 5000, "intensity": 2.5, "level": "strong",
          "sufficient": True, "first_step": 3, "last_step": 6, "clock": "realtime"}


class LedgerTest(SchemaCase):
    schema_file = "ledger.schema.json"

    def test_ledger(self):
        self.check(LEDGER, {
            "missing intensity": drop(LEDGER, "intensity"),
            "unknown class": put(LEDGER, ["class"], "cosmic_ray"),
            "start not integer": put(LEDGER, ["start"], "1000"),
            "sufficient not bool": put(LEDGER, ["sufficient"], 1),
        })


DIAG = {"schema": "truffld.diagnosis/1", "rank": 0, "step_index": 3, "step": "s", "view": "vertical",
        "phase": "prefill", "requests": ["a"], "duration_ns": 5000, "operator_instances": 40,
        "label": "abnormal",
        "faulty": [{"family": "aten::mm", "score": 0.9, "probability": 0.1, "method": "gmm-pooled",
                    "instances": 12, "parent_chain": ["torch.nn.functional.linear"]}],
        "stage1": {"mode": "pooled", "threshold": 0.4, "families": 9,
                   "candidates": [{"family": "aten::mm", "score": 0.9, "probability": 0.1,
                                   "method": "gmm-pooled", "instances": 12}]},
        "stage2": {"abnormal": True, "faulty": ["aten::mm"], "source": "offline"},
        "comm": {"bytes": 1048576, "world_size": 4}}


class DiagnosisTest(SchemaCase):
    schema_file = "diagnosis.schema.json"

    def test_diagnosis(self):
        self.check(DIAG, {
            "bad label": put(DIAG, ["label"], "weird"),
            "score above 1": put(DIAG, ["faulty", 0, "score"], 1.5),
            "faulty without parent_chain": put(DIAG, ["faulty", 0], drop(DIAG["faulty"][0], "parent_chain")),
            "bad stage1 mode": put(DIAG, ["stage1", "mode"], "magic"),
            "bad stage2 source": put(DIAG, ["stage2", "source"], "oracle"),
            "candidate without method": put(DIAG, ["stage1", "candidates", 0],
                                            drop(DIAG["stage1"]["candidates"][0], "method")),
            "missing stage2": drop(DIAG, "stage2"),
            "negative comm bytes": put(DIAG, ["comm", "bytes"], -1),
        })


class SummaryTest(SchemaCase):
    schema_file = "summary.schema.json"

    def test_layout_field(self):
        # A whole summary is validated from real merges (tests/merge/integration); here only the
        # fields this schema pins by enum/range are probed on a copy of its own minimal skeleton.
        s = load(self.schema_file)
        v = jsonschema.Draft202012Validator(s)
        self.assertIn("trees_layout", s["properties"])
        self.assertTrue(jsonschema.Draft202012Validator(s["properties"]["trees_layout"]).is_valid("grouped"))
        self.assertFalse(jsonschema.Draft202012Validator(s["properties"]["trees_layout"]).is_valid("sideways"))
        self.assertFalse(jsonschema.Draft202012Validator(s["properties"]["trees_written"]).is_valid(-1))
        self.assertFalse(v.is_valid({}), "an empty summary must be rejected")


STATS_SUMMARY = {
    "schema": "truffld.stats-summary/1", "kernels": 3, "kernel_total_ns": 550,
    "kernel_summary": [{"name": "gemmA", "count": 1, "total_ns": 200, "avg_ns": 200.0, "min_ns": 200,
                        "max_ns": 200, "share": 0.36}],
    "step_idle": [{"rank": 0, "step_index": 0, "duration_ns": 1000, "busy_ns": 550, "idle_share": 0.45}],
    "rank_idle": [{"rank": None, "steps": 1, "duration_ns": 1000, "busy_ns": 550, "idle_share": 0.45,
                   "min_step_idle_share": 0.45, "max_step_idle_share": 0.45}],
    "launch_latency": [{"api": "cudaLaunchKernel", "count": 3, "min_ns": 50, "p50_ns": 180, "p90_ns": 260,
                        "p99_ns": 260, "max_ns": 260, "p50_after_end_ns": 170}],
    "overlap": [{"rank": 0, "compute_ns": 300, "comm_ns": 200, "overlap_ns": 50, "overlap_share": 0.25}]}


class StatsSummaryTest(SchemaCase):
    schema_file = "stats-summary.schema.json"

    def test_stats_summary(self):
        self.check(STATS_SUMMARY, {
            "wrong schema": put(STATS_SUMMARY, ["schema"], "truffld.stats-summary/2"),
            "missing overlap": drop(STATS_SUMMARY, "overlap"),
            "share above 1": put(STATS_SUMMARY, ["kernel_summary", 0, "share"], 1.5),
            "zero-length step": put(STATS_SUMMARY, ["step_idle", 0, "duration_ns"], 0),
            "rank as text": put(STATS_SUMMARY, ["overlap", 0, "rank"], "0"),
            "unknown key": put(STATS_SUMMARY, ["extra"], 1),
            "percentile missing": put(STATS_SUMMARY, ["launch_latency", 0],
                                      drop(STATS_SUMMARY["launch_latency"][0], "p99_ns")),
        })


if __name__ == "__main__":
    truffld_unittest.main()

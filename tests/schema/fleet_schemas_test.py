"""Good and bad records for the fleet's schemas: step_features (truffld-diagnose
--step-features), fleet (fleet.jsonl findings) and fleet_shard (replica-<id>/.fleet-shard.json).
Real outputs are validated in tests/fleet; this pins the schemas' accept/reject behaviour.
Run with Debian's python3 (python3-jsonschema)."""
import os
import sys
import unittest

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # truffld_unittest
import truffld_unittest  # noqa: E402
from other_schemas_test import SchemaCase, drop, put  # noqa: E402

FEATURE = {"schema": "truffld.step_features/1", "replica": "5", "host": "node5", "rank": 10, "step_index": 3,
           "phase": "decode", "batch": 17, "tokens": 17, "context": 5400, "start_ns": 1763700000000000000,
           "step_ns": 9100000, "gap_ns": 61000, "collectives": 9, "comm_wait_ns": 12000, "comm_transfer_ns": 80000,
           "families": [{"family": "aten::mm", "metric": "device", "observed_ns": 4100000, "expected_ns": 4000000},
                        {"family": "aten::mm", "metric": "host", "observed_ns": 300000, "expected_ns": None}],
           "verdict": "normal", "faulty": []}

FINDING = {"schema": "truffld.fleet/1", "kind": "slow_replica", "replica": "5", "hosts": ["node5"], "ranks": [10, 11],
           "evidence": "replica 5 (host node5): aten::mm device time 1.18x per token that of 7 other replicas",
           "metrics": [{"metric": "aten::mm", "ratio": 1.18, "fleet_ratio": 1.0, "threshold_ratio": 1.08, "steps": 16,
                        "steps_slower": 16, "peer_replicas": 7}]}

SHARD = {"schema": "truffld.fleet_shard/1", "replica": "5", "key": "a" * 64, "hosts": ["node5"], "ranks": [10, 11],
         "files": ["truffld-node5-r10-1.jsonl"]}


class StepFeaturesTest(SchemaCase):
    schema_file = "step_features.schema.json"

    def test_line(self):
        self.check(FEATURE, {
            "missing step_ns": drop(FEATURE, "step_ns"),
            "negative gap": put(FEATURE, ["gap_ns"], -1),
            "bad metric": put(FEATURE, ["families", 0, "metric"], "wall"),
            "family without expected": put(FEATURE, ["families"], [{"family": "x", "metric": "device", "observed_ns": 1}]),
            "bad verdict": put(FEATURE, ["verdict"], "odd"),
            "wrong schema": put(FEATURE, ["schema"], "truffld.step_features/2"),
        })
        self.check(put(put(FEATURE, ["tokens"], None), ["gap_ns"], None), {})


class FleetTest(SchemaCase):
    schema_file = "fleet.schema.json"

    def test_findings(self):
        window = put(FINDING, ["kind"], "slow_window")
        self.check(FINDING, {
            "slow_window without window": window,
            "ratio not positive": put(FINDING, ["metrics", 0, "ratio"], 0),
            "steps a string": put(FINDING, ["metrics", 0, "steps"], "16"),
            "no metrics": drop(FINDING, "metrics"),
            "bad kind": put(FINDING, ["kind"], "fast_replica"),
            "empty evidence": put(FINDING, ["evidence"], ""),
        })
        self.check(put(window, ["window"], {"start_ns": 1, "end_ns": 2, "from_s": 0.0, "to_s": 0.1}), {})
        failed = {"schema": "truffld.fleet/1", "kind": "shard_failed", "replica": "3", "hosts": ["node3"],
                  "ranks": [6, 7], "evidence": "replica 3: truffld-merge exited 1", "reason": "truffld-merge exited 1"}
        self.check(failed, {"shard_failed without reason": drop(failed, "reason")})


class FleetShardTest(SchemaCase):
    schema_file = "fleet_shard.schema.json"

    def test_marker(self):
        self.check(SHARD, {"short key": put(SHARD, ["key"], "abc"), "no files": put(SHARD, ["files"], []),
                           "missing replica": drop(SHARD, "replica")})


if __name__ == "__main__":
    truffld_unittest.main()

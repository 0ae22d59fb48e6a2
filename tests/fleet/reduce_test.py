"""Unit tests of the fleet reduce (tools/fleet/reduce.py) and the shard planner (plan.py) on
hand-built feature lines: a healthy fleet raises nothing, a replica whose GPUs are slower in
every step is named with its evidence (in a replica over hosts, the slow host alone) and what it
costs a step (against a twin fleet without the slowdown), a replica
slow in a window is found in that window,
workload differences alone raise nothing, planning groups dumps by host or replica map, and
--dumps-local places each shard on its own host's workers."""
import json
import math
import os
import random
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))  # truffld_unittest
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "fleet"))
import truffld_unittest  # noqa: E402
import placement  # noqa: E402
import plan  # noqa: E402
import reduce  # noqa: E402


def fleet(replicas=8, steps=24, seed=1, slow=None, window=None, jitter=0.02, heavy=None):
    """Feature lines of a TP2 fleet. slow: {replica: factor} on device time in every step;
    window: (replica, factor, first step, last step); heavy: {replica: token scale}."""
    rng = random.Random(seed)
    rows = []
    for rep in range(replicas):
        for k in range(steps):
            decode = k % 4 != 0
            scale = (heavy or {}).get(rep, 1.0)
            tokens = int((rng.randint(8, 40) if decode else rng.randint(300, 2000)) * scale)
            f = (slow or {}).get(rep, 1.0)
            if window and window[0] == rep and window[2] <= k <= window[3]:
                f *= window[1]
            mm = (20000 + 900 * tokens) * f
            attn = (8000 + 30 * tokens) * f
            for tp in range(2):
                j = lambda: math.exp(rng.gauss(0, jitter))  # noqa: E731
                rows.append({"replica": str(rep), "host": "node%d" % rep, "rank": 2 * rep + tp, "step_index": k,
                             "phase": "decode" if decode else "prefill", "batch": 1, "tokens": tokens,
                             "context": 100 * tokens, "start_ns": k * 10_000_000 + rep * 1000,
                             "step_ns": int((40 * mm + 36 * attn + 150000) * j()), "gap_ns": 60000,
                             "verdict": "normal", "faulty": [],
                             "families": [{"family": "aten::mm", "metric": "device", "observed_ns": int(36 * mm * j()),
                                           "expected_ns": None},
                                          {"family": "attn", "metric": "device", "observed_ns": int(36 * attn * j()),
                                           "expected_ns": None},
                                          {"family": "aten::mm", "metric": "host", "observed_ns": 5000,
                                           "expected_ns": 5000}]})
    return rows


class ReduceTest(unittest.TestCase):
    def test_healthy_fleets_raise_nothing(self):
        for seed in range(1, 6):
            with self.subTest(seed=seed):
                self.assertEqual(reduce.reduce_fleet(fleet(seed=seed))["findings"], [])

    def test_workload_differences_alone_raise_nothing(self):
        self.assertEqual(reduce.reduce_fleet(fleet(heavy={3: 1.6}, seed=2))["findings"], [])

    def test_slow_replica_named_with_evidence(self):
        out = reduce.reduce_fleet(fleet(slow={5: 1.18}, seed=3))
        self.assertEqual([f["replica"] for f in out["findings"]], ["5"])
        f = out["findings"][0]
        self.assertEqual(f["kind"], "slow_replica")
        self.assertEqual(f["hosts"], ["node5"])
        self.assertEqual(f["ranks"], [10, 11])
        mm = [m for m in f["metrics"] if m["metric"] == "aten::mm"][0]
        self.assertAlmostEqual(mm["ratio"], 1.18, delta=0.03)
        self.assertEqual(mm["steps_slower"], mm["steps"])
        self.assertEqual(mm["peer_replicas"], 7)
        self.assertIn("replica 5 (host node5): ", f["evidence"])
        self.assertIn("aten::mm device time 1.1", f["evidence"])
        self.assertIn("in every step", f["evidence"])

    def test_finding_says_what_it_costs_a_step(self):
        # The same seed without the slowdown is the twin: what replica 5 loses a step is the
        # median difference of its step times.
        slow, twin = fleet(slow={5: 1.18}, seed=3), fleet(seed=3)
        lost = sorted(s["step_ns"] - t["step_ns"] for s, t in zip(slow, twin) if s["replica"] == "5")
        truth = lost[len(lost) // 2]
        f = reduce.reduce_fleet(slow)["findings"][0]
        step = [m for m in f["metrics"] if m["metric"] == reduce.STEP_TIME][0]
        self.assertEqual(f["cost_ns_per_step"], step["excess_ns_per_step"])
        self.assertAlmostEqual(f["cost_ns_per_step"] / truth, 1.0, delta=0.1)
        self.assertGreater(f["cost_share"], 0.1)
        self.assertLess(f["cost_share"], 0.18)
        self.assertIn("% of its step time) against its peers' pace", f["evidence"])
        # Without a compared step time (a stage of a replica over hosts), the slower families' sum.
        mm = [m for m in f["metrics"] if m["metric"] == "aten::mm"][0]
        self.assertGreater(mm["excess_ns_per_step"], 0)
        self.assertEqual(reduce._cost([("aten::mm", mm), ("attn", mm)]),
                         (2 * mm["excess_ns_per_step"], 2 * mm["step_share"]))

    def test_replica_over_hosts_names_the_slow_host(self):
        rows = fleet(seed=4)
        for r in rows:  # each replica's two ranks on two hosts (pipeline stages); node6's GPU slower
            r["host"] = "node%d" % r["rank"]
            if r["rank"] == 6:
                for f in r["families"]:
                    f["observed_ns"] = int(f["observed_ns"] * 1.3)
        out = reduce.reduce_fleet(rows)
        self.assertEqual([(f["kind"], f["replica"], f["hosts"], f["ranks"]) for f in out["findings"]],
                         [("slow_replica", "3", ["node6"], [6])])
        self.assertTrue(out["findings"][0]["evidence"].startswith("replica 3 (host node6): "))
        self.assertEqual(out["heat"]["replicas"][:3], ["0/node0", "0/node1", "1/node2"])
        self.assertEqual(out["heat"]["replica_of"][:3], ["0", "0", "1"])
        self.assertEqual(reduce.reduce_fleet(fleet(seed=4))["findings"], [])

    def test_small_slowdown_below_min_ratio_is_not_reported(self):
        self.assertEqual(reduce.reduce_fleet(fleet(slow={2: 1.03}))["findings"], [])

    def test_slow_window(self):
        out = reduce.reduce_fleet(fleet(window=(4, 1.5, 6, 17), steps=24), reduce.Options(windows=4))
        kinds = [(f["kind"], f["replica"]) for f in out["findings"]]
        self.assertEqual(kinds, [("slow_window", "4")])
        w = out["findings"][0]["window"]
        self.assertLessEqual(w["start_ns"], 6 * 10_000_000 + 4000)
        self.assertGreaterEqual(w["end_ns"], 17 * 10_000_000)

    def test_heat_map_shape(self):
        out = reduce.reduce_fleet(fleet(slow={1: 1.3}, replicas=4), reduce.Options(windows=3))
        heat = out["heat"]
        self.assertEqual(heat["replicas"], ["0", "1", "2", "3"])
        self.assertEqual(len(heat["windows"]), 3)
        self.assertGreater(min(r for r in heat["ratio"][1] if r), max(r for r in heat["ratio"][0] if r))

    def test_too_few_replicas_judges_nothing(self):
        self.assertEqual(reduce.reduce_fleet(fleet(replicas=2, slow={1: 2.0}))["findings"], [])

    def test_gpu_pools_keep_types_apart(self):
        # Replicas 5-7 run on a GPU type 1.3x slower: compared only with their own type, they raise
        # nothing; one slow node within the faster type is still found, against its 4 pool peers.
        slower_type = {5: 1.3, 6: 1.3, 7: 1.3}

        def mixed(seed, slow, pools=True):
            rows = fleet(seed=seed, slow={**slower_type, **slow})
            for r in rows:
                r["pool"] = ("B | m" if int(r["replica"]) >= 5 else "A | m") if pools else ""
            return rows
        for seed in range(1, 6):
            with self.subTest(seed=seed):
                self.assertEqual(reduce.reduce_fleet(mixed(seed, {}))["findings"], [])
                out = reduce.reduce_fleet(mixed(seed, {1: 1.2}))
                self.assertEqual([(f["kind"], f["replica"], f["pool"]) for f in out["findings"]],
                                 [("slow_replica", "1", "A | m")])
                mm = [m for m in out["findings"][0]["metrics"] if m["metric"] == "aten::mm"][0]
                self.assertEqual(mm["peer_replicas"], 4)
        # What the pools prevent: judged as one pool, the slower type's replicas are "slow".
        self.assertEqual([f["replica"] for f in reduce.reduce_fleet(mixed(1, {}, pools=False))["findings"]],
                         ["5", "6", "7"])

    def test_empty(self):
        self.assertEqual(reduce.reduce_fleet([])["findings"], [])


class PlanTest(unittest.TestCase):
    def dumps(self):
        return [("/d/truffld-r%d.jsonl" % r, {"type": "META", "host": "node%d" % (r // 2), "rank": r})
                for r in (0, 1, 2, 3, 20, 21)]

    def test_by_host_natural_order(self):
        d = [("/d/a%d" % r, {"type": "META", "host": "node%d" % h, "rank": r}) for r, h in ((0, 10), (1, 9), (2, 10))]
        shards = plan.plan_shards(d)
        self.assertEqual([(s["replica"], s["hosts"], s["ranks"]) for s in shards],
                         [("0", ["node9"], [1]), ("1", ["node10"], [0, 2])])

    def test_replica_map(self):
        with tempfile.TemporaryDirectory() as t:
            p = os.path.join(t, "map.json")
            with open(p, "w") as f:
                json.dump({"a": [0, 1, 2, 3], "b": [20, 21]}, f)
            shards = plan.plan_shards(self.dumps(), plan.load_replica_map(p))
            self.assertEqual([(s["replica"], s["hosts"]) for s in shards],
                             [("a", ["node0", "node1"]), ("b", ["node10"])])
            with open(p, "w") as f:
                json.dump({"a": [0, 1]}, f)
            with self.assertRaisesRegex(plan.PlanError, "rank 2 is in no replica"):
                plan.plan_shards(self.dumps(), plan.load_replica_map(p))
            with open(p, "w") as f:
                json.dump({"a": [0], "b": [0]}, f)
            with self.assertRaisesRegex(plan.PlanError, "rank 0 is in replicas"):
                plan.load_replica_map(p)

    def test_pool_of_meta_and_pool_map(self):
        meta = {"type": "META", "host": "node0", "rank": 0, "devices": [{"id": 0, "name": "NVIDIA A100"}],
                "cmdline": ["vllm", "serve", "Qwen/Qwen3-8B", "--tensor-parallel-size", "2", "--dtype=bf16", "--port", "1"]}
        self.assertEqual(plan.pool_of(meta), "NVIDIA A100 | Qwen/Qwen3-8B | --dtype=bf16 | --tensor-parallel-size=2")
        self.assertEqual(plan.pool_of({"type": "META"}), "unknown GPU | unknown model")
        d = [("/d/r0", meta), ("/d/r1", {**meta, "host": "node1", "rank": 1, "devices": [{"id": 0, "name": "H100"}]})]
        self.assertEqual([s["pool"].split(" | ")[0] for s in plan.plan_shards(d)], ["NVIDIA A100", "H100"])
        with tempfile.TemporaryDirectory() as t:
            p = os.path.join(t, "pools.json")
            with open(p, "w") as f:
                json.dump({"1": "a100-8b"}, f)
            self.assertEqual(plan.plan_shards(d, None, plan.load_pool_map(p))[1]["pool"], "a100-8b")
            with open(p, "w") as f:
                json.dump({"1": 3}, f)
            with self.assertRaisesRegex(plan.PlanError, "pools.json: the pool map must be"):
                plan.load_pool_map(p)

    def test_read_meta_errors_name_the_file(self):
        with tempfile.TemporaryDirectory() as t:
            p = os.path.join(t, "truffld-x.jsonl")
            with open(p, "w") as f:
                f.write("{not json\n")
            with self.assertRaisesRegex(plan.PlanError, "truffld-x.jsonl:1: first line is not JSON"):
                plan.read_meta(p)
            with open(p, "w") as f:
                f.write('{"type": "KERNEL"}\n')
            with self.assertRaisesRegex(plan.PlanError, "first record is not META"):
                plan.read_meta(p)

    def test_dumps_local_placement(self):
        m = lambda host, rank: {"type": "META", "host": host, "rank": rank}  # noqa: E731
        scans = {"tcp://a:1": ("n0", [("/l/r0", m("node0", 0)), ("/l/r1", m("node0", 1)), ("/s/r4", m("node2", 4))], []),
                 "tcp://b:1": ("n1", [("/l/r2", m("node1", 2)), ("/l/r3", m("node1", 3)), ("/s/r4", m("node2", 4))], []),
                 "tcp://c:1": ("n1", [("/l/r2", m("node1", 2)), ("/l/r3", m("node1", 3))], ["/l/x:1: first record is not META"])}
        dumps, seen, problems = placement.pin(scans)
        self.assertEqual([p for p, _ in dumps], ["/l/r0", "/l/r1", "/l/r2", "/l/r3", "/s/r4"])
        self.assertEqual(problems, ["n1: /l/x:1: first record is not META"])
        shards = plan.plan_shards(dumps)
        self.assertEqual([placement.workers_for(s, seen) for s in shards],
                         [["tcp://a:1"], ["tcp://b:1", "tcp://c:1"], ["tcp://a:1", "tcp://b:1"]])
        self.assertEqual(placement.workers_for({"files": ["/l/r0", "/l/r2"]}, seen), [])

    def test_scan_local(self):
        with tempfile.TemporaryDirectory() as t:
            with open(os.path.join(t, "truffld-h-r0-p1.jsonl"), "w") as f:
                f.write('{"type": "META", "host": "h", "rank": 0}\n')
            host, found, problems = placement.scan_local([t, os.path.join(t, "absent")])
            self.assertEqual([(os.path.basename(p), m["rank"]) for p, m in found], [("truffld-h-r0-p1.jsonl", 0)])
            self.assertEqual(problems, [])
            self.assertEqual(placement.scan_local([os.path.join(t, "absent")])[1:], ([], []))

if __name__ == "__main__":
    truffld_unittest.main()

"""truffld-fleet in-process on pipeline-parallel replicas: 4 synthetic replicas of TP2 x PP2
(8 hosts, each replica's two hosts its two stages), host node3 (replica 1's second stage) with
GPUs 1.25x slower in every step (--slow-host). Inside its replica nothing shows it: the stage
is compared with the same stage of the other replicas. Checks that
  - the one finding is that stage's host and ranks (the ledger's), its costs about 1.25x;
  - it says what the slow stage costs a step: the finding's cost_ns_per_step is within 35% of
    the step time the stage really lost, measured against a twin run of the same seed without
    the slow host (the median per-step difference of the stage's step time);
  - the twin run raises nothing;
  - fleet.html lists that stage first among the replicas, with its cost a step;
  - inside replica 1, truffld-diagnose reports that stage as the longest of its pipeline in every
    step (stats.json peer.pipeline_imbalance), with a larger saving than in the twin run.
Usage: fleet_pipeline_test.py --synth BIN --merge BIN --diagnose BIN --work DIR
"""
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FLEET = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools", "truffld-fleet")
sys.path.insert(0, HERE)
import fleet_common as fc  # noqa: E402

PP = ["--pp", "2", "--faults", "none", "--seed", "31"]


def run_fleet(a, dumps, out, replica_map):
    r = subprocess.run([FLEET, dumps, "-o", out, "--in-process", "--merge", a.merge, "--diagnose", a.diagnose,
                        "--tool-threads", "1", "--replica-map", replica_map],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
    print(r.stdout, r.stderr)
    fc.check(r.returncode == 0, "truffld-fleet exited %d" % r.returncode)
    return fc.read_jsonl(os.path.join(out, "fleet.jsonl"))


def step_times(out, replica, ranks):
    """{(rank, step): step_ns} of `ranks` in a fleet run's replica shard."""
    rows = fc.read_jsonl(os.path.join(out, "replica-%s" % replica, "step_features.jsonl"))
    return {(r["rank"], r["step_index"]): r["step_ns"] for r in rows if r["rank"] in ranks}


def main():
    a = fc.args()
    t0 = time.monotonic()
    slow, twin = os.path.join(a.work, "slow"), os.path.join(a.work, "twin")
    fc.synth(a.synth, slow, *PP, "--slow-host", "3:1.25")
    fc.synth(a.synth, twin, *PP)
    replica_map = os.path.join(a.work, "replicas.json")
    with open(replica_map, "w") as f:  # replica k: ranks 4k..4k+3 (stage 0 on node 2k, stage 1 on node 2k+1)
        json.dump({str(k): [4 * k + i for i in range(4)] for k in range(4)}, f)
    slow_hosts = fc.ledger_slow_hosts(slow)
    fc.check(list(slow_hosts) == ["node3"], "the ledger records the slow host node3: %s" % slow_hosts)

    findings = run_fleet(a, slow, os.path.join(a.work, "slow-fleet"), replica_map)
    fc.validate(findings, "fleet.schema.json")
    fc.check(all(f["kind"] == "slow_replica" for f in findings), "persistent findings only: %s" %
             [f["evidence"] for f in findings])
    fc.check_against_ledger(findings, slow_hosts, 3)
    f = findings[0]
    fc.check(f["replica"] == "1" and f["evidence"].startswith("replica 1 (host node3): "),
             "the finding names the slow stage's replica and host: %s" % f["evidence"][:60])

    ranks = set(slow_hosts["node3"][0])
    got = step_times(os.path.join(a.work, "slow-fleet"), "1", ranks)
    base_out = os.path.join(a.work, "twin-fleet")
    fc.check(run_fleet(a, twin, base_out, replica_map) == [], "the twin run without the slow host raises nothing")
    base = step_times(base_out, "1", ranks)
    lost = statistics.median(got[k] - base[k] for k in got if k in base)
    cost = f["cost_ns_per_step"]
    fc.check(lost > 0 and 0.65 * lost <= cost <= 1.35 * lost,
             "cost per step %.1f us is within 35%% of the %.1f us the stage lost a step (twin run)" % (cost / 1e3, lost / 1e3))
    fc.check(0 < f["cost_share"] < 0.5 and "a step (" in f["evidence"], "the share of the step is stated: %s"
             % f["evidence"][f["evidence"].rfind(";") + 2:])
    # Inside the replica, the diagnosis reports the stage as longer than the other (a run finding):
    # the slow GPUs make the imbalance the model's split already has larger.
    pipes = {}
    for name, out in (("slow", "slow-fleet"), ("twin", "twin-fleet")):
        with open(os.path.join(a.work, out, "replica-1", "stats.json"), encoding="utf-8") as h:
            found = json.load(h)["peer"]["pipeline_imbalance"]
        fc.check(len(found) == 1 and found[0]["stages"][found[0]["longest"]]["ranks"] == [6, 7]
                 and found[0]["steps_longest"] == found[0]["steps"],
                 "%s run: the diagnosis names ranks 6-7 the longest pipeline stage in every step: %s"
                 % (name, [f["evidence"][:90] for f in found]))
        pipes[name] = found[0]
    fc.check(pipes["slow"]["saving_ns"] > 1.3 * pipes["twin"]["saving_ns"],
             "the slow GPUs widen the stage's imbalance: an even split saves %.0f us a step against %.0f us"
             % (pipes["slow"]["saving_ns"] / 1e3, pipes["twin"]["saving_ns"] / 1e3))
    with open(os.path.join(a.work, "slow-fleet", "fleet.html"), encoding="utf-8") as h:
        page = h.read()
    table = page[page.find("<h2>Slowest replicas</h2>"):]
    first = table[table.find("<tr><td"):table.find("</tr>", table.find("<tr><td"))]
    fc.check("replica 1/node3" in first and "%.3g ms (" % (cost / 1e6) in first,
             "fleet.html lists the slow stage first with its cost a step: %s" % first[:200])
    print("OK in %.1f s" % (time.monotonic() - t0))


if __name__ == "__main__":
    main()

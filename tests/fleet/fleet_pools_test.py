"""truffld-fleet in-process on a fleet of two GPU types: 8 synthetic replicas (TP2), hosts
node0-node4 on one GPU type with node1's GPUs 1.25x slower (--slow-host), node5-node7 on
another type whose kernels all take 1.3x as long (--device-scale 1.3, --device-name). Each
replica's pool comes from its dumps' META (GPU name, model and parallel flags), so the slower
type is compared only with itself: the one finding is the slow node the generator's ledger
records, against its 4 pool peers. With every replica put in one pool (--pool-map) that answer
is lost (the two types' spread hides the slow node, or the slower type is flagged), which is
what the pools prevent.
Usage: fleet_pools_test.py --synth BIN --merge BIN --diagnose BIN --work DIR
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FLEET = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools", "truffld-fleet")
sys.path.insert(0, HERE)
import fleet_common as fc  # noqa: E402


def mixed_fleet(bin_, work):
    """The dumps directory and the fast type's ledger slow hosts."""
    fast, slow, dumps = (os.path.join(work, n) for n in ("fast", "slow", "dumps"))
    fc.synth(bin_, fast, "--faults", "none", "--seed", "21", "--slow-host", "1:1.25", "--device-name", "GPU-A")
    fc.synth(bin_, slow, "--faults", "none", "--seed", "22", "--device-scale", "1.3", "--device-name", "GPU-B")
    os.makedirs(dumps)
    for h in range(8):
        src = fast if h < 5 else slow
        for f in glob.glob(os.path.join(src, "truffld-node%d-*.jsonl" % h)):
            shutil.copy(f, dumps)
    return dumps, fc.ledger_slow_hosts(fast)


def run_fleet(a, dumps, out, *extra):
    r = subprocess.run([FLEET, dumps, "-o", out, "--in-process", "--merge", a.merge, "--diagnose", a.diagnose,
                        "--tool-threads", "1"] + list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, check=False)
    print(r.stdout, r.stderr)
    fc.check(r.returncode == 0, "truffld-fleet exited %d" % r.returncode)
    return fc.read_jsonl(os.path.join(out, "fleet.jsonl"))


def main():
    a = fc.args()
    t0 = time.monotonic()
    dumps, slow_hosts = mixed_fleet(a.synth, a.work)
    fc.check(list(slow_hosts) == ["node1"], "the ledger records the slow host node1: %s" % slow_hosts)
    findings = run_fleet(a, dumps, os.path.join(a.work, "pools"))
    fc.validate(findings, "fleet.schema.json")
    fc.check(all(f["kind"] == "slow_replica" for f in findings), "persistent findings only: %s" %
             [f["evidence"] for f in findings])
    fc.check_against_ledger(findings, slow_hosts, 4)
    fc.check(findings[0]["pool"].startswith("GPU-A | Qwen/Qwen3-8B"), "the finding names its pool: %s" % findings[0]["pool"])
    one = os.path.join(a.work, "one-pool.json")
    with open(one, "w") as f:
        json.dump({str(r): "all" for r in range(8)}, f)
    together = run_fleet(a, dumps, os.path.join(a.work, "pools"), "--pool-map", one)
    flagged = sorted(f["replica"] for f in together)
    fc.check(flagged != ["1"], "judged as one pool, the two types' spread hides the slow node or the slower type "
             "is flagged (flagged: %s)" % flagged)
    print("OK in %.1f s" % (time.monotonic() - t0))


if __name__ == "__main__":
    main()

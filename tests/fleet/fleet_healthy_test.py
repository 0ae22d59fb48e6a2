"""truffld-fleet in-process (no Dask) on healthy synthetic fleets of 8 replicas (TP2), several
seeds: no finding, so fleet.jsonl is empty; a symlink planted at fleet.jsonl is replaced, not
followed; truffld-diagnose --step-features is refused outside
peer mode. Then one shard's dumps are corrupted: it is reported
as shard_failed with its reason while the other shards complete (exit status 1).
Usage: fleet_healthy_test.py --synth BIN --merge BIN --diagnose BIN --work DIR [--seeds 2,3]
"""
import glob
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FLEET = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools", "truffld-fleet")
sys.path.insert(0, HERE)
import fleet_common as fc  # noqa: E402


def run_fleet(a, dumps, out):
    return subprocess.run([FLEET, dumps, "-o", out, "--in-process", "--merge", a.merge, "--diagnose", a.diagnose,
                           "--tool-threads", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          check=False)


def main():
    a = fc.args([("--seeds", "2,3,4")])
    t0 = time.monotonic()
    for seed in (int(s) for s in a.seeds.split(",")):
        dumps = fc.healthy_fleet(a.synth, a.work, seed)
        out = os.path.join(a.work, "out-%d" % seed)
        r = run_fleet(a, dumps, out)
        print(r.stdout, r.stderr)
        fc.check(r.returncode == 0, "seed %d: exit 0" % seed)
        lines = fc.read_jsonl(os.path.join(out, "fleet.jsonl"))
        fc.check(lines == [], "seed %d: a healthy fleet raises no finding (%s)" % (seed, [f["evidence"] for f in lines]))
        print("seed %d: %.1f s" % (seed, time.monotonic() - t0))
    # A symlink planted at fleet.jsonl is replaced, never followed.
    victim = os.path.join(a.work, "victim.txt")
    with open(victim, "w") as f:
        f.write("keep\n")
    os.remove(os.path.join(out, "fleet.jsonl"))
    os.symlink(victim, os.path.join(out, "fleet.jsonl"))
    r = run_fleet(a, dumps, out)
    fc.check(r.returncode == 0 and open(victim).read() == "keep\n" and
             not os.path.islink(os.path.join(out, "fleet.jsonl")), "a planted symlink at fleet.jsonl is not followed")
    fc.check(oct(os.stat(os.path.join(out, "fleet.jsonl")).st_mode & 0o777) == "0o640", "fleet.jsonl is 0640")
    # --step-features is a peer-mode flag.
    r = subprocess.run([a.diagnose, os.path.join(out, "replica-0", "merged"), "-o", os.path.join(a.work, "pooled"),
                        "--mode", "pooled", "--step-features", "--llm", "off", "-q"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, check=False)
    fc.check(r.returncode == 2 and "--step-features does not apply to --mode pooled" in r.stderr, r.stderr.strip())
    # Corrupt dumps in one replica (a META line, then garbage): that shard fails with its reason,
    # the others complete.
    for victim in sorted(glob.glob(os.path.join(dumps, "truffld-node3-*.jsonl"))):
        with open(victim, encoding="utf-8") as f:
            meta = f.readline()
        with open(victim, "w", encoding="utf-8") as f:
            f.write(meta + "{this is not json\n")
    r = run_fleet(a, dumps, out)
    print(r.stdout, r.stderr)
    fc.check(r.returncode == 1, "a failed shard makes the exit status 1 (got %d)" % r.returncode)
    fc.check("1 failed" in r.stdout and "7 skipped" in r.stdout, "the other 7 shards complete (skipped: unchanged)")
    lines = fc.read_jsonl(os.path.join(out, "fleet.jsonl"))
    fc.validate(lines, "fleet.schema.json")
    fc.check([(f["kind"], f["replica"]) for f in lines] == [("shard_failed", "3")], "one shard_failed line: %s" % lines)
    fc.check("truffld-" in lines[0]["reason"], "the reason names the tool: %s" % lines[0]["reason"])
    fc.check("replica 3" in r.stderr, "stderr names the failed replica")
    print(json.dumps(lines[0]))
    print("OK in %.1f s" % (time.monotonic() - t0))


if __name__ == "__main__":
    main()

"""truffld-fleet --window-steps: each replica sharded further by time window, on a synthetic
fleet of 4 replicas (TP2, 20 steps) with node2's GPUs 1.25x slower (--slow-host).

Checks: truffld-merge --step-window K:N keeps steps K*N-1 .. K*N+N-1 with the whole run's step
indices, its trees.jsonl lines equal to the whole run's for those steps (and a bad value is a
usage error naming the flag); the windowed fleet (6 steps a window: 4 windows a replica) counts
every (replica, rank, step) exactly once after dropping each window's overlap step, with the
same observed per-step features (workload, start, step time, gap to the previous step,
collective waits, every family's observed time) as the unwindowed run; both find the slow host
the generator's ledger records; a local Dask cluster gives the same findings (windows 1..
submitted as window 0 reports the step count), and a rerun skips every window shard.
Usage: fleet_windows_test.py --synth BIN --merge BIN --diagnose BIN --work DIR
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

N = 6
OBSERVED = ("tokens", "batch", "context", "phase", "start_ns", "step_ns", "gap_ns", "comm_wait_ns",
            "comm_transfer_ns", "collectives")


def run_fleet(a, dumps, out, *extra):
    r = subprocess.run([FLEET, dumps, "-o", out, "--merge", a.merge, "--diagnose", a.diagnose, "--tool-threads", "1"]
                       + list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
    print(r.stdout, r.stderr)
    fc.check(r.returncode == 0, "truffld-fleet %s exited %d" % (" ".join(extra), r.returncode))
    return r.stdout, fc.read_jsonl(os.path.join(out, "fleet.jsonl"))


def features(out):
    """{(replica, rank, step): row}, each window's overlap step dropped; fails on a duplicate."""
    rows = {}
    for f in sorted(glob.glob(os.path.join(out, "replica-*", "**", "step_features.jsonl"), recursive=True)):
        k = int(f.split("window-")[1].split(os.sep)[0]) if "window-" in f else 0
        for r in fc.read_jsonl(f):
            if r["step_index"] < k * N:
                continue
            key = (r["replica"], r["rank"], r["step_index"])
            fc.check(key not in rows, "%s counted once" % (key,)) if key in rows else None
            rows[key] = r
    return rows


def observed(r):
    fam = {(f["family"], f["metric"]): f["observed_ns"] for f in r["families"]}
    return [r.get(k) for k in OBSERVED], fam


def check_merge_window(a, dumps, work):
    files = sorted(glob.glob(os.path.join(dumps, "truffld-node1-*.jsonl")))
    whole, win = os.path.join(work, "m-whole"), os.path.join(work, "m-win")
    subprocess.run([a.merge] + files + ["-o", whole, "-q"], check=True)
    subprocess.run([a.merge] + files + ["-o", win, "-q", "--step-window", "2:%d" % N], check=True)
    pick = lambda d, lo, hi: {line for line in open(os.path.join(d, "trees.jsonl"))  # noqa: E731
                              if lo <= json.loads(line)["step_index"] < hi}
    got = {json.loads(line)["step_index"] for line in open(os.path.join(win, "trees.jsonl"))}
    fc.check(got == set(range(2 * N - 1, 3 * N)), "--step-window 2:%d keeps steps %d..%d: %s" % (N, 2 * N - 1, 3 * N - 1, sorted(got)))
    fc.check(pick(win, 0, 99) == pick(whole, 2 * N - 1, 3 * N), "its trees equal the whole run's for those steps")
    ranks = json.load(open(os.path.join(win, "summary.json")))["ranks"]
    fc.check([(r["steps"], r["steps_in_dumps"]) for r in ranks] == [(N + 1, 20)] * 2, "summary.json: %s" % ranks)
    bad = subprocess.run([a.merge] + files + ["-o", win, "-q", "--step-window", "2:0"], stderr=subprocess.PIPE,
                         text=True, check=False)
    fc.check(bad.returncode == 2 and "--step-window must be K:N" in bad.stderr, bad.stderr.strip())


def main():
    a = fc.args()
    t0 = time.monotonic()
    dumps = os.path.join(a.work, "dumps")
    subprocess.run([a.synth, "--out", dumps, "--ranks", "8", "--hosts", "4", "--layers", "4", "--steps", "20", "-q",
                    "--faults", "none", "--seed", "5", "--slow-host", "2:1.25"], check=True)
    slow_hosts = fc.ledger_slow_hosts(dumps)
    check_merge_window(a, dumps, a.work)
    _, whole = run_fleet(a, dumps, os.path.join(a.work, "whole"), "--in-process")
    out = os.path.join(a.work, "win")
    stdout, win = run_fleet(a, dumps, out, "--in-process", "--window-steps", str(N))
    fc.check("16 shards: 16 done" in stdout, "4 replicas x 4 windows of %d steps" % N)
    fw, ff = features(os.path.join(a.work, "whole")), features(out)
    fc.check(set(fw) == set(ff) and len(ff) == 4 * 2 * 20, "every (replica, rank, step) once: %d" % len(ff))
    same = [k for k in fw if observed(fw[k]) == observed(ff[k])]
    fc.check(len(same) == len(fw), "observed features equal the unwindowed run's in %d of %d rank-steps" % (len(same), len(fw)))
    for findings in (whole, win):
        fc.validate(findings, "fleet.schema.json")
        fc.check_against_ledger(findings, slow_hosts, 3)
    _, dask = run_fleet(a, dumps, os.path.join(a.work, "dask"), "--window-steps", str(N), "--local-workers", "2")
    fc.check(dask == win, "a local Dask cluster gives the same findings")
    stdout, _ = run_fleet(a, dumps, out, "--in-process", "--window-steps", str(N))
    fc.check("16 skipped" in stdout, "a rerun skips every window shard")
    print("OK in %.1f s" % (time.monotonic() - t0))


if __name__ == "__main__":
    main()

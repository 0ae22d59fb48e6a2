"""Shared helpers of the fleet tests: synthetic fleets, checks, schema validation, and the
direct (no Dask) run of truffld-merge + truffld-diagnose a shard must equal."""
import argparse
import filecmp
import glob
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "fleet"))
import shard  # noqa: E402

STEPS = 16
BASE = ["--ranks", "16", "--hosts", "8", "--layers", "4", "--steps", str(STEPS), "-q"]


def args(extra=()):
    """The tests' command line (--synth, --merge, --diagnose, --work BIN/DIR, plus `extra`
    (flag, default) pairs), with --work emptied and created."""
    ap = argparse.ArgumentParser()
    for k in ("synth", "merge", "diagnose", "work"):
        ap.add_argument("--" + k, required=True)
    for flag, default in extra:
        ap.add_argument(flag, default=default)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    return a


def check(ok, what):
    if not ok:
        print("FAIL: %s" % what, file=sys.stderr)
        sys.exit(1)
    print("ok: %s" % what)


def wait_for(cond, seconds, what):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            if cond():
                return
        except OSError:
            pass
        time.sleep(0.1)
    check(False, "waited %d s for %s" % (seconds, what))


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def validate(records, schema):
    import jsonschema
    with open(os.path.join(ROOT, "schemas", schema), encoding="utf-8") as f:
        v = jsonschema.Draft202012Validator(json.load(f))
    for r in records:
        errs = [e.message for e in v.iter_errors(r)]
        check(not errs, "%s: %s" % (schema, errs[:2] or "valid"))
        if errs:
            return


def synth(bin_, out, *args):
    subprocess.run([bin_, "--out", out] + BASE + list(args), check=True)


def healthy_fleet(bin_, work, seed):
    d = os.path.join(work, "healthy-%d" % seed)
    synth(bin_, d, "--faults", "none", "--seed", str(seed))
    return d


def fleet_with_faults(bin_, work, slow_host):
    """8 replicas TP2: host `slow_host` slower in every step (run A), and the one other replica
    whose dumps carry the costliest labelled kernel fault (run B, same seed). Returns the dump
    directory, that replica's id, the (rank, step) of its labelled vertical steps and run A's
    ledger slow hosts (ledger_slow_hosts)."""
    a, b, dumps = (os.path.join(work, n) for n in ("a", "b", "dumps"))
    synth(bin_, a, "--faults", "none", "--seed", "11", "--slow-host", "%d:1.25" % slow_host)
    synth(bin_, b, "--faults", "cuda_kernel", "--intensities", "4", "--abnormal-fraction", "0.03", "--seed", "11")
    best, labelled = None, []
    for lab in read_jsonl(os.path.join(b, "labels.jsonl")):
        if lab["abnormal"] and lab["view"] == "vertical" and lab["rank"] // 2 != slow_host:
            labelled.append((lab["rank"], lab["step_index"]))
            share = lab["cost_ns"] / max(1, lab["counterfactual_ns"])
            if best is None or share > best[0]:
                best = (share, lab["rank"], lab["step_index"])
    check(best is not None, "run B labelled a kernel fault outside node%d" % slow_host)
    host = best[1] // 2
    os.makedirs(dumps)
    for f in glob.glob(os.path.join(a, "truffld-*.jsonl")):
        name = os.path.basename(f)
        src = os.path.join(b, name) if name.startswith("truffld-node%d-" % host) else f
        shutil.copy(src, os.path.join(dumps, name))
    return dumps, str(host), {(r, k) for r, k in labelled if r // 2 == host}, ledger_slow_hosts(a)


def ledger_slow_hosts(synth_dir):
    """{host: (sorted ranks, slowdown factor)} of the slow_host entries of synth_dir/ledger.jsonl."""
    out = {}
    for e in read_jsonl(os.path.join(synth_dir, "ledger.jsonl")):
        if e["class"] == "slow_host":
            ranks, factor = out.get(e["host"], ([], e["intensity"]))
            out[e["host"]] = (sorted(ranks + [e["rank"]]), factor)
    return out


def check_against_ledger(findings, slow_hosts, peers):
    """The slow_replica findings name exactly the ledger's slow hosts (hosts and ranks), each
    with a cost slower by about the injected factor (at most 0.15 below: a step also holds work
    the slow GPUs do not slow) against `peers` other replicas."""
    got = {(tuple(f["hosts"]), tuple(f["ranks"])) for f in findings if f["kind"] == "slow_replica"}
    want = {((h,), tuple(r)) for h, (r, _) in slow_hosts.items()}
    check(want and got == want, "findings %s are the ledger's slow hosts %s" % (sorted(got), sorted(want)))
    for f in findings:
        factor = slow_hosts[f["hosts"][0]][1]
        near = [m for m in f["metrics"] if factor - 0.15 <= m["ratio"] <= factor + 0.1 and m["peer_replicas"] == peers]
        check(near, "%s: a cost near the ledger's factor %.2f against %d peers: %s" % (
            f["hosts"], factor, peers, [(m["metric"], m["ratio"], m["peer_replicas"]) for m in near[:2]]))


def same_as_direct(merge, diagnose, dumps, out, rep, work, threads="1"):
    """Runs the tools directly on replica `rep`'s dumps and compares its outputs with the fleet's."""
    files = sorted(glob.glob(os.path.join(dumps, "truffld-node%s-*.jsonl" % rep)))
    d = os.path.join(work, "replica-%s" % rep)
    subprocess.run(shard.merge_command(merge, files, os.path.join(d, "merged")), check=True)
    subprocess.run(shard.diagnose_command(diagnose, os.path.join(d, "merged"), d, rep, ["--threads", threads]),
                   check=True)
    for name in ("merged/trees.jsonl", "diagnosis.jsonl", "step_features.jsonl"):
        check(filecmp.cmp(os.path.join(d, name), os.path.join(out, "replica-%s" % rep, name), shallow=False),
              "replica %s: %s equals the direct run's" % (rep, name))

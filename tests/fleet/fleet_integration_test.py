"""truffld-fleet on a real Dask scheduler and two workers on 127.0.0.1 (started and stopped here
by PID), over 8 synthetic replicas (TP2): host node5's GPUs 1.25x slower in every step, and one
other replica carrying injected kernel faults in a few steps.

Checks: the fleet names replica 5 / node5 with evidence (its own replica's diagnosis does not
flag it); its own diagnosis finds the faulty steps of the other replica and no others; a worker killed by SIGKILL
while one of its shards' tools runs changes nothing (the tool dies with it, every shard
completes, same findings); the per-replica
outputs equal truffld-merge + truffld-diagnose run directly; outputs validate against their
schemas; --dumps-local (the surviving worker finds the dumps and runs every shard) gives the
same findings; a rerun skips every shard (outputs keyed by input checksum).
Usage: fleet_integration_test.py --synth BIN --merge BIN --diagnose BIN --work DIR
"""
import glob
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FLEET = os.path.join(ROOT, "tools", "truffld-fleet")
sys.path.insert(0, HERE)
import fleet_common as fc  # noqa: E402


def start_cluster(work):
    sched_file = os.path.join(work, "scheduler.json")
    logs = open(os.path.join(work, "dask.log"), "w")
    procs = [subprocess.Popen(["/usr/bin/dask-scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                               "--scheduler-file", sched_file], stdout=logs, stderr=logs)]
    fc.wait_for(lambda: os.path.exists(sched_file), 30, "the scheduler file")
    for _ in range(2):
        procs.append(subprocess.Popen(["/usr/bin/dask-worker", "--scheduler-file", sched_file, "--nthreads", "1",
                                       "--no-nanny", "--no-dashboard", "--host", "127.0.0.1"], stdout=logs, stderr=logs))
    fc.wait_for(lambda: open(os.path.join(work, "dask.log")).read().count("Registered to:") >= 2, 60, "two workers")
    return sched_file, procs


def stop(procs):
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def tools_under(pid):
    """PIDs of the truffld tools `pid` started (every thread's children)."""
    out = []
    for t in glob.glob("/proc/%d/task/*/children" % pid):
        try:
            with open(t) as f:
                for c in f.read().split():
                    with open("/proc/%s/comm" % c) as g:
                        if g.read().startswith("truffld-"):
                            out.append(int(c))
        except OSError:
            pass
    return out


def slow_merge(real, work):
    """A truffld-merge that waits 0.5 s before it runs (same PID: exec), so that each shard's tool
    runs long enough under its worker for the test to see it and kill that worker: a shard of the
    real tool lasts under 0.1 s, and a worker whose tools all ended between two 0.1 s looks was
    never caught (a flaky wait). Its comm starts with "truffld-" like the tools'."""
    path = os.path.join(work, "truffld-slowmrg")
    with open(path, "w") as f:
        f.write("#!/usr/bin/python3\nimport os, sys, time\ntime.sleep(0.5)\n"
                "os.execv(%r, [%r] + sys.argv[1:])\n" % (real, real))
    os.chmod(path, 0o755)
    return path


def kill_worker_mid_run(worker):
    """SIGKILL `worker` while one of its shards' tools runs; returns that tool's PID."""
    found = []
    fc.wait_for(lambda: found.extend(tools_under(worker.pid)) or found, 60, "a tool running under the worker")
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    return found[0]


def main():
    a = fc.args()
    t0 = time.monotonic()
    dumps, faulty_rep, labelled, slow_hosts = fc.fleet_with_faults(a.synth, a.work, slow_host=5)
    fc.check(list(slow_hosts) == ["node5"] and slow_hosts["node5"][0] == [10, 11],
             "the generator's ledger records the slow host: %s" % slow_hosts)
    print("data: %.1f s; fault in replica %s at steps %s" % (time.monotonic() - t0, faulty_rep, sorted(labelled)))
    sched_file, procs = start_cluster(a.work)
    out = os.path.join(a.work, "fleet")
    merge = slow_merge(os.path.abspath(a.merge), a.work)
    try:
        run = subprocess.Popen([FLEET, dumps, "-o", out, "--scheduler-file", sched_file, "--merge", merge,
                                "--diagnose", a.diagnose, "--tool-threads", "1"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        tool = kill_worker_mid_run(procs[1])
        fc.wait_for(lambda: not os.path.exists("/proc/%d" % tool) or
                    open("/proc/%d/stat" % tool).read().split()[2] == "Z", 10, "the killed worker's tool to die")
        stdout, stderr = run.communicate(timeout=180)
        local = subprocess.run([FLEET, dumps, "-o", os.path.join(a.work, "local"), "--scheduler-file", sched_file,
                                "--dumps-local", "--merge", a.merge, "--diagnose", a.diagnose, "--tool-threads", "1"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
    finally:
        stop(procs)
    print(stdout, stderr)
    fc.check(run.returncode == 0, "truffld-fleet exited %d" % run.returncode)
    fc.check("8 shards: 8 done" in stdout, "every shard done after the worker was killed")
    print("fleet with a killed worker: %.1f s" % (time.monotonic() - t0))

    findings = fc.read_jsonl(os.path.join(out, "fleet.jsonl"))
    fc.validate(findings, "fleet.schema.json")
    fc.check([(f["kind"], f["replica"], f["hosts"]) for f in findings] == [("slow_replica", "5", ["node5"])],
             "exactly one finding, replica 5 on node5: %s" % findings)
    fc.check_against_ledger(findings, slow_hosts, 7)
    ev = findings[0]["evidence"]
    fc.check(ev.startswith("replica 5 (host node5): ") and "other replicas serving similar batches" in ev, ev)
    mm = [m for m in findings[0]["metrics"] if m["metric"] == "aten::mm"]
    fc.check(mm and 1.15 <= mm[0]["ratio"] <= 1.35 and mm[0]["peer_replicas"] == 7, "aten::mm evidence: %s" % mm)

    own = fc.read_jsonl(os.path.join(out, "replica-5", "diagnosis.jsonl"))
    ab = [d for d in own if d["label"] == "abnormal"]
    fc.check(len(ab) <= 1, "replica 5's own diagnosis sees the slow node in %d units (it cannot tell)" % len(ab))

    diag = fc.read_jsonl(os.path.join(out, "replica-%s" % faulty_rep, "diagnosis.jsonl"))
    found = {(d["rank"], d["step_index"]) for d in diag if d["label"] == "abnormal" and d["view"] == "vertical"}
    fc.check(labelled & found and found <= labelled, "replica %s's diagnosis finds the labelled fault steps %s "
             "and no other (abnormal: %s)" % (faulty_rep, sorted(labelled), sorted(found)))
    feats = []
    for f in sorted(glob.glob(os.path.join(out, "replica-*", "step_features.jsonl"))):
        feats += fc.read_jsonl(f)
    fc.validate(feats, "step_features.schema.json")
    per = os.path.getsize(os.path.join(out, "replica-0", "step_features.jsonl")) / len(
        fc.read_jsonl(os.path.join(out, "replica-0", "step_features.jsonl")))
    fc.check(per <= 4096, "step features %.0f bytes per rank-step (at most 4 KB)" % per)
    for f in glob.glob(os.path.join(out, "replica-*", ".fleet-shard.json")):
        fc.validate([json.load(open(f))], "fleet_shard.schema.json")

    for rep in ("5", faulty_rep):
        fc.same_as_direct(a.merge, a.diagnose, dumps, out, rep, os.path.join(a.work, "direct"))
    html = open(os.path.join(out, "fleet.html")).read()
    fc.check('href="replica-5/report.html"' in html and "replica 5 (host node5)" in html, "fleet.html links and evidence")

    before = open(os.path.join(out, "fleet.jsonl")).read()
    fc.check(local.returncode == 0 and open(os.path.join(a.work, "local", "fleet.jsonl")).read() == before,
             "--dumps-local (the worker finds the dumps) gives the same findings: %s %s" % (local.stdout, local.stderr))
    again = subprocess.run([FLEET, dumps, "-o", out, "--in-process", "--merge", merge, "--diagnose", a.diagnose,
                            "--tool-threads", "1"], stdout=subprocess.PIPE, text=True, check=False)
    fc.check(again.returncode == 0 and "8 skipped" in again.stdout, "rerun skips every shard: %s" % again.stdout)
    fc.check(open(os.path.join(out, "fleet.jsonl")).read() == before, "rerun gives the same findings")
    print("OK in %.1f s" % (time.monotonic() - t0))


if __name__ == "__main__":
    main()

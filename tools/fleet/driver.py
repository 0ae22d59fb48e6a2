"""truffld-fleet's command line: plan shards, run them (Dask or in-process), reduce, write.

Submission: `--scheduler-file FILE` or `--scheduler ADDRESS` connects to a running Dask
scheduler; neither starts a LocalCluster of `--local-workers` processes; `--in-process` runs the
shards one after the other here, without Dask. Each shard is one task (shard.run_shard); the
modules it needs are pickled by value, so workers need only python3-distributed and the tool
binaries at the same paths. With `--dumps-local` the workers find the dumps themselves and a
shard runs only on workers that see all its dumps (placement.py: they never cross the network).
With `--window-steps N` each replica is sharded further by time window (window 0 first: its
merge summary says how many follow; parse_features drops each window's overlap step). Every
feature row gets its replica's pool (plan.pool_of or --pool-map), the reduce's unit of peers.
Not thread-safe.
"""
import argparse
import json
import logging
import os
import shutil
import sys
import time

import fleet_html
import placement
import plan
import reduce
import shard
from safe_write import write_text

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def _tool(given, name, sub):
    if given:
        return os.path.abspath(given)
    built = os.path.join(REPO, "build", sub, name)
    return built if os.path.isfile(built) else (shutil.which(name) or name)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="truffld-fleet", description=(
        "Merge and diagnose a fleet's dumps shard by replica (on Dask, or here), then compare replicas: "
        "which are slower than the others serving similar work."))
    p.add_argument("inputs", nargs="+", help="dump files or directories holding truffld-*.jsonl[.gz|.zst]")
    p.add_argument("-o", "--out", required=True, help="output directory: fleet.jsonl, fleet.html, replica-<id>/")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--scheduler-file", help="Dask scheduler file (dask scheduler --scheduler-file)")
    g.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://10.0.0.1:8786")
    g.add_argument("--in-process", action="store_true", help="run the shards here, one after the other, without Dask")
    p.add_argument("--local-workers", type=int, default=2, help="without a scheduler: LocalCluster worker processes (default 2)")
    p.add_argument("--replica-map", help="JSON {replica: [ranks]} (default: one replica per META host)")
    p.add_argument("--pool-map", help="JSON {replica: pool label}: replicas compared only within their pool "
                   "(default: GPU model, served model and parallel flags from each dump's META)")
    p.add_argument("--dumps-local", action="store_true",
                   help="the workers find the dumps (node-local disks) and each shard runs only on workers that see them")
    p.add_argument("--merge", help="truffld-merge binary (default: the build tree's, else PATH)")
    p.add_argument("--diagnose", help="truffld-diagnose binary (default: the build tree's, else PATH)")
    p.add_argument("--tool-threads", type=int, default=0, help="truffld-diagnose --threads per shard (0: its default)")
    p.add_argument("--diagnose-arg", action="append", default=[], help="extra truffld-diagnose flag (repeatable)")
    p.add_argument("--window-steps", type=int, default=0,
                   help="shard each replica further by time window: N steps per window (each with one step of "
                        "overlap before it, counted once in the reduce); 0: one shard per replica (default)")
    p.add_argument("--min-ratio", type=float, default=1.08, help="smallest slowdown reported (default 1.08)")
    p.add_argument("--windows", type=int, default=8, help="time windows of the heat map and window test (default 8)")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    a = p.parse_args(argv)
    if a.local_workers < 1 or a.windows < 1 or not a.min_ratio > 1.0 or a.tool_threads < 0 or a.window_steps < 0:
        p.error("--local-workers and --windows must be >= 1, --min-ratio > 1, --tool-threads and --window-steps >= 0")
    if a.dumps_local and a.in_process:
        p.error("--dumps-local needs Dask workers (not --in-process)")
    return a


def _client(a):
    import cloudpickle
    from distributed import Client, LocalCluster
    for m in (shard, plan, placement, sys.modules["safe_write"]):
        cloudpickle.register_pickle_by_value(m)
    if a.scheduler_file:
        return Client(scheduler_file=a.scheduler_file, timeout=30)
    if a.scheduler:
        return Client(a.scheduler, timeout=30)
    cluster = LocalCluster(n_workers=a.local_workers, threads_per_worker=1, processes=True,
                           dashboard_address=None, silence_logs=logging.ERROR)
    return Client(cluster)


def plan_here(a):
    """Shards from the dumps this machine reads; no placement."""
    dumps = [(p, plan.read_meta(p)) for p in plan.find_dumps(a.inputs)]
    rmap = plan.load_replica_map(a.replica_map) if a.replica_map else None
    pmap = plan.load_pool_map(a.pool_map) if a.pool_map else None
    return plan.plan_shards(dumps, rmap, pmap), None


def plan_on_workers(a, client):
    """--dumps-local: shards from the dumps the workers read, and {replica: workers} to run them."""
    dumps, seen, problems = placement.pin(client.run(placement.scan_local, a.inputs))
    if problems:
        raise plan.PlanError("; ".join(problems))
    if not dumps:
        raise plan.PlanError("no worker sees any dump (truffld-*.jsonl[.gz|.zst]) among: %s" % " ".join(a.inputs))
    rmap = plan.load_replica_map(a.replica_map) if a.replica_map else None
    shards = plan.plan_shards(dumps, rmap, plan.load_pool_map(a.pool_map) if a.pool_map else None)
    return shards, {s["replica"]: placement.workers_for(s, seen) for s in shards}


def later_windows(a, res, by_replica):
    """--window-steps: once a replica's window 0 is done, its windows 1.. (from the dumps' step
    count); [] otherwise."""
    w = res.get("window")
    if not a.window_steps or not w or w[0] != 0 or res["status"] == "failed":
        return []
    n = -(-res["steps_in_dumps"] // a.window_steps)
    return [{**by_replica[res["replica"]], "window": [k, a.window_steps]} for k in range(1, n)]


def run_shards(a, client, shards, where, merge, diagnose, dargs):
    """Every shard's result dict (in-process when `client` is None); `where`: {replica: workers}
    or None (anywhere). With --window-steps each replica's window 0 runs first and says how many
    windows follow. a.shard_seconds: from the first submission to the last result."""
    t0 = time.monotonic()
    by_replica = {s["replica"]: s for s in shards}
    todo = [{**s, "window": [0, a.window_steps]} if a.window_steps else s for s in shards]
    if client is None:
        out = []
        while todo:
            out.append(shard.run_shard(todo.pop(0), a.out, merge, diagnose, dargs))
            todo += later_windows(a, out[-1], by_replica)
        a.shard_seconds = time.monotonic() - t0
        return out
    from distributed import as_completed
    futs, results = {}, []
    ac = as_completed([])

    def submit(s):
        if where is not None and not where[s["replica"]]:
            results.append({**s, "status": "failed", "features": "", "seconds": 0.0, "steps_in_dumps": 0,
                            "reason": "no worker sees every dump of the replica (--dumps-local)"})
            return
        kw = {"workers": where[s["replica"]], "allow_other_workers": False} if where is not None else {}
        f = client.submit(shard.run_shard, s, a.out, merge, diagnose, dargs, pure=False, **kw)
        futs[f] = s
        ac.add(f)
    for s in todo:
        submit(s)
    for f in ac:
        s = futs[f]
        try:
            results.append(f.result())
        except Exception as e:  # a task the cluster could not finish (e.g. every worker lost)
            results.append({**s, "status": "failed", "features": "", "seconds": 0.0, "steps_in_dumps": 0,
                            "reason": "task failed on the cluster: %s: %s" % (type(e).__name__, e)})
        for later in later_windows(a, results[-1], by_replica):
            submit(later)
    a.shard_seconds = time.monotonic() - t0
    return results


def parse_features(res):
    """The shard's feature lines, each given the replica's pool (what the reduce compares within);
    a window K > 0 drops its overlap step (before step K*N: window K-1 counts it)."""
    rows = []
    w = res.get("window")
    first = w[0] * w[1] if w else 0
    for n, line in enumerate(res["features"].splitlines(), 1):
        try:
            row = json.loads(line)
            if row.get("step_index", first) >= first:
                rows.append({**row, "pool": res.get("pool", "")})
        except ValueError as e:
            raise plan.PlanError("replica-%s/%s:%d: not JSON: %s" % (res["replica"], shard.FEATURES, n, e)) from e
    return rows


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    t0 = time.monotonic()
    client = None if a.in_process else _client(a)
    try:
        try:
            shards, where = plan_on_workers(a, client) if a.dumps_local else plan_here(a)
        except plan.PlanError as e:
            print("truffld-fleet: %s" % e, file=sys.stderr)
            return 1
        a.out = os.path.abspath(a.out)
        os.makedirs(a.out, exist_ok=True)
        merge, diagnose = _tool(a.merge, "truffld-merge", "merge"), _tool(a.diagnose, "truffld-diagnose", "diagnose")
        dargs = list(a.diagnose_arg) + (["--threads", str(a.tool_threads)] if a.tool_threads else [])
        results = run_shards(a, client, shards, where, merge, diagnose, dargs)
    finally:
        if client is not None:
            client.close()
    results.sort(key=lambda r: (plan.natural_key(r["replica"]), (r.get("window") or [0])[0]))
    return report(a, results, t0)


def shard_name(r):
    """'replica 3', or 'replica 3 (steps 16-31)' for a window shard."""
    w = r.get("window")
    return "replica %s" % r["replica"] + (" (steps %d-%d)" % (w[0] * w[1], w[0] * w[1] + w[1] - 1) if w else "")


def report(a, results, t0):
    """The reduce over the shards' features, fleet.jsonl, fleet.html and the summary; exit status."""
    rows, travelled = [], 0
    for r in results:
        if r["status"] != "failed":
            try:
                rows += parse_features(r)
                travelled += len(r["features"].encode())
            except plan.PlanError as e:
                r["status"], r["reason"] = "failed", str(e)
    result = reduce.reduce_fleet(rows, reduce.Options(min_ratio=a.min_ratio, windows=a.windows))
    lines = [json.dumps({"schema": "truffld.fleet/1", "kind": "shard_failed", "replica": r["replica"],
                         "hosts": r["hosts"], "ranks": r["ranks"], "pool": r.get("pool", ""),
                         "evidence": "%s: %s" % (shard_name(r), r["reason"]),
                         "reason": r["reason"]}) for r in results if r["status"] == "failed"]
    lines += [json.dumps(f) for f in result["findings"]]
    per_rank_step = travelled / len(rows) if rows else 0.0
    write_text(os.path.join(a.out, "fleet.jsonl"), "".join(line + "\n" for line in lines))
    write_text(os.path.join(a.out, "fleet.html"), fleet_html.render(result, results, per_rank_step))
    failed = [r for r in results if r["status"] == "failed"]
    for r in failed:
        print("truffld-fleet: %s failed: %s" % (shard_name(r), r["reason"]), file=sys.stderr)
    if not a.quiet:
        counts = {k: sum(1 for r in results if r["status"] == k) for k in ("done", "skipped", "failed")}
        print("%d shards: %d done, %d skipped (inputs unchanged), %d failed; %d rank-steps, %.0f bytes of "
              "features per rank-step; %.1f s (shards %.1f s)" % (
                  len(results), counts["done"], counts["skipped"], counts["failed"], len(rows), per_rank_step,
                  time.monotonic() - t0, a.shard_seconds))
        for f in result["findings"]:
            print("  %s: %s" % (f["kind"], f["evidence"]))
        if not result["findings"]:
            print("  no replica is slower than the others serving similar work")
        print("Wrote %s/{fleet.jsonl,fleet.html,replica-<id>/}" % a.out)
    return 1 if failed else 0

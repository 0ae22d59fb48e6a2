"""--dumps-local: each worker finds the dumps it can read itself, and each shard runs only on
workers that can read all of its dumps, so dumps on node-local disks never cross the network.

scan_local runs on every worker (client.run): the dumps under the given paths that this worker
sees, with their META (first line only). pin() turns the scans into the plan's (path, META) list
and, per path, the workers that see it; workers_for() intersects those for one shard. A path
seen by several hosts (a shared file system) may run on any of them. Pure except scan_local
(file reads). Not thread-safe (plain data).
"""
import os
import socket

import plan


def scan_local(paths):
    """On a worker: (host name, [(path, META)], [problems]) for the dumps under `paths` it sees."""
    found, problems = [], []
    existing = [p for p in paths if os.path.exists(p)]
    try:
        files = plan.find_dumps(existing) if existing else []
    except plan.PlanError:
        files = []  # none here
    for f in files:
        try:
            found.append((f, plan.read_meta(f)))
        except plan.PlanError as e:
            problems.append(str(e))
    return socket.gethostname(), found, problems


def pin(scans):
    """{worker address: scan_local's result} -> ([(path, META)], {path: sorted worker addresses},
    [problems, each prefixed with the worker's host])."""
    dumps, seen, problems = {}, {}, []
    for addr in sorted(scans):
        host, found, probs = scans[addr]
        problems += ["%s: %s" % (host, p) for p in probs]
        for path, meta in found:
            dumps.setdefault(path, meta)
            seen.setdefault(path, set()).add(addr)
    return sorted(dumps.items()), {p: sorted(w) for p, w in seen.items()}, sorted(set(problems))


def workers_for(shard, seen):
    """The workers that see every dump of `shard` (empty: none does)."""
    sets = [set(seen.get(f, ())) for f in shard["files"]]
    return sorted(set.intersection(*sets)) if sets else []

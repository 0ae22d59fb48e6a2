"""Shard planning for truffld-fleet: which raw dumps form one model replica.

A replica (one tensor-parallel x pipeline-parallel group) is the shard unit: its ranks are
merged and diagnosed together, and nothing crosses replicas until the fleet reduce. By default
every host is a replica (data parallelism across hosts, TP within a host: META "host" says
which dumps belong together); a --replica-map file says otherwise (pipeline stages spread over
hosts). Each replica also gets its pool: replicas of the same model, configuration and GPU
type, the only ones the fleet reduce compares with each other (pool_of: the GPU from META
"devices", the model and parallel layout from META "cmdline"; a --pool-map file overrides it).
Only each dump's first line (META) is read here: the traces are parsed by the C++ tools. Pure
logic except read_meta/load_replica_map/load_pool_map (thin file adapters). Not thread-safe.
"""
import gzip
import json
import os
import re
import subprocess

DUMP_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst")


class PlanError(Exception):
    """Bad input for planning: names the file and the problem."""


def find_dumps(paths):
    """Dump files among `paths` (files, or directories searched one level for truffld-*.jsonl*)."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            for name in sorted(os.listdir(p)):
                if name.startswith("truffld-") and name.endswith(DUMP_SUFFIXES):
                    out.append(os.path.join(p, name))
        elif os.path.isfile(p):
            out.append(p)
        else:
            raise PlanError("%s: no such file or directory" % p)
    if not out:
        raise PlanError("no dumps (truffld-*.jsonl[.gz|.zst]) among: %s" % " ".join(paths))
    return out


def _first_line(path):
    if path.endswith(".zst"):
        proc = subprocess.run(["zstd", "-dc", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        return proc.stdout.split(b"\n", 1)[0].decode("utf-8", "replace")
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return f.readline().decode("utf-8", "replace")


def read_meta(path):
    """The dump's META record (its first line) as a dict; PlanError when it is not one."""
    try:
        line = _first_line(path)
    except OSError as e:
        raise PlanError("%s: cannot read: %s" % (path, e)) from e
    try:
        meta = json.loads(line)
    except ValueError as e:
        raise PlanError("%s:1: first line is not JSON (%s); a dump starts with its META record" % (path, e)) from e
    if not isinstance(meta, dict) or meta.get("type") != "META":
        raise PlanError("%s:1: first record is not META" % path)
    return meta


def _load_json(path, what):
    """The JSON document in `path`; PlanError naming the file and `what` when unreadable."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise PlanError("%s: cannot read the %s: %s" % (path, what, e)) from e


def load_replica_map(path):
    """--replica-map: JSON object {replica id: [rank, ...]} -> {rank: replica id}."""
    data = _load_json(path, "replica map")
    if not isinstance(data, dict):
        raise PlanError("%s: the replica map must be an object {replica: [ranks]}" % path)
    by_rank = {}
    for rep, ranks in data.items():
        if not isinstance(ranks, list) or not all(isinstance(r, int) and not isinstance(r, bool) for r in ranks):
            raise PlanError("%s: replica %r: ranks must be a list of integers" % (path, rep))
        for r in ranks:
            if r in by_rank:
                raise PlanError("%s: rank %d is in replicas %r and %r" % (path, r, by_rank[r], rep))
            by_rank[r] = str(rep)
    return by_rank


# Command-line flags of the serving engine that make replicas comparable only with their own kind.
POOL_FLAGS = ("--model", "--tensor-parallel-size", "-tp", "--pipeline-parallel-size", "-pp", "--dtype",
              "--quantization", "--kv-cache-dtype", "--max-num-seqs", "--max-num-batched-tokens")


def pool_of(meta):
    """The pool key of one dump: "GPU | model | flags" from META devices[].name and cmdline
    (vllm's flags above, as "--flag=value" or "--flag value"; `vllm serve MODEL`'s positional)."""
    gpus = sorted({str(d.get("name", "")) for d in meta.get("devices") or [] if isinstance(d, dict)} - {""})
    cmd = [str(c) for c in meta.get("cmdline") or []]
    model, flags = "", []
    for i, c in enumerate(cmd):
        name, _, val = c.partition("=")
        if name in POOL_FLAGS:
            val = val or (cmd[i + 1] if i + 1 < len(cmd) else "")
            if name == "--model":
                model = val
            else:
                flags.append("%s=%s" % (name, val))
        elif c == "serve" and i + 1 < len(cmd) and not cmd[i + 1].startswith("-") and not model:
            model = cmd[i + 1]
    return " | ".join([", ".join(gpus) or "unknown GPU", model or "unknown model"] + sorted(flags))


def load_pool_map(path):
    """--pool-map: JSON object {replica id: pool label} (replicas it lacks keep their META pool)."""
    data = _load_json(path, "pool map")
    if not isinstance(data, dict) or not all(isinstance(v, str) and v for v in data.values()):
        raise PlanError("%s: the pool map must be an object {replica: non-empty pool label}" % path)
    return {str(k): v for k, v in data.items()}


def natural_key(s):
    """'node10' after 'node9'."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def plan_shards(dumps, rank_to_replica=None, pool_map=None):
    """Groups dumps into replicas.

    `dumps`: [(path, meta)]. Without a map, hosts in natural order become replicas "0", "1", ...;
    with one, the map's ids are used and a dump whose rank it lacks is a PlanError.
    `pool_map`: {replica: pool label} overriding pool_of. Returns [{"replica", "hosts", "ranks",
    "files", "pool"}] ordered by replica (a replica whose dumps name several pools: all, joined by " + ").
    """
    groups = {}
    if rank_to_replica is None:
        hosts = sorted({str(m.get("host", "")) for _, m in dumps}, key=natural_key)
        ids = {h: str(i) for i, h in enumerate(hosts)}
    for path, meta in dumps:
        rank = meta.get("rank")
        if rank_to_replica is None:
            rep = ids[str(meta.get("host", ""))]
        elif rank not in rank_to_replica:
            raise PlanError("%s: rank %r is in no replica of the replica map" % (path, rank))
        else:
            rep = rank_to_replica[rank]
        g = groups.setdefault(rep, {"replica": rep, "hosts": set(), "ranks": set(), "files": [], "pools": set()})
        g["pools"].add(pool_of(meta))
        g["hosts"].add(str(meta.get("host", "")))
        if isinstance(rank, int):
            g["ranks"].add(rank)
        g["files"].append(path)
    shards = []
    for rep in sorted(groups, key=natural_key):
        g = groups[rep]
        shards.append({"replica": rep, "hosts": sorted(g["hosts"], key=natural_key),
                       "ranks": sorted(g["ranks"]), "files": sorted(g["files"]),
                       "pool": (pool_map or {}).get(rep) or " + ".join(sorted(g["pools"]))})
    return shards

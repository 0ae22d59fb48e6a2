"""Counts of a trees.jsonl computed independently of truffld-export, for its tests and benchmark.

Each (rank, process, step) is one step; within it a node is counted once however many request
trees hold it, identified by (kind, start, end, thread or stream, correlation id, name). Also
returns per-step device intervals, kernel launch latencies and per-rank kernel intervals so the
summaries can be recomputed by hand (plain Python, no SQL).
"""
import gzip
import json

OPS = {"frontend_op", "backend_op", "comm", "other"}
CALLS = {"runtime_call", "driver_call"}
COPIES = {"memcpy", "memset"}


def open_text(path):
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def kind_of(layer):
    if layer in OPS:
        return "op"
    if layer in CALLS:
        return "call"
    if layer in ("kernel", "sync"):
        return layer
    if layer in COPIES:
        return "copy"
    return None


def count_trees(path):
    """Returns a dict of counts and hand-made summary inputs for trees file `path`."""
    c = {"steps": 0, "requests": 0, "op": 0, "call": 0, "kernel": 0, "copy": 0, "sync": 0,
         "collectives": 0, "kernel_ns": 0, "step_span": {}, "step_device": {},
         "latency": [], "rank_kernels": {}}
    seen = {}
    with open_text(path) as f:
        for line in f:
            if not line.strip():
                continue
            t = json.loads(line)
            step = (t["rank"], t.get("process_id"), t["step_index"])
            if step not in seen:
                seen[step] = set()
                c["steps"] += 1
                c["requests"] += len(t["requests"])
                c["step_span"][step] = (t["start"], t["end"], t.get("device_detail", True))
                c["step_device"][step] = []
            walk(t["root"], seen[step], step, t["rank"], None, False, c)
    return c


def walk(root, seen, step, rank, call, in_comm, c):
    stack = [(ch, call, in_comm) for ch in root.get("children", [])]
    while stack:
        n, call, in_comm = stack.pop()
        kind = kind_of(n["layer"])
        inner_call, inner_comm = call, in_comm
        if kind is not None:
            lane = n.get("thread_id", -1) if kind in ("op", "call") else n.get("stream", -1)
            key = (kind, n["start"], n["end"], lane, n.get("correlation_id", -1), n["name"])
            fresh = key not in seen
            seen.add(key)
            if fresh:
                c[kind] += 1
                record(n, kind, step, rank, call, in_comm, c)
            if kind == "op":
                inner_call = None
                inner_comm = in_comm or n["layer"] == "comm"
            elif kind == "call":
                inner_call = n
        for ch in n.get("children", []):
            stack.append((ch, inner_call, inner_comm))


def record(n, kind, step, rank, call, in_comm, c):
    if kind == "op" and n["layer"] == "comm":
        c["collectives"] += 1
    if kind in ("kernel", "copy"):
        c["step_device"][step].append((n["start"], n["end"]))
    if kind != "kernel":
        return
    c["kernel_ns"] += n["end"] - n["start"]
    if call is not None:
        c["latency"].append((call["name"], n["start"] - call["start"]))
    is_comm = in_comm or n["name"].startswith("nccl")
    c["rank_kernels"].setdefault(rank, []).append((n["start"], n["end"], is_comm))


def union_ns(intervals):
    total, end = 0, None
    for a, b in sorted(intervals):
        if b <= a:
            continue
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def intersect_ns(xs, ys):
    """Length of union(xs) intersected with union(ys)."""
    return union_ns(xs) + union_ns(ys) - union_ns(xs + ys)

#!/usr/bin/env python3
"""Checks a truffld dump of tests/gpu/workload.cu against what the workload says it launched.

Usage: check_trace.py TRACE_DIR EXPECTED_JSON [SCHEMA_JSON]

Checks (each prints PASS/FAIL with numbers; exit status 1 when any FAIL):
  1. every KERNEL has its launching RUNTIME/DRIVER call (same correlation_id);
  2. our kernels (scale, add), GEMMs, memsets and copies appear exactly as often as launched;
  3. the launching API call starts no later than its kernel (1 us tolerance for clock
     conversion);
  4. graph-launched kernels: one per node per replay, each graph_node_id maps through
     GRAPH_NODE records (clone -> original) to the capture-time API call, which lies inside the
     NVTX "capture" range of the capturing thread;
  5. NVTX step ranges: one push per step with a request id, pushes == pops on every thread;
  6. NCCL (when the workload ran it): NCCL's NVTX ranges balance, ncclCommInitRank's closing
     pop carries the communicator (nvtxRangePopPayload), and each ncclAllReduce range contains
     device work (with one rank NCCL runs a copy or a small kernel, not a collective kernel);
  7. META first, STATS last, nothing dropped (a WARN, not a FAIL, when records were dropped);
  8. with a schema argument: every line validates against the events schema (needs python
     jsonschema; missing, the check fails).
"""
import collections
import glob
import json
import os
import re
import sys

failures = 0


def report(ok, what, detail=""):
    global failures
    print(("PASS " if ok else "FAIL ") + what + (": " + detail if detail else ""))
    if not ok:
        failures += 1


def load(trace_dir):
    paths = sorted(glob.glob(os.path.join(trace_dir, "truffld-*.jsonl")))
    if not paths:
        print(f"FAIL no truffld-*.jsonl dump in {trace_dir}")
        sys.exit(1)
    records = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            for no, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as e:
                    print(f"WARN {p}:{no}: unreadable line ({e})")
    return paths, records


SCALE = re.compile(r"(_Z5scale|^scale\()")
ADD = re.compile(r"(_Z3add|^add\()")


def nccl_ranges(by_type, name):
    """(thread, push record, pop record) of each NCCL-domain range called `name`."""
    events = sorted(((r["timestamp"], 0 if r["type"] == "NVTX_PUSH" else 1, r)
                     for r in by_type["NVTX_PUSH"] + by_type["NVTX_POP"] if r.get("domain") == "NCCL"),
                    key=lambda x: (x[2]["thread_id"], x[0], x[1]))
    stacks, out = collections.defaultdict(list), []
    for _, _, r in events:
        if r["type"] == "NVTX_PUSH":
            stacks[r["thread_id"]].append(r)
        elif stacks[r["thread_id"]]:
            push = stacks[r["thread_id"]].pop()
            if push["name"] == name:
                out.append((r["thread_id"], push, r))
    return out


def check_nccl(exp, by_type, apis):
    """NCCL's own NVTX ranges: balanced (ncclCommInitRank closes with nvtxRangePopPayload, whose
    payload carries the communicator), and device work launched inside each ncclAllReduce."""
    inits = nccl_ranges(by_type, "ncclCommInitRank")
    with_comm = [p for _, _, p in inits if "comm" in (p.get("payload") or {})]
    report(inits and len(with_comm) == len(inits), "ncclCommInitRank closed with its payload",
           f"{len(with_comm)}/{len(inits)} pops carry comm; "
           + json.dumps([p.get("payload") for _, _, p in inits[:1]]))
    device = collections.defaultdict(list)
    for kind in ("KERNEL", "MEMCPY", "MEMSET"):
        for d in by_type[kind]:
            device[d["correlation_id"]].append(d)
    calls = nccl_ranges(by_type, "ncclAllReduce")
    work = []
    for tid, push, pop in calls:
        ops = [d for cid, api in apis.items() if api["thread_id"] == tid
               and push["timestamp"] <= api["start"] <= pop["timestamp"] for d in device.get(cid, [])]
        work.append(len(ops))
    want = exp.get("nccl_allreduce_calls", 1)
    report(len(calls) == want and all(work), "NCCL all-reduce device work traced",
           f"{len(calls)} ncclAllReduce ranges ({want} called), device ops inside each: {work}; "
           "payloads " + json.dumps([p.get("payload") for _, p, _ in calls]))


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    paths, recs = load(argv[1])
    with open(argv[2], encoding="utf-8") as f:
        exp = json.load(f)
    by_type = collections.defaultdict(list)
    for r in recs:
        by_type[r.get("type")].append(r)
    apis = {}
    for r in by_type["RUNTIME"] + by_type["DRIVER"]:
        # Runtime and driver calls have distinct correlation ids; keep the outermost (runtime).
        if r["correlation_id"] not in apis or r["type"] == "RUNTIME":
            apis[r["correlation_id"]] = r
    kernels = by_type["KERNEL"]

    unlinked = [k for k in kernels if k["correlation_id"] not in apis]
    report(kernels and not unlinked, "kernels linked to their launching API call",
           f"{len(kernels) - len(unlinked)}/{len(kernels)} linked")

    scale = [k for k in kernels if SCALE.search(k["name"])]
    add = [k for k in kernels if ADD.search(k["name"])]
    nccl_k = [k for k in kernels if "nccl" in k["name"].lower()]
    other = len(kernels) - len(scale) - len(add) - len(nccl_k)
    report(len(scale) == exp["scale"], "scale kernel count", f"{len(scale)} traced, {exp['scale']} launched")
    report(len(add) == exp["add"], "add kernel count", f"{len(add)} traced, {exp['add']} launched")
    report(other >= exp["gemm"], "cuBLAS GEMM kernels", f"{other} other kernels for {exp['gemm']} GEMMs")
    big = 4 * (1 << 20)
    memsets = [m for m in by_type["MEMSET"] if m["bytes"] == big]
    report(len(memsets) == exp["memset"], "memset count", f"{len(memsets)} traced, {exp['memset']} issued")
    dtoh = [m for m in by_type["MEMCPY"] if m["copy_kind"] == "DtoH" and m["bytes"] == 4096]
    htod = [m for m in by_type["MEMCPY"] if m["copy_kind"] == "HtoD" and m["bytes"] == big]
    report(len(dtoh) == exp["memcpy_dtoh"], "DtoH memcpy count", f"{len(dtoh)} traced, {exp['memcpy_dtoh']} issued")
    report(len(htod) == exp["memcpy_htod"], "HtoD memcpy count", f"{len(htod)} traced, {exp['memcpy_htod']} issued")

    late = [k for k in kernels if k["correlation_id"] in apis
            and apis[k["correlation_id"]]["start"] > k["gpu_start"] + 1000]
    report(not late, "API start <= kernel start", f"{len(late)} violations of {len(kernels)}")

    nodes = {g["graph_node_id"]: g for g in by_type["GRAPH_NODE"]}
    graph_kernels = [k for k in kernels if "graph_node_id" in k and (SCALE.search(k["name"]) or ADD.search(k["name"]))]
    want = exp["graph_replays"] * exp["graph_kernel_nodes"]
    report(len(graph_kernels) == want, "graph-launched kernels", f"{len(graph_kernels)} traced, {want} expected")
    captures = [r for r in by_type["NVTX_PUSH"] if r["name"] == "capture"]
    pops = collections.defaultdict(list)
    for p in by_type["NVTX_POP"]:
        pops[p["thread_id"]].append(p["timestamp"])
    windows = []
    for c in captures:
        after = [t for t in pops[c["thread_id"]] if t >= c["timestamp"]]
        if after:
            windows.append((c["thread_id"], c["timestamp"], min(after)))
    mapped = 0
    for k in graph_kernels:
        node = nodes.get(k["graph_node_id"])
        seen = 0
        while node is not None and "original_graph_node_id" in node and seen < 8:
            node = nodes.get(node["original_graph_node_id"])
            seen += 1
        if node is None:
            continue
        api = apis.get(node["correlation_id"])
        inside = any(tid == node["thread_id"] and lo <= node["timestamp"] <= hi for tid, lo, hi in windows)
        if api is not None and "LaunchKernel" in api["name"] and inside:
            mapped += 1
    report(graph_kernels and mapped == len(graph_kernels),
           "graph kernels mapped to capture-time operators", f"{mapped}/{len(graph_kernels)}")

    steps = [r for r in by_type["NVTX_PUSH"] if r["name"].startswith("step_execute_model[request_ids:")]
    report(len(steps) == exp["steps"], "NVTX step ranges", f"{len(steps)} traced, {exp['steps']} run")
    push_per = collections.Counter(r["thread_id"] for r in by_type["NVTX_PUSH"])
    pop_per = collections.Counter(r["thread_id"] for r in by_type["NVTX_POP"])
    report(push_per == pop_per, "NVTX push/pop balance per thread")
    if exp.get("nccl_allreduce"):
        check_nccl(exp, by_type, apis)
    else:
        print("INFO NCCL part skipped by the workload (no libnccl.so.2)")

    report(recs[0].get("type") == "META", "META first")
    stats = by_type["STATS"]
    report(len(stats) == 1 and recs[-1].get("type") == "STATS", "STATS last")
    if stats:
        s = stats[0]
        dropped = sum(s["records_dropped"].values()) if isinstance(s["records_dropped"], dict) else s["records_dropped"]
        print(("INFO" if not dropped and not s.get("cupti_dropped") else "WARN")
              + f" dropped={dropped} cupti_dropped={s.get('cupti_dropped')} status={s.get('cupti_status')}")
        print("INFO written " + json.dumps(s["records_written"]))

    if len(argv) > 3:
        try:
            import jsonschema
            with open(argv[3], encoding="utf-8") as f:
                v = jsonschema.Draft202012Validator(json.load(f))
            bad = sum(1 for r in recs for _ in v.iter_errors(r))
            report(bad == 0, "schema validation", f"{bad} errors in {len(recs)} records")
        except ImportError:
            report(False, "schema validation", "python jsonschema is not installed (a missing test "
                   "dependency fails the check; install python3-jsonschema or pip install jsonschema)")
    print(("FAILED " if failures else "OK ") + f"{failures} failed checks; dump: {', '.join(paths)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

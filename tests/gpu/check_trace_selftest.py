#!/usr/bin/python3
"""Self-test of check_trace.py on a synthetic dump (no GPU needed; ctest label unit).

Builds a small dump shaped like a traced workload.cu run, checks that check_trace.py accepts it,
then breaks it in five ways (a kernel without its API call, a graph kernel whose node maps to
no capture-time call, one scale kernel missing, NCCL's closing payload missing, an all-reduce
with no device work) and checks that each is reported as a FAIL.
"""
import copy
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def synthetic():
    recs = [{"type": "META", "schema": "truffld.events/1", "host": "h", "process_id": 1, "rank": None,
             "clock": "monotonic_raw", "clock_sync": {"realtime_ns": 1, "monotonic_ns": 1}}]
    clock = [1000]

    def api(name, corr):
        clock[0] += 10
        recs.append({"type": "RUNTIME", "cbid": 211, "name": name, "start": clock[0], "end": clock[0] + 5,
                     "correlation_id": corr, "process_id": 1, "thread_id": 2})
        return clock[0]

    def kernel(name, corr, start, **extra):
        recs.append(dict({"type": "KERNEL", "name": name, "gpu_start": start + 100, "gpu_end": start + 200,
                          "correlation_id": corr, "device": 0, "stream": 1}, **extra))

    recs.append({"type": "NVTX_PUSH", "name": "step_execute_model[request_ids:t0-0]", "timestamp": 1, "process_id": 1, "thread_id": 2})
    kernel("sm90_xmma_gemm", 1, api("cudaLaunchKernel", 1))
    kernel("_Z5scalePffi", 2, api("cudaLaunchKernel", 2))
    kernel("_Z3addPfPKfi", 3, api("cudaLaunchKernel", 3))
    for kind, size in (("MEMSET", 4 << 20),):
        recs.append({"type": kind, "bytes": size, "gpu_start": 1, "gpu_end": 2, "correlation_id": 9, "device": 0, "stream": 1})
    for ck, size in (("DtoH", 4096), ("HtoD", 4 << 20)):
        recs.append({"type": "MEMCPY", "copy_kind": ck, "bytes": size, "gpu_start": 1, "gpu_end": 2,
                     "correlation_id": 9, "device": 0, "stream": 1})
    recs.append({"type": "NVTX_POP", "timestamp": 2000, "process_id": 1, "thread_id": 2})
    recs.append({"type": "NVTX_PUSH", "name": "capture", "timestamp": 3000, "process_id": 1, "thread_id": 2})
    clock[0] = 3000
    for i, node in enumerate((100, 101, 102)):
        s = api("cudaLaunchKernel", 10 + i)
        recs.append({"type": "GRAPH_NODE", "graph_id": 1, "graph_node_id": node, "correlation_id": 10 + i,
                     "timestamp": s + 1, "process_id": 1, "thread_id": 2})
    for i, node in enumerate((100, 101, 102)):
        recs.append({"type": "GRAPH_NODE", "graph_id": 2, "graph_node_id": 200 + i, "original_graph_node_id": node,
                     "correlation_id": 20, "timestamp": 3500, "process_id": 1, "thread_id": 2})
    recs.append({"type": "NVTX_POP", "timestamp": 4000, "process_id": 1, "thread_id": 2})
    s = api("cudaGraphLaunch", 30)
    for i, name in enumerate(("_Z5scalePffi", "_Z5scalePffi", "_Z3addPfPKfi")):
        kernel(name, 30, s, graph_id=2, graph_node_id=200 + i)
    # NCCL: ncclCommInitRank closed by nvtxRangePopPayload, then two all-reduces (a copy, a kernel).
    nccl = {"domain": "NCCL", "process_id": 1, "thread_id": 2}
    recs.append(dict(nccl, type="NVTX_PUSH", name="ncclCommInitRank", timestamp=5000))
    recs.append(dict(nccl, type="NVTX_POP", timestamp=5100, payload={"comm": 7, "nranks": 1}))
    clock[0] = 5200
    for i in range(2):
        recs.append(dict(nccl, type="NVTX_PUSH", name="ncclAllReduce", timestamp=clock[0] + 1,
                         payload={"comm": 7, "bytes": 1 << 20, "op": "Sum"}))
        s = api("cudaMemcpyAsync" if i == 0 else "cudaLaunchKernel", 40 + i)
        if i == 0:
            recs.append({"type": "MEMCPY", "copy_kind": "DtoD", "bytes": 1 << 20, "gpu_start": s + 50,
                         "gpu_end": s + 60, "correlation_id": 40, "device": 0, "stream": 1})
        else:
            kernel("oneRankReduce", 41, s)
        recs.append(dict(nccl, type="NVTX_POP", timestamp=s + 8))
        clock[0] = s + 10
    recs.append({"type": "STATS", "records_written": {"KERNEL": 6}, "records_dropped": {"KERNEL": 0}, "cupti_dropped": 0})
    expected = {"threads": 1, "steps": 1, "scale": 3, "add": 2, "gemm": 1, "memset": 1, "memcpy_dtoh": 1,
                "memcpy_htod": 1, "graph_replays": 1, "graph_kernel_nodes": 3, "nccl_allreduce": True,
                "nccl_allreduce_calls": 2}
    return recs, expected


def run(recs, expected):
    with tempfile.TemporaryDirectory() as d:
        os.mkdir(os.path.join(d, "trace"))
        with open(os.path.join(d, "trace", "truffld-h-r--p1.jsonl"), "w", encoding="utf-8") as f:
            f.write("\n".join(json.dumps(r) for r in recs) + "\n")
        with open(os.path.join(d, "expected.json"), "w", encoding="utf-8") as f:
            json.dump(expected, f)
        p = subprocess.run([sys.executable, os.path.join(HERE, "check_trace.py"), os.path.join(d, "trace"),
                            os.path.join(d, "expected.json")], capture_output=True, text=True)
        return p.returncode, p.stdout


def main():
    recs, exp = synthetic()
    rc, out = run(recs, exp)
    if rc != 0:
        print("the intact synthetic dump was rejected:\n" + out)
        return 1
    broken = {
        "kernels linked": [r for r in recs if not (r["type"] == "RUNTIME" and r["correlation_id"] == 2)],
        "graph kernels mapped": [r for r in recs if not (r["type"] == "GRAPH_NODE" and r["graph_node_id"] == 101)],
        "scale kernel count": [r for r in recs if not (r["type"] == "KERNEL" and r["correlation_id"] == 2)],
        "ncclCommInitRank closed with its payload": [
            {k: v for k, v in r.items() if k != "payload"} if r["type"] == "NVTX_POP" else r for r in recs],
        "NCCL all-reduce device work traced": [r for r in recs if r.get("correlation_id") != 41],
    }
    bad = 0
    for check, mutated in broken.items():
        rc, out = run(copy.deepcopy(mutated), exp)
        if rc == 0 or ("FAIL " + check) not in out:
            print(f"breaking '{check}' was not reported:\n{out}")
            bad += 1
    print("check_trace.py self-test: " + ("FAILED" if bad else "OK"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

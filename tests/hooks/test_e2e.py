"""Integration test, end to end: the hooks + the real injector (NVTX_INJECTION64_PATH) + the real
merge. A tiny transformer runs under the stand-in vLLM V1 worker; the injector's raw dump must
hold the step/frontend/backend/comm ranges, and truffld-merge must rebuild trees whose steps
carry the request ids, whose frontend ranges carry call sites, and whose horizontal view holds
the collective under its family with bytes and world size in the name.

Needs TRUFFLD_INJECTOR (libcupti_injector.so) and TRUFFLD_MERGE (truffld-merge) from the build;
exits 77 (ctest SKIP) with a message naming what is missing when they are not built."""

import glob
import re
import json
import os
import subprocess
import sys
import tempfile

import hookstest
from hookstest import fail, skip



def read_dump(path):
    records = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except ValueError as exc:
                    fail("%s:%d: not JSON: %s" % (path, number, exc))
    return records


def walk(node):
    yield node
    for child in node.get("children", []):
        yield from walk(child)


def main():
    injector = os.environ.get("TRUFFLD_INJECTOR", "")
    merge = os.environ.get("TRUFFLD_MERGE", "")
    if not injector or not os.path.exists(injector):
        skip("libcupti_injector.so is not built (TRUFFLD_INJECTOR=%r)" % injector)
    with tempfile.TemporaryDirectory() as tmp:
        dumps = os.path.join(tmp, "dumps")
        os.makedirs(dumps)
        env = hookstest.hooks_env(os.path.join(hookstest.STANDINS, "vllm_v1_new"),
                                  NVTX_INJECTION64_PATH=injector, TRUFFLD_OUTPUT_DIR=dumps,
                                  CUDA_INJECTION64_PATH=None)
        if os.environ.get("TRUFFLD_ASAN_PRELOAD"):  # sanitizer build: instrumented injector
            env["LD_PRELOAD"] = os.environ["TRUFFLD_ASAN_PRELOAD"]
        proc = subprocess.run([hookstest.PYTHON, os.path.join(hookstest.HERE, "e2e_workload.py")],
                              env=env, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            fail("workload failed rc=%d\n%s\n%s" % (proc.returncode, proc.stdout, proc.stderr))
        expected_steps = json.loads(proc.stdout.splitlines()[-1])["steps"]
        files = sorted(glob.glob(os.path.join(dumps, "truffld-*.jsonl*")))
        if not files:
            fail("no dump in %s (stderr: %s)" % (dumps, proc.stderr[-2000:]))
        records = [r for f in files for r in read_dump(f)]
        pushes = [r.get("name", "") for r in records if r.get("type") == "NVTX_PUSH"]
        steps = [n for n in pushes if n.startswith("step_execute_model[")]
        if len(steps) != len(expected_steps):
            fail("expected %d step ranges in the dump, found %r" % (len(expected_steps), steps))
        # Every request of the workload is new: prefill steps, and the tokens they schedule.
        untagged = [n for n in steps if not re.search(r"\]\[phase:prefill\]\[tokens:[1-9][0-9]*\]", n)]
        if untagged:
            fail("step ranges without the [phase:prefill][tokens:N] tags: %r" % untagged)
        if not any(n.startswith("torch.nn.functional.linear /") for n in pushes):
            fail("no frontend range with a call site in the dump: %r" % pushes[:20])
        if not any(n.startswith("aten::") for n in pushes):
            fail("no backend aten:: range in the dump")
        print("dump: %d records, %d NVTX pushes, %d steps" % (len(records), len(pushes), len(steps)))
        if not merge or not os.path.exists(merge):
            skip("dump checked, but truffld-merge is not built (TRUFFLD_MERGE=%r)" % merge)
        out = os.path.join(tmp, "merged")
        proc = subprocess.run([merge] + files + ["-o", out], capture_output=True, text=True,
                              timeout=300)
        if proc.returncode != 0:
            fail("truffld-merge rc=%d\n%s\n%s" % (proc.returncode, proc.stdout, proc.stderr))
        trees = read_dump(os.path.join(out, "trees.jsonl"))
        request_sets = {tuple(t["requests"]) for t in trees if t.get("view") == "vertical"}
        phases = {t.get("phase") for t in trees if t.get("view") == "vertical"}
        if phases != {"prefill"}:
            fail("merged step phases %r, expected only 'prefill'" % sorted(map(str, phases)))
        for ids in expected_steps:
            if tuple(ids) not in request_sets:
                fail("no tree for step with requests %r; have %r" % (ids, sorted(request_sets)))
        frontend = [n for t in trees for n in walk(t["root"]) if n.get("layer") == "frontend_op"]
        with_site = [n for n in frontend if " " in n["name"] and ":" in n["name"].split(" ", 1)[1]]
        if not with_site:
            fail("no frontend_op node with a call site in trees.jsonl")
        backend = [n for t in trees for n in walk(t["root"]) if n.get("layer") == "backend_op"]
        if not backend:
            fail("no backend_op node in trees.jsonl")
        comm = [n for t in trees if t.get("view") == "horizontal" for n in walk(t["root"])
                if n.get("layer") == "comm"]
        expected_comm = "nccl:all_reduce, bytes=1024, world_size=2, impl=pynccl"
        if not comm or any(n["name"] != expected_comm or n["family"] != "nccl:all_reduce"
                           or n.get("domain") != "truffld.comm" for n in comm):
            fail("horizontal view: expected comm nodes %r (family nccl:all_reduce, domain truffld.comm), got %r"
                 % (expected_comm, [(n["name"], n["family"], n.get("domain")) for n in comm][:5]))
        print("merge: %d trees, %d frontend nodes (%d with call site), %d backend nodes, "
              "%d comm nodes" % (len(trees), len(frontend), len(with_site), len(backend),
                                 len(comm)))
    print("PASS")


if __name__ == "__main__":
    main()

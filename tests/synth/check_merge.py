#!/usr/bin/python3
"""Does truffld-merge recover everything truffld-synth wrote?

Generates a small multi-host dump, merges it, and checks per rank that trees.jsonl has exactly
the generator's steps (same step_index order and names), each step's request set, and every
kernel (identified by correlation id and graph node) under the step that launched it, in the
vertical and horizontal views together. The expected side is rebuilt from the raw dumps by
check_dump.py's reader, not taken from the generator's internals.
Exit 0 = all recovered, 1 = differences (printed), 77 = truffld-merge not built (skip).
"""
import argparse
import collections
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_dump  # noqa: E402


def parse_request_ids(step_name):
    """Ids of 'step_execute_model[request_ids:a_b][phase:decode]': up to the unescaped ']'."""
    body = step_name[step_name.index(":") + 1:]
    ids, cur, i = [], "", 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            cur += body[i + 1]
            i += 2
            continue
        if c == "]":
            break
        if c == "_":
            ids.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    ids.append(cur)
    return ids


def walk(node):
    yield node
    for ch in node.get("children", []):
        yield from walk(ch)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--synth", required=True)
    ap.add_argument("--merge", default="")
    ap.add_argument("--work", required=True)
    ap.add_argument("--synth-args", default="--preset small --ranks 4 --hosts 2 --seed 6")
    args = ap.parse_args()
    if not args.merge or not os.path.exists(args.merge):
        print("SKIP: truffld-merge is not built")
        return 77
    dump_dir = os.path.join(args.work, "dump")
    out_dir = os.path.join(args.work, "merged")
    subprocess.run(["rm", "-rf", args.work], check=True)
    subprocess.run([args.synth, *args.synth_args.split(), "-q", "--out", dump_dir], check=True)
    files = sorted(glob.glob(os.path.join(dump_dir, "truffld-*.jsonl")))
    r = subprocess.run([args.merge, *files, "-o", out_dir], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"truffld-merge failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
        return 1

    errors = []
    dumps = [check_dump.Dump(f, errors) for f in files]
    expected = {}
    for d in dumps:
        kernels = collections.defaultdict(set)
        for rec in d.device:
            if rec["type"] != "KERNEL":
                continue
            _, step = d.owner(rec)
            if step is not None:
                kernels[step].add((rec["correlation_id"], rec.get("graph_node_id", -1)))
        for s, idx in enumerate(d.steps):
            name = d.ranges[idx]["name"]
            expected[(d.rank, s)] = (name, sorted(parse_request_ids(name)), kernels[s])

    got = {}
    with open(os.path.join(out_dir, "trees.jsonl"), encoding="utf-8") as f:
        for line in f:
            t = json.loads(line)
            key = (t["rank"], t["step_index"])
            name, reqs, kern = got.setdefault(key, (t["step"], set(), set()))
            reqs.update(t["requests"])
            for n in walk(t["root"]):
                if n.get("layer") == "kernel":
                    kern.add((n.get("correlation_id"), n.get("graph_node_id", -1)))
    for key, (name, reqs, kern) in sorted(expected.items()):
        if key not in got:
            errors.append(f"rank {key[0]} step {key[1]}: missing from trees.jsonl")
            continue
        gname, greqs, gkern = got[key]
        if gname != name:
            errors.append(f"rank {key[0]} step {key[1]}: step name {gname!r}, expected {name!r}")
        if sorted(greqs) != reqs:
            errors.append(f"rank {key[0]} step {key[1]}: requests {sorted(greqs)[:5]}..., expected {reqs[:5]}...")
        if gkern != kern:
            errors.append(f"rank {key[0]} step {key[1]}: {len(kern - gkern)} kernels missing, "
                          f"{len(gkern - kern)} unexpected (of {len(kern)})")
    for key in got:
        if key not in expected:
            errors.append(f"trees.jsonl has rank {key[0]} step {key[1]}, which the generator never wrote")
    n_kernels = sum(len(v[2]) for v in expected.values())
    print(f"check_merge: {len(expected)} rank-steps, {n_kernels} kernels expected; {len(errors)} problems")
    for e in errors[:40]:
        print("  " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

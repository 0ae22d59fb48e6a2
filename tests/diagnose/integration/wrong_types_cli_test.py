#!/usr/bin/env python3
"""truffld-diagnose on user JSON whose members have the wrong JSON type: labels, trees and a
reference run. Each is a bad line, reported with file:line, and the run goes on; none may abort
the tool (nlohmann's value() threw on such members: a labels line {"view":1} ended the run with
SIGABRT, exit 134).

Usage: wrong_types_cli_test.py --diag BIN --synth BIN --work DIR"""
import argparse
import json
import os
import sys

from cli_test_util import run_diag, synth_workdir


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--diag", required=True)
    ap.add_argument("--synth", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    trees, good = synth_workdir(a.synth, a.work)

    # Labels: each member of the wrong type.
    labels = os.path.join(a.work, "labels.jsonl")
    bad_labels = [{"view": 1, "step_index": 0}, {"view": "vertical", "step_index": "0"},
                  {"view": "vertical", "step_index": 0, "abnormal": "yes"},
                  {"view": "vertical", "step_index": 0, "faulty": "aten::mm"},
                  {"view": ["vertical"], "step_index": 0}, {"view": "vertical", "step_index": 1.5}]
    with open(labels, "w") as f:
        for lab in bad_labels:
            f.write(json.dumps(lab) + "\n")
    p = run_diag([a.diag, trees, "-o", os.path.join(a.work, "out-labels"), "--labels", labels, "--llm", "off", "--no-html"])
    if p.returncode != 0:
        sys.exit(f"bad labels should be reported, not fatal (exit {p.returncode}):\n{p.stderr}")
    for line in range(1, len(bad_labels) + 1):
        if f"labels.jsonl:{line}:" not in p.stderr:
            sys.exit(f"labels.jsonl:{line} (a wrong-typed member) not reported:\n{p.stderr}")

    # Trees (the input) and a reference run: top-level and node members of the wrong type.
    bad_trees = []
    for key, value in [("view", 1), ("step_index", "3"), ("root", [])]:
        t = dict(good)
        t[key] = value
        bad_trees.append(t)
    t = json.loads(json.dumps(good))
    t["root"]["children"] = 5
    bad_trees.append(t)
    t = json.loads(json.dumps(good))
    t["root"]["children"][0].update({"name": 7, "start": "x", "layer": ["kernel"], "family": None})
    bad_trees.append(t)
    mixed = os.path.join(a.work, "mixed.jsonl")
    refdir = os.path.join(a.work, "reference")
    os.makedirs(refdir)
    lines = open(trees).read().splitlines()
    for path, keep in [(mixed, lines), (os.path.join(refdir, "trees.jsonl"), lines[:60])]:
        with open(path, "w") as f:
            for line in keep:
                f.write(line + "\n")
            for t in bad_trees:
                f.write(json.dumps(t) + "\n")
    p = run_diag([a.diag, mixed, "-o", os.path.join(a.work, "out-trees"), "--llm", "off", "--no-html"])
    if p.returncode != 0 or f"mixed.jsonl:{len(lines) + 1}:" not in p.stderr:
        sys.exit(f"wrong-typed trees should be bad lines with file:line (exit {p.returncode}):\n{p.stderr}")
    p = run_diag([a.diag, trees, "-o", os.path.join(a.work, "out-ref"), "--reference", refdir, "--llm", "off", "--no-html"])
    if p.returncode != 0 or "reference/trees.jsonl:61:" not in p.stderr:
        sys.exit(f"a wrong-typed reference should be bad lines with file:line (exit {p.returncode}):\n{p.stderr}")
    print(f"wrong types: {len(bad_labels)} label lines, {len(bad_trees)} tree lines (input and reference) reported")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""truffld-diagnose on hostile numbers: trees lines whose integers are out of range (a step_index
of 2^63-1 aborted the report writer with std::length_error), trees nested past the JSON parser's
default depth (a 600-level tree must be read) or past the reader's limit, and floating-point flags
given NaN, infinity or a value out of range (accepted: CLI11's Range lets NaN through). Lines are
bad lines named by file:line and field, a tree past the depth limit names its step and is counted,
bad flags exit 2 naming the tool and the flag; nothing may end the tool with a signal.

Usage: hostile_numbers_cli_test.py --diag BIN --synth BIN --work DIR"""
import argparse
import json
import os
import sys

from cli_test_util import run_diag, synth_workdir


def deep_tree(template, depth):
    """`template` as a line, its root replaced by a chain of `depth` nested operator ranges (built
    as text: Python's json module recurses past its own limit at this depth)."""
    t = dict(template)
    t["step_index"] = 77
    t["root"] = None
    head = json.dumps(t)
    leaf = json.dumps({"name": "leaf", "layer": "frontend_op", "family": "leaf", "start": 10, "end": 20})
    opening = "".join('{"name": "op%d", "layer": "frontend_op", "family": "op%d", "start": 0, "end": 100, '
                      '"children": [' % (i, i) for i in range(depth))
    return head.replace('"root": null', '"root": ' + opening + leaf + "]}" * depth)


def check_lines(a, trees, good):
    """Out-of-range numbers are bad lines naming file:line and the field; the report is written."""
    lines = open(trees).read().splitlines()
    hostile = [("step_index", 2**63 - 1), ("step_index", 1e300), ("rank", 2**40), ("start", -2**63),
               ("end", 1e30), ("tokens", 2**63 - 1), ("ctx", 1e300)]
    path = os.path.join(a.work, "numbers.jsonl")
    with open(path, "w") as f:
        for line in lines:
            f.write(line + "\n")
        for key, value in hostile:
            t = dict(good)
            t[key] = value
            f.write(json.dumps(t) + "\n")
    p = run_diag([a.diag, path, "-o", os.path.join(a.work, "out-numbers"), "--llm", "off"])
    if p.returncode not in (0, 1):
        sys.exit(f"out-of-range numbers should be bad lines (exit {p.returncode}):\n{p.stderr}")
    for k, (key, _) in enumerate(hostile):
        where = f"numbers.jsonl:{len(lines) + 1 + k}:"
        row = [ln for ln in p.stderr.splitlines() if where in ln]
        if not row or key not in row[0]:
            sys.exit(f"{where} ({key} out of range) not reported with its field:\n{p.stderr}")


def hostile_nodes(node, value):
    """`node` with every number of every node below it (times, bytes, thread and graph ids, grid
    and block entries, payload sizes) replaced by `value`."""
    if isinstance(node, dict):
        return {k: value if isinstance(v, (int, float)) and not isinstance(v, bool) else hostile_nodes(v, value)
                for k, v in node.items()}
    if isinstance(node, list):
        return [value if isinstance(v, (int, float)) and not isinstance(v, bool) else hostile_nodes(v, value)
                for v in node]
    return node


def check_node_numbers(a, trees):
    """Every number inside the trees' nodes set to an extreme: read (clamped or saturated), the
    report written, no signal."""
    lines = open(trees).read().splitlines()
    for value in (2**63 - 1, -2**63, 2**64, 1e300, -1e300):
        path = os.path.join(a.work, "nodes.jsonl")
        with open(path, "w") as f:
            for k, line in enumerate(lines):
                t = json.loads(line)
                if k % 7 == 3:
                    t["root"] = hostile_nodes(t["root"], value)
                f.write(json.dumps(t) + "\n")
        p = run_diag([a.diag, path, "-o", os.path.join(a.work, "out-nodes"), "--llm", "off"])
        if p.returncode != 0:
            sys.exit(f"node numbers of {value} should be read (exit {p.returncode}):\n{p.stderr[-3000:]}")


def check_deep(a, trees, good):
    """A 600-level tree (past the JSON parser's default depth) is read; one past the reader's
    limit of 16,384 JSON levels is a problem line naming file:line and its step, counted in
    stats.json input.too_deep_trees."""
    path = os.path.join(a.work, "deep.jsonl")
    lines = open(trees).read().splitlines()
    with open(path, "w") as f:
        for line in lines:
            f.write(line + "\n")
        f.write(deep_tree(good, 600) + "\n")
    out = os.path.join(a.work, "out-deep")
    p = run_diag([a.diag, path, "-o", out, "--llm", "off", "--no-html"])
    stats = json.load(open(os.path.join(out, "stats.json"))) if p.returncode == 0 else {}
    read = stats.get("input", {})
    if p.returncode != 0 or read.get("bad_lines") != 0 or read.get("trees") != len(lines) + 1:
        sys.exit(f"a 600-level tree should be read (exit {p.returncode}, input {read}):\n{p.stderr}")
    with open(path, "a") as f:
        f.write(deep_tree(good, 9000) + "\n")
    p = run_diag([a.diag, path, "-o", out, "--llm", "off", "--no-html"])
    where = f"deep.jsonl:{len(lines) + 2}:"
    row = [ln for ln in p.stderr.splitlines() if where in ln]
    if p.returncode != 0 or not row or "step 77" not in row[0]:
        sys.exit(f"a too-deep tree should be reported with {where} and its step (exit {p.returncode}):\n{p.stderr}")
    read = json.load(open(os.path.join(out, "stats.json")))["input"]
    if read.get("too_deep_trees") != 1 or read.get("bad_lines") != 1:
        sys.exit(f"stats.json should count the too-deep tree: {read}")


def check_flags(a, trees):
    """Every floating-point flag: NaN, infinity and out-of-range values exit 2 naming tool and flag."""
    flags = ["--false-alarm-rate", "--single-ratio-device", "--single-ratio-host", "--single-ratio-transfer",
             "--lone-min-share", "--min-impact-share", "--reg-covar", "--central-mass", "--tail-alpha", "--q",
             "--lambda", "--min-score", "--trim"]
    ranged = flags[:6]
    for flag in flags:
        for value in ["nan", "NaN", "inf", "-inf"] + (["1e9"] if flag in ranged else []):
            p = run_diag([a.diag, trees, "-o", os.path.join(a.work, "out-flags"), f"{flag}={value}", "--no-html"])
            if p.returncode != 2 or "truffld-diagnose" not in p.stderr or flag not in p.stderr:
                sys.exit(f"{flag}={value} should exit 2 naming the tool and the flag (exit {p.returncode}):\n"
                         f"{p.stderr}")
    p = run_diag([a.diag, trees, "-o", os.path.join(a.work, "out-flags"), "--false-alarm-rate", "0.01",
                     "--min-impact-share", "0", "--no-html", "--llm", "off"])
    if p.returncode != 0:
        sys.exit(f"finite in-range flags should be accepted (exit {p.returncode}):\n{p.stderr}")
    return len(flags)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--diag", required=True)
    ap.add_argument("--synth", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    trees, good = synth_workdir(a.synth, a.work)
    check_lines(a, trees, good)
    check_node_numbers(a, trees)
    check_deep(a, trees, good)
    n = check_flags(a, trees)
    print(f"hostile numbers: out-of-range fields, extreme node numbers, 600- and 9000-level trees and {n} float flags handled")


if __name__ == "__main__":
    main()

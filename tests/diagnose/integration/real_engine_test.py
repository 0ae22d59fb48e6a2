#!/usr/bin/python3
"""The real-engine dumps in tests/data/real_engine (transformers' continuous batching on an H200,
traced by libcupti_injector.so and the hooks; see that folder's README) through truffld-merge
and truffld-diagnose --llm off.

Checks, per run: the merge keeps every engine step (as many step trees per view as the engine
ran, by the ground truth's count), names every request of the run in some step, reads each
step's phase, tokens and context from the hooks' tags, closes every range and links kernels to
their launches; the diagnosis validates against schemas/diagnosis.schema.json, judges or
explains every step, and each abnormal unit blames operators with their excess time and an
evidence sentence; the fault steps of the ground truth exist as units. Issue 39's floor is
asserted: a run without faults has at most one abnormal unit, and every delay (software) and
copy (memcpy) fault step is abnormal with the faulted operator blamed first and the step time it
cost (impact_ns) on the unit and on the blame. Fuller scores are benchmark figures
(tools/eval/engine_runs.py, BENCHMARKS.md).

Usage: real_engine_test.py --merge BIN --diag BIN --data DIR --schema FILE --work DIR
Exit status 0 pass, 1 fail (each failure printed).
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

FAILURES = []


def check(ok, message):
    print(("PASS " if ok else "FAIL ") + message)
    if not ok:
        FAILURES.append(message)


def read_jsonl(path):
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def check_merge(name, run, out, truth, result):
    summary = json.load(open(os.path.join(out, "summary.json")))["total"]
    check(summary["steps"] == truth["steps"], "%s: %d steps merged, the engine ran %d"
          % (name, summary["steps"], truth["steps"]))
    check(summary["unclosed_ranges"] == 0 and summary["unmatched_pops"] == 0,
          "%s: ranges balanced (unclosed %d, unmatched pops %d)" % (name, summary["unclosed_ranges"],
                                                                   summary["unmatched_pops"]))
    check(summary["kernels_linked_unique"] > 0.5 * summary["kernels_read"],
          "%s: %d of %d kernels linked to their launch" % (name, summary["kernels_linked_unique"],
                                                           summary["kernels_read"]))
    trees = [t for t in read_jsonl(os.path.join(out, "trees.jsonl")) if t["view"] == "vertical"]
    steps = {t["step_index"]: t for t in trees}
    check(sorted(steps) == list(range(truth["steps"])), "%s: step indices 0..%d" % (name, truth["steps"] - 1))
    named = set()
    for t in trees:
        named.update(t.get("request_group") or t.get("requests") or [])
    wanted = {"req-%03d" % i for i in range(result["requests"])}
    check(wanted <= named, "%s: all %d requests named in step trees (missing %s)"
          % (name, len(wanted), sorted(wanted - named)[:5]))
    tagged = [t for t in steps.values() if t.get("phase") in ("prefill", "decode", "mixed")
              and isinstance(t.get("tokens"), int) and isinstance(t.get("ctx"), int)
              and re.search(r"\[tokens:%d\]" % t["tokens"], t["step"])]
    check(len(tagged) == len(steps), "%s: %d of %d steps carry phase, tokens and ctx"
          % (name, len(tagged), len(steps)))
    return steps


def blamed_first(unit, fault):
    """The unit's blame with the largest excess, when it is the faulted operator (as
    tools/eval/engine_runs.py scores it: any MLP forward, or aten::copy_); else None."""
    faulty = [f for f in unit.get("faulty") or [] if not f.get("effect_of")]
    if not faulty:
        return None
    top = max(faulty, key=lambda f: f.get("excess_ns") or 0)
    chain = [top["family"]] + list(top.get("parent_chain") or [])
    hit = top["family"] == "aten::copy_" if fault["class"] == "memcpy" else any("MLP" in n for n in chain)
    return top if hit else None


def check_floor(name, units, vertical, truth):
    """Issue 39's floor on real runs: healthy runs raise at most one alarm; delay and copy faults
    are found, blamed on the faulted operator, with what they cost the step."""
    if not truth["faults"]:
        abnormal = [(u["view"], u["step_index"]) for u in units if u["label"] == "abnormal"]
        check(len(abnormal) <= 1, "%s: at most 1 abnormal unit in a healthy run (got %s)" % (name, abnormal))
    for fault in truth["faults"]:
        if fault["class"] not in ("software", "memcpy") or fault["step"] not in vertical:
            continue
        u = vertical[fault["step"]]
        top = blamed_first(u, fault) if u["label"] == "abnormal" else None
        check(top is not None, "%s: %s fault at step %d abnormal and blamed on %s (label %s, blame %s)"
              % (name, fault["class"], fault["step"], fault["target"], u["label"],
                 [f["family"] for f in u.get("faulty") or []][:3]))
        if top is not None:
            check(u.get("impact_ns", 0) > 0 and top.get("impact_ns", 0) > 0,
                  "%s: step %d says what the fault cost it (unit impact_ns %s, blame impact_ns %s)"
                  % (name, fault["step"], u.get("impact_ns"), top.get("impact_ns")))


def check_diagnosis(name, ddir, steps, truth, schema):
    units = read_jsonl(os.path.join(ddir, "diagnosis.jsonl"))
    try:
        import jsonschema
        bad = [str(e.message)[:200] for u in units for e in jsonschema.Draft202012Validator(schema).iter_errors(u)]
        check(not bad, "%s: diagnosis.jsonl valid against the schema %s" % (name, bad[:2]))
    except ImportError:
        check(False, "python3-jsonschema is missing (a test dependency)")
    vertical = {u["step_index"]: u for u in units if u["view"] == "vertical"}
    check(sorted(vertical) == sorted(steps), "%s: one vertical unit per step" % name)
    labels = {u["label"] for u in units}
    check(labels <= {"normal", "abnormal", "insufficient_evidence"}, "%s: labels %s" % (name, sorted(labels)))
    for u in units:
        if u["label"] == "abnormal":
            ok = u["faulty"] and all(f.get("excess_ns", 0) > 0 and f.get("evidence") for f in u["faulty"])
            check(bool(ok) and re.search(r"p = [0-9.e+-]+", u["evidence"]) is not None,
                  "%s: abnormal step %s blames operators with excess and evidence" % (name, u["step_index"]))
        if u["label"] == "insufficient_evidence":
            check("insufficient evidence" in u["evidence"], "%s: step %s says why it is not judged"
                  % (name, u["step_index"]))
    for fault in truth["faults"]:
        check(fault["step"] in vertical, "%s: fault step %d (%s) is a unit" % (name, fault["step"], fault["class"]))
    check_floor(name, units, vertical, truth)
    # The reported threshold agrees with the verdicts: a judged unit's p-value is at or below it
    # exactly when the unit passed (abnormal, or normal only for being below the impact floor).
    for u in units:
        cal = u.get("calibration")
        if u["label"] == "insufficient_evidence" or not cal:
            continue
        passed = u["label"] == "abnormal" or "impact floor" in u["evidence"]
        at_or_below = cal["threshold"] > 0 and cal["p_value"] <= cal["threshold"]
        check(passed == at_or_below, "%s: %s step %s, p %.3g against threshold %.3g agrees with its label %s"
              % (name, u["view"], u["step_index"], cal["p_value"], cal["threshold"], u["label"]))
    return {u["calibration"]["null"]["centre"] for u in units if u.get("calibration")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for flag in ("--merge", "--diag", "--data", "--schema", "--work"):
        ap.add_argument(flag, required=True)
    args = ap.parse_args()
    schema = json.load(open(args.schema))
    runs = sorted(d for d in glob.glob(os.path.join(args.data, "*")) if os.path.isfile(os.path.join(d, "truth.json")))
    check(len(runs) >= 2, "real-engine runs found: %s" % [os.path.basename(r) for r in runs])
    shutil.rmtree(args.work, ignore_errors=True)
    for run in runs:
        name = os.path.basename(run)
        truth = json.load(open(os.path.join(run, "truth.json")))
        result = json.load(open(os.path.join(run, "result.json")))
        out, ddir = os.path.join(args.work, name, "merged"), os.path.join(args.work, name, "diag")
        dumps = sorted(glob.glob(os.path.join(run, "truffld-*.jsonl*")))
        proc = subprocess.run([args.merge, *dumps, "-o", out, "-q", "--no-trace-json"], capture_output=True, text=True)
        check(proc.returncode == 0, "%s: truffld-merge rc %d %s" % (name, proc.returncode, proc.stderr[-500:]))
        if proc.returncode != 0:
            continue
        steps = check_merge(name, run, out, truth, result)
        proc = subprocess.run([args.diag, out, "-o", ddir, "--llm", "off", "-q", "--no-html", "--no-trace"],
                              capture_output=True, text=True)
        check(proc.returncode == 0, "%s: truffld-diagnose rc %d %s" % (name, proc.returncode, proc.stderr[-500:]))
        if proc.returncode == 0:
            centres = check_diagnosis(name, ddir, steps, truth, schema)
            if name.startswith("healthy_eager"):  # the runs that showed heavy-tailed host times
                check(any(c > 0 for c in centres), "%s: judged against the run's own null (centres %s)"
                      % (name, sorted(centres)))
    print("%d failure(s)" % len(FAILURES))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())

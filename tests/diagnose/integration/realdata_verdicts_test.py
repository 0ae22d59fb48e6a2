#!/usr/bin/python3
"""Verdicts on the real profiler traces of ../shared/data (see its README): every file merges and
diagnoses (--llm off), every unit is judged or says why not; on the two healthy training traces
issue 39 names, hta_trace_diff_control_a100 and hta_df_index_resolver, at most one unit is
abnormal, and an abnormal unit says what it cost its step (impact_ns).

Skips (exit 77, reported as skipped) when the data folder is absent.
Usage: realdata_verdicts_test.py --merge BIN --diag BIN --work DIR [--data DIR]
(--data defaults to TRUFFLD_SHARED_DATA, else ../shared/data beside the checkout).
Exit status 0 pass, 1 fail (each failure printed), 77 skipped.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
HEALTHY = ("hta_trace_diff_control_a100", "hta_df_index_resolver")
FAILURES = []


def check(ok, message):
    print(("ok   " if ok else "FAIL ") + message)
    if not ok:
        FAILURES.append(message)


def diagnose(args, path, work):
    """Merges and diagnoses one trace; its units, or None after a reported failure."""
    name = os.path.basename(path)
    merged, diag = os.path.join(work, name, "merged"), os.path.join(work, name, "diag")
    p = subprocess.run([args.merge, path, "-o", merged, "-q", "--no-trace-json"], capture_output=True, text=True)
    check(p.returncode == 0, "%s: truffld-merge rc %d %s" % (name, p.returncode, p.stderr[-300:]))
    if p.returncode != 0:
        return None
    p = subprocess.run([args.diag, merged, "-o", diag, "--llm", "off", "-q", "--no-html", "--no-trace"],
                       capture_output=True, text=True)
    check(p.returncode == 0, "%s: truffld-diagnose rc %d %s" % (name, p.returncode, p.stderr[-300:]))
    if p.returncode != 0:
        return None
    with open(os.path.join(diag, "diagnosis.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--merge", required=True)
    ap.add_argument("--diag", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--data", default=os.environ.get("TRUFFLD_SHARED_DATA",
                                                      os.path.join(HERE, "..", "..", "..", "..", "shared", "data")))
    args = ap.parse_args()
    traces = sorted(glob.glob(os.path.join(args.data, "kineto", "*.json.gz")) +
                    glob.glob(os.path.join(args.data, "nsys", "*.sqlite")))
    if not traces:
        print("SKIP: no real traces under %s (set TRUFFLD_SHARED_DATA)" % os.path.abspath(args.data))
        return 77
    shutil.rmtree(args.work, ignore_errors=True)
    seen = set()
    for path in traces:
        units = diagnose(args, path, args.work)
        if units is None:
            continue
        name = os.path.basename(path).split(".")[0]
        seen.add(name)
        check(bool(units), "%s: %d units" % (name, len(units)))
        for u in units:
            if u["label"] == "insufficient_evidence":
                check("insufficient evidence" in u["evidence"], "%s: %s step %s says why it is not judged"
                      % (name, u["view"], u["step_index"]))
        abnormal = [u for u in units if u["label"] == "abnormal"]
        for u in abnormal:
            check(u.get("impact_ns", 0) > 0, "%s: abnormal %s step %s says what it cost (impact_ns %s)"
                  % (name, u["view"], u["step_index"], u.get("impact_ns")))
        if name in HEALTHY:
            check(len(abnormal) <= 1, "%s: at most 1 abnormal unit in a healthy trace (got %s)"
                  % (name, [(u["view"], u["step_index"]) for u in abnormal]))
    for name in HEALTHY:
        check(name in seen, "%s: present and diagnosed" % name)
    print("%d failure(s)" % len(FAILURES))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())

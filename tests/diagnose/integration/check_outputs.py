#!/usr/bin/python3
"""Checks a truffld-diagnose output directory: every diagnosis.jsonl line validates against the
schema, stats.json against stats.schema.json (beside it), labels and fusion agree (abnormal iff faulty non-empty, faulty subset of candidates and of
Stage II's set), and metrics.json, when present, finds the injected faults (step F1 > 0.5).
Usage: check_outputs.py SCHEMA OUTDIR"""
import json
import os
import sys

import jsonschema


def main():
    schema = json.load(open(sys.argv[1]))
    out = sys.argv[2]
    validator = jsonschema.Draft202012Validator(schema)
    n = 0
    with open(os.path.join(out, "diagnosis.jsonl")) as f:
        for i, line in enumerate(f, 1):
            d = json.loads(line)
            errors = sorted(validator.iter_errors(d), key=lambda e: e.path)
            if errors:
                sys.exit(f"diagnosis.jsonl:{i}: {errors[0].message}")
            faulty = {x["family"] for x in d["faulty"]}
            cands = {x["family"] for x in d["stage1"]["candidates"]}
            if (d["label"] == "abnormal") != bool(faulty):
                sys.exit(f"diagnosis.jsonl:{i}: label disagrees with faulty list")
            if not faulty <= cands or not faulty <= set(d["stage2"]["faulty"]):
                sys.exit(f"diagnosis.jsonl:{i}: faulty is not candidates intersected with Stage II")
            n += 1
    if n == 0:
        sys.exit("diagnosis.jsonl is empty")
    stats_schema = json.load(open(os.path.join(os.path.dirname(sys.argv[1]), "stats.schema.json")))
    errors = sorted(jsonschema.Draft202012Validator(stats_schema).iter_errors(json.load(open(os.path.join(out, "stats.json")))),
                    key=lambda e: list(e.path))
    if errors:
        sys.exit(f"stats.json: {'/'.join(map(str, errors[0].path))}: {errors[0].message}")
    mpath = os.path.join(out, "metrics.json")
    if os.path.exists(mpath):
        m = json.load(open(mpath))
        for view in ("vertical", "horizontal"):
            f1 = m[view]["step"]["f1"]
            print(f"{m['mode']} {view}: step F1 {f1:.3f}, Macro+ F1 {m[view]['operator']['macro_plus']['f1']:.3f}")
            if f1 <= 0.5:
                sys.exit(f"{view} step F1 {f1} <= 0.5")
    print(f"{n} lines valid")


if __name__ == "__main__":
    main()

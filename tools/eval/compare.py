#!/usr/bin/python3
"""Prints truffld-diagnose's abnormal steps next to what truffld-synth injected.

Usage: compare.py SYNTH_OUTDIR DIAG_OUTDIR [--all]

For every (rank, step, view) that is abnormal in the diagnosis or in labels.jsonl, one row:
the diagnosed faulty operators, the true faulty operators, and the ledger entry behind them
(class, target, intensity). The last lines count hits, misses and false alarms. --all also
lists steps where both agree the step was normal (normally omitted).
"""
import json
import os
import sys


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(x) for x in f if x.strip()]


def main(argv):
    if len(argv) < 3 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) > 1 else 2
    synth, diag = argv[1], argv[2]
    ledger = {e["id"]: e for e in read_jsonl(os.path.join(synth, "ledger.jsonl"))}
    labels = {(str(x["rank"]), x["step_index"], x["view"]): x for x in read_jsonl(os.path.join(synth, "labels.jsonl"))}
    diagnosed = {}
    for d in read_jsonl(os.path.join(diag, "diagnosis.jsonl")):
        key = ("" if d["rank"] is None else str(d["rank"]), d["step_index"], d["view"])
        diagnosed[key] = d
    rows, counts = [], {"hit": 0, "miss": 0, "false alarm": 0, "normal": 0}
    for key in sorted(set(labels) | set(diagnosed), key=lambda k: (int(k[0] or -1), k[1], k[2])):
        lab = labels.get(key, {"abnormal": False, "faulty": [], "fault_ids": []})
        d = diagnosed.get(key)
        pred_ab = bool(d and d.get("label") == "abnormal")
        pred = sorted(f["family"] for f in d.get("faulty", [])) if d else []
        if lab["abnormal"] and pred_ab:
            verdict = "hit"
        elif lab["abnormal"]:
            verdict = "miss"
        elif pred_ab:
            verdict = "false alarm"
        else:
            verdict = "normal"
        counts[verdict] += 1
        if verdict == "normal" and "--all" not in argv:
            continue
        cause = ", ".join(f"{i} {ledger[i]['class']}:{ledger[i]['target']} x{ledger[i]['intensity']}"
                          for i in lab.get("fault_ids", []) if i in ledger)
        rows.append((key[0], str(key[1]), key[2], verdict, ",".join(pred) or "-", ",".join(lab["faulty"]) or "-", cause))
    head = ("rank", "step", "view", "verdict", "diagnosed faulty", "true faulty", "injected fault")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    widths = [min(w, 48) for w in widths]
    for r in [head] + rows:
        print("  ".join(str(c)[:widths[i]].ljust(widths[i]) for i, c in enumerate(r)))
    print(f"\n{counts['hit']} abnormal steps found, {counts['miss']} missed, {counts['false alarm']} false alarms, "
          f"{counts['normal']} normal steps agreed ({len(ledger)} faults in the ledger)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

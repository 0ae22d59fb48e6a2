#!/usr/bin/python3
"""Detection on the real serving-engine runs of tests/data/real_engine (transformers' continuous
batching on a GPU, healthy and with real faults; see that folder's README): each run is merged
and diagnosed with --llm off, and its vertical units are scored against its truth.json, by step
number (steps are numbered in the order the engine ran them, as the merge numbers them).

Per run: steps, units judged and insufficient, units flagged; false alarms (flagged steps with no
fault, edges of a contention window excluded) as a share of the judged fault-free steps; per
fault class, the fault steps flagged; for the operator faults, whether the largest blamed excess
is the operator the fault was injected into (software: an MLP module forward, or an operator
whose call chain holds one -- the blame does not name the layer, so any layer's MLP counts;
memcpy: aten::copy_); and the same scores for "flag every step" and "flag no step".
Writes WORK/engine.json. Also carries tests/data/real_engine/overhead_*.json (the capture
overhead measured with the runs) into it.
"""
import argparse
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def blame_hits(unit, fault):
    """Whether the unit's largest blamed excess is the faulted operator."""
    faulty = [f for f in unit.get("faulty") or [] if not f.get("effect_of")]  # effects are not blames
    if not faulty:
        return False
    top = max(faulty, key=lambda f: f.get("excess_ns") or 0)
    if fault["class"] == "memcpy":
        return top["family"] == "aten::copy_"
    if fault["class"] == "software":  # the sleeping MLP forward, or something run inside it
        chain = [top["family"]] + list(top.get("parent_chain") or [])
        return any("MLP" in name for name in chain)
    return False


def score(units, truth, flagged, blames=True):
    """Scores a set of flagged step numbers against the truth (see the module docstring); with
    `blames` off (the flag every/no step rows, which name no operator) nothing counts as blamed."""
    faults = {}
    for f in truth["faults"]:
        if f["step"] in faults:
            raise ValueError("two faults on step %d in truth.json" % f["step"])
        faults[f["step"]] = f
    uncertain = set(truth.get("uncertain", []))
    judged = {s for s, u in units.items() if u["label"] != "insufficient_evidence"}
    clean = judged - set(faults) - uncertain
    out = {"judged": len(judged), "insufficient": len(units) - len(judged), "flagged": len(flagged & judged),
           "false_alarms": len(flagged & clean), "clean_steps": len(clean),
           "false_alarm_rate": round(len(flagged & clean) / len(clean), 4) if clean else None, "classes": {}}
    for step, fault in sorted(faults.items()):
        c = out["classes"].setdefault(fault["class"], {"steps": 0, "flagged": 0, "blamed": 0})
        c["steps"] += 1
        c["flagged"] += step in flagged
        c["blamed"] += blames and step in flagged and step in units and blame_hits(units[step], fault)
    return out


def evaluate_run(tools, work, run, log):
    name = os.path.basename(run)
    truth = json.load(open(os.path.join(run, "truth.json")))
    result = json.load(open(os.path.join(run, "result.json")))
    d = os.path.join(work, "engine", name)
    dumps = sorted(glob.glob(os.path.join(run, "truffld-*.jsonl*")))
    ok, _ = common.run([tools.merge, *dumps, "-o", os.path.join(d, "merged"), "--no-trace-json", "-q"], log)
    if not ok:
        return {"name": name, "failed": "merge"}
    ok, seconds = common.diagnose(tools, os.path.join(d, "merged"), os.path.join(d, "diag"), log)
    if not ok:
        return {"name": name, "failed": "diagnose"}
    units = {}
    for line in open(os.path.join(d, "diag", "diagnosis.jsonl")):
        u = json.loads(line)
        if u["view"] == "vertical":
            units[u["step_index"]] = u
    flagged = {s for s, u in units.items() if u["label"] == "abnormal"}
    null = next(iter(units.values()), {}).get("calibration", {}).get("null")
    examples = [units[s]["evidence"] for s in sorted(flagged)][:3]
    stats = json.load(open(os.path.join(d, "diag", "stats.json"))).get("peer", {}).get("vertical", {})
    warmup = stats.get("warmup")
    return {"name": name, "steps": truth["steps"], "requests": result.get("requests"),
            "engine": result.get("engine"), "tokens_per_s": result.get("tokens_per_s"),
            "faults": len(truth["faults"]), "diagnose_seconds": seconds, "null": null,
            "truffld": score(units, truth, flagged), "flag_every_step": score(units, truth, set(units), False),
            "flag_no_step": score(units, truth, set(), False), "flagged_steps": sorted(flagged), "examples": examples,
            "warmup": warmup}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--data", default=os.path.join(ROOT, "tests", "data", "real_engine"))
    args = ap.parse_args()
    log = common.Log(args.work, "engine_runs")
    tools = common.Tools(args.bin)
    res = {"data": os.path.relpath(args.data, ROOT), "runs": [], "overhead": {}}
    for run in sorted(glob.glob(os.path.join(args.data, "*"))):
        if not os.path.isfile(os.path.join(run, "truth.json")):
            continue
        try:
            row = evaluate_run(tools, args.work, run, log)
        except Exception as e:  # noqa: BLE001 - one bad run must not stop the others
            row = {"name": os.path.basename(run), "failed": f"{type(e).__name__}: {e}"}
        res["runs"].append(row)
        log(f"{row['name']}: " + (row.get("failed") or json.dumps(row["truffld"])))
    for path in sorted(glob.glob(os.path.join(args.data, "overhead_*.json"))):
        res["overhead"][os.path.basename(path)[len("overhead_"):-len(".json")]] = json.load(open(path))
    if not res["runs"]:
        res["skipped"] = f"no runs with truth.json under {args.data}"
    with open(os.path.join(args.work, "engine.json"), "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""The fault classes for time no operator covers, labels by cost, and the host-ahead regime.

  1. host_gap, sched_delay, direct_copy, device_starve (each alone, strong; sched_delay also with --pp 2): the
     ledger has entries of the class naming the diagnoser's pseudo-family as target, labels.jsonl
     has abnormal vertical steps whose faulty list is exactly that family, and check_dump.py
     re-derives every label from the raw events (including cost_ns = observed - counterfactual);
  2. sched_delay holds every rank of a replica: each entry's group has one entry per rank of
     the replica, all with the same first_step;
  3. host-ahead (--host-ahead, software faults at every intensity): most touched steps are
     absorbed (labelled normal, absorbed: true, cost_ns below 1% of counterfactual_ns) while
     the same faults without --host-ahead cost more;
  4. the same seed and flags (new classes, --host-ahead) give byte-identical files;
  5. with truffld-merge: every vertical step tree has the direct input copy as a runtime_call
     directly under the step root (cudaMemcpyAsync HtoD on the main thread, its memcpy below).
Exit 0 = all hold, 1 = a difference (printed).

Usage: check_new_classes.py --synth BIN --work DIR [--merge BIN]
"""
import argparse
import collections
import filecmp
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FAMILY = {"host_gap": "(host outside operators)", "sched_delay": "(between steps)",
          "direct_copy": "(calls under the step)", "device_starve": "(device idle)"}


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def synth(binary, out, args):
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([binary, "-q", "--out", out] + args, check=True)


def check_dump(out, errors):
    r = subprocess.run([sys.executable, os.path.join(HERE, "check_dump.py"), out, "--max-validate", "3000"],
                       capture_output=True, text=True)
    print("  " + r.stdout.strip().replace("\n", "\n  "))
    if r.returncode != 0:
        errors.append(f"check_dump.py failed on {out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--synth", required=True)
    ap.add_argument("--merge", default="")
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    errors = []
    os.makedirs(args.work, exist_ok=True)

    runs = [(cls, ["--preset", "small", "--ranks", "4", "--hosts", "2", "--steps", "30", "--seed", "5",
                   "--faults", cls, "--intensities", "strong"]) for cls in FAMILY]
    runs.append(("sched_delay", ["--preset", "small", "--ranks", "4", "--hosts", "2", "--pp", "2", "--steps", "30",
                                 "--seed", "6", "--faults", "sched_delay", "--intensities", "strong"]))
    for k, (cls, flags) in enumerate(runs):
        out = os.path.join(args.work, f"{cls}-{k}")
        print(f"{cls}: {' '.join(flags)}")
        synth(args.synth, out, flags)
        ledger = load(os.path.join(out, "ledger.jsonl"))
        labels = load(os.path.join(out, "labels.jsonl"))
        if not ledger or any(e["class"] != cls or e["target"] != FAMILY[cls] for e in ledger):
            errors.append(f"{cls}: ledger entries {[(e['class'], e['target']) for e in ledger][:3]}")
        ab = [lab for lab in labels if lab["abnormal"]]
        if not ab:
            errors.append(f"{cls}: no abnormal label")
        for lab in ab:
            if lab["view"] != "vertical" or lab["faulty"] != [FAMILY[cls]] or "cost_ns" not in lab:
                errors.append(f"{cls}: label {lab}")
                break
        if cls == "sched_delay":
            pp = "--pp" in flags
            groups = collections.defaultdict(list)
            for e in ledger:
                groups[(e.get("group"), e["first_step"])].append(e["rank"])
            want = [0, 1, 2, 3] if pp else None
            for (group, _), ranks in groups.items():
                ok = sorted(ranks) == want if pp else len(ranks) == 2 and ranks[0] // 2 == ranks[1] // 2
                if not group or not ok:
                    errors.append(f"sched_delay: group {group} has ranks {ranks}")
                    break
        check_dump(out, errors)

    # Host-ahead: software faults are absorbed by the GPU queue.
    shares = {}
    for mode in ("host-bound", "host-ahead"):
        out = os.path.join(args.work, mode)
        flags = ["--preset", "suite", "--steps", "50", "--seed", "1", "--faults", "software", "--intensities", "all",
                 "--abnormal-fraction", "0.3"] + (["--host-ahead"] if mode == "host-ahead" else [])
        print(f"{mode}: {' '.join(flags)}")
        synth(args.synth, out, flags)
        touched = [lab for lab in load(os.path.join(out, "labels.jsonl")) if "cost_ns" in lab]
        absorbed = [lab for lab in touched if lab.get("absorbed")]
        shares[mode] = [lab["cost_ns"] / max(1, lab["counterfactual_ns"]) for lab in touched]
        print(f"  {len(touched)} touched steps, {len(absorbed)} absorbed, median cost share "
              f"{statistics.median(shares[mode]) if touched else None}")
        for lab in absorbed:
            if lab["abnormal"] or lab["faulty"] or not lab.get("absorbed_faulty") \
                    or lab["cost_ns"] >= 0.01 * lab["counterfactual_ns"]:
                errors.append(f"{mode}: absorbed label {lab}")
                break
        if mode == "host-ahead":
            if not touched or len(absorbed) < 0.8 * len(touched):
                errors.append(f"host-ahead: only {len(absorbed)} of {len(touched)} touched steps absorbed")
            check_dump(out, errors)
    if shares["host-ahead"] and shares["host-bound"] and \
            sum(shares["host-ahead"]) / len(shares["host-ahead"]) >= sum(shares["host-bound"]) / len(shares["host-bound"]):
        errors.append("host-ahead: software faults cost as much as without --host-ahead")

    # Determinism with the new classes and --host-ahead.
    flags = ["--preset", "small", "--seed", "9", "--faults", "host_gap,sched_delay,direct_copy,software",
             "--host-ahead"]
    a, b = os.path.join(args.work, "det-a"), os.path.join(args.work, "det-b")
    synth(args.synth, a, flags)
    synth(args.synth, b, flags)
    for f in sorted(glob.glob(os.path.join(a, "*.jsonl"))):
        if not filecmp.cmp(f, os.path.join(b, os.path.basename(f)), shallow=False):
            errors.append(f"same seed, different {os.path.basename(f)}")

    # The merge puts the direct copy directly under the step.
    if args.merge:
        out = os.path.join(args.work, "direct_copy-2")
        merged = os.path.join(out, "merged")
        subprocess.run([args.merge] + sorted(glob.glob(os.path.join(out, "truffld-*.jsonl"))) + ["-o", merged],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        n = found = 0
        for t in load(os.path.join(merged, "trees.jsonl")):
            if t.get("view") != "vertical":
                continue
            n += 1
            root = t["root"]
            if any(c["layer"] == "runtime_call" and c["family"] == "cudaMemcpyAsync" and c.get("copy_kind") == "HtoD"
                   and c.get("thread_id") == root.get("thread_id")
                   and [x["layer"] for x in c.get("children", [])] == ["memcpy"] for c in root["children"]):
                found += 1
        print(f"merge: {found} of {n} vertical step trees have the direct copy under the step root")
        if n == 0 or found != n:
            errors.append(f"merge: direct copy under the step root in {found} of {n} trees")

    for e in errors:
        print("  ERROR " + e)
    print("check_new_classes: " + ("ok" if not errors else f"{len(errors)} problems"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

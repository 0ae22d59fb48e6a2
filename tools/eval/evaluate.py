#!/usr/bin/python3
"""Detection-quality evaluation: scenario suite -> truffld-synth -> truffld-merge ->
truffld-diagnose -> Table-2-style metrics, ablations and baselines.

Scenarios: every fault class at mild and at strong intensity, plus a mixed scenario with all
classes and intensities, for several seeds (--quick: one seed, shorter runs), and one healthy
run used as the reference for --mode reference. Every scenario yields both views.
Methods scored on the held-out test split shared with the baselines (see baselines.py):
  truffld (pooled)      full pipeline, Stage II offline policy, fusion with Stage I
  Stage I only          Stage I candidates as the answer (no Stage II, no fusion)
  Stage II only         the offline Stage II decision alone (not intersected with candidates)
  truffld (within-step) and truffld (reference): the other Stage I scoring modes
  KMeans, DBSCAN, IsolationForest, GMM, SVM, RandomForest on the exported features
Writes WORK/results.json; tools/eval/report.py turns it into BENCHMARKS.md tables.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import metrics  # noqa: E402

CLASSES = ["software", "cuda_kernel", "memcpy", "contention", "communication", "engine"]


def scenarios(quick):
    seeds = [1] if quick else [1, 2, 3]
    steps = ["--steps", "60"] if quick else []
    out = []
    for seed in seeds:
        for cls in CLASSES:
            for level in ("mild", "strong"):
                out.append((f"{cls}-{level}-s{seed}", ["--preset", "suite", "--faults", cls, "--intensities", level,
                                                        "--seed", str(seed)] + steps))
        out.append((f"mixed-s{seed}", ["--preset", "suite", "--seed", str(seed)] + steps))
    return out


def run(cmd, log, **kw):
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        log(f"FAILED ({r.returncode}): {' '.join(cmd)}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return r.returncode == 0, time.time() - t0


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(x) for x in f if x.strip()]


def label_truth(path, scen):
    truth = defaultdict(dict)
    for lab in read_jsonl(path):
        truth[lab["view"]][(scen, str(lab["rank"]), lab["step_index"])] = set(lab["faulty"])
    return truth


def diagnosis_preds(path, scen):
    """{variant: {view: {key: set}}} for full, Stage I only and Stage II only."""
    out = {"full": defaultdict(dict), "stage1": defaultdict(dict), "stage2": defaultdict(dict)}
    for d in read_jsonl(path):
        key = (scen, "" if d["rank"] is None else str(d["rank"]), d["step_index"])
        v = d["view"]
        full = {f["family"] for f in d.get("faulty", [])}
        if d.get("label") == "abnormal" and not full:
            full = {"__abnormal__"}
        out["full"][v][key] = full
        out["stage1"][v][key] = {c["family"] for c in d.get("stage1", {}).get("candidates", [])}
        s2 = d.get("stage2", {})
        s2f = set(s2.get("faulty", []))
        if s2.get("abnormal") and not s2f:
            s2f = {"__abnormal__"}
        out["stage2"][v][key] = s2f
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="build directory holding tools/synth, merge, diagnose binaries")
    ap.add_argument("--work", required=True)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    logf = open(os.path.join(args.work, "evaluate.log"), "w")

    def log(msg):
        print(msg, flush=True)
        logf.write(msg + "\n")

    synth = os.path.join(args.bin, "tools/synth/truffld-synth")
    merge = os.path.join(args.bin, "merge/truffld-merge")
    diag = os.path.join(args.bin, "diagnose/truffld-diagnose")
    have_merge, have_diag = os.path.exists(merge), os.path.exists(diag)
    res = {"quick": args.quick, "scenarios": {}, "have_merge": have_merge, "have_diagnose": have_diag,
           "commands": {"synth": synth, "merge": merge, "diagnose": diag}}

    # The healthy reference run (for --mode reference).
    clean_dir = os.path.join(args.work, "clean")
    ok, _ = run([synth, "--preset", "suite", "--faults", "none", "--seed", "1000", "-q", "--out",
                 os.path.join(clean_dir, "dump")] + (["--steps", "60"] if args.quick else []), log)
    if ok and have_merge:
        dumps = sorted(f for f in os.listdir(os.path.join(clean_dir, "dump")) if f.startswith("truffld-"))
        run([merge, *[os.path.join(clean_dir, "dump", f) for f in dumps], "-o", os.path.join(clean_dir, "merged")], log)

    truth = {"vertical": {}, "horizontal": {}}
    preds = defaultdict(lambda: {"vertical": {}, "horizontal": {}})
    features = []
    for name, sargs in scenarios(args.quick):
        sdir = os.path.join(args.work, name)
        info = {"args": " ".join(sargs)}
        ok, t = run([synth, *sargs, "-q", "--out", os.path.join(sdir, "dump")], log)
        if not ok:
            continue
        summ = json.load(open(os.path.join(sdir, "dump", "synth_summary.json")))
        info.update(records=summ["records"], rank_steps=summ["rank_steps"],
                    abnormal=summ["abnormal_rank_steps"], faults=summ["faults"], synth_seconds=t)
        res["scenarios"][name] = info
        labels = os.path.join(sdir, "dump", "labels.jsonl")
        for v, d in label_truth(labels, name).items():
            truth[v].update(d)
        if not have_merge:
            continue
        dumps = sorted(os.path.join(sdir, "dump", f) for f in os.listdir(os.path.join(sdir, "dump"))
                       if f.startswith("truffld-"))
        ok, t = run([merge, *dumps, "-o", os.path.join(sdir, "merged")], log)
        info["merge_seconds"] = t
        if not ok or not have_diag:
            continue
        modes = [("pooled", [])]
        if not args.quick or name.startswith("mixed"):
            modes.append(("within-step", []))
            if os.path.exists(os.path.join(clean_dir, "merged", "trees.jsonl")):
                modes.append(("reference", ["--reference", os.path.join(clean_dir, "merged")]))
        for mode, extra in modes:
            ddir = os.path.join(sdir, f"diag-{mode}")
            cmd = [diag, os.path.join(sdir, "merged"), "-o", ddir, "--mode", mode, "--labels", labels,
                   "--llm", "off", "--no-html", "-q", *extra]
            if mode == "pooled":
                cmd += ["--export-features", os.path.join(sdir, "features.csv")]
            ok, t = run(cmd, log)
            info[f"diagnose_{mode}_seconds"] = t
            if not ok:
                continue
            if mode == "pooled":
                features.append((name, os.path.join(sdir, "features.csv")))
                info["metrics_full_run"] = json.load(open(os.path.join(ddir, "metrics.json")))
            p = diagnosis_preds(os.path.join(ddir, "diagnosis.jsonl"), name)
            variants = {"full": f"truffld ({mode})"}
            if mode == "pooled":
                variants.update(stage1="Stage I only (pooled)", stage2="Stage II only (offline policy)")
            for var, label in variants.items():
                for v in ("vertical", "horizontal"):
                    preds[label][v].update(p[var][v])
        log(f"{name}: {info.get('records')} records, merge {info.get('merge_seconds', 0):.1f} s, "
            f"diagnose {info.get('diagnose_pooled_seconds', 0):.1f} s")

    # Label statistics (always available).
    stats = {}
    for v in ("vertical", "horizontal"):
        n = len(truth[v])
        ab = sum(1 for s in truth[v].values() if s)
        stats[v] = {"steps": n, "abnormal": ab, "share": ab / n if n else 0.0}
    res["label_stats"] = stats

    tables = {}
    if features:
        import baselines
        data = baselines.load_samples(features)
        tt = baselines.test_truth(data)
        log("baselines (configuration and threshold chosen on the validation split):")
        # Label coverage: can a method see the labelled family at all? Share of true (step, family)
        # pairs whose family has at least one instance in that step's merged trees.
        cov = {}
        for v, d in data.items():
            present = set(zip(d["keys"], d["fam"]))
            pairs = [(k, f) for k, fs in truth.get(v, {}).items() for f in fs]
            seen = sum(1 for p in pairs if p in present)
            missing = defaultdict(int)
            for k, f in pairs:
                if (k, f) not in present:
                    missing[f] += 1
            cov[v] = {"true_pairs": len(pairs), "visible": seen, "share": seen / len(pairs) if pairs else 1.0,
                      "invisible_by_family": dict(sorted(missing.items(), key=lambda x: -x[1]))}
            log(f"label coverage {v}: {seen} of {len(pairs)} faulty (step, family) pairs visible in the trees")
        res["label_coverage"] = cov
        base = baselines.run_baselines(data, quick=args.quick, log=log)
        for v, (vtruth, fams) in tt.items():
            # Test keys of this view, truth from labels.jsonl (covers steps without instances too).
            keys = set(vtruth)
            t_view = {k: truth[v].get(k, set()) for k in keys}
            rows = []
            for method, pv in preds.items():
                rows.append(metrics.row(method, metrics.evaluate_view(t_view, {k: pv[v].get(k, set()) for k in keys}, fams)))
            for method, per_view in base.items():
                if v in per_view:
                    pred, cfg = per_view[v]
                    rows.append(metrics.row(method, metrics.evaluate_view(t_view, {k: pred.get(k, set()) for k in keys}, fams)))
            tables[v] = rows
    res["tables"] = tables
    json.dump(res, open(os.path.join(args.work, "results.json"), "w"), indent=1, default=str)
    for v, rows in tables.items():
        print(f"\n{v} view (held-out test split)\n" + metrics.format_table("Method", rows))
    print(f"label statistics: {json.dumps(stats)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

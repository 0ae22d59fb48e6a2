#!/usr/bin/python3
"""Detection-quality evaluation: synthetic suites -> truffld-synth -> truffld-merge ->
truffld-diagnose -> Table-2-style metrics beside the baselines.

Suites (scenarios.py): "default" (every fault class at mild and strong intensity plus a mixed
scenario, at a realistic 10% of rank-steps abnormal, per seed) and "stress" (the former high-rate
suite, 50%). Per suite, methods scored on the held-out test split (25% of units, by hash of
scenario/rank/step; baselines fit on the 50% training split and choose configuration and
threshold on the 25% validation split):
  truffld (peer)    truffld-diagnose --mode peer (the default), offline policy (--llm off)
  truffld (pooled)  the legacy pooled Stage I mode
  flag every step / flag no step
  KMeans, DBSCAN, IsolationForest, GMM, SVM, RandomForest on the exported features
plus, over whole runs, per fault class x intensity and per scenario scores of truffld.
Writes WORK/results.json (report.py turns it into BENCHMARKS.md). A scenario that fails is
logged and left out; the run goes on.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import metrics  # noqa: E402
import scenarios  # noqa: E402
import score  # noqa: E402
from common import VIEWS  # noqa: E402

MODES = [("truffld (peer)", "peer"), ("truffld (pooled)", "pooled")]


def run_suite(tools, work, entries, log):
    """Runs every scenario; returns (truth, units, feature files, scenario infos)."""
    truth = {v: {} for v in VIEWS}
    units = {m: {v: {} for v in VIEWS} for m, _ in MODES}
    features, infos = [], {}
    for name, sargs, meta in entries:
        sdir = os.path.join(work, name)
        info = {"args": " ".join(sargs), **meta}
        infos[name] = info
        try:
            run_scenario(tools, name, sdir, sargs, info, truth, units, features, log)
        except Exception as e:  # noqa: BLE001 - one broken scenario must not stop the suite
            log(f"{name}: FAILED: {type(e).__name__}: {e}")
            info["failed"] = f"{type(e).__name__}: {e}"
    return truth, units, features, infos


def run_scenario(tools, name, sdir, sargs, info, truth, units, features, log):
    """synth, merge, diagnose in both modes; adds to truth, units and features in place."""
    summ = common.synth_and_merge(tools, sdir, sargs, log)
    if summ is None:
        info["failed"] = "synth or merge"
        return
    info.update(records=summ["records"], rank_steps=summ["rank_steps"], abnormal=summ["abnormal_rank_steps"],
                faults=summ["faults"], merged=os.path.join(sdir, "merged"))
    labels = os.path.join(sdir, "dump", "labels.jsonl")
    common.merge_nested(truth, common.label_truth(labels, name))
    info["cost_shares"] = common.label_cost_shares(labels)
    for method, mode in MODES:
        ddir = os.path.join(sdir, f"diag-{mode}")
        extra = ["--export-features", os.path.join(sdir, "features.csv")] if mode == "peer" else []
        ok, t = common.diagnose(tools, info["merged"], ddir, log, mode=mode, labels=labels, extra=extra)
        info[f"diagnose_{mode}_seconds"] = t
        if not ok:
            info.setdefault("failed_modes", []).append(mode)
            continue
        if mode == "peer":
            info["instances"] = common.instances(os.path.join(ddir, "stats.json"))
            named = common.slower_regime_steps(os.path.join(ddir, "stats.json"))
            vt = truth.get("vertical", {})
            info["slower_regimes"] = {"steps": len(named),
                                      "faulty": sum(1 for r, st in named if vt.get((name, r, st)))}
            if os.path.exists(os.path.join(sdir, "features.csv")):
                features.append((name, os.path.join(sdir, "features.csv")))
        common.merge_nested(units[method], common.read_diagnosis(os.path.join(ddir, "diagnosis.jsonl"), name))
    log(f"{name}: {info.get('records')} records, {info.get('instances')} instances, diagnose peer "
        f"{info.get('diagnose_peer_seconds', 0):.1f} s, pooled {info.get('diagnose_pooled_seconds', 0):.1f} s")


def coverage(data, truth):
    """Share of true (unit, family) pairs whose family has an instance in that unit's trees."""
    cov = {}
    for v, d in data.items():
        present = set(zip(d["keys"], d["fam"]))
        pairs = [(k, f) for k, fs in truth.get(v, {}).items() for f in fs]
        seen = sum(1 for p in pairs if p in present)
        cov[v] = {"true_pairs": len(pairs), "visible": seen, "share": seen / len(pairs) if pairs else 1.0}
    return cov


def families_of(features):
    """{view: sorted families with an instance in any exported feature file}: the Macro universe."""
    fams = {}
    for _, path in features:
        try:
            for _, _, view, fam, _, _, _ in common.read_features(path)[1]:
                fams.setdefault(view, set()).add(fam)
        except (OSError, ValueError, KeyError) as e:
            print(f"families_of: {path}: {e}", file=sys.stderr)
    return {v: sorted(s) for v, s in fams.items()}


def evaluate_suite(tools, work, suite, entries, quick, log, no_baselines):
    log(f"== suite {suite}: {len(entries)} scenarios")
    truth, units, features, infos = run_suite(tools, os.path.join(work, suite), entries, log)
    base, cov, base_error = {}, {}, None
    families = families_of(features)
    if features and not no_baselines:
        try:
            import baselines
            data = baselines.load_samples(features)
            cov = coverage(data, truth)
            log(f"baselines for {suite} (configuration and threshold chosen on the validation split):")
            base = baselines.run_baselines(data, quick=quick, log=log)
        except Exception as e:  # noqa: BLE001 - the truffld rows still stand without baselines
            base_error = f"{type(e).__name__}: {e}"
            log(f"baselines for {suite} FAILED: {base_error}")
    tables = score.methods_table(truth, units, base, families)
    names = [n for n, _, _ in entries if "failed" not in infos[n]]
    scen = score.per_scenario(names, truth, units)
    classes = {m: score.per_class(entries, scen, m, infos) for m, _ in MODES}
    stats = {}
    for v in VIEWS:
        n = len(truth[v])
        ab = sum(1 for s in truth[v].values() if s)
        stats[v] = {"units": n, "abnormal": ab, "share": ab / n if n else 0.0,
                    "test_units": len(score.test_keys(truth[v]))}
    for v, rows in tables.items():
        log(f"\n{suite} / {v} view (held-out test split)\n" + metrics.format_table("Method", rows))
    return {"scenarios": infos, "tables": tables, "per_scenario": scen, "per_class": classes,
            "label_stats": stats, "label_coverage": cov, "baselines_error": base_error,
            "baseline_configs": {m: {v: c for v, (_, c) in pv.items()} for m, pv in base.items()}}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="directory holding tools/synth, merge and diagnose binaries")
    ap.add_argument("--work", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--suites", default="default,stress", help="comma list of suites to run")
    ap.add_argument("--no-baselines", action="store_true")
    args = ap.parse_args()
    log = common.Log(args.work, "evaluate")
    tools = common.Tools(args.bin)
    res = {"quick": args.quick, "suites": {}}
    if not tools.have("synth", "merge", "diagnose"):
        log(f"evaluate: truffld-synth, truffld-merge or truffld-diagnose missing under {args.bin}")
        res["missing_tools"] = True
    else:
        suites = {"default": scenarios.default_suite, "stress": scenarios.stress_suite}
        for suite in args.suites.split(","):
            entries = suites[suite](args.quick)
            res["suites"][suite] = evaluate_suite(tools, args.work, suite, entries, args.quick, log, args.no_baselines)
    with open(os.path.join(args.work, "results.json"), "w") as f:
        json.dump(res, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())

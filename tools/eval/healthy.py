#!/usr/bin/python3
"""False alarms on healthy runs: truffld-synth --faults none over many workload shapes
(scenarios.SHAPES), each merged and diagnosed in peer mode (the default) and in the legacy pooled
mode. Per shape and view: units, units labelled insufficient_evidence, units labelled abnormal,
and the false-alarm rate = abnormal units / judged units (judged = not insufficient_evidence),
pooled over the shape's seeds, with the worst seed. Also what the workload really looked like
(phases, requests per step, tokens per non-decode step, from the diagnosed step names).
Writes WORK/healthy.json. A shape that fails is logged and reported as failed.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import scenarios  # noqa: E402
from common import VIEWS  # noqa: E402

MODES = ("peer", "pooled")


def workload(units_v):
    """Phases, request and token ranges of the vertical units."""
    phases, req, tok = {}, [], []
    for u in units_v.values():
        phases[u["phase"] or "unknown"] = phases.get(u["phase"] or "unknown", 0) + 1
        req.append(u["requests"])
        if u["tokens"] is not None and u["phase"] != "decode":
            tok.append(u["tokens"])
    return {"phases": phases, "requests": [min(req), max(req)] if req else None,
            "tokens": [min(tok), max(tok)] if tok else None}


def run_shape(tools, work, name, args, seed, log):
    sdir = os.path.join(work, f"{name}-s{seed}")
    summ = common.synth_and_merge(tools, sdir, args, log)
    if summ is None:
        return {"failed": "synth or merge"}
    out = {"ranks": summ["ranks"], "hosts": summ["hosts"], "tp": summ["tp"], "pp": summ["pp"],
           "records": summ["records"], "rank_steps": summ["rank_steps"]}
    for mode in MODES:
        ddir = os.path.join(sdir, f"diag-{mode}")
        ok, t = common.diagnose(tools, os.path.join(sdir, "merged"), ddir, log, mode=mode)
        out[f"{mode}_seconds"] = t
        if not ok:
            out.setdefault("failed_modes", []).append(mode)
            continue
        units = common.read_diagnosis(os.path.join(ddir, "diagnosis.jsonl"), name)
        out[mode] = {v: common.label_counts(units[v]) for v in VIEWS}
        if mode == "peer":
            out["workload"] = workload(units["vertical"])
            out["instances"] = common.instances(os.path.join(ddir, "stats.json"))
            try:
                out["slower_regimes"] = len(json.load(open(os.path.join(ddir, "stats.json")))["peer"]["slower_regimes"])
            except (OSError, ValueError, KeyError):
                out["slower_regimes"] = None
            # A few false alarms, with their evidence, so a reader can see what fired.
            out["examples"] = [u["evidence"][:300] for v in VIEWS for u in units[v].values()
                               if u["label"] == "abnormal"][:3]
    drop_trees(sdir)
    return out


def drop_trees(sdir):
    """Healthy trees are not needed after diagnosis (the long run's are ~350 MB)."""
    merged = os.path.join(sdir, "merged", "trees.jsonl")
    if os.path.exists(merged):
        os.remove(merged)


def fa(counts):
    judged = counts["normal"] + counts["abnormal"]
    return counts["abnormal"] / judged if judged else None


def summarise(runs):
    """Pools the seeds of one shape: per mode and view counts, FA and worst seed FA."""
    ok = [r for r in runs if "failed" not in r]
    out = {"seeds": len(runs), "failed_seeds": len(runs) - len(ok)}
    if not ok:
        return out
    out.update({k: ok[0][k] for k in ("ranks", "hosts", "tp", "pp")})
    out["rank_steps"] = sum(r["rank_steps"] for r in ok)
    out["workload"] = ok[0].get("workload")
    out["examples"] = [e for r in ok for e in r.get("examples", [])][:3]
    found = [r.get("slower_regimes") for r in ok]
    out["slower_regimes"] = None if any(x is None for x in found) else sum(found)
    for mode in MODES:
        per = [r[mode] for r in ok if mode in r]
        if not per:
            continue
        out[mode] = {}
        for v in VIEWS:
            tot = {lab: sum(p[v][lab] for p in per) for lab in common.LABELS}
            seed_fa = [fa(p[v]) for p in per if fa(p[v]) is not None]
            out[mode][v] = tot | {"fa": fa(tot), "worst_seed_fa": max(seed_fa) if seed_fa else None}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    log = common.Log(args.work, "healthy")
    tools = common.Tools(args.bin)
    res = {"quick": args.quick, "shapes": []}
    if not tools.have("synth", "merge", "diagnose"):
        log(f"healthy: a truffld binary is missing under {args.bin}")
        res["missing_tools"] = True
    else:
        hdir = os.path.join(args.work, "healthy")
        order, runs, meta = [], {}, {}
        for name, desc, sargs, seed in scenarios.healthy_shapes(args.quick):
            if name not in runs:
                order.append(name)
                runs[name] = []
                i = sargs.index("--seed")
                meta[name] = {"name": name, "description": desc, "flags": " ".join(sargs[:i] + sargs[i + 2:])}
            try:
                r = run_shape(tools, hdir, name, sargs, seed, log)
            except Exception as e:  # noqa: BLE001 - one broken shape must not stop the others
                r = {"failed": f"{type(e).__name__}: {e}"}
            runs[name].append(r)
            p = r.get("peer", {})
            log(f"{name} seed {seed}: " + ", ".join(
                f"{v} {p[v]['abnormal']} abnormal / {p[v]['insufficient_evidence']} insufficient of "
                f"{sum(p[v].values())}" for v in VIEWS if v in p) + (f" FAILED {r['failed']}" if "failed" in r else ""))
        for name in order:
            res["shapes"].append(meta[name] | summarise(runs[name]))
    with open(os.path.join(args.work, "healthy.json"), "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Scoring of one suite's runs: the methods table on the held-out test split, the per fault class x
intensity table and the per-scenario table. Pure functions over the dicts evaluate.py collects:

  truth  {view: {key: set(true faulty families)}}           from labels.jsonl
  units  {method: {view: {key: unit}}}                      from diagnosis.jsonl (common.read_diagnosis)
  base   {method: {view: ({key: set(predicted families)}, config)}}   from baselines.run_baselines

A unit labelled insufficient_evidence counts as "not abnormal" and is counted in its own column.
"Flag every step" predicts every unit abnormal and blames nothing; "flag no step" predicts none.
"""
import os
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import metrics  # noqa: E402
from baselines import split_of  # noqa: E402
from common import VIEWS  # noqa: E402


def test_keys(truth_view):
    return sorted(k for k in truth_view if split_of(*k) == "test")


def _preds(units_view, keys):
    return {k: units_view[k]["fams"] if k in units_view else set() for k in keys}


def _insufficient(units_view, keys):
    return sum(1 for k in keys if k in units_view and units_view[k]["label"] == "insufficient_evidence")


def methods_table(truth, units, base, families):
    """{view: [row]} on the test split. families: {view: [family]} (the Macro universe)."""
    out = {}
    for v in VIEWS:
        keys = test_keys(truth.get(v, {}))
        if not keys:
            continue
        t = {k: truth[v][k] for k in keys}
        fams = families.get(v, [])
        rows = []
        for method, per_view in units.items():
            uv = per_view.get(v, {})
            ev = metrics.evaluate_view(t, _preds(uv, keys), fams)
            row = metrics.row(method, ev, _insufficient(uv, keys))
            # Families that were faulty or blamed: what drives Macro+ (recall) and operator precision.
            row["per_family"] = {f: {k: x[k] for k in ("tp", "fp", "fn", "f1")}
                                 for f, x in ev["operator"]["families"].items() if x["tp"] + x["fp"] + x["fn"]}
            rows.append(row)
        rows.append(metrics.row("flag every step", metrics.evaluate_view(t, {k: {"__abnormal__"} for k in keys}, fams)))
        rows.append(metrics.row("flag no step", metrics.evaluate_view(t, {k: set() for k in keys}, fams)))
        for method, per_view in base.items():
            if v in per_view:
                pred = per_view[v][0]
                row = metrics.row(method, metrics.evaluate_view(t, {k: pred.get(k, set()) for k in keys}, fams))
                row["config"] = per_view[v][1]
                rows.append(row)
        out[v] = rows
    return out


def _unit_scores(truth_v, units_v):
    """Step counts, blames and excess of correct blames of one method over one set of units."""
    tp = fp = fn = tn = ins = blames = correct = no_excess = 0
    excess = []
    for k, ys in truth_v.items():
        u = units_v.get(k)
        p = bool(u and u["label"] == "abnormal")
        ins += bool(u and u["label"] == "insufficient_evidence")
        if ys and p:
            tp += 1
        elif ys:
            fn += 1
        elif p:
            fp += 1
        else:
            tn += 1
        for fam, ex in (u["blames"] if u and p else []):
            blames += 1
            no_excess += ex is None
            if fam in ys:
                correct += 1
                if ex is not None:
                    excess.append(ex)
    return {"tp": tp, "fp": fp, "fn": fn, "tn": tn, "insufficient": ins, "blames": blames, "correct": correct,
            "excess_sum_ns": sum(excess), "excess_n": len(excess), "no_excess": no_excess}


def _add(a, b):
    return {k: a.get(k, 0) + b[k] for k in b}


def finish(c):
    """Counts -> counts plus f1, precision, recall, op_prec, mean excess (µs); None where undefined."""
    d = dict(c)
    pos = c["tp"] + c["fn"]
    d["positives"], d["units"] = pos, c["tp"] + c["fp"] + c["fn"] + c["tn"]
    d["f1"] = 2 * c["tp"] / (2 * c["tp"] + c["fp"] + c["fn"]) if pos else None
    d["precision"] = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else None
    d["recall"] = c["tp"] / pos if pos else None
    d["op_prec"] = c["correct"] / c["blames"] if c["blames"] else None
    d["excess_us"] = c["excess_sum_ns"] / c["excess_n"] / 1e3 if c["excess_n"] else None
    return d


def per_scenario(names, truth, units):
    """{scenario: {method: {view: finished counts}}} over all units of each scenario (whole run)."""
    by_scen = {v: defaultdict(dict) for v in VIEWS}
    for v in VIEWS:
        for k, ys in truth.get(v, {}).items():
            by_scen[v][k[0]][k] = ys
    out = {}
    for name in names:
        out[name] = {}
        for method, per_view in units.items():
            out[name][method] = {v: finish(_unit_scores(by_scen[v].get(name, {}), per_view.get(v, {})))
                                 for v in VIEWS}
    return out


def _share_summary(shares):
    """Median, min and max of cost shares (None when there are none)."""
    if not shares:
        return None
    return {"median": statistics.median(shares), "min": min(shares), "max": max(shares), "n": len(shares)}


def per_class(entries, scen_scores, method, infos=None):
    """[(class, intensity, {view: finished counts pooled over seeds, with per-seed F1 list and
    `cost_share`: what the labelled faults cost their steps (infos[name]["cost_shares"]))})]."""
    groups = defaultdict(list)
    for name, _, meta in entries:
        if name in scen_scores and method in scen_scores[name]:
            groups[(meta["class"], meta["intensity"])].append(name)
    rows = []
    for (cls, level), names in groups.items():
        views = {}
        for v in VIEWS:
            tot = {}
            seed_f1 = []
            for n in names:
                c = scen_scores[n][method][v]
                tot = _add(tot, {k: c[k] for k in ("tp", "fp", "fn", "tn", "insufficient", "blames", "correct",
                                                   "excess_sum_ns", "excess_n", "no_excess")})
                if c["f1"] is not None:
                    seed_f1.append(c["f1"])
            shares = [x for n in names for x in ((infos or {}).get(n, {}).get("cost_shares") or {}).get(v, [])]
            views[v] = finish(tot) | {"seed_f1": seed_f1, "seeds": len(names), "cost_share": _share_summary(shares)}
        # Steps that slower-regime findings named (vertical: the time outside operators), and how
        # many of them were labelled faulty.
        reg = [(infos or {}).get(n, {}).get("slower_regimes") for n in names]
        views["vertical"]["regime_steps"] = sum(x["steps"] for x in reg if x)
        views["vertical"]["regime_faulty"] = sum(x["faulty"] for x in reg if x)
        rows.append((cls, level, views))
    return rows


if __name__ == "__main__":  # self-check on a hand-made case
    K = [("s", "0", i) for i in range(4)]
    truth = {"vertical": {K[0]: {"a"}, K[1]: set(), K[2]: {"b"}, K[3]: set()}, "horizontal": {}}
    unit = lambda lab, bl: {"label": lab, "fams": {f for f, _ in bl}, "blames": bl}  # noqa: E731
    PEER_NAME = "truffld (peer)"
    units = {PEER_NAME: {"vertical": {K[0]: unit("abnormal", [("a", 2000), ("c", 10)]),
                                      K[1]: unit("abnormal", [("a", None)]),
                                      K[2]: unit("insufficient_evidence", []), K[3]: unit("normal", [])}}}
    c = finish(_unit_scores(truth["vertical"], units[PEER_NAME]["vertical"]))
    assert (c["tp"], c["fp"], c["fn"], c["tn"], c["insufficient"]) == (1, 1, 1, 1, 1), c
    assert (c["blames"], c["correct"], c["no_excess"]) == (3, 1, 1) and abs(c["excess_us"] - 2.0) < 1e-9, c
    assert abs(c["f1"] - 0.5) < 1e-9 and abs(c["op_prec"] - 1 / 3) < 1e-9
    rows = per_class([("s", [], {"class": "x", "intensity": "mild", "seed": 1})],
                     per_scenario(["s"], truth, units), PEER_NAME)
    assert rows[0][2]["vertical"]["f1"] == c["f1"] and rows[0][2]["horizontal"]["f1"] is None
    assert rows[0][2]["vertical"]["cost_share"] is None
    rows = per_class([("s", [], {"class": "x", "intensity": "mild", "seed": 1})],
                     per_scenario(["s"], truth, units), PEER_NAME,
                     {"s": {"cost_shares": {"vertical": [0.03, 0.01, 0.02, 0.5]}}})
    assert rows[0][2]["vertical"]["regime_steps"] == 0
    cs = rows[0][2]["vertical"]["cost_share"]
    assert (cs["min"], cs["max"], cs["n"]) == (0.01, 0.5, 4) and abs(cs["median"] - 0.025) < 1e-12, cs
    print("score.py self-check ok")

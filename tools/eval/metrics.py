"""Detection metrics of the design's evaluation (appendix F), shared by the harness and baselines.

Step level: Accuracy, Precision, Recall, F1 over (rank, step) items of one view.
Operator level, per family t over the same items: TP_t, FP_t, FN_t; P_t = TP/(TP+FP+eps),
R_t = TP/(TP+FN+eps), F1_t = 2PR/(P+R+eps), J_t = TP/(TP+FP+FN+eps). Macro averages run over
every family of the view (T); Macro+ only over families with at least one true faulty item (T+).
Operator precision: correct blames / all blames, micro over (item, family) pairs.
Items are keyed by any hashable id (the harness uses (scenario, rank, step_index)).
Pure functions over dicts and sets; no I/O.
"""
EPS = 1e-12


def step_metrics(truth, pred):
    """truth, pred: {key: bool}. Keys missing from pred count as predicted normal."""
    tp = fp = tn = fn = 0
    for k, y in truth.items():
        p = bool(pred.get(k, False))
        if y and p:
            tp += 1
        elif y:
            fn += 1
        elif p:
            fp += 1
        else:
            tn += 1
    n = tp + fp + tn + fn
    return {
        "n": n, "tp": tp, "fp": fp, "tn": tn, "fn": fn,
        "accuracy": (tp + tn) / n if n else 0.0,
        "precision": tp / (tp + fp) if tp + fp else 0.0,
        "recall": tp / (tp + fn) if tp + fn else 0.0,
        "f1": 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0,
    }


def operator_metrics(truth, pred, families):
    """truth, pred: {key: set(families)}; families: the view's family universe T."""
    fams = set(families)
    for s in truth.values():
        fams |= s
    for s in pred.values():
        fams |= s
    per = {}
    for t in sorted(fams):
        tp = fp = fn = 0
        for k, ys in truth.items():
            y = t in ys
            p = t in pred.get(k, ())
            tp += y and p
            fp += (not y) and p
            fn += y and (not p)
        pr = tp / (tp + fp + EPS)
        rc = tp / (tp + fn + EPS)
        per[t] = {"tp": tp, "fp": fp, "fn": fn, "precision": pr, "recall": rc,
                  "f1": 2 * pr * rc / (pr + rc + EPS), "jaccard": tp / (tp + fp + fn + EPS),
                  "positive": tp + fn > 0}

    def macro(keys):
        keys = list(keys)
        if not keys:
            return {"precision": 0.0, "recall": 0.0, "f1": 0.0, "jaccard": 0.0, "families": 0}
        return {m: sum(per[t][m] for t in keys) / len(keys) for m in ("precision", "recall", "f1", "jaccard")} | {
            "families": len(keys)}

    return {"macro": macro(per), "macro_plus": macro(t for t in per if per[t]["positive"]), "families": per}


def operator_precision(truth, pred):
    """Micro precision over (unit, family) blames: correct blames / all blames (None when nothing
    is blamed). The step-only marker '__abnormal__' is not a blame."""
    blames = correct = 0
    for k, ps in pred.items():
        for f in ps:
            if f == "__abnormal__":
                continue
            blames += 1
            correct += f in truth.get(k, ())
    return {"blames": blames, "correct": correct, "precision": correct / blames if blames else None}


def evaluate_view(truth, pred, families):
    """truth/pred: {key: set(faulty families)}; a key is abnormal when its set is non-empty,
    except that pred may also carry an explicit '__abnormal__' marker for step-only methods."""
    t_step = {k: bool(v) for k, v in truth.items()}
    p_step = {k: bool(v) for k, v in pred.items()}
    clean_pred = {k: {f for f in v if f != "__abnormal__"} for k, v in pred.items()}
    return {"step": step_metrics(t_step, p_step), "operator": operator_metrics(truth, clean_pred, families),
            "blame": operator_precision(truth, pred)}


def row(name, view_result, insufficient=None):
    """Flattened Table-2 row; insufficient = units the method declined to judge (None: not applicable)."""
    s, o = view_result["step"], view_result["operator"]
    b = view_result.get("blame", {})
    return {"method": name, "acc": s["accuracy"], "prec": s["precision"], "rec": s["recall"], "f1": s["f1"],
            "m_prec": o["macro"]["precision"], "m_f1": o["macro"]["f1"], "m_jac": o["macro"]["jaccard"],
            "mp_prec": o["macro_plus"]["precision"], "mp_f1": o["macro_plus"]["f1"],
            "mp_jac": o["macro_plus"]["jaccard"], "op_prec": b.get("precision"), "blames": b.get("blames", 0),
            "insufficient": insufficient, "n": s["n"], "positives": s["tp"] + s["fn"],
            "tp": s["tp"], "fp": s["fp"], "fn": s["fn"]}


def _f(x):
    return "–" if x is None else f"{x:.3f}"


def format_table(title, rows):
    head = (f"| {title} | Acc | Prec | Rec | F1 | Macro P | Macro F1 | Macro J | Macro+ P | Macro+ F1 | Macro+ J "
            "| Op prec (blames) | insufficient | units |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    body = ""
    for r in rows:
        ins = "–" if r.get("insufficient") is None else str(r["insufficient"])
        body += (f"| {r['method']} | {r['acc']:.3f} | {r['prec']:.3f} | {r.get('rec', 0.0):.3f} | {r['f1']:.3f} | "
                 f"{r['m_prec']:.3f} | {r['m_f1']:.3f} | {r['m_jac']:.3f} | {r['mp_prec']:.3f} | {r['mp_f1']:.3f} | "
                 f"{r['mp_jac']:.3f} | {_f(r.get('op_prec'))} ({r.get('blames', 0)}) | {ins} | {r['n']} |\n")
    return head + body


if __name__ == "__main__":  # self-check of the formulas on a tiny hand-made case
    truth = {1: {"a"}, 2: set(), 3: {"b"}, 4: set()}
    pred = {1: {"a"}, 2: {"a"}, 3: set(), 4: set()}
    r = evaluate_view(truth, pred, ["a", "b", "c"])
    assert r["step"]["tp"] == 1 and r["step"]["fp"] == 1 and r["step"]["fn"] == 1 and r["step"]["tn"] == 1
    assert abs(r["operator"]["families"]["a"]["precision"] - 0.5) < 1e-9
    assert r["operator"]["macro"]["families"] == 3 and r["operator"]["macro_plus"]["families"] == 2
    assert abs(r["operator"]["macro_plus"]["f1"] - (2 / 3) / 2) < 1e-6
    assert r["blame"] == {"blames": 2, "correct": 1, "precision": 0.5}
    r = evaluate_view(truth, {1: {"__abnormal__"}, 2: set()}, ["a"])
    assert r["step"]["tp"] == 1 and r["blame"]["precision"] is None and r["operator"]["macro"]["precision"] == 0
    print("metrics.py self-check ok")
